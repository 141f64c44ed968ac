"""The secret formats Helix masks: one ``Rule`` per family, as data.

Each rule names its **triggers** — plain substrings every match contains, found for all
rules at once by one Aho-Corasick pass (``helixd.core.redact``) — and a **finder** that looks
at the bytes around one trigger hit and returns the spans to mask (the secret only: a key,
a header name or a scheme such as ``Bearer`` stays readable).

Where the formats come from (docs/privacy.md has the table and the limits):

* vendor documentation of each token format (prefix, alphabet, length): AWS IAM identifier
  prefixes, GitHub's 2021 token formats, GitLab's token prefixes, Slack token types, Stripe,
  npm, Hugging Face, Google API keys and OAuth tokens, OpenAI and Anthropic keys;
* the maintained rule sets of gitleaks (``config/gitleaks.toml``: rule ids such as
  ``aws-access-token``, ``github-pat``, ``gitlab-pat``, ``slack-bot-token``, ``jwt``,
  ``private-key``, ``generic-api-key``) and detect-secrets (``detect_secrets/plugins``: the
  keyword, basic-auth, JWT and private-key detectors) for what each family looks like in
  the wild.  The regexes here are written for this module: span-exact, bytes, and anchored
  at a trigger (see docs/privacy.md for why neither rule set is loaded as is).
"""

from __future__ import annotations

import binascii
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from helixd.core.secret_values import generated, password_literal, placeholder, secret_value

if TYPE_CHECKING:
    from typing import Final

Span = tuple[int, int]
Finder = Callable[[bytes, int, int], Sequence[Span]]
NOTHING: Final[tuple[Span, ...]] = ()


class Rule:
    """A family of secrets: its label, its triggers and its finder.  ``boundary``: the
    first span must start a token (not continue a word; an escape such as ``\\n`` before
    it counts as a separator)."""

    __slots__ = ("boundary", "find", "label", "triggers")

    def __init__(
        self, label: bytes, triggers: Iterable[bytes], find: Finder, boundary: bool = False
    ) -> None:
        self.label = label
        self.triggers = tuple(triggers)
        self.find = find
        self.boundary = boundary


class Regex:
    """A bytes regex compiled on its first use: the hook client imports this module for
    one small payload and needs few of them."""

    __slots__ = ("_compiled", "_source")

    def __init__(self, source: bytes) -> None:
        self._source = source
        self._compiled: re.Pattern[bytes] | None = None

    def _get(self) -> re.Pattern[bytes]:
        if self._compiled is None:
            self._compiled = re.compile(self._source)
        return self._compiled

    def match(self, data: bytes, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[bytes] | None:
        return self._get().match(data, pos, endpos)

    def search(
        self, data: bytes, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[bytes] | None:
        return self._get().search(data, pos, endpos)


def spellings(*parts: str) -> list[bytes]:
    """A keyword as people write it: lower, UPPER or Title case, camelCase and
    ``APIKey``-style, the parts joined by nothing, ``_``, ``-`` or a space (``api_key``,
    ``API_KEY``, ``apiKey``, ``ApiKey``, ``X-Api-Key``, ``Secret Access Key``…)."""
    lower = [p.lower() for p in parts]
    casings = [
        lower,
        [p.upper() for p in parts],
        [p.title() for p in parts],
        lower[:1] + [p.title() for p in parts[1:]],
        [parts[0].upper()] + [p.title() for p in parts[1:]],
    ]
    joiners = ("",) if len(parts) == 1 else ("", "_", "-", " ")
    return sorted({j.join(words).encode() for words in casings for j in joiners})


# ---------------------------------------------------------------------------------------
# Fixed-format tokens: a vendor prefix, then the token's alphabet.


def _prefixed(
    label: bytes, prefixes: Iterable[bytes], pattern: bytes, check: Callable[[bytes], bool] | None
) -> Rule:
    regex = Regex(pattern)

    def find(data: bytes, start: int, end: int) -> Sequence[Span]:
        m = regex.match(data, start)
        if m is None or (check is not None and not check(m.group())):
            return NOTHING
        return ((start, m.end()),)

    return Rule(label, prefixes, find, boundary=True)


def _has_digit(token: bytes) -> bool:
    return any(48 <= b <= 57 for b in token)


def _long_or_has_digit(token: bytes) -> bool:
    return len(token) >= 35 or _has_digit(token)


# Near a key id, a secret access key is a run of 40 or more of its characters, whatever
# follows it: an "=" (a padded or a quoted assignment), or more of them (a session token
# glued on). Requiring exactly 40 with no "=" after let "AKIA…,<secret>=" through (found
# by tests/test_properties_trust.py). Each run in the window is tried in turn (a path or a
# long word before the secret is passed over, not taken as the only candidate), and the
# one masked extends past the window over the rest of its run, up to ``_AWS_RUN_MAX``.
_AWS_SECRET_NEAR = Regex(rb"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40,}")
_AWS_RUN_REST = Regex(rb"[A-Za-z0-9/+=]*")
_AWS_NEAR: Final = 240  # bytes after a key id where its secret is looked for
_AWS_RUN_MAX: Final = 4096  # a session token is ~0.4–1.1 KB; RedactStream holds back 64 KiB


def _aws_key_id() -> Rule:
    """An access key id, and a secret access key written within 240 bytes after it (CSV
    exports, ``aws configure list``, two environment lines)."""
    regex = Regex(rb"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])")

    def find(data: bytes, start: int, end: int) -> Sequence[Span]:
        m = regex.match(data, start)
        if m is None:
            return NOTHING
        pos, starts_before = m.end(), m.end() + _AWS_NEAR  # a run starting in the window
        window = min(starts_before + 40, len(data))  # with its first 40 characters
        while (near := _AWS_SECRET_NEAR.search(data, pos, window)) is not None:
            if near.start() >= starts_before:
                break
            if generated(near.group()):
                rest = _AWS_RUN_REST.match(data, near.end(), near.start() + _AWS_RUN_MAX)
                return ((start, m.end()), (near.start(), rest.end() if rest else near.end()))
            pos = near.end()
        return ((start, m.end()),)

    prefixes = [b"AKIA", b"ASIA", b"ABIA", b"ACCA", b"A3T"]
    return Rule(b"aws-key", prefixes, find, boundary=True)


# (label, prefixes, regex from the prefix on, extra check) — sources in docs/privacy.md.
_FIXED: Final = (
    (
        b"github-token",
        [b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"],
        rb"gh[pousr]_[A-Za-z0-9]{30,255}",
        None,
    ),
    (b"github-token", [b"github_pat_"], rb"github_pat_[A-Za-z0-9_]{30,255}", None),
    (
        b"gitlab-token",
        [
            b"glpat-",
            b"gldt-",
            b"glft-",
            b"glsoat-",
            b"glrt-",
            b"glcbt-",
            b"glimt-",
            b"glptt-",
            b"glagent-",
            b"gloas-",
            b"glffct-",
            b"glwt-",
            b"glcdt-",
        ],
        rb"gl[a-z]{1,6}-[0-9A-Za-z_.\-]{20,255}",
        None,
    ),
    (b"gitlab-token", [b"GR1348941"], rb"GR1348941[0-9A-Za-z_\-]{20,255}", None),
    # OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-), Anthropic (sk-ant-api03-,
    # sk-ant-admin01-, sk-ant-oat01-), OpenRouter (sk-or-v1-), DeepSeek: all "sk-".
    (b"api-key", [b"sk-"], rb"sk-[A-Za-z0-9_\-]{20,400}", _long_or_has_digit),
    (b"google-key", [b"AIza"], rb"AIza[0-9A-Za-z_\-]{35,}", None),
    (b"google-token", [b"ya29."], rb"ya29\.[0-9A-Za-z_\-]{20,}", None),
    (b"google-secret", [b"GOCSPX-"], rb"GOCSPX-[0-9A-Za-z_\-]{20,}", None),
    (b"google-token", [b"1//0"], rb"1//0[0-9A-Za-z_\-]{30,}", None),
    (
        b"slack-token",
        [b"xox", b"xapp-"],
        rb"(?:xox(?:[abposr]|e(?:\.xox[bp])?)|xapp)-[0-9A-Za-z\-]{10,}",
        None,
    ),
    (
        b"stripe-key",
        [b"sk_live_", b"rk_live_", b"sk_test_", b"rk_test_", b"sk_prod_", b"rk_prod_"],
        rb"[rs]k_(?:live|test|prod)_[0-9A-Za-z]{10,}",
        None,
    ),
    (b"stripe-key", [b"whsec_"], rb"whsec_[0-9A-Za-z]{20,}", None),
    (b"npm-token", [b"npm_"], rb"npm_[A-Za-z0-9]{36,}", None),
    (b"hf-token", [b"hf_"], rb"hf_[A-Za-z0-9]{30,}", None),
    (b"hf-token", [b"api_org_"], rb"api_org_[A-Za-z0-9]{30,}", None),
    (b"xai-key", [b"xai-"], rb"xai-[A-Za-z0-9]{40,}", None),
    (b"api-key", [b"gsk_"], rb"gsk_[A-Za-z0-9]{40,}", None),  # Groq
    (b"api-key", [b"pplx-"], rb"pplx-[A-Za-z0-9]{40,}", None),  # Perplexity
    (b"api-key", [b"r8_"], rb"r8_[A-Za-z0-9]{30,}", None),  # Replicate
    (b"api-key", [b"pypi-AgE"], rb"pypi-AgE[A-Za-z0-9_\-]{50,}", None),
    (b"api-key", [b"dop_v1_", b"doo_v1_", b"dor_v1_"], rb"do[opr]_v1_[a-f0-9]{64}", None),
    (b"api-key", [b"lin_api_"], rb"lin_api_[A-Za-z0-9]{40,}", None),  # Linear
    (b"api-key", [b"dckr_pat_"], rb"dckr_pat_[A-Za-z0-9_\-]{20,}", None),  # Docker Hub
    (b"api-key", [b"hvs.", b"hvb."], rb"hv[sb]\.[A-Za-z0-9_\-]{24,}", None),  # Vault
    (b"api-key", [b"sbp_"], rb"sbp_[a-f0-9]{40}", None),  # Supabase
    (b"api-key", [b"SG."], rb"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}", None),
    (b"api-key", [b"AGE-SECRET-KEY-1"], rb"AGE-SECRET-KEY-1[0-9A-Z]{58}", None),
    # A JWT (RFC 7519): two base64url JSON objects ('{"' -> eyJ, '{ "' -> eyAi,
    # '{\n' -> ewo) and a signature, which may be empty.
    (
        b"jwt",
        [b"eyJ", b"eyAi", b"ewog"],
        rb"e[yw][A-Za-z0-9_\-]{10,}\.e[yw][A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*",
        None,
    ),
)


def _slack_webhook() -> Rule:
    regex = Regex(
        rb"hooks\.slack\.com\\?/(?:services|workflows|triggers)\\?/([A-Za-z0-9_\\/]{20,})"
    )

    def find(data: bytes, start: int, end: int) -> Sequence[Span]:
        m = regex.match(data, start)
        return (m.span(1),) if m is not None else NOTHING

    return Rule(b"slack-webhook", [b"hooks.slack.com/", b"hooks.slack.com\\/"], find)


# ---------------------------------------------------------------------------------------
# Private keys (PEM, OpenSSH, PGP): from the BEGIN line to the END line; a key cut short
# (no END) is masked to the end of its string, or in plain text over the base64 lines that
# follow.

_PEM_WHOLE = Regex(
    rb"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:[^\"\\]|\\[^\"]){0,20000}?"
    rb"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
)
# The rest of the string the key is in.  An escaped backslash is not taken when a quote
# follows the backslashes: in JSON nested in a JSON string (a row's ``data`` column holding
# a document whose string holds another document), ``\\\"`` ends an inner string, and
# masking its backslashes would unescape the quote and break the inner document.
# A run of escaped backslashes is taken whole (possessive) or not at all: linear in the run
# (``\\\\(?!\\*\")`` rescanned the rest of the run at every pair: 0.6 s for 38 kB).
_STRING_REST = Regex(
    rb"(?:[^\"\\\r\n\x80-\xff]|\\[^\"\\\r\n\x80-\xff]|(?:\\\\)++(?!\\?\")){0,20000}"
)


_PEM_BODY_LINE = Regex(rb"\r?\n[A-Za-z0-9+/=]{16,100}(?=\r?\n|$)")


def _private_key(data: bytes, start: int, end: int) -> Sequence[Span]:
    begin = data.rfind(b"-----BEGIN", max(start - 60, 0), start)
    if begin < 0:
        return NOTHING
    m = _PEM_WHOLE.match(data, begin)
    if m is not None:
        return ((begin, m.end()),)
    rest = _STRING_REST.match(data, end)
    stop = rest.end() if rest else end
    while (line := _PEM_BODY_LINE.match(data, stop)) is not None:  # plain text: raw lines
        stop = line.end()
    return ((begin, stop),)


# ---------------------------------------------------------------------------------------
# Key-values: a keyword ending a key, a separator, a value judged by secret_values.

_TERMINATORS: Final = (b'"', b"'", b"=", b":", b" ", b"\t", b"\\")
_SEP = Regex(rb"(?:\\{0,15}[\"'])?\]?([ \t]*)(:=|=>|[:=](?!=))([ \t]*)(\\{0,15}[\"'`])?")
_QUOTED_VALUE = Regex(rb"[!#-&(-\[\]-~]{1,256}")  # printable ASCII, no space/quote/\
_BARE_VALUE = Regex(rb"[A-Za-z0-9_\-.+/=~!@#%^*?$]{1,256}")
_CLOSERS: Final = frozenset((b'"', b"'", b"\\", b"`"))

Judge = Callable[[bytes, bool, bytes], bool]


def _key_value(data: bytes, start: int, end: int, judge: Judge) -> Sequence[Span]:
    """The value after a key: quoted (a literal), or bare — then not a word after
    ``name = `` (an assignment in code), ``--name `` (an option in prose) or ``name:`` with
    no space (``passwd:gecos``), which are names far more often than secrets."""
    m = _SEP.match(data, end - 1)
    words_are_names = False
    if m is not None:
        quoted, at = m.group(4) is not None, m.end()
        op, spaced = m.group(2), bool(m.group(1))
        if not quoted and op == b":" and not m.group(3):
            return NOTHING
        words_are_names = spaced and op != b":"
    elif data[end - 1] == 0x20 and data[start - 2 : start] == b"--":  # --password VALUE
        quoted, at, words_are_names = False, end, True
    else:
        return NOTHING
    v = (_QUOTED_VALUE if quoted else _BARE_VALUE).match(data, at)
    if v is None:
        return NOTHING
    value, after = v.group(), data[v.end() : v.end() + 1]
    if quoted and after not in _CLOSERS:
        return NOTHING  # words with spaces: prose or a message, not a literal secret
    if words_are_names and not quoted and value.isalpha():
        return NOTHING
    return ((at, v.end()),) if judge(value, quoted, after) else NOTHING


def _keyword_rule(label: bytes, words: Sequence[Sequence[str]], judge: Judge) -> Rule:
    triggers = [s + t for w in words for s in spellings(*w) for t in _TERMINATORS]
    return Rule(label, triggers, lambda d, s, e: _key_value(d, s, e, judge))


PASSWORD_WORDS: Final = (("password",), ("passwd",), ("passphrase",))
SECRET_WORDS: Final = (
    ("secret",),
    ("token",),
    ("auth",),
    ("pass",),
    ("credential",),
    ("credentials",),
    *((kind, "key") for kind in ("api", "access", "secret", "private", "signing", "master")),
    ("encryption", "key"),
)


# ---------------------------------------------------------------------------------------
# HTTP credentials: Authorization headers, Bearer and Basic anywhere, URL user:password@,
# curl -u user:password.

_CREDENTIAL = rb"[A-Za-z0-9\-._~+/]{8,}=*"
_AUTH_VALUE = Regex(
    rb"(?:\\{0,15}[\"'])?[ \t]*[:=][ \t]*(?:\\{0,15}[\"'])?[ \t]*"
    rb"(?:[A-Za-z][A-Za-z0-9_\-]{1,20}[ \t]+)?(" + _CREDENTIAL + rb")"
)
_BEARER_VALUE = Regex(_CREDENTIAL)
_BASIC_VALUE = Regex(rb"[A-Za-z0-9+/]{6,}={0,2}")
_URL_USERINFO = Regex(rb":(?:\\?/){2}[^\s/?#@:\"'\\<>\[\]]{0,128}:([^\s/?#@\"'\\<>]{1,256})@")
_CURL_USER = Regex(rb"[ =](?:\\{0,15}[\"'])?[^\s:\"'\\/@]{1,64}:([^\s\"'\\@]{3,128})")


def _credential_like(token: bytes) -> bool:
    """A header credential, not a word: has a digit, both cases, or token punctuation."""
    if placeholder(token):
        return False
    chars = set(token)
    lower = token.lower()
    return _has_digit(token) or lower != token != token.upper() or not chars.isdisjoint(b"-._~+/=")


def _authorization(data: bytes, start: int, end: int) -> Sequence[Span]:
    m = _AUTH_VALUE.match(data, end - 1)
    if m is None or not _credential_like(m.group(1)):
        return NOTHING
    return (m.span(1),)


def _bearer(data: bytes, start: int, end: int) -> Sequence[Span]:
    m = _BEARER_VALUE.match(data, end)
    if m is None or len(m.group()) < 16 or not _credential_like(m.group()):
        return NOTHING
    return (m.span(),)


def _basic(data: bytes, start: int, end: int) -> Sequence[Span]:
    """``Basic <base64 of user:password>``: masked only when it decodes to a pair."""
    m = _BASIC_VALUE.match(data, end)
    if m is None:
        return NOTHING
    token = m.group()
    try:
        decoded = binascii.a2b_base64(token + b"=" * (-len(token) % 4))
    except binascii.Error:
        return NOTHING
    return (m.span(),) if b":" in decoded else NOTHING


def _url_userinfo(data: bytes, start: int, end: int) -> Sequence[Span]:
    m = _URL_USERINFO.match(data, start)
    if m is None or placeholder(m.group(1)):
        return NOTHING
    return (m.span(1),)


def _curl_user(data: bytes, start: int, end: int) -> Sequence[Span]:
    m = _CURL_USER.match(data, end - 1)
    if m is None or placeholder(m.group(1)) or m.group(1).isdigit():
        return NOTHING
    return (m.span(1),)


def _all_rules() -> tuple[Rule, ...]:
    fixed = [_prefixed(label, p, rx, check) for label, p, rx, check in _FIXED]
    auth_triggers = [s + t for s in spellings("authorization") for t in _TERMINATORS]
    return (
        _aws_key_id(),
        *fixed,
        _slack_webhook(),
        Rule(b"private-key", [b"PRIVATE KEY-----", b"PRIVATE KEY BLOCK-----"], _private_key),
        Rule(b"url-password", [b"://", b":\\/\\/"], _url_userinfo),
        Rule(b"basic-auth", [b"-u ", b"--user ", b"--user="], _curl_user),
        Rule(b"authorization", auth_triggers, _authorization),
        Rule(b"bearer-token", [s + b" " for s in spellings("bearer")], _bearer),
        Rule(b"basic-auth", [s + b" " for s in spellings("basic")], _basic),
        _keyword_rule(b"password", PASSWORD_WORDS, password_literal),
        _keyword_rule(b"secret", SECRET_WORDS, secret_value),
    )


RULES: Final = _all_rules()
