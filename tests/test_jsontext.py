"""The JSON text of every line specrun writes (specrun._core.jsontext): the text of
``json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)``, made by one C encoder
reused call after call (building an encoder per call was a third of a result line's cost)."""

from __future__ import annotations

import json
import math
import re
import threading
from unittest import mock

import pytest

from specrun._core.data import MISSING
from specrun._core.jsontext import json_line, to_json
from specrun._load.documents import load_json


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)


VALUES = [
    {"type": "result", "id": "c-1", "score": 1.0, "output": 'é 😀 \u2028 \x00 "q"', "n": [1, 2.5, None, True]},
    [[{"role": "user", "content": "hi"}], MISSING, [], {}, {"k": {"deep": [[], [{}]]}}, None],
    "a string",
    3.25,
    10**30,
    [],
]


@pytest.mark.parametrize("value", VALUES)
def test_same_text_as_json_dumps(value):
    assert to_json(value) == _dumps(value)


def test_what_json_cannot_hold_raises_as_before_and_the_next_call_is_clean():
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        to_json({"a": [loop]})
    with pytest.raises(ValueError, match="Out of range float"):
        to_json([{"x": math.nan}])
    shared = [1]
    # a failed call left nothing behind: a list seen in it is no cycle now
    assert to_json([shared, shared]) == "[[1], [1]]"
    with pytest.raises(UnicodeEncodeError):
        json_line(["\ud800"])


def test_encoder_is_not_rebuilt_per_call():
    """A result line is encoded without JSONEncoder.iterencode (which makes a C encoder per
    call); on main every to_json went through it."""
    with mock.patch.object(json.JSONEncoder, "iterencode", side_effect=AssertionError("rebuilt")):
        assert to_json({"a": [1, "b"]}) == '{"a": [1, "b"]}'


def test_reentrant_and_threaded_calls_take_the_standard_encoder():
    class Shows:  # its str encodes JSON itself, while the shared encoder is lent
        def __str__(self) -> str:
            return to_json({"inner": [1]})

    assert to_json([Shows(), {"b": 2}]) == _dumps([Shows(), {"b": 2}])
    texts: list[str] = []
    value = {"rows": [{"i": i, "s": "x" * 50} for i in range(200)]}
    workers = [threading.Thread(target=lambda: texts.extend(to_json(value) for _ in range(50))) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert set(texts) == {_dumps(value)}


@pytest.mark.parametrize(
    "text", ['{"id": "a"}', ' {"id": "a"}', '{"id": "a"}\r', "\ufeff{}", '{"a": 1}x', "[1, 2", "", "NaN", '"x"']
)
def test_case_lines_read_as_json_loads_reads_them(text):
    """A case line is read by the C scanner alone when it is one value with nothing around it;
    anything else gives json.loads' own value or error."""
    try:
        expected: object = json.loads(text)
    except ValueError as exc:
        with pytest.raises(type(exc), match=re.escape(str(exc))):
            load_json(text)
    else:
        assert repr(load_json(text)) == repr(expected)  # repr: NaN is not equal to itself
