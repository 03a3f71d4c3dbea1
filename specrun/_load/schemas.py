"""Load the shipped JSON Schemas and fill their plugin slots from what is installed.

A composed schema, and the validator compiled from it, is made once per set of installed
classes and shared: a run reads its agent files and specrun.yaml against schemas composed from
the same registry, and a process that runs specrun again (the pytest plugin, the Python API,
the tests) has the same classes too. Composing and compiling took 3 ms each time. What these
functions return is shared, so it is never modified.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from importlib.resources import files
from typing import Any

import jsonschema_rs

from .._project.registry import Registry

SCHEMA_BASE = "https://specrun.dev/schemas/"

ENVELOPE = {
    "type": {"type": "string"},
    "negate": {"type": "boolean", "description": "Invert the verdict."},
    "message": {"type": "string", "description": "Shown when the assertion fails."},
}


@functools.cache
def shipped(name: str) -> dict[str, Any]:
    """A schema file from the ``specrun_schemas`` package, e.g. ``shipped("suite")``."""
    text = files("specrun_schemas").joinpath(f"{name}.schema.json").read_text("utf-8")
    return json.loads(text)


def _typed_slot(label: str, classes: dict[str, Any], envelope: dict[str, Any]) -> dict[str, Any]:
    """A mapping whose ``type`` picks one class's parameter schema (if/then keeps errors precise)."""
    branches = []
    for name, cls in classes.items():
        params = copy.deepcopy(cls.params_schema)
        then: dict[str, Any] = {
            "properties": {**envelope, **params.pop("properties", {})},
            "additionalProperties": False,
            **params,
        }
        if cls.description:
            then["description"] = cls.description
        branches.append({"if": {"properties": {"type": {"const": name}}}, "then": then})
    slot: dict[str, Any] = {
        "type": "object",
        "required": ["type"],
        "properties": {"type": {"enum": list(classes), "x-kind": label}},
    }
    if branches:
        slot["allOf"] = branches
    return slot


# What the composed schemas depend on: the classes of the kinds that fill a slot.
_SLOTS = ("assertion", "target", "simulator", "executor")
_MADE_AT_MOST = 16  # schemas (and validators) kept; more are made again when asked for
_made: dict[tuple[Any, ...], Any] = {}
_validators: dict[int, tuple[Any, Any]] = {}


def _made_once(name: str, registry: Registry | None, make: Callable[[], Any]) -> Any:
    """What ``make()`` returns for ``name`` and the classes ``registry`` holds, made once."""
    key = (name, None if registry is None else tuple(tuple(registry.classes(k).items()) for k in _SLOTS))
    made = _made.get(key)
    if made is None:  # (runs in threads of one process may each make it: one is kept, both are the same)
        if len(_made) >= _MADE_AT_MOST:
            _made.clear()
        made = _made[key] = make()
    return made


def validator(schema: dict[str, Any]) -> Any:
    """The compiled validator of ``schema``, compiled once while it is kept (the schema itself is
    held with it, so that no other schema can take its ``id``)."""
    held = _validators.get(id(schema))
    if held is None or held[0] is not schema:
        if len(_validators) >= _MADE_AT_MOST:
            _validators.clear()
        held = _validators[id(schema)] = (schema, jsonschema_rs.Draft202012Validator(schema))
    return held[1]


def compose(registry: Registry) -> dict[str, Any]:
    """The suite schema with its assertion, target and simulator slots filled from ``registry``."""
    return _made_once("suite", registry, lambda: _compose(registry))


def case_schema(registry: Registry) -> dict[str, Any]:
    """One case's schema: the suite schema's ``case``, with its definitions."""
    return _made_once("case", registry, lambda: {"$ref": "#/$defs/case", "$defs": compose(registry)["$defs"]})


def _compose(registry: Registry) -> dict[str, Any]:
    schema = copy.deepcopy(shipped("suite"))
    schema["else"]["x-expect"] = "a list of cases or a mapping with 'cases'"
    defs = schema["$defs"]
    fields = defs.pop("case_fields")
    defs["case"]["properties"] = fields
    defs["defaults"]["properties"] = {k: v for k, v in fields.items() if k != "id"}
    defs["assertion"] = _typed_slot("assertion type", registry.classes("assertion"), ENVELOPE)
    defs["target"] = _typed_slot("target type", registry.classes("target"), {"type": {}})
    simulators = registry.classes("simulator")
    slot = _typed_slot("simulator type", simulators, {"type": {}})
    implied = registry.declaring("simulator", "shorthand")
    if implied is not None:
        # `simulator: {use: id}` is the shorthand of `{type: agent, use: id}`: the simulator declares it
        own = next(b["then"] for b in slot["allOf"] if b["if"]["properties"]["type"]["const"] == implied.name)
        slot = {"if": {"required": ["type"]}, "then": slot, "else": {"type": "object", **own}}
    defs["simulator"] = slot
    return schema


def agent_schema(registry: Registry) -> dict[str, Any]:
    """The agent-file schema, self-contained (the suite schema's defs inlined)."""
    return _made_once("agent", registry, lambda: _agent_schema(registry))


def _agent_schema(registry: Registry) -> dict[str, Any]:
    schema = copy.deepcopy(shipped("agent"))
    schema["$defs"] = compose(registry)["$defs"]
    schema["properties"]["target"] = {"$ref": "#/$defs/target_ref"}
    return schema


def config_schema(registry: Registry | None = None) -> dict[str, Any]:
    """The project-config schema, self-contained, its ``executor`` slot filled from ``registry``
    (without one: any executor name or mapping)."""
    return _made_once("config", registry, lambda: _config_schema(registry))


def _config_schema(registry: Registry | None) -> dict[str, Any]:
    schema = copy.deepcopy(shipped("config"))
    suite = shipped("suite")["$defs"]
    schema["$defs"] = {"duration": suite["duration"], "limits": suite["limits"]}
    schema["properties"]["timeout"] = {"$ref": "#/$defs/duration"}
    schema["properties"]["interrupt_grace"]["$ref"] = "#/$defs/duration"
    schema["properties"]["limits"]["$ref"] = "#/$defs/limits"
    if registry is None:
        return schema
    executors = registry.classes("executor")
    slot = _typed_slot("executor type", executors, {"type": {}})
    described = {"description": schema["properties"]["executor"]["description"]}
    schema["properties"]["executor"] = {"if": {"type": "string"}, "then": {"enum": list(executors)}, "else": slot}
    schema["properties"]["executor"].update(described)
    return schema


def subschema(schema: dict[str, Any], path: list[str | int]) -> Any:
    """Follow a validator's ``schema_path`` through ``schema``, resolving local ``$ref``s."""
    node: Any = schema
    for step in path:
        node = node[step]
        while isinstance(node, dict) and "$ref" in node and node["$ref"].startswith("#/"):
            target: Any = schema
            for part in node["$ref"][2:].split("/"):
                target = target[part]
            node = target
    return node
