"""A corpus of planted secrets: every family Helix masks, and the places a transcript puts
them.  Values are generated here (seeded), so the repository holds no secret-shaped
literals; shared by ``test_redact.py`` (the module) and ``test_secrets_store.py`` (the whole
store).

``FAMILIES`` maps a name to ``(text, needles)``: ``text`` is what a person or a tool would
write (``password=…``, ``Authorization: Bearer …``, a bare token, a PEM block) and
``needles`` the secret parts of it that must never be stored.  ``POSITIONS`` maps a name to a
function that puts a text into a line the way an agent's log would (start of a JSON string,
after each escape, in a URL, in a header, in a key, in JSON nested in a JSON string, at the
end of a line, in a plain-text line).
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable

import orjson

RNG = random.Random(20260711)
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "_-"


def rand(n: int, alphabet: str = ALNUM) -> str:
    """Random text; with letters and digits both when the alphabet has both (a generated
    token here always does)."""
    mixed = any(c.isdigit() for c in alphabet) and any(c.isalpha() for c in alphabet)
    while True:
        s = "".join(RNG.choice(alphabet) for _ in range(n))
        if not mixed or n < 8 or (any(c.isdigit() for c in s) and any(c.isalpha() for c in s)):
            return s


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def jwt() -> str:
    header = b64url(b'{"alg":"HS256","typ":"JWT"}')
    payload = b64url(orjson.dumps({"sub": rand(12), "iat": 1_767_225_600, "role": "admin"}))
    return f"{header}.{payload}.{b64url(RNG.randbytes(32))}"


def pem(kind: str, lines: int = 6, end: bool = True) -> tuple[str, list[str]]:
    body = [base64.b64encode(RNG.randbytes(48)).decode() for _ in range(lines)]
    block = "BLOCK" if kind == "PGP" else ""
    head = f"-----BEGIN {kind} PRIVATE KEY{' ' + block if block else ''}-----"
    tail = f"-----END {kind} PRIVATE KEY{' ' + block if block else ''}-----"
    text = "\n".join([head, *body, *([tail] if end else [])])
    return text.replace("  ", " "), body


def _tokens() -> dict[str, str]:
    return {
        "aws access key id (AKIA)": "AKIA" + rand(16, string.ascii_uppercase + string.digits),
        "aws temporary key id (ASIA)": "ASIA" + rand(16, string.ascii_uppercase + string.digits),
        "github classic pat (ghp_)": "ghp_" + rand(36),
        "github oauth (gho_)": "gho_" + rand(36),
        "github user-to-server (ghu_)": "ghu_" + rand(36),
        "github server-to-server (ghs_)": "ghs_" + rand(36),
        "github refresh (ghr_)": "ghr_" + rand(36),
        "github fine-grained pat": "github_pat_" + rand(22) + "_" + rand(59),
        "gitlab pat (glpat-)": "glpat-" + rand(20, URLSAFE),
        "gitlab runner (glrt-)": "glrt-" + rand(27, URLSAFE),
        "gitlab deploy (gldt-)": "gldt-" + rand(20, URLSAFE),
        "openai legacy key": "sk-" + rand(20) + "T3BlbkFJ" + rand(20),
        "openai project key": "sk-proj-" + rand(120, URLSAFE),
        "openai service account key": "sk-svcacct-" + rand(60, URLSAFE),
        "anthropic api key": "sk-ant-api03-" + rand(93, URLSAFE) + "AA",
        "anthropic oauth token": "sk-ant-oat01-" + rand(93, URLSAFE) + "AA",
        "google api key": "AIza" + rand(35, URLSAFE),
        "google oauth access token": "ya29." + rand(120, URLSAFE),
        "google oauth client secret": "GOCSPX-" + rand(28, URLSAFE),
        "slack bot token": "xoxb-"
        + rand(12, string.digits)
        + "-"
        + rand(13, string.digits)
        + "-"
        + rand(24),
        "slack user token": "xoxp-"
        + "-".join(rand(12, string.digits) for _ in range(3))
        + "-"
        + rand(32, "0123456789abcdef"),
        "slack app token": "xapp-1-A"
        + rand(10, string.ascii_uppercase + string.digits)
        + "-"
        + rand(13, string.digits)
        + "-"
        + rand(64, "0123456789abcdef"),
        "stripe live secret": "sk_live_" + rand(24),
        "stripe restricted": "rk_live_" + rand(24),
        "stripe test secret": "sk_test_" + rand(24),
        "stripe webhook secret": "whsec_" + rand(32),
        "npm token": "npm_" + rand(36),
        "hugging face token": "hf_" + rand(34, string.ascii_letters),
        "hugging face org token": "api_org_" + rand(34, string.ascii_letters),
        "jwt": jwt(),
    }


def _contexts() -> dict[str, tuple[str, list[str]]]:
    v = {k: rand(n) for k, n in [("a", 24), ("b", 32), ("c", 40), ("d", 28), ("e", 36)]}
    pw = [rand(12), rand(10), rand(14), rand(11), rand(9), rand(13), rand(12)]
    aws_secret = [rand(40, ALNUM + "/+") for _ in range(4)]
    key_id = "AKIA" + rand(16, string.ascii_uppercase + string.digits)
    basic = base64.b64encode(f"deploy:{pw[6]}".encode()).decode()
    docker = base64.b64encode(f"bot:{v['e']}".encode()).decode()
    return {
        "aws secret key (env)": (f"AWS_SECRET_ACCESS_KEY={aws_secret[0]}", [aws_secret[0]]),
        "aws secret key (ini)": (f"aws_secret_access_key = {aws_secret[1]}", [aws_secret[1]]),
        "aws secret key (sts json)": (
            f'{{"AccessKeyId": "{key_id}", "SecretAccessKey": "{aws_secret[2]}"}}',
            [key_id, aws_secret[2]],
        ),
        "aws key pair (csv)": (f"{key_id},{aws_secret[3]}", [key_id, aws_secret[3]]),
        "url credentials (postgres)": (f"postgres://app:{pw[0]}@db.internal:5432/main", [pw[0]]),
        "url credentials (https token)": (
            f"https://x-access-token:{v['a']}@github.com/o/r.git",
            [v["a"]],
        ),
        "url credentials (redis, no user)": (f"redis://:{pw[1]}@cache:6379/0", [pw[1]]),
        "url query password": (
            f"https://api.example.com/login?user=bob&password={pw[2]}&x=1",
            [pw[2]],
        ),
        "url query access_token": (f"https://api.example.com/v1?access_token={v['b']}", [v["b"]]),
        "basic auth header": (f"Authorization: Basic {basic}", [basic]),
        "basic auth (lower case)": (f"authorization: basic {basic}", [basic]),
        "curl -u": (f"curl -u admin:{pw[3]} https://ci.example.com/api", [pw[3]]),
        "curl --user": (f"curl --user deploy:{pw[4]} https://ci.example.com", [pw[4]]),
        "password=": (f"password={pw[5]}", [pw[5]]),
        "DB_PASSWORD=": (f"export DB_PASSWORD={pw[0]}x", [pw[0] + "x"]),
        "PASSWD:": (f"PASSWD: {pw[1]}y", [pw[1] + "y"]),
        '"password": "…"': (f'{{"user": "bob", "password": "{pw[2]}z"}}', [pw[2] + "z"]),
        "passphrase = '…'": (f"passphrase = '{pw[3]}q'", [pw[3] + "q"]),
        "--password VALUE": (f"mysql --password {pw[4]}w -h db", [pw[4] + "w"]),
        "Password: (title case)": (f"Password: {pw[5]}v", [pw[5] + "v"]),
        "secret=": (f"secret={v['c']}", [v["c"]]),
        '"client_secret": "…"': (f'{{"client_secret": "{v["d"]}"}}', [v["d"]]),
        "token=": (f"token={v['e']}", [v["e"]]),
        "GITHUB_TOKEN=": (f"GITHUB_TOKEN={v['a']}1", [v["a"] + "1"]),
        "api_key:": (f"api_key: {v['b']}2", [v["b"] + "2"]),
        "apiKey (js)": (f'const cfg = {{ apiKey: "{v["c"]}3" }}', [v["c"] + "3"]),
        "X-Api-Key header": (f"-H 'X-Api-Key: {v['d']}4'", [v["d"] + "4"]),
        "PRIVATE-TOKEN header": (f"PRIVATE-TOKEN: {v['e']}5", [v["e"] + "5"]),
        ".npmrc _authToken": (f"//registry.npmjs.org/:_authToken={v['a']}6", [v["a"] + "6"]),
        "docker config auth": (f'{{"auths": {{"ghcr.io": {{"auth": "{docker}"}}}}}}', [docker]),
        "Authorization: Bearer": (f"Authorization: Bearer {v['b']}7", [v["b"] + "7"]),
        "authorization: bearer": (f"authorization: bearer {v['c']}8", [v["c"] + "8"]),
        "AUTHORIZATION: BEARER": (f"AUTHORIZATION: BEARER {v['d']}9", [v["d"] + "9"]),
        "Authorization: token": (f"Authorization: token {v['e']}0", [v["e"] + "0"]),
        "Authorization raw value": (f"Authorization: {v['a']}A", [v["a"] + "A"]),
        '"Authorization": "Bearer …"': (f'{{"Authorization": "Bearer {v["b"]}B"}}', [v["b"] + "B"]),
        "Proxy-Authorization": (f"Proxy-Authorization: Basic {basic}", [basic]),
        "bare BEARER": (f"send BEARER {v['c']}C with it", [v["c"] + "C"]),
    }


def _families() -> dict[str, tuple[str, list[str]]]:
    fams: dict[str, tuple[str, list[str]]] = {k: (t, [t]) for k, t in _tokens().items()}
    for kind in ("RSA", "OPENSSH", "EC", "DSA", "ENCRYPTED", "", "PGP"):
        text, body = pem(kind)
        fams[f"private key ({kind or 'PKCS8'})"] = (text, body)
    text, body = pem("RSA", lines=3, end=False)
    fams["private key cut short (no END line)"] = (text, body)
    fams.update(_contexts())
    return fams


FAMILIES = _families()


def enc(text: str) -> bytes:
    """``text`` as the inside of a JSON string."""
    return orjson.dumps(text)[1:-1]


def _line(obj: object) -> bytes:
    return orjson.dumps(obj)


Position = Callable[[str], bytes]
POSITIONS: dict[str, Position] = {
    "start of a JSON string": lambda t: _line({"text": t}),
    "after \\n": lambda t: _line({"text": "first line\n" + t}),
    "after \\t": lambda t: _line({"text": "col\t" + t}),
    "after \\r\\n": lambda t: _line({"text": "windows\r\n" + t}),
    'after \\"': lambda t: _line({"text": 'say "' + t + '" now'}),
    "after \\\\": lambda t: _line({"text": "C:\\tmp\\" + t}),
    "after \\u00e9 (ASCII-only writer)": lambda t: json.dumps({"text": "café" + t}).encode(),
    "after \\u003c (HTML-escaping writer)": lambda t: b'{"text":"\\u003c' + enc(t) + b'\\u003e"}',
    "after \\/": lambda t: b'{"text":"dir\\/' + enc(t) + b'"}',
    "after a percent-escape": lambda t: _line({"text": "q=%20" + t}),
    "after =": lambda t: _line({"text": "export VALUE=" + t}),
    "after :": lambda t: _line({"text": "value: " + t}),
    "in a URL": lambda t: _line({"text": "open https://example.com/cb?code=" + t + "&state=1"}),
    "in a header": lambda t: _line({"text": 'curl -H "X-Custom: ' + t + '" https://x'}),
    "in a key": lambda t: _line({"env": {t: 1}}),
    "JSON nested in a JSON string": lambda t: _line(
        {"name": "shell", "arguments": json.dumps({"cmd": "echo " + t})}
    ),
    "JSON nested twice": lambda t: _line({"a": json.dumps({"b": json.dumps({"c": t})})}),
    "end of a line": lambda t: _line({"text": "it ends with " + t}) + b"\n",
    "end of the data, no newline": lambda t: ("echo " + t).encode(),
    "plain-text line": lambda t: ("note: " + t + "\n").encode(),
}


def is_json(line: bytes) -> bool:
    return line.lstrip().startswith(b"{")
