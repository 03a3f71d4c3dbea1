"""Structured-output assertions: equals, is_json, json_schema, json_path, type.

JSON is the structured output itself, or JSON read from the text (``Response.json``: the whole
text, a fenced block, or the first object/array in prose). ``is_json`` and ``type`` without a
path are stricter: the text must be JSON and nothing else. Registered by the family's
register_assertion_types hook.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

import jsonschema_rs

from specrun.plugin import MISSING, Assertion, AssertionType, Check, EvaluationError, Verdict

from ._common import difference, json_equal, json_type, output_json, show
from ._jsonpath import InvalidPath, compile_path

JSON_TYPES = ["string", "number", "integer", "boolean", "object", "array", "null"]


def _no_json(expected: Any, text: str, what: str = "JSON") -> Verdict:
    return Verdict(False, f"expected {what}, but the output has no JSON; output: {show(text)}", expected, text)


class Equals(AssertionType):
    name = "equals"
    description = "The output equals the value: text exactly, JSON deeply (key order irrelevant)."
    expected_param: ClassVar[str | None] = "value"  # a case's bare `expected` means equals
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {"value": {"description": "The expected output: text, or any JSON value."}},
        "required": ["value"],
    }

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        value = assertion.params["value"]
        response = check.response
        if isinstance(value, str):
            actual: Any = response.text
            if actual == value:
                return Verdict(True, f"output equals {show(value)}", value, actual)
            hint = " (they differ only in surrounding whitespace)" if actual.strip() == value.strip() else ""
            return Verdict(False, f"expected {show(value)}, got {show(actual)}{hint}", value, actual)
        actual = response.json if isinstance(value, dict | list) else output_json(response.content, response.text)
        if actual is MISSING:
            return _no_json(value, response.text, f"JSON equal to {show(value)}")
        diff = difference(value, actual)
        if diff is None:
            return Verdict(True, f"output equals {show(value)}", value, actual)
        return Verdict(
            False,
            f"output differs {diff}; expected {show(value)}, got {show(actual)}",
            value,
            actual,
        )


class IsJson(AssertionType):
    name = "is_json"
    description = "The output is JSON: structured, or text that is JSON alone (or in one fenced block)."

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        response = check.response
        value = output_json(response.content, response.text)
        if value is not MISSING:
            return Verdict(True, f"output is JSON ({json_type(value)})", "JSON", value)
        try:
            json.loads(response.text.strip())
            reason = "it is not JSON"
        except ValueError as exc:
            reason = str(exc)
        return Verdict(
            False,
            f"expected JSON, got text ({reason}): {show(response.text)}",
            "JSON",
            response.text,
        )


@functools.lru_cache(maxsize=256)
def _validator(schema_text: str) -> Any:
    # The Rust regex crate for `pattern` and `patternProperties`: linear-time matching, like the
    # regex assertion, instead of fancy-regex's backtracking cut off at a limit.
    return jsonschema_rs.validator_for(json.loads(schema_text), pattern_options=jsonschema_rs.RegexOptions())


def _schema_problem(schema: Any) -> str | None:
    try:
        jsonschema_rs.meta.validate(schema)
        _validator(json.dumps(schema, sort_keys=True))
    except Exception as exc:  # jsonschema_rs raises ValidationError or ReferencingError
        problem = f"invalid JSON Schema: {str(exc).splitlines()[0]}"
        if problem.endswith('is not a "regex"'):
            problem += " (patterns match in linear time: no lookaround or backreferences)"
        return problem
    return None


def _where(path: Iterable[str | int]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


class JsonSchema(AssertionType):
    name = "json_schema"
    description = "The output's JSON validates against the JSON Schema."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "schema": {
                "type": ["object", "boolean"],
                "description": "A JSON Schema (2020-12 unless $schema says).",
            }
        },
        "required": ["schema"],
    }

    def problems(self, assertion: Assertion, base_dir: Path) -> Iterable[tuple[str, str]]:
        problem = _schema_problem(assertion.params.get("schema"))
        if problem:
            yield "schema", problem

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        schema = assertion.params["schema"]
        problem = _schema_problem(schema)
        if problem:
            raise EvaluationError(problem)
        document = check.response.json
        if document is MISSING:
            return _no_json(schema, check.response.text, "JSON matching the schema")
        errors = [
            f"at {_where(e.instance_path)}: {e.message}"
            for e in _validator(json.dumps(schema, sort_keys=True)).iter_errors(document)
        ]
        if not errors:
            return Verdict(True, "output matches the schema", schema, document)
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        return Verdict(
            False,
            f"output does not match the schema: {'; '.join(errors[:5])}{more}; output: {show(document)}",
            schema,
            document,
            details={"errors": errors},
        )


def _path_problems(assertion: Assertion) -> Iterable[tuple[str, str]]:
    path = assertion.params.get("path")
    if isinstance(path, str):
        try:
            compile_path(path)
        except InvalidPath as exc:
            yield "path", str(exc)


def _find(assertion: Assertion, check: Check) -> tuple[Any, Any]:
    """The output's JSON and the value at the assertion's ``path`` (``MISSING`` when absent)."""
    try:
        path = compile_path(assertion.params["path"])
    except InvalidPath as exc:
        raise EvaluationError(str(exc)) from None
    document = check.response.json
    if document is MISSING:
        return MISSING, MISSING
    return document, path.find(document)


class JsonPathAssertion(AssertionType):
    name = "json_path"
    description = "The value at a JSON path equals value (a list: one of); no value: the path exists."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "$.a.b[0], a.b, or a JMESPath expression.",
            },
            "value": {"description": "The expected value; a list against a single value means one of."},
        },
        "required": ["path"],
    }

    def problems(self, assertion: Assertion, base_dir: Path) -> Iterable[tuple[str, str]]:
        return _path_problems(assertion)

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        path: str = assertion.params["path"]
        expected = assertion.params.get("value", MISSING)
        shown_expected = None if expected is MISSING else expected
        document, found = _find(assertion, check)
        if document is MISSING:
            return _no_json(shown_expected, check.response.text, f"JSON with {path}")
        if found is MISSING:
            return Verdict(False, f"path {path} not found in {show(document)}", shown_expected, None)
        if expected is MISSING:
            return Verdict(True, f"path {path} exists: {show(found)}", None, found)
        if isinstance(expected, list) and not isinstance(found, list):
            passed = any(json_equal(e, found) for e in expected)
            verb = "is" if passed else "is not"
            return Verdict(
                passed,
                f"{path} = {show(found)}, which {verb} one of {show(expected)}",
                expected,
                found,
            )
        diff = difference(expected, found, path)
        if diff is None:
            return Verdict(True, f"{path} = {show(found)}", expected, found)
        return Verdict(False, f"{path} differs {diff}", expected, found)


def is_type(value: Any, name: str) -> bool:
    """True when ``value`` has JSON type ``name`` (``integer``: a whole number, 2.0 included)."""
    if name == "integer":
        return json_type(value) == "number" and float(value).is_integer()
    return json_type(value) == name


class Type(AssertionType):
    name = "type"
    description = "The output (or the value at path) has the JSON type."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "value": {"enum": JSON_TYPES, "x-kind": "JSON type"},
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "Check the value at this JSON path.",
            },
        },
        "required": ["value"],
    }

    def problems(self, assertion: Assertion, base_dir: Path) -> Iterable[tuple[str, str]]:
        return _path_problems(assertion)

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        wanted: str = assertion.params["value"]
        response = check.response
        if "path" in assertion.params:
            where = assertion.params["path"]
            document, actual = _find(assertion, check)
            if document is MISSING:
                return _no_json(wanted, response.text, f"JSON with {where}")
            if actual is MISSING:
                return Verdict(False, f"path {where} not found in {show(document)}", wanted, None)
        else:
            where = "output"
            if response.content is None:
                actual = None
            else:
                actual = output_json(response.content, response.text)
                if actual is MISSING:
                    actual = response.text
        got = json_type(actual)
        if got == "number" and wanted == "integer" and is_type(actual, "integer"):
            got = "integer"
        passed = is_type(actual, wanted)
        return Verdict(passed, f"{where} is {got} {show(actual)} (expected {wanted})", wanted, got)
