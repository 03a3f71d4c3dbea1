"""Keep secrets out of reports and logs: values of secret-looking environment variables are masked.

A variable is secret when its name ends in ``_KEY``, ``_TOKEN``, ``_SECRET``, ``_PASSWORD`` or
``_CREDENTIALS`` (``OPENAI_API_KEY``, ``GITHUB_TOKEN``, ...) or is a known provider key. Values
shorter than 8 characters are left alone: masking ``true`` or ``1`` everywhere would garble
reports without protecting anything.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterable

SECRET_NAME = re.compile(r"(_KEY|_TOKEN|_SECRET|_PASSWORD|_CREDENTIALS|^AWS_SECRET_ACCESS_KEY|^AZURE_API_KEY)$", re.I)
MIN_LENGTH = 8


def _environment() -> tuple[tuple[str, str], ...]:
    """The environment as a hashable snapshot, cheaply: ``os.environ``'s own item access
    decodes every key and value, which cost ~0.4 ms per call (redact runs per result)."""
    data = getattr(os.environ, "_data", None)  # CPython's encoded mapping, read in C
    if isinstance(data, dict):
        return tuple(data.items())  # bytes pairs, decoded in _pattern
    return tuple(os.environ.items())


def _spellings(value: str, depth: int = 2) -> set[str]:
    """``value`` as it reads inside JSON strings or Python reprs, nested ``depth`` deep.

    A value with a quote or a backslash is spelt differently in the result stream (JSON), and
    twice differently in a message that quotes JSON or a repr (an assertion's) inside it.
    """
    forms = {value}
    for _ in range(depth):
        forms |= {
            spelt
            for form in forms
            for spelt in (json.dumps(form, ensure_ascii=False)[1:-1], json.dumps(form)[1:-1], repr(form)[1:-1])
        }
    return forms


@functools.lru_cache(maxsize=8)
def _pattern(items: tuple[tuple[str, str], ...]) -> tuple[re.Pattern[str] | None, dict[str, str]]:
    decoded = [(os.fsdecode(n), os.fsdecode(v)) if isinstance(n, bytes) else (n, v) for n, v in items]
    secrets = {value: name for name, value in decoded if SECRET_NAME.search(name) and len(value) >= MIN_LENGTH}
    if not secrets:
        return None, {}
    for value, name in list(secrets.items()):
        for form in _spellings(value):
            secrets.setdefault(form, name)
    ordered = sorted(secrets, key=len, reverse=True)  # longest first: a secret containing another
    return re.compile("|".join(re.escape(s) for s in ordered)), secrets


KEY_PATTERNS = [  # things that look like API keys wherever they come from
    re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-]{6,}"),
    re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._\-]{8,}"),
]


def redact(text: str, secrets: Iterable[str] = (), keys: bool = False) -> str:
    """``text`` with every secret environment value replaced by ``[REDACTED:NAME]``.

    ``secrets`` are further values to mask (``[REDACTED]``); ``keys`` also masks anything
    shaped like an API key (``sk-...``, a bearer token), for text from a provider's error.
    """
    if not text:
        return text
    pattern, names = _pattern(_environment())
    if pattern is not None:
        text = pattern.sub(lambda m: f"[REDACTED:{names[m.group(0)]}]", text)
    for value in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(value, "[REDACTED]")
    for key_pattern in KEY_PATTERNS if keys else ():
        text = key_pattern.sub("[REDACTED]", text)
    return text
