"""The ``similar`` assertion: the output means what an expected text says (cosine of embeddings).

By default the embedder is WordLlama, a static-embedding model whose weights ship inside its
wheel (the ``specrun[similar]`` extra): no key, no network, ~0.4 s to load once per process and
tens of microseconds per sentence. ``model: <litellm embedding model>`` uses a provider's
embeddings instead, through the run's model client (retried and cached like judge calls); an
assertion without one uses ``embedding_model`` of ``specrun.yaml`` when the project sets it.
"""

from __future__ import annotations

import importlib.util
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from specrun.plugin import Assertion, AssertionType, Check, EvaluationError, Verdict, run_blocking

from ._common import as_list, show

INSTALL = "pip install 'specrun[similar]'"
LOCAL_EMBEDDER = "wordllama l2_supercat 256"  # what a verdict names as its embedder
DEFAULT_MODEL_KEY = "embedding_model"  # specrun.yaml's default ``model:`` (Agent Kernel's name for it)

INLINE_CHARS = 4_000  # texts up to this long are embedded on the event loop (~0.2 ms); longer, in a thread
_lock = threading.Lock()
_model: Any = None
_preloading: threading.Thread | None = None


def _load_local() -> Any:
    """WordLlama from the files inside its own package, never downloading.

    Its ``load()`` looks for the tokenizer in ``wordllama/tokenizer/`` while the wheel ships it in
    ``wordllama/tokenizers/``, so by default it would fetch it from Hugging Face: pointing the
    cache at the package folder (which has ``tokenizers/`` and ``weights/``) and disabling
    downloads makes it use the shipped files or fail, offline either way.
    """
    global _model
    with _lock:  # one load per process, whichever case asks first
        if _model is None:
            try:
                import wordllama
            except ImportError as exc:
                raise EvaluationError(f"the similar assertion needs its extra: {INSTALL} ({exc})") from exc
            folder = Path(wordllama.__file__).parent
            try:
                _model = wordllama.WordLlama.load(cache_dir=folder, disable_download=True)
            except (OSError, ValueError) as exc:  # a damaged install: its files are missing or unreadable
                raise EvaluationError(f"the similar assertion's embedder did not load from {folder}: {exc}") from exc
    return _model


def _preload() -> None:
    """Start loading the model in a background thread, once: a suite that uses the local embedder
    calls this while it is validated, so the load overlaps the run's start and the first agent
    turns instead of counting against the first cases' timeouts."""
    global _preloading
    with _lock:
        if _model is not None or _preloading is not None:
            return
        _preloading = threading.Thread(target=_quiet_load, name="specrun-similar-load", daemon=True)
    _preloading.start()


def _quiet_load() -> None:
    try:
        _load_local()
    except EvaluationError:  # the first case that needs the model loads it again and says why
        pass


def _local_vectors(texts: list[str]) -> list[list[float]]:
    # Unnormalised: WordLlama's own normalising divides an empty text's zero vector by zero (NaN);
    # cosine() scores it 0 instead.
    return [list(map(float, row)) for row in _load_local().embed(texts)]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two vectors; 0 when either is all zeros (an empty text's embedding)."""
    if len(a) != len(b):  # a provider that answered vectors of two sizes
        raise EvaluationError(f"the embeddings have different sizes ({len(a)} and {len(b)})")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    size = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / size if size else 0.0


class Similar(AssertionType):
    name = "similar"
    description = "The output means what one of the expected texts says: embedding cosine >= threshold."
    meaning_param: ClassVar[str | None] = "value"  # what specrun.testing.assert_similar runs
    # problems() then sees the model the project gives a similar without its own, as evaluate() uses
    config_defaults: ClassVar[Mapping[str, str]] = {"model": DEFAULT_MODEL_KEY}
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "value": {
                "type": ["string", "array"],
                "minLength": 1,
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
                "x-expect": "a text or a list of texts",
            },
            "threshold": {"type": "number", "minimum": 0, "maximum": 1},
            "model": {"type": "string", "minLength": 1, "description": "A litellm embedding model."},
        },
        "required": ["value", "threshold"],
    }

    def problems(self, assertion: Assertion, base_dir: Path) -> Iterable[tuple[str, str]]:
        """The local embedder's extra must be installed: said before the run (exit 2), not per case.
        Only a similar with no model, its own or the project's, uses it: only such a one preloads it."""
        yield from super().problems(assertion, base_dir)
        if "model" in assertion.params:
            return
        if importlib.util.find_spec("wordllama") is None:
            yield "type", f"the similar assertion's local embedder is not installed: {INSTALL}"
        else:
            _preload()

    @classmethod
    def uses_model(cls, assertion: Assertion, config: dict[str, Any]) -> bool:
        return "model" in assertion.params or bool(config.get(DEFAULT_MODEL_KEY))

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        expected: list[str] = as_list(assertion.params["value"])
        threshold = float(assertion.params["threshold"])
        text = check.response.text
        config = check.services.config if check.services is not None else {}
        model = assertion.params.get("model") or config.get(DEFAULT_MODEL_KEY)
        if not text.strip():  # nothing to embed (a provider refuses an empty input): like nothing said
            return Verdict(False, "output is empty", expected=assertion.params["value"], actual=text, score=0.0)
        usage = None
        if model is None:
            texts = [text, *expected]
            if _model is None or sum(map(len, texts)) > INLINE_CHARS:
                # The first case loads the model, and a long text is embedded (~2 ms per KB),
                # in a thread: never on the event loop that runs the other cases' agents.
                vectors = await run_blocking(_local_vectors, texts)
            else:
                vectors = _local_vectors(texts)
            embedder = LOCAL_EMBEDDER
        else:
            models = check.services.models if check.services is not None else None
            if models is None:
                raise EvaluationError(f"similar with model {model!r} needs model calls, which are not available here")
            embedded = await models.embed([text, *expected], model=model)
            vectors, usage, embedder = embedded.vectors, embedded.usage, model
        scores = [cosine(vectors[0], v) for v in vectors[1:]]
        best = max(range(len(scores)), key=scores.__getitem__)
        score, nearest = scores[best], expected[best]
        passed = score >= threshold
        verb = ">=" if passed else "<"
        return Verdict(
            passed,
            f"similarity {score:.3f} {verb} {threshold:g} to {show(nearest)}; output: {show(text)}",
            expected=assertion.params["value"],
            actual=text,
            score=score,
            usage=usage,
            details={"nearest": nearest, "scores": [round(s, 4) for s in scores], "embedder": embedder},
        )
