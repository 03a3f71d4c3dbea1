"""Strict JSON text, as every line specrun writes is encoded: the stream's, the history's, a
case's content hash. One encoder, made once and reused.

``json.JSONEncoder.encode`` builds a new C encoder (and its Python-level setup) for each call,
which was about a third of the cost of encoding a result's line; the C encoder itself can be
called again and again. It keeps the containers it is inside of (to find cycles) in one dict,
so it is lent to one caller at a time: a call made while it is lent (another thread's, or a
``default`` that encodes JSON itself) takes the standard encoder, which writes the same text.
"""

from __future__ import annotations

import json
import threading
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

_JSON_TEXT = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=str)
_markers: dict[int, Any] = {}
# The arguments JSONEncoder.iterencode gives c_make_encoder for _JSON_TEXT's options (no indent).
_ENCODE = (
    c_make_encoder(_markers, str, encode_basestring, None, ": ", ", ", False, False, False)
    if c_make_encoder is not None
    else None
)
_LENT = threading.Lock()


def to_json(value: Any) -> str:
    """``value`` as strict JSON text (no NaN or Infinity), non-ASCII kept, unknown objects as ``str``.

    The text of ``json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)``. Raises
    ``ValueError``, ``TypeError`` or ``RecursionError`` for what JSON cannot hold (NaN, a cycle,
    a tuple key, a 5,000-digit integer, nesting deeper than the interpreter's recursion limit).
    """
    if _ENCODE is None or not _LENT.acquire(blocking=False):
        return _JSON_TEXT.encode(value)
    try:
        return "".join(_ENCODE(value, 0))
    except BaseException:
        _markers.clear()  # what a failed call left in it: the next call starts empty
        raise
    finally:
        _LENT.release()


def json_line(value: Any) -> str:
    """``to_json(value)``, also checked to be valid UTF-8 (a lone surrogate is not)."""
    text = to_json(value)
    if not text.isascii():
        text.encode("utf-8")  # raises UnicodeEncodeError (a ValueError) for a lone surrogate
    return text
