"""Keep secrets out of every output: the console, the stream and reports, error messages, logs.

``redact`` replaces, with ``[REDACTED:NAME]``:

- the value of every environment variable whose name looks secret: it contains ``PASSWD``,
  ``PASSWORD`` or ``SECRET``, or ends in ``KEY``, ``TOKEN`` or ``CREDENTIALS`` after an
  underscore (``OPENAI_API_KEY``, ``DB_PASSWORD_FILE``), when it has 8 characters or more;
- every value specrun itself put into a request, whatever its name (``register``): what
  ``${NAME}`` in a target's config was replaced by (``expand_env``), a model's ``api_key``, a
  URL's password; 4 characters or more;

as typed, and as JSON, a Python repr, HTML or a URL spell it, escaped any number of times (a
secret inside JSON inside a JSON string); and the password of any URL (``scheme://user:…@``).
Shorter values are left alone: masking ``true`` or ``1`` everywhere would garble reports
without protecting anything.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
from collections.abc import Iterable
from typing import Any

SECRET_NAME = re.compile(r"PASSWD|PASSWORD|SECRET|(^|_)(KEY|TOKEN|CREDENTIALS)$", re.I)
MIN_LENGTH = 8  # a value guessed secret from its variable's name
MIN_KNOWN = 4  # a value known to be secret (registered)
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

_registered: dict[str, str] = {}


def register(value: str, name: str) -> None:
    """Mask ``value`` (as ``[REDACTED:name]``) in everything redacted from now on."""
    if len(value) >= MIN_KNOWN:
        _registered.setdefault(value, name)


def expand_env(node: Any, where: str, unset: list[tuple[str, str]]) -> Any:
    """``node`` with each ``${NAME}`` in its strings replaced by environment variable ``NAME``.

    Each value put in is registered (masked in every output). An unset variable stays as
    written and is added to ``unset`` as ``(field, NAME)``, the field dotted from ``where``.
    """
    if isinstance(node, dict):
        return {k: expand_env(v, f"{where}.{k}", unset) for k, v in node.items()}
    if isinstance(node, list):
        return [expand_env(v, f"{where}[{i}]", unset) for i, v in enumerate(node)]
    if not isinstance(node, str):
        return node

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            unset.append((where, name))
            return match.group(0)
        register(os.environ[name], name)
        return os.environ[name]

    return ENV_REF.sub(value, node)


def _environment() -> tuple[tuple[str, str], ...]:
    """The environment as a hashable snapshot, cheaply: ``os.environ``'s own item access
    decodes every key and value, which cost ~0.4 ms per call (redact runs per result)."""
    data = getattr(os.environ, "_data", None)  # CPython's encoded mapping, read in C
    if isinstance(data, dict):
        return tuple(data.items())  # bytes pairs, decoded in _pattern
    return tuple(os.environ.items())


# How encoders spell a character that is not a letter or digit: JSON and repr escape with
# backslashes (doubled at each level of nesting), HTML with entities, URLs with %XX.
_LETTERS = {"\n": "n", "\t": "t", "\r": "r", "\b": "b", "\f": "f"}
_ENTITIES = {'"': "quot", "'": "apos", "&": "amp", "<": "lt", ">": "gt"}


def _char(c: str, first: bool) -> str:
    """A regex for one character of a secret however it is spelt.

    The first character takes at most one backslash: escapes before a match stay outside it
    (harmless), and a long run of backslashes cannot make each position a slow partial match.
    """
    if c.isascii() and c.isalnum():
        return c
    slashes = "\\\\" if first else "\\\\+"
    code = ord(c)
    forms = ["\\\\" if first else "\\\\+"] if c == "\\" else [("\\\\?" if first else "\\\\*") + re.escape(c)]
    if c in _LETTERS:
        forms.append(slashes + _LETTERS[c])
    if code > 0xFFFF:  # JSON's ASCII spelling: a surrogate pair
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        forms += [f"{slashes}u{high:04x}{slashes}u{low:04x}", f"{slashes}U{code:08x}"]
    else:
        forms.append(f"{slashes}u{code:04x}")  # also how some encoders write <, > and & in JSON
    if code < 0x20 or 0x7F <= code < 0x100:
        forms.append(f"{slashes}x{code:02x}")
    if c in _ENTITIES:
        forms.append(f"&(?:amp;)*(?:{_ENTITIES[c]}|#0*{code}|#x0*{code:x});")
    forms.append("".join(f"%(?:25)*{byte:02x}" for byte in c.encode("utf-8")))
    if c == " ":
        forms.append(r"\+")
    return f"(?i:{'|'.join(forms)})"


def spelling(secret: str) -> str:
    """A regex matching ``secret`` as typed or escaped by JSON, repr, HTML or URL encoding, nested."""
    parts: list[str] = []
    for i, c in enumerate(secret):
        if c == "\\" and i and secret[i - 1] == "\\":
            continue  # one token for a run: each level doubles it
        parts.append(_char(c, first=not parts))
    return "".join(parts)


@functools.lru_cache(maxsize=8)
def _secrets(items: tuple[tuple[str, str], ...], known: tuple[tuple[str, str], ...]) -> dict[str, tuple[str, str]]:
    """Every secret value, longest first, with its name and its longest run of letters and digits
    (spelt the same by every encoding: a cheap test of whether a text may hold the secret)."""
    decoded = [(os.fsdecode(n), os.fsdecode(v)) if isinstance(n, bytes) else (n, v) for n, v in items]
    secrets = {value: name for name, value in decoded if SECRET_NAME.search(name) and len(value) >= MIN_LENGTH}
    secrets.update((value, name) for value, name in known if value not in secrets)
    ordered = sorted(secrets, key=len, reverse=True)  # longest first: a secret containing another
    return {s: (secrets[s], max(re.findall(r"[A-Za-z0-9]+", s), key=len, default="")) for s in ordered}


_last: tuple[dict[Any, Any], dict[str, str], dict[str, tuple[str, str]]] | None = None


def _known() -> dict[str, tuple[str, str]]:
    """``_secrets`` of the environment and the registered values as they are now. Compared with
    copies of the last ones first (equal mappings of the same objects compare at once), where
    a snapshot for the cache's key cost most of ``redact``'s time per result."""
    global _last
    data = getattr(os.environ, "_data", None)  # CPython's encoded mapping, read in C
    environment = data if isinstance(data, dict) else dict(os.environ)
    last = _last
    if last is not None and last[0] == environment and last[1] == _registered:
        return last[2]
    known = _secrets(_environment(), tuple(_registered.items()))
    _last = dict(environment), dict(_registered), known
    return known


@functools.lru_cache(maxsize=64)
def _pattern(values: tuple[str, ...]) -> re.Pattern[str]:
    # An empty group ends each secret, so that the match says which one it was (``lastindex``)
    # while each alternative still starts with its first character (re's fast prefix scan).
    return re.compile("|".join(f"{spelling(s)}()" for s in values))


_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s/:@'\"<>]*):(?!\[REDACTED)[^\s/@'\"<>]+@")

KEY_PATTERNS = [  # things that look like API keys wherever they come from
    re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-]{6,}"),
    re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._\-]{8,}"),
]


def redact(text: str, secrets: Iterable[str] = (), keys: bool = False) -> str:
    """``text`` with every secret value replaced by ``[REDACTED:NAME]`` and URL passwords masked.

    ``secrets`` are further values to mask (``[REDACTED]``); ``keys`` also masks anything
    shaped like an API key (``sk-...``, a bearer token), for text from a provider's error.
    """
    if not text:
        return text
    known = _known()
    # (each test first: redact runs on every result, in an environment that usually has no secret)
    present = tuple(value for value, (_, anchor) in known.items() if anchor in text) if known else ()
    if present:
        names = ["", *(known[value][0] for value in present)]
        text = _pattern(present).sub(lambda m: f"[REDACTED:{names[m.lastindex or 0]}]", text)
    for value in sorted({s for s in secrets if s and len(s) >= MIN_KNOWN}, key=len, reverse=True) if secrets else ():
        text = text.replace(value, "[REDACTED]")
    if "://" in text:  # the test first: the pattern alone costs a scan of every word
        text = _URL_PASSWORD.sub(r"\1:[REDACTED]@", text)
    for key_pattern in KEY_PATTERNS if keys else ():
        text = key_pattern.sub("[REDACTED]", text)
    return text


def redact_json(text: str) -> str:
    """``redact`` for text that may be JSON: secrets are masked inside its strings only, so
    that a secret equal to a number or spanning a quote cannot break the document."""
    masked = redact(text)
    if masked == text:
        return text
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return masked
    return json.dumps(_redact_strings(data), ensure_ascii=False)


def redact_data(data: Any) -> Any:
    """A copy of JSON-like ``data`` with every string (keys too) redacted: what ``redact_json``
    makes of it, so a value masked here equals the one the stream and the history keep."""
    return redact(data) if isinstance(data, str) else _redact_strings(copy.deepcopy(data))


def _redact_strings(data: Any) -> Any:
    """Every string (keys too) of decoded JSON, redacted; iterative, as JSON may nest deep."""
    root: list[Any] = [data]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        parent, key = stack.pop()
        value = parent[key]
        if isinstance(value, str):
            parent[key] = redact(value)
        elif isinstance(value, list):
            stack.extend((value, i) for i in range(len(value)))
        elif isinstance(value, dict):
            items = [(redact(k), v) for k, v in value.items()]
            value.clear()
            value.update(items)
            stack.extend((value, k) for k, _ in items)
    return root[0]
