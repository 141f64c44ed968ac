"""Pure rules that name a session's project (design spec §4.1): its repo when the directory
is gone, its ``domain``, its ``task_ref``, and the commits it made.

The git side (which repository a directory belongs to, its remote) is read by the edge
``helixd.sources.gitrepo``; this module decides from what it found, or from the path alone.

* repo: the remote's repository name, else the main worktree's directory name (the edge);
  for a directory that is gone, the repo of a known root it is at or under, else a sibling
  ``<repo>-<anything>`` of a known root (how worktrees are usually named: ``erk-slot-36``
  beside ``erk``), else the last path component;
* domain: the configured map (by ``owner/name``, then ``name``), else the remote's owner,
  else ``default_domain`` — always a string (§11.2);
* task_ref: the first pattern match in the branch name, then the first prompt, then the
  commit messages; a branch named ``123-fix`` or ``issue-123`` gives ``#123``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Final

# A tracker key (ABC-123, AGENTIC-WP-0002-T01), an issue or pull request URL, a #number.
DEFAULT_TASK_PATTERNS: Final = (
    r"(?<![A-Za-z0-9_-])[A-Z][A-Z0-9]+-(?:[A-Z0-9]+-)*\d+(?:-[A-Z]+\d+)?(?![A-Za-z0-9_])",
    r"https?://[^\s/]+/[^\s]+?/(?:issues|pull|pulls|merge_requests|tickets)/\d+",
    r"(?<![\w&/#])#\d+\b",
)
# Words shaped like tracker keys that are not: encodings, hashes, standards, models.
NOT_TASKS: Final = frozenset(
    {"UTF", "ISO", "SHA", "RFC", "GPT", "MD", "CVE", "HTTP", "TLS", "SSL", "X", "PEP", "AES"}
)
# ``123-fix``, ``issue-77``, ``feature/gh_9``; not a date (``release/2024-05``)
_BRANCH_NUMBER: Final = re.compile(
    r"(?:^|/)(?:(?:issue|issues|gh|bug|fix)[-_]?)?(\d{1,6})(?:[-_](?!\d{2}(?:[-_.]|$))|$)"
)
DEFAULT_DOMAIN: Final = "local"


@dataclass(frozen=True, slots=True)
class Naming:
    """The configured rules (``[repos]``)."""

    domains: Mapping[str, str] = field(default_factory=dict)
    default_domain: str = DEFAULT_DOMAIN
    task_patterns: tuple[str, ...] = DEFAULT_TASK_PATTERNS
    resolve_git: bool = True

    @classmethod
    def from_settings(cls, repos: Any) -> Naming:
        """From a ``RepoSettings`` (read by attribute: the core does not import config)."""
        return cls(
            domains=dict(repos.domains),
            default_domain=str(repos.default_domain),
            task_patterns=tuple(repos.task_ref_patterns) or DEFAULT_TASK_PATTERNS,
            resolve_git=bool(repos.resolve_git),
        )

    def compiled(self) -> list[re.Pattern[str]]:
        return [re.compile(p) for p in self.task_patterns]


@dataclass(frozen=True, slots=True)
class GitFacts:
    """What the edge found for a directory: the main worktree (``root``) and the remote."""

    root: str
    remote: str | None = None


def _path(cwd: str) -> PurePosixPath | PureWindowsPath:
    return PureWindowsPath(cwd) if "\\" in cwd else PurePosixPath(cwd)


def last_component(cwd: str | None) -> str | None:
    """The last component of a working directory (Windows paths too)."""
    if not cwd:
        return None
    return _path(cwd).name or cwd


def without_credentials(url: str) -> str:
    """A remote URL without the ``user:token@`` a credential helper-less clone keeps in it."""
    return re.sub(r"^([a-z][a-z0-9+.-]*://)[^/@\s]*@", r"\1", url.strip(), flags=re.I)


def remote_parts(url: str | None) -> tuple[str | None, str | None]:
    """``(owner, name)`` of a remote: ``git@host:owner/name.git``, ``https://host/o/n``,
    ``ssh://git@host:22/group/sub/name.git`` (owner = the path before the name)."""
    if not url:
        return None, None
    text = without_credentials(url).rstrip("/")
    m = re.match(r"^[a-z][a-z0-9+.-]*://[^/]+/(.+)$", text, re.I) or re.match(
        r"^(?:[^@/\s]+@)?[^:/\s]+:(?!//)(.+)$", text
    )
    path = m.group(1) if m else text
    parts = [p for p in path.split("/") if p]
    if not parts:
        return None, None
    name = parts[-1].removesuffix(".git") or None
    owner = "/".join(parts[:-1]) or None
    return owner, name


def repo_by_path(cwd: str | None, known: Mapping[str, str]) -> tuple[str | None, str | None]:
    """``(repo, root)`` for a directory git cannot be asked about (gone, or never a repo):
    the known root it is at or under, else a sibling named ``<repo>-…`` / ``<repo>_…`` of a
    known root, else its last component (no root)."""
    if not cwd:
        return None, None
    if not known:
        return last_component(cwd), None
    path = _path(cwd)
    best: tuple[int, str, str] | None = None
    for root, name in known.items():
        rp = _path(root)
        if type(rp) is not type(path):
            continue
        inside = path == rp or rp in path.parents
        if inside and (best is None or len(root) > best[0]):
            best = (len(root), name, root)
    if best:
        return best[1], best[2]
    for ancestor in (path, *path.parents):
        for root, name in known.items():
            rp = _path(root)
            if type(rp) is not type(ancestor) or rp.parent != ancestor.parent:
                continue
            if ancestor.name.startswith((rp.name + "-", rp.name + "_")):
                return name, root
    return last_component(cwd), None


def domain_of(repo: str | None, owner: str | None, naming: Naming) -> str:
    """The configured domain of ``owner/repo`` or ``repo``, else the remote's owner (its
    last path part for a nested group), else the default."""
    for key in (f"{owner}/{repo}" if owner and repo else None, repo):
        if key and key in naming.domains:
            return naming.domains[key]
    if owner:
        return owner.rsplit("/", 1)[-1]
    return naming.default_domain


def attribute(
    cwd: str | None,
    git: GitFacts | None,
    known: Mapping[str, tuple[str, str | None]],
    naming: Naming,
) -> tuple[str | None, str | None, str, str | None]:
    """``(repo, repo_root, domain, remote)`` of a working directory from what git told;
    ``known`` maps the roots resolved before to their ``(repo, domain)``."""
    if git is None:
        repo, root = repo_by_path(cwd, {r: v[0] for r, v in known.items()})
        domain = known[root][1] if root is not None and root in known else None
        return repo, root, domain or domain_of(repo, None, naming), None
    owner, name = remote_parts(git.remote)
    repo = name or last_component(git.root)
    return repo, git.root, domain_of(repo, owner, naming), git.remote


def _match(text: str | None, patterns: Sequence[re.Pattern[str]]) -> str | None:
    if not text:
        return None
    for pattern in patterns:
        for m in pattern.finditer(text):
            ref = m.groupdict().get("ref") or m.group(0)
            if ref.split("-", 1)[0] in NOT_TASKS:
                continue
            return ref
    return None


def task_ref(
    branch: str | None,
    first_prompt: str | None,
    commit_messages: Iterable[str],
    patterns: Sequence[re.Pattern[str]],
) -> str | None:
    """The task a session works on: the branch name, then the first prompt, then the commit
    messages (first match of the patterns in each); a numbered branch gives ``#N``."""
    found = _match(branch, patterns)
    if found:
        return found
    if branch and branch not in ("main", "master", "HEAD"):
        m = _BRANCH_NUMBER.search(branch)
        if m:
            return f"#{int(m.group(1))}"
    found = _match(first_prompt, patterns)
    if found:
        return found
    for message in commit_messages:
        found = _match(message, patterns)
        if found:
            return found
    return None


_GIT_COMMIT: Final = re.compile(r"(?:^|[\s;&|(])git\s+(?:-C\s+\S+\s+)?commit\b")


def commit_message(command: str) -> str | None:
    """The message of a ``git commit -m …`` shell command (``-m`` given several times: the
    paragraphs joined), or None when the command makes no commit with a message inline."""
    m = _GIT_COMMIT.search(command)
    if not m:
        return None
    tail = command[m.end() :]
    try:
        words = shlex.split(tail, posix=True)
    except ValueError:  # an unterminated quote (the command was cut short)
        words = shlex.split(tail + '"', posix=True) if tail.count('"') % 2 else tail.split()
    parts: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("&&", "||", ";", "|"):
            break
        if w in ("-m", "--message") and i + 1 < len(words):
            parts.append(words[i + 1])
            i += 2
            continue
        if w.startswith("--message="):
            parts.append(w.split("=", 1)[1])
        elif w.startswith("-m") and len(w) > 2 and not w.startswith("--"):
            parts.append(w[2:])
        elif w.startswith("-") and "m" in w[1:] and not w.startswith("--") and i + 1 < len(words):
            parts.append(words[i + 1])  # -am "msg"
            i += 2
            continue
        i += 1
    return "\n\n".join(parts) if parts else None


def is_commit_command(command: str) -> bool:
    return bool(_GIT_COMMIT.search(command))
