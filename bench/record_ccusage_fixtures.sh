#!/usr/bin/env bash
# Record ccusage's view of the shared real-session corpus as parity fixtures for helixd tests.
#
# Lays the corpus out as a HOME (Claude under .claude/projects/<top-level dir>/..., Codex under
# .codex/sessions/2026/01/01/rollout-*.jsonl), runs ccusage's JSON reports over it with
# TZ=UTC HOME=$H CLAUDE_CONFIG_DIR=$H/.claude CODEX_HOME=$H/.codex, and writes the outputs, the
# layout mapping (layout.tsv) and a README into tests/fixtures/ccusage/.
#
# Usage: bash bench/record_ccusage_fixtures.sh
# Env:   CORPUS  (default: <repo>/../shared/corpus)    OUT (default: <repo>/tests/fixtures/ccusage)
#        PREFIX  npm scratch prefix (default: /tmp/helix-ccusage)
#        CCUSAGE_VERSION (default: 20.0.24; 20.0.26 ships no linux binary)
#        KEEP_HOME=1 keeps the temporary HOME and prints its path
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CORPUS="$(cd "${CORPUS:-$REPO/../shared/corpus}" && pwd)"
OUT="${OUT:-$REPO/tests/fixtures/ccusage}"
PREFIX="${PREFIX:-/tmp/helix-ccusage}"
CCUSAGE_VERSION="${CCUSAGE_VERSION:-20.0.24}"
PYTHON="${PYTHON:-python3}"
BIN="$PREFIX/node_modules/.bin"

if [[ ! -x "$BIN/ccusage" || "$("$BIN/ccusage" --version 2>/dev/null)" != "ccusage $CCUSAGE_VERSION" ]]; then
  mkdir -p "$PREFIX"
  npm install --prefix "$PREFIX" "ccusage@$CCUSAGE_VERSION" @ccusage/codex >&2
fi
CC_VERSION="$("$BIN/ccusage" --version)"
pkg_version() { "$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$PREFIX/node_modules/$1/package.json"; }
NATIVE_VERSION="$(pkg_version @ccusage/ccusage-linux-x64)"
JS_CODEX_VERSION="$(pkg_version @ccusage/codex)"
NODE_VERSION="$(node --version)"

H="$(mktemp -d /tmp/helix-ccusage-home.XXXXXX)"
if [[ "${KEEP_HOME:-0}" == 1 ]]; then echo "HOME kept at $H" >&2; else trap 'rm -rf "$H"' EXIT; fi
mkdir -p "$OUT" "$H/.claude/projects" "$H/.codex/sessions/2026/01/01"
LAYOUT="$OUT/layout.tsv"
printf 'agent\tsource (relative to shared/corpus)\tpath in HOME (relative to $H)\n' > "$LAYOUT"

# Claude: each top-level folder of corpus/claude is one project dir; inner structure kept as is.
while IFS= read -r -d '' src; do
  rel="${src#"$CORPUS"/claude/}"
  dst=".claude/projects/$rel"
  mkdir -p "$H/$(dirname "$dst")"
  cp -p "$src" "$H/$dst"
  printf 'claude\tclaude/%s\t%s\n' "$rel" "$dst" >> "$LAYOUT"
done < <(find "$CORPUS/claude" -type f -print0 | LC_ALL=C sort -z)

# Codex: every .jsonl goes flat into sessions/2026/01/01/. Files not named rollout-*.jsonl are
# renamed rollout-<session_meta.payload.timestamp as %Y-%m-%dT%H-%M-%S>-<session_meta.payload.id>
# .jsonl (taken from their first line), like real Codex names. Non-.jsonl files are not copied.
rollout_name() {
  "$PYTHON" - "$1" <<'EOF'
import datetime, json, sys
meta = json.loads(open(sys.argv[1], encoding="utf-8").readline())["payload"]
ts = datetime.datetime.fromisoformat(meta["timestamp"].replace("Z", "+00:00"))
print(f"rollout-{ts.strftime('%Y-%m-%dT%H-%M-%S')}-{meta['id']}.jsonl")
EOF
}
while IFS= read -r -d '' src; do
  rel="${src#"$CORPUS"/codex/}"
  base="$(basename "$src")"
  if [[ "$base" != *.jsonl ]]; then
    printf 'codex\tcodex/%s\t-\n' "$rel" >> "$LAYOUT"
    continue
  fi
  [[ "$base" == rollout-* ]] || base="$(rollout_name "$src")"
  dst=".codex/sessions/2026/01/01/$base"
  if [[ -e "$H/$dst" ]]; then echo "layout collision: $dst" >&2; exit 1; fi
  cp -p "$src" "$H/$dst"
  printf 'codex\tcodex/%s\t%s\n' "$rel" "$dst" >> "$LAYOUT"
done < <(find "$CORPUS/codex" -type f -print0 | LC_ALL=C sort -z)

run() {  # run <output file> <argv...>
  local out="$1"; shift
  (cd "$H" && env -i PATH="$PATH" TZ=UTC HOME="$H" CLAUDE_CONFIG_DIR="$H/.claude" \
      CODEX_HOME="$H/.codex" "$@") > "$OUT/$out"
  echo "wrote $OUT/$out" >&2
}
run claude-session.json "$BIN/ccusage" claude session --json --offline
run claude-daily.json "$BIN/ccusage" claude daily --json --offline
run codex-session.json "$BIN/ccusage" codex session --json --offline
run codex-daily.json "$BIN/ccusage" codex daily --json --offline
run all-session.json "$BIN/ccusage" session --json --offline
run all-daily.json "$BIN/ccusage" daily --json --offline
run codex-js-session.json "$BIN/ccusage-codex" session --json --offline
run codex-js-daily.json "$BIN/ccusage-codex" daily --json --offline

cat > "$OUT/README.md" <<EOF
# ccusage's view of the shared real-session corpus

Parity fixtures for helixd: what ccusage reports over \`shared/corpus/claude\` and
\`shared/corpus/codex\`. Regenerate with \`bash bench/record_ccusage_fixtures.sh\` (writes every
file here; needs npm and node).

## Versions

- \`$CC_VERSION\` (npm \`ccusage@$CCUSAGE_VERSION\`, a Node shim around the native Rust binary
  from \`@ccusage/ccusage-linux-x64@$NATIVE_VERSION\`; 20.0.26 publishes no linux binary)
- \`@ccusage/codex@$JS_CODEX_VERSION\` (the older JS Codex reporter), node $NODE_VERSION
- installed with \`npm install --prefix $PREFIX ccusage@$CCUSAGE_VERSION @ccusage/codex\`

## Layout and environment

A temporary HOME \`\$H\` holds both agents (\`layout.tsv\` lists every source file and where it went):

- Claude: each top-level folder of \`corpus/claude\` is one project dir,
  \`\$H/.claude/projects/<folder>/…\`, inner structure kept as is (subfolders, \`subagents/\`,
  \`.meta.json\` and \`.json\` side files included).
- Codex: every \`.jsonl\` of \`corpus/codex\` goes flat into \`\$H/.codex/sessions/2026/01/01/\`.
  Files not named \`rollout-*.jsonl\` are renamed
  \`rollout-<session_meta.payload.timestamp, %Y-%m-%dT%H-%M-%S UTC>-<session_meta.payload.id>.jsonl\`
  from their first line. \`madshn__localpush/manifest.json\` (not a transcript) is not copied.
- Every command ran as \`cd \$H && env -i PATH=\$PATH TZ=UTC HOME=\$H CLAUDE_CONFIG_DIR=\$H/.claude
  CODEX_HOME=\$H/.codex <command>\`; stdout saved unchanged.

| file | command |
|---|---|
| claude-session.json | \`ccusage claude session --json --offline\` |
| claude-daily.json | \`ccusage claude daily --json --offline\` |
| codex-session.json | \`ccusage codex session --json --offline\` |
| codex-daily.json | \`ccusage codex daily --json --offline\` |
| all-session.json | \`ccusage session --json --offline\` (unified report, both agents) |
| all-daily.json | \`ccusage daily --json --offline\` (unified report, both agents) |
| codex-js-session.json | \`ccusage-codex session --json --offline\` (@ccusage/codex $JS_CODEX_VERSION) |
| codex-js-daily.json | \`ccusage-codex daily --json --offline\` (@ccusage/codex $JS_CODEX_VERSION) |

Costs come from the pricing table built into each version (\`--offline\`); compare tokens, not cost.

## What to expect from these numbers

- Claude sessions are keyed by **path**, not by the records' \`sessionId\`: \`projectPath\` = first
  folder under \`projects/\`; \`sessionId\` = file stem for \`<project>/<file>.jsonl\`, the parent
  folder for \`<project>/<sid>/subagents/agent-*.jsonl\`, and otherwise the folder holding the file,
  so every file in \`M-Thisness__M-Claude/Archives/\` (incl. \`agent-*.jsonl\`) is one session
  \`Archives\`. Legacy flat \`agent-*.jsonl\` beside sessions are their own sessions.
- Files without usage are omitted (18 Claude sessions listed from 37 `.jsonl` files).
- Streaming duplicates are deduped on (message.id, requestId) keeping the largest token total;
  a non-sidechain copy beats a sidechain one; across files the first file in sorted path order
  wins (not the chronologically earliest).
- \`claude daily\` totals exceed \`claude session\` totals: daily also counts assistant messages
  embedded in \`progress\`/\`agent_progress\` records of the parent file (session does not), and it
  lists days whose only entries are zero-usage \`<synthetic>\` rows (the unified report drops them).
- Lines are pre-filtered on the exact bytes \`"usage":{\`, so a record written with a space
  (\`"usage": {\`, e.g. in \`daaain__claude-code-log/edge_cases.jsonl\`) is skipped; records with a
  non-semver \`version\` (the redacted ones in \`M-Thisness__M-Claude\`) are dropped.
- Codex: \`sessionId\` = path under \`sessions/\` without \`.jsonl\` (so it includes \`2026/01/01/\`);
  \`inputTokens\` excludes cached input, which is reported as \`cacheReadTokens\`; totals equal the
  sum of \`last_token_usage\` over token_count events whose cumulative total advanced. A file with
  several \`session_meta\` lines is still one session. The JS \`@ccusage/codex\` counts re-emitted
  token_count events again and reports \`inputTokens\` including cached input (about 2x here).
EOF
echo "done: $OUT" >&2
