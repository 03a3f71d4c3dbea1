"""A message's content parts as a wire or a framework takes them: an attachment's bytes, or
its URL (a data URL for a local file or inline data). ``file://`` parts come resolved by the
loader to ``path`` and ``mime``."""

from __future__ import annotations

import base64
import binascii
import functools
from pathlib import Path
from typing import Any

from .errors import TargetError


def part_bytes(part: dict[str, Any]) -> bytes | None:
    """The bytes of a part's local file (``path``) or of its inline base64 ``data``; None for
    a part given by URL. A ``TargetError`` when the file cannot be read or the data is not base64."""
    if part.get("path"):
        try:
            return Path(part["path"]).read_bytes()
        except OSError as exc:
            raise TargetError(f"cannot read attachment {part['path']}: {exc.strerror or exc}") from None
    if part.get("data"):
        try:
            return base64.b64decode(str(part["data"]), validate=True)
        except binascii.Error:
            raise TargetError(f"a {part.get('type')} part's data is not base64") from None
    return None


def part_url(part: dict[str, Any]) -> str:
    """The part as a URL: a data URL for a local file or inline data, else its ``url`` or
    ``source``; a ``TargetError`` when it has none (or its file cannot be read)."""
    mime = part.get("mime") or "application/octet-stream"
    if part.get("path"):
        return f"data:{mime};base64,{_file_base64(part['path'])}"
    if part.get("data"):
        return f"data:{mime};base64,{part['data']}"
    url = part.get("url") or part.get("source")
    if not url:
        raise TargetError(f"a {part.get('type')} part has no source, url or data")
    return str(url)


@functools.lru_cache(maxsize=64)
def _file_base64(path: str) -> str:
    # Cached: every run of every case resends the same attachment.
    try:
        return base64.b64encode(Path(path).read_bytes()).decode("ascii")
    except OSError as exc:
        raise TargetError(f"cannot read attachment {path}: {exc.strerror or exc}") from None
