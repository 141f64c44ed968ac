#!/bin/sh
# Forward an agent hook payload (stdin) to helixd with nc or socat; never fails the agent.
# Prefer `helixctl hook <agent>` (it spools when the daemon is down); this is for users who
# want a shell one-liner.  The payload is sent verbatim: helixd recognises Claude Code,
# Gemini and Grok hook objects and Codex notify objects.
sock="${HELIX_SOCKET:-${XDG_RUNTIME_DIR:-$HOME/.local/state}/helix/helixd.sock}"
payload=$(cat; echo)
if command -v socat >/dev/null 2>&1; then
  printf '%s\n' "$payload" | tr -d '\n' | { cat; echo; } | socat -t1 - "UNIX-CONNECT:$sock" >/dev/null 2>&1
elif command -v nc >/dev/null 2>&1; then
  printf '%s\n' "$payload" | tr -d '\n' | { cat; echo; } | nc -U -w1 "$sock" >/dev/null 2>&1
fi
exit 0
