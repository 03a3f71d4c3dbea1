"""Settings of the Python test API (:mod:`specrun.testing`): ``test-config.yaml`` and ``SPECRUN_TEST__*``.

Each setting is taken from the first place that has it:

1. the argument (``Test(mode=..., match_threshold=...)``, ``Test.compare(mode=..., threshold=...)``);
2. the environment: ``SPECRUN_TEST__`` then the key path joined by ``__``
   (``SPECRUN_TEST__MODE``, ``SPECRUN_TEST__THRESHOLD``, ``SPECRUN_TEST__LLM__MODEL``, ...);
   Agent Kernel's ``AK_TEST__*`` names are aliases (the ``SPECRUN_TEST__`` one wins when both are set);
3. the file: ``test-config.yaml`` in the working directory, or the file named by
   ``SPECRUN_TEST_CONFIG`` (alias: Agent Kernel's ``AK_TEST_CONFIG_PATH_OVERRIDE``);
4. the project: inside a specrun project (a ``specrun.yaml`` at or above the working directory),
   its ``judge_model`` (else ``model``), ``embedding_model``, ``model_params``, ``retries`` and
   ``compare_mode``;
5. the default: mode ``fallback``, threshold 0.8 (the ``match`` assertion's), evaluator ``default``.

Using an Agent Kernel name is said once per process, as a :class:`AliasWarning`.

An evaluator decides whether an answer matches. ``default`` (alias ``deepeval``, Agent Kernel's
name, and ``specrun``) is specrun's compare engine, the one behind the ``match`` assertion.
Any other value is a dotted path ``package.module.Class`` to a class following
:class:`Evaluator`, looked up next to the config file, in the working directory, then on
``sys.path``.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import warnings
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .._core.errors import EvaluationError, UsageError
from .._judges.matching import DEFAULT_MODE, MATCH_THRESHOLD, MODES, Mode, compare
from .._models.client import MODEL_ENV

CONFIG_FILE = "test-config.yaml"
CONFIG_ENV = "SPECRUN_TEST_CONFIG"
ENV_PREFIX = "SPECRUN_TEST__"
AK_CONFIG_ENV = "AK_TEST_CONFIG_PATH_OVERRIDE"  # Agent Kernel's names, honoured as aliases
AK_ENV_PREFIX = "AK_TEST__"
BUILTIN_EVALUATORS = ("default", "deepeval", "specrun")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "mode": {"enum": list(MODES)},
        "threshold": {"type": "number", "minimum": 0, "maximum": 1},
        "evaluator": {"type": "string", "minLength": 1},
        "llm": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "model": {"type": "string", "minLength": 1},
                "provider": {"type": "string", "minLength": 1},
                "embedding_model": {"type": "string", "minLength": 1},
                "api_base": {"type": "string", "minLength": 1},
            },
        },
    },
}


class AliasWarning(UserWarning):
    """An Agent Kernel setting name (``AK_TEST__*``) was honoured as its specrun name."""


_announced: set[str] = set()


def _announce(alias: str, name: str) -> None:
    """Say once per process that an Agent Kernel name is read as specrun's."""
    if alias not in _announced:
        _announced.add(alias)
        warnings.warn(f"{alias} is read as {name} (Agent Kernel's name for the setting)", AliasWarning, stacklevel=4)


@dataclass
class LLMConfig:
    """The judge model of llm mode; ``provider`` is prefixed litellm-style (``openai/gpt-4o-mini``).

    ``project_model`` and ``params`` come from the project's ``specrun.yaml`` (``judge_model``
    else ``model``; ``model_params``); ``api_base`` overrides the params' one.
    """

    model: str | None = None
    provider: str | None = None
    embedding_model: str | None = None  # kept for Agent Kernel files and custom evaluators
    api_base: str | None = None
    project_model: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    retries: int | None = None

    @property
    def litellm_model(self) -> str | None:
        """The model as litellm names it, else the project's, else ``$SPECRUN_MODEL``, else None."""
        if not self.model:
            return self.project_model or os.environ.get(MODEL_ENV) or None
        if self.provider and not self.model.startswith(f"{self.provider}/"):
            return f"{self.provider}/{self.model}"
        return self.model

    @property
    def litellm_params(self) -> dict[str, Any]:
        """The litellm arguments of every judge call: the project's, with ``api_base`` over them."""
        return {**self.params, **({"api_base": self.api_base} if self.api_base else {})}


@dataclass
class TestConfig:
    """The resolved settings; ``origin`` says where each came from (``env``, ``file``, ``default``)."""

    __test__ = False  # not a pytest test class

    mode: str = DEFAULT_MODE
    threshold: float = MATCH_THRESHOLD
    evaluator: str = "default"
    llm: LLMConfig = field(default_factory=LLMConfig)
    path: Path | None = None
    origin: dict[str, str] = field(default_factory=dict)

    def resolve(self, mode: Mode | str | None = None, threshold: float | None = None) -> tuple[str, float]:
        """The mode and threshold for one comparison: the arguments win over the settings."""
        chosen = str(mode.value if isinstance(mode, Mode) else mode).lower() if mode is not None else self.mode
        if chosen not in MODES:
            raise ValueError(f"unknown mode {chosen!r} (known: {', '.join(MODES)})")
        value = self.threshold if threshold is None else float(threshold)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"threshold must be from 0 to 1, not {threshold!r}")
        return chosen, value


def _env_settings(environ: Mapping[str, str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    # Agent Kernel's names first, so that specrun's own name for the same setting wins.
    named = sorted(environ.items(), key=lambda item: (not item[0].upper().startswith(AK_ENV_PREFIX), item[0]))
    for name, value in named:
        prefix = next((p for p in (ENV_PREFIX, AK_ENV_PREFIX) if name.upper().startswith(p)), None)
        if prefix is None:
            continue
        keys = [k.lower() for k in name[len(prefix) :].split("__")]
        known = SCHEMA["properties"]
        target = found
        for depth, key in enumerate(keys):
            spec = known.get(key)
            last = depth == len(keys) - 1
            if spec is None or (spec.get("type") == "object") == last:
                names = _env_names()
                raise UsageError(f"{name}: unknown test setting (known: {', '.join(names)})")
            if last:
                target[key] = _env_value(name, key, value)
                if prefix == AK_ENV_PREFIX:
                    _announce(name, ENV_PREFIX + name[len(prefix) :])
            else:
                target = target.setdefault(key, {})
                known = spec["properties"]
    return found


def _env_names() -> list[str]:
    names = []
    for key, spec in SCHEMA["properties"].items():
        for sub in spec.get("properties") or [None]:
            names.append(f"{ENV_PREFIX}{key}{'__' + sub if sub else ''}".upper())
    return names


def _env_value(name: str, key: str, value: str) -> Any:
    value = value.strip()
    if key == "mode" and value.lower() not in MODES:
        raise UsageError(f"{name}={value!r}: unknown mode (known: {', '.join(MODES)})")
    if key == "mode":
        return value.lower()
    if key == "threshold":
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not 0.0 <= number <= 1.0:
            raise UsageError(f"{name}={value!r}: expected a number from 0 to 1")
        return number
    if not value:
        raise UsageError(f"{name} is set but empty")
    return value


def config_path(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> Path | None:
    """The config file in use: ``$SPECRUN_TEST_CONFIG`` (else ``$AK_TEST_CONFIG_PATH_OVERRIDE``;
    it must exist), else ``test-config.yaml`` in the working directory when there is one."""
    environ = os.environ if environ is None else environ
    variable = next((name for name in (CONFIG_ENV, AK_CONFIG_ENV) if environ.get(name)), None)
    if variable is not None:
        explicit = environ[variable]
        if variable == AK_CONFIG_ENV:
            _announce(AK_CONFIG_ENV, CONFIG_ENV)
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise UsageError(f"{variable}={explicit!r}: no such file")
        return path
    path = (cwd or Path.cwd()) / CONFIG_FILE
    return path if path.is_file() else None


def _file_settings(path: Path) -> dict[str, Any]:
    from .._load.loader import load_mapping_file

    text = path.read_text("utf-8", errors="replace")
    if not any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines()):
        return {}  # an empty or comments-only file sets nothing
    return load_mapping_file(path, SCHEMA)


def load_config(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> TestConfig:
    """The settings from the environment over the file over the defaults (see the module docstring).

    A mistake (an unknown key, a bad mode) is a ``UsageError`` naming the file position or
    the variable.
    """
    environ = os.environ if environ is None else environ
    path = config_path(environ, cwd)
    config = TestConfig(path=path)
    _project_settings(config, cwd or Path.cwd())
    layers = [("file", _file_settings(path) if path else {}), ("env", _env_settings(environ))]
    for origin, data in layers:
        for key in ("mode", "threshold", "evaluator"):
            if key in data:
                setattr(config, key, data[key])
                config.origin[key] = origin
        for key, value in (data.get("llm") or {}).items():
            setattr(config.llm, key, value)
            config.origin[f"llm.{key}"] = origin
    config.threshold = float(config.threshold)
    return config


def _project_settings(config: TestConfig, cwd: Path) -> None:
    """The model settings of the specrun project around ``cwd``, under the file's and the environment's."""
    from .._project.project import find_config

    found = find_config(cwd)
    if found is None:
        return
    project = found[1]
    config.llm.project_model = project.get("judge_model") or project.get("model")
    config.llm.embedding_model = project.get("embedding_model")  # the similar assertion's default too
    config.llm.params = dict(project.get("model_params") or {})
    config.llm.retries = project.get("retries")
    if project.get("compare_mode"):
        config.mode = project["compare_mode"]
        config.origin["mode"] = "project"


# -- evaluators -------------------------------------------------------------------------------

EvaluatorResult = tuple[bool, float, str]
"""``(passed, score, reason)``: what an evaluator returns."""


@runtime_checkable
class Evaluator(Protocol):
    """What ``evaluator: package.module.Class`` names.

    The class is instantiated once per comparison, with the :class:`TestConfig` when its
    ``__init__`` takes an argument, else with none. ``evaluate`` receives the answer, the
    acceptable answers (always a list, at least one), the user's question (or None), the
    threshold (0 to 1) and the mode (``"score"``, ``"llm"`` or ``"fallback"``), and returns
    ``(passed, score, reason)``; it may be a coroutine function. Raise
    ``specrun.EvaluationError`` when no verdict can be reached (never return a guess).
    """

    def evaluate(
        self, actual: str, expected: list[str], user_input: str | None, threshold: float, mode: str
    ) -> EvaluatorResult | Awaitable[EvaluatorResult]: ...


class CompareEvaluator:
    """The built-in evaluator: :func:`specrun._judges.matching.compare` with the configured judge model."""

    def __init__(self, config: TestConfig):
        self.config = config

    async def evaluate(
        self, actual: str, expected: list[str], user_input: str | None, threshold: float, mode: str
    ) -> EvaluatorResult:
        __tracebackhide__ = True
        llm = self.config.llm
        model = llm.litellm_model
        async with contextlib.AsyncExitStack() as stack:
            client = None
            if model and mode != "score":
                from .clients import judge_client

                client = await stack.enter_async_context(judge_client(model, llm.litellm_params, llm.retries))
            try:
                result = await compare(
                    actual, expected, mode=mode, threshold=threshold, user_input=user_input, judge=client
                )
            except EvaluationError:
                if client is None:
                    unmatched = " (no expected answer matched by score)" if mode == "fallback" else ""
                    raise EvaluationError(
                        f"{mode} mode needs a model to judge{unmatched}: set llm.model in {CONFIG_FILE}, "
                        f"{ENV_PREFIX}LLM__MODEL or {MODEL_ENV}, model in specrun.yaml, or use Mode.SCORE"
                    ) from None
                raise
        reason = result.reason or ("no match" if result.decided_by == "score" and not result.passed else "")
        return result.passed, result.score, f"{result.decided_by}: {reason}" if reason else result.decided_by


def load_evaluator(spec: Any, config: TestConfig) -> Any:
    """An evaluator instance from a name, a dotted class path, a class or an instance."""
    if spec is None:
        spec = config.evaluator
    if isinstance(spec, str):
        if spec.strip().lower() in BUILTIN_EVALUATORS:
            return CompareEvaluator(config)
        if "." not in spec and ":" not in spec:
            raise UsageError(
                f"unknown evaluator {spec!r}: use {', '.join(BUILTIN_EVALUATORS)} or a dotted path package.module.Class"
            )
        from .._project.imports import load_callable

        search = [config.path.parent.resolve()] if config.path else []
        search.append(Path.cwd())
        spec = load_callable(spec, search)
    if isinstance(spec, type):
        try:
            takes_config = len(inspect.signature(spec).parameters) > 0
        except (TypeError, ValueError):
            takes_config = False
        spec = spec(config) if takes_config else spec()
    if not callable(getattr(spec, "evaluate", None)):
        raise UsageError(f"evaluator {spec!r} has no evaluate(actual, expected, user_input, threshold, mode) method")
    return spec
