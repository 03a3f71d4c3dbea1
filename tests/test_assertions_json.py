"""equals, is_json, json_schema, json_path, type, and the JSON path helper."""

from __future__ import annotations

import pytest
from specrun_plugins.assertions import json_assertions as ja
from specrun_plugins.assertions._jsonpath import InvalidPath, compile_path, to_jmespath
from test_assertions import problems, run

from specrun._core.data import MISSING

# -- equals -----------------------------------------------------------------------------------


async def test_equals_text_is_exact():
    assert (await run(ja.Equals, "OK", value="OK")).passed
    verdict = await run(ja.Equals, "OK\n", value="OK")
    assert not verdict.passed
    assert verdict.message == 'expected "OK", got "OK\\n" (they differ only in surrounding whitespace)'


async def test_equals_structured_output_ignores_key_order():
    verdict = await run(ja.Equals, {"b": 2, "a": [1, {"c": None}]}, value={"a": [1, {"c": None}], "b": 2})
    assert verdict.passed


async def test_equals_parses_json_from_text():
    assert (await run(ja.Equals, '```json\n{"need_search": false}\n```', value={"need_search": False})).passed
    assert (await run(ja.Equals, 'Result: {"a": 1}', value={"a": 1})).passed
    assert (await run(ja.Equals, "[1, 2]", value=[1, 2])).passed


async def test_equals_failure_names_the_difference():
    verdict = await run(ja.Equals, {"a": {"b": 1}}, value={"a": {"b": 2}})
    assert not verdict.passed
    assert "at $.a.b: expected 2, got 1" in verdict.message
    assert verdict.expected == {"a": {"b": 2}} and verdict.actual == {"a": {"b": 1}}


async def test_equals_distinguishes_booleans_from_numbers():
    assert not (await run(ja.Equals, {"n": 1}, value={"n": True})).passed


async def test_equals_without_json_fails_with_the_output():
    verdict = await run(ja.Equals, "no json here", value={"a": 1})
    assert not verdict.passed and "no JSON" in verdict.message and "no json here" in verdict.message


async def test_equals_scalars():
    assert (await run(ja.Equals, 4, value=4)).passed
    assert (await run(ja.Equals, "4", value=4)).passed
    assert (await run(ja.Equals, "4.0", value=4)).passed
    assert not (await run(ja.Equals, "four", value=4)).passed
    assert not (await run(ja.Equals, "true", value=1)).passed
    assert (await run(ja.Equals, 4, value="4")).passed  # a string value compares with the text


# -- is_json ----------------------------------------------------------------------------------


async def test_is_json():
    assert (await run(ja.IsJson, '{"a": 1}')).passed
    assert (await run(ja.IsJson, "```json\n[1, 2]\n```")).passed
    assert (await run(ja.IsJson, {"a": 1})).passed
    verdict = await run(ja.IsJson, 'Sure! {"a": 1}')
    assert not verdict.passed
    assert "Expecting value" in verdict.message and "Sure!" in verdict.message


# -- json_schema ------------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name"],
}


async def test_json_schema_passes():
    assert (await run(ja.JsonSchema, {"name": "Ann", "age": 3}, schema=SCHEMA)).passed
    assert (await run(ja.JsonSchema, 'Here: {"name": "Ann"}', schema=SCHEMA)).passed


async def test_json_schema_fails_with_each_error_located():
    verdict = await run(ja.JsonSchema, {"age": -1}, schema=SCHEMA)
    assert not verdict.passed
    assert '"name" is a required property' in verdict.message
    assert "at $.age:" in verdict.message
    assert len(verdict.details["errors"]) == 2


async def test_json_schema_without_json_fails():
    assert not (await run(ja.JsonSchema, "plain text", schema=SCHEMA)).passed


def test_json_schema_problems():
    assert problems(ja.JsonSchema, schema=SCHEMA) == []
    [(field, message)] = problems(ja.JsonSchema, schema={"type": "objec"})
    assert field == "schema" and message.startswith("invalid JSON Schema:")


# -- json_path --------------------------------------------------------------------------------

DOC = {"need_search": False, "user": {"name": "Ann", "tags": ["a", "b"]}, "note": None}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("$.need_search", False),
        ("need_search", False),
        ("$.user.name", "Ann"),
        ("user.tags[1]", "b"),
        ("$.user.tags[-1]", "b"),
        ("$['user']['name']", "Ann"),
        ("$.note", None),
        ("user.tags[*]", ["a", "b"]),
        ("length(user.tags)", 2),
        ("$", DOC),
    ],
)
async def test_json_path_passes(path, value):
    verdict = await run(ja.JsonPathAssertion, DOC, path=path, value=value)
    assert verdict.passed, verdict.message


async def test_json_path_fails_showing_expected_and_actual():
    verdict = await run(ja.JsonPathAssertion, DOC, path="$.user.name", value="Bob")
    assert not verdict.passed
    assert verdict.message == '$.user.name differs at $.user.name: expected "Bob", got "Ann"'
    assert (verdict.expected, verdict.actual) == ("Bob", "Ann")


async def test_json_path_missing_is_not_null():
    verdict = await run(ja.JsonPathAssertion, DOC, path="$.missing", value=None)
    assert not verdict.passed and "not found" in verdict.message
    assert not (await run(ja.JsonPathAssertion, DOC, path="user.tags[5]")).passed
    assert (await run(ja.JsonPathAssertion, DOC, path="$.note")).passed


async def test_json_path_without_value_means_the_path_exists():
    assert (await run(ja.JsonPathAssertion, DOC, path="$.user")).passed
    assert not (await run(ja.JsonPathAssertion, DOC, path="$.nope")).passed


async def test_json_path_list_against_scalar_means_one_of():
    assert (await run(ja.JsonPathAssertion, DOC, path="$.user.name", value=["Bob", "Ann"])).passed
    verdict = await run(ja.JsonPathAssertion, DOC, path="$.user.name", value=["Bob", "Cy"])
    assert not verdict.passed and "is not one of" in verdict.message
    assert not (await run(ja.JsonPathAssertion, DOC, path="user.tags", value=["b", "a"])).passed


async def test_json_path_reads_json_from_text():
    text = 'Answer:\n```json\n{"need_search": true, "confidence": 0.99}\n```'
    assert (await run(ja.JsonPathAssertion, text, path="$.confidence", value=0.99)).passed
    verdict = await run(ja.JsonPathAssertion, "no json", path="$.a", value=1)
    assert not verdict.passed and "no JSON" in verdict.message


def test_json_path_problems():
    assert problems(ja.JsonPathAssertion, path="$.a.b[0]") == []
    assert problems(ja.JsonPathAssertion, path="items[?price > `10`].name") == []
    [(field, message)] = problems(ja.JsonPathAssertion, path="a[?x>1]")
    assert field == "path" and "backticks" in message
    [(field, message)] = problems(ja.JsonPathAssertion, path="$..name")
    assert field == "path" and "recursive descent" in message


# -- the path helper --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expression"),
    [
        ("$", "@"),
        ("$.a", "a"),
        ("$.a.b[0]", "a.b[0]"),
        ("a.b", "a.b"),
        ("$['a b'].c", '"a b".c'),
        ("$.user-id", '"user-id"'),
        ("$.items[*].name", "items[*].name"),
        ("$[0]", "[0]"),
    ],
)
def test_to_jmespath(path, expression):
    assert to_jmespath(path) == expression


def test_compile_path_walks_simple_paths_and_caches():
    path = compile_path("$.a[0].b")
    assert path.steps == ("a", 0, "b")
    assert path.find({"a": [{"b": None}]}) is None
    assert path.find({"a": [{}]}) is MISSING
    assert path.find({"a": {"0": {"b": 1}}}) is MISSING
    assert compile_path("a.0").find({"a": ["x"]}) == "x"
    assert compile_path("$.a[0].b") is path


def test_compile_path_rejects_bad_expressions():
    with pytest.raises(InvalidPath):
        compile_path("a b")


# -- type -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "wanted"),
    [
        ("hello", "string"),
        ('{"a": 1}', "object"),
        ({"a": 1}, "object"),
        ([1], "array"),
        ("[1, 2]", "array"),
        (3, "integer"),
        (3, "number"),
        (2.5, "number"),
        (True, "boolean"),
        (None, "null"),
        ('Here is JSON: {"a": 1}', "string"),
    ],
)
async def test_type_of_the_output(content, wanted):
    verdict = await run(ja.Type, content, value=wanted)
    assert verdict.passed, verdict.message


async def test_type_fails_naming_both_types():
    verdict = await run(ja.Type, "hello", value="object")
    assert not verdict.passed
    assert verdict.message == 'output is string "hello" (expected object)'
    assert not (await run(ja.Type, 2.5, value="integer")).passed
    assert not (await run(ja.Type, True, value="number")).passed


async def test_type_at_a_path():
    doc = {"count": 3, "ratio": 0.5, "items": [], "none": None}
    assert (await run(ja.Type, doc, value="integer", path="$.count")).passed
    assert (await run(ja.Type, doc, value="array", path="items")).passed
    assert (await run(ja.Type, doc, value="null", path="$.none")).passed
    verdict = await run(ja.Type, doc, value="string", path="$.ratio")
    assert not verdict.passed and "$.ratio is number 0.5 (expected string)" == verdict.message
    missing = await run(ja.Type, doc, value="null", path="$.absent")
    assert not missing.passed and "not found" in missing.message


def test_type_problems():
    assert problems(ja.Type, value="number", path="$.a") == []
    assert problems(ja.Type, value="number", path="a[?b==1]")[0][0] == "path"
