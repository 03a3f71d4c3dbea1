"""Text assertions, shared helpers, negate through the engine, and suite-level validation.

JSON assertions are in test_assertions_json.py; tools, metrics and script in
test_assertions_tools.py. ``check()`` and ``run()`` here are shared with them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from specrun_plugins.assertions import text
from specrun_plugins.assertions._common import difference, is_subset, json_equal, whole_json

from specrun._core.data import MISSING, Assertion, Case, Context, Location, Response
from specrun._core.errors import EvaluationError, SuiteError
from specrun._core.kinds import AssertionType, Check, Verdict
from specrun._load.loader import Loader
from specrun._project.plugin_manager import get_plugin_manager
from specrun._run import verdicts


def check(content: Any = "", case: Case | None = None, **response: Any) -> Check:
    """A Check around a Response built from ``content`` and ``response`` fields."""
    return Check(
        response=Response(content=content, **response),
        case=case or Case(id="c", location=Location("x.jsonl")),
        context=Context(case_id="c"),
    )


async def run(cls: type[AssertionType], content: Any = "", **params: Any) -> Verdict:
    return await cls().evaluate(Assertion(cls.name, params), check(content))


def problems(cls: type[AssertionType], base_dir: Path = Path("."), **params: Any) -> list[tuple[str, str]]:
    return list(cls().problems(Assertion(cls.name, params), base_dir))


# -- contains and friends -----------------------------------------------------------------------


async def test_contains_passes_and_fails_showing_the_output():
    assert (await run(text.Contains, "the order was shipped", value="shipped")).passed
    verdict = await run(text.Contains, "the order is late", value="shipped")
    assert not verdict.passed
    assert '"shipped"' in verdict.message and "the order is late" in verdict.message
    assert verdict.expected == "shipped" and verdict.actual == "the order is late"


async def test_a_long_output_is_shown_cut_with_its_escapes_intact():
    # 5,000 characters, a quote and a newline right at the cut: shown as the first 199
    # characters of its JSON text, whatever the cut falls on.
    output = "x" * 195 + '"\n' + "y" * 4803
    verdict = await run(text.Contains, output, value="zzz")
    shown = verdict.message.split("; output: ", 1)[1]
    assert shown == json.dumps(output)[:199] + "…"


async def test_contains_a_list_means_every_item():
    verdict = await run(text.Contains, "alpha beta", value=["alpha", "gamma"])
    assert not verdict.passed
    assert verdict.details == {"found": ["alpha"], "missing": ["gamma"]}
    assert verdict.score == 0.5
    assert (await run(text.Contains, "alpha beta", value=["alpha", "beta"])).passed


async def test_contains_is_case_sensitive_unless_asked():
    assert not (await run(text.Contains, "Hello", value="hello")).passed
    assert (await run(text.Contains, "Hello", value="hello", ignore_case=True)).passed


async def test_contains_searches_structured_output_as_json_text():
    assert (await run(text.Contains, {"need_search": True}, value='"need_search": true')).passed
    assert (await run(text.Contains, {"count": 3}, value=3)).passed
    assert (await run(text.Contains, {"ok": True}, value=True)).passed


async def test_not_contains():
    assert (await run(text.NotContains, "all good", value="error")).passed
    verdict = await run(text.NotContains, "an error occurred", value=["error", "fatal"])
    assert not verdict.passed
    assert verdict.details == {"found": ["error"], "missing": ["fatal"]}
    assert '"error"' in verdict.message


async def test_icontains_ignores_case():
    assert (await run(text.IContains, "Order SHIPPED", value="shipped")).passed
    assert (await run(text.IContains, "straße", value="STRASSE")).passed
    assert not (await run(text.IContains, "pending", value="Shipped")).passed


async def test_contains_any():
    assert (await run(text.ContainsAny, "we refund you", value=["refund", "credit"])).passed
    verdict = await run(text.ContainsAny, "no luck", value=["refund", "credit"])
    assert not verdict.passed
    assert "none of" in verdict.message


async def test_contains_all():
    assert (await run(text.ContainsAll, "refund and credit", value=["refund", "credit"])).passed
    verdict = await run(text.ContainsAll, "refund only", value=["refund", "credit"])
    assert not verdict.passed and '"credit"' in verdict.message


async def test_starts_with():
    assert (await run(text.StartsWith, "Hello there", value="Hello")).passed
    verdict = await run(text.StartsWith, "Well, hello", value="Hello")
    assert not verdict.passed and "Well, hello" in verdict.message
    assert (await run(text.StartsWith, "HELLO there", value="hello", ignore_case=True)).passed


# -- regex ------------------------------------------------------------------------------------


async def test_regex_searches_with_value_or_pattern():
    verdict = await run(text.Regex, "call 555-1234 now", value=r"\d{3}-\d{4}")
    assert verdict.passed and verdict.details == {"match": "555-1234", "groups": []}
    assert (await run(text.Regex, "order-42", pattern=r"order-(\d+)")).passed


async def test_regex_fails_and_shows_pattern_and_output():
    verdict = await run(text.Regex, "no digits", value=r"\d+")
    assert not verdict.passed
    assert r"/\d+/" in verdict.message and "no digits" in verdict.message


async def test_regex_flags():
    assert not (await run(text.Regex, "ORDER", value="order")).passed
    assert (await run(text.Regex, "ORDER", value="order", flags="i")).passed
    assert (await run(text.Regex, "a\nb", value="^b$", flags="m")).passed


def test_regex_problems():
    assert problems(text.Regex, value=r"\d+") == []
    [(field, message)] = problems(text.Regex, value="(unclosed")
    assert field == "value" and message.startswith("invalid regex '(unclosed': missing )")
    [(field, _)] = problems(text.Regex, pattern="[a-")
    assert field == "pattern"
    assert problems(text.Regex) == [("value", "give the regex as either 'value' or 'pattern'")]
    assert problems(text.Regex, value="a", pattern="b")[0][1].endswith("not both")
    assert problems(text.Regex, value="a", flags="gi") == [("flags", "unknown regex flag 'g' (allowed: i, m, s, a)")]


async def test_regex_without_a_pattern_is_an_evaluation_error():
    with pytest.raises(EvaluationError):
        await run(text.Regex, "x")


# -- helpers ----------------------------------------------------------------------------------


def test_json_equal_ignores_key_order_but_not_types():
    assert json_equal({"a": 1, "b": [1, {"c": 2}]}, {"b": [1, {"c": 2}], "a": 1})
    assert json_equal(1, 1.0)
    assert not json_equal(True, 1)
    assert not json_equal(0, False)
    assert not json_equal(None, 0)
    assert not json_equal([1, 2], [2, 1])


def test_difference_names_the_first_differing_path():
    assert difference({"a": {"b": [1, 2]}}, {"a": {"b": [1, 3]}}) == "at $.a.b[1]: expected 2, got 3"
    assert difference({"a": 1}, {}) == "at $: missing key 'a'"
    assert difference({}, {"z": 1}) == "at $: unexpected key 'z'"
    assert difference([1], [1, 2]) == "at $: expected 1 items, got 2"


def test_is_subset():
    assert is_subset({"q": "x"}, {"q": "x", "limit": 5})
    assert is_subset({"f": {"a": 1}}, {"f": {"a": 1, "b": 2}})
    assert not is_subset({"q": "x"}, {"q": "y"})
    assert not is_subset({"q": "x"}, "not a mapping")


def test_whole_json():
    assert whole_json(' {"a": 1} ') == {"a": 1}
    assert whole_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert whole_json('Here: {"a": 1}') is MISSING
    assert whole_json("") is MISSING


# -- negate, through the engine ---------------------------------------------------------------


async def test_negate_is_applied_by_the_engine():
    registry = get_plugin_manager().registry
    negated = Assertion("contains", {"value": "error"}, negate=True)
    assert (await verdicts.evaluate(negated, check("all good"), registry)).status == "passed"
    result = await verdicts.evaluate(negated, check("an error"), registry)
    assert result.status == "failed"
    assert 'output contains "error"' in result.message


async def test_raw_verdict_ignores_negate():
    assertion = Assertion("contains", {"value": "x"}, negate=True)
    assert (await text.Contains().evaluate(assertion, check("x"))).passed


# -- suite-level validation -------------------------------------------------------------------

SUITE = """\
cases:
  - id: misspelt
    input: hi
    assertions:
      - type: contains
        valeu: shipped
  - id: bad-regex
    input: hi
    assertions:
      - {type: regex, value: "(oops"}
  - id: bad-path
    input: hi
    assert: {type: json_path, path: "a[?x>1]", value: 1}
  - id: bad-flags
    input: hi
    assert: {type: regex, value: a, flags: g}
  - id: bad-type
    input: hi
    assert: {type: type, value: obj}
  - id: no-script
    input: hi
    assert: {type: script, script: nowhere_module.check}
"""


def test_loader_reports_parameter_mistakes(tmp_path: Path):
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    with pytest.raises(SuiteError) as info:
        Loader(get_plugin_manager().registry).load([suite])
    by_pointer = {p.pointer: p for p in info.value.problems}
    misspelt = by_pointer["cases[0].assertions[0].valeu"]
    assert "unknown field 'valeu'" in misspelt.message and "'value'" in misspelt.message
    assert misspelt.line == 6
    assert "invalid regex '(oops'" in by_pointer["cases[1].assertions[0].value"].message
    assert "invalid path 'a[?x>1]'" in by_pointer["cases[2].assert.path"].message
    assert "cases[3].assert.flags" in by_pointer
    assert "obj" in by_pointer["cases[4].assert.value"].message
    assert "nowhere_module" in by_pointer["cases[5].assert.script"].message


def test_loader_accepts_good_parameters_and_expected_becomes_equals(tmp_path: Path):
    (tmp_path / "checks.py").write_text("def ok(output, input, expected):\n    return True\n")
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        """\
cases:
  - id: a
    input: hi
    expected: {need_search: false}
  - id: b
    input: hi
    assertions:
      - {type: contains_any, value: [x, y], ignore_case: true}
      - {type: tool_called, name: [search, lookup], match: suffix, arguments: {q: x}, times: 1}
      - {type: json_schema, schema: {type: object, required: [a]}}
      - {type: word_count, min: 1, max: 5}
      - {type: script, use: "scripts:checks.ok", options: {limit: 3}}
      - {type: json_path, path: "$.a.b[0]"}
"""
    )
    [loaded] = Loader(get_plugin_manager().registry).load([suite])
    first, second = loaded.cases
    assert [a.type for a in first.assertions] == ["equals"]
    assert first.assertions[0].params == {"value": {"need_search": False}}
    assert len(second.assertions) == 6
