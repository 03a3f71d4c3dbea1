"""The model path: the direct route to OpenAI-compatible backends answers exactly as litellm does.

Each call is made twice against the loopback server, once on the direct route and once through
litellm (an ``extra_headers`` parameter, which only litellm sends, forces it), and what specrun
reports of them is compared: text, tool calls, request body, tokens, cost, errors, retries.
"""

from __future__ import annotations

import json

import pytest
import support.fresh_run as fresh_run
from support.llm_server import LLMServer

from specrun._models import prices
from specrun._models.client import ModelClient, ModelError
from specrun._models.direct_route import route

USER = [{"role": "user", "content": "Is the sky blue?"}]
LITELLM = {"extra_headers": {"X-Test": "through-litellm"}}  # a parameter the direct route leaves to litellm


@pytest.fixture(scope="module", autouse=True)
def _litellm_run_in_the_background(request, tmp_path_factory):
    """The run that imports litellm starts with the module's first test: its seconds overlap
    the others' (this process's own litellm import among them)."""
    wanted = test_litellm_is_imported_only_by_a_run_that_names_a_model_needing_it
    if fresh_run.wanted(request, wanted, imports_litellm=True):
        fresh_run.start_litellm_run(tmp_path_factory)


@pytest.fixture
def server():
    with LLMServer() as srv:
        yield srv


def client(server: LLMServer, model: str = "openai/gpt-4o-mini", litellm: bool = False, **kwargs) -> ModelClient:
    params = {"api_base": server.base_url, "api_key": "test-key", **(LITELLM if litellm else {})}
    return ModelClient(model, params=params, base_delay=0.01, **kwargs)


async def both(server: LLMServer, behaviours: list[dict], model: str = "openai/gpt-4o-mini", retries: int = 0, **call):
    """The same call on each route: [(completion or ModelError, request bodies)], direct first."""
    outcomes = []
    for litellm in (False, True):
        server.requests.clear()
        server.script(*behaviours)
        models = client(server, model, litellm=litellm, retries=retries)
        try:
            answer: object = await models.complete(USER, **call)
        except ModelError as exc:
            answer = exc
        finally:
            await models.aclose()
            server.unscript()
        outcomes.append((answer, list(server.requests)))
    return outcomes


def test_the_route_is_direct_only_for_what_litellm_sends_unchanged(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    base = {"api_base": "http://127.0.0.1:9/v1", "api_key": "k"}
    plain = route("openai/gpt-4o-mini", USER, {**base, "temperature": 0, "response_format": {"type": "json_object"}})
    assert plain is not None and plain.url == "http://127.0.0.1:9/v1/chat/completions" and plain.model == "gpt-4o-mini"
    assert route("openai/my-local-model", USER, base) is not None  # unpriced, as through litellm
    through_litellm = [
        ("anthropic/claude-3-5-sonnet-latest", USER, base),  # another provider
        ("openai/o3-mini", USER, base),  # a reasoning model: litellm renames its parameters
        ("openai/gpt-5", USER, base),
        ("openai/gpt-4o-mini", USER, {**base, **LITELLM}),  # a parameter the route does not send
        ("openai/gpt-4o-mini", USER, {"api_base": base["api_base"]}),  # no key: litellm's error
        ("openai/gpt-4o-mini", USER, {**base, "api_base": "https://eu.api.openai.com/v1"}),  # priced apart
        ("openai/gpt-4o-mini", [{"role": "user", "content": [{"type": "file", "file": {}}]}], base),
    ]
    for model, messages, params in through_litellm:
        assert route(model, messages, params) is None, (model, messages, params)
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    assert route("openai/gpt-4o-mini", USER, {"api_base": base["api_base"]}) is not None
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "False")  # litellm downloads its prices
    assert route("openai/gpt-4o-mini", USER, base) is None


async def test_an_answer_text_tool_calls_usage_and_cost_are_the_same_on_both_routes(server):
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    reply = {"content": "checking", "tool_calls": [{"name": "lookup", "arguments": {"q": "sky"}}]}
    (direct, sent_direct), (litellm, sent_litellm) = await both(server, [reply], json_mode=True, tools=tools)
    assert sent_direct == sent_litellm  # the same request body
    assert sent_direct[0]["response_format"] == {"type": "json_object"} and sent_direct[0]["temperature"] == 0
    assert (direct.text, direct.finish_reason, direct.tool_calls) == (
        litellm.text,
        litellm.finish_reason,
        litellm.tool_calls,
    )
    assert direct.tool_calls[0].arguments == {"q": "sky"}
    assert direct.usage == litellm.usage and direct.usage.cost == pytest.approx(10 * 0.15e-6 + 5 * 0.6e-6)


CACHED = {
    "prompt_tokens": 1000,
    "completion_tokens": 300,
    "total_tokens": 1300,
    "prompt_tokens_details": {"cached_tokens": 600},
    "completion_tokens_details": {"reasoning_tokens": 100},
}
SMALL = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


@pytest.mark.parametrize(
    ("model", "answer_model", "usage", "priced"),
    [
        ("openai/gpt-4o-mini", "gpt-4o-mini", CACHED, True),
        ("openai/my-local-model", "gpt-4o", SMALL, True),  # priced by the answer's model
        ("openai/gpt-4o", "served-as-something-else", SMALL, True),  # then by the model asked for
        ("openai/my-local-model", "my-local-model", SMALL, False),  # no price known
        ("openai/my-local-model", "my-local-model", {}, False),  # no usage reported
    ],
)
async def test_tokens_and_cost_are_litellm_s_whichever_model_prices_them(server, model, answer_model, usage, priced):
    answer = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": answer_model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        **({"usage": usage} if usage else {}),
    }
    (direct, _), (litellm, _) = await both(server, [{"body": json.dumps(answer)}], model)
    assert direct.usage == litellm.usage and direct.text == "ok"
    assert (direct.usage.cost is not None) == priced


@pytest.mark.parametrize(
    "behaviour",
    [
        {"status": 400},
        {"status": 401},
        {"status": 403},
        {"status": 404},
        {"status": 422},
        {"status": 418},
        {"status": 429},
        {"status": 500},
        {"status": 502},
        {"status": 503},
        {"status": 504},
        {"status": 400, "body": "<html>bad gateway</html>"},
        {"status": 500, "body": '{"error": {"message": "overloaded", "type": "server_error"}}'},
        {"body": "not json"},
        {"drop": True},
    ],
)
async def test_a_failure_is_reported_and_retried_the_same_on_both_routes(server, behaviour):
    (direct, _), (litellm, _) = await both(server, [behaviour] * 2 + [{"content": "fine"}], retries=1)
    if isinstance(litellm, ModelError):
        assert isinstance(direct, ModelError)
        assert (str(direct), direct.status, direct.attempts) == (str(litellm), litellm.status, litellm.attempts)
    else:  # retried, then answered
        assert direct.text == litellm.text == "fine" and direct.attempts == litellm.attempts == 3


async def test_a_timeout_and_retry_after_are_honoured_the_same_on_both_routes(server):
    (direct, _), (litellm, _) = await both(server, [{"hang": True}] * 2, retries=1, params={"timeout": 0.05})
    assert str(direct) == str(litellm) and "timed out after 0.05s" in str(direct) and direct.attempts == 2
    retry = {"status": 429, "headers": {"retry-after": "0.05"}}
    (direct, _), (litellm, _) = await both(server, [retry, {"content": "fine"}], retries=1)
    assert direct.attempts == litellm.attempts == 2


async def test_a_judge_s_answer_past_the_bound_fails_the_call_and_the_next_is_answered(server):
    """The direct route reads a model server's answer only to the 64 MiB bound (an endless
    body must not fill memory): the call fails naming it, and the next call is answered."""
    server.script({"flood": 65 << 20}, {"content": "fine"})
    models = client(server, retries=0)
    try:
        with pytest.raises(ModelError, match=r"a reply over the 64 MiB bound \(67,\d{3},\d{3} bytes read\) from http"):
            await models.complete(USER)
        assert (await models.complete(USER)).text == "fine"
    finally:
        await models.aclose()


def test_every_openai_price_matches_litellm_s_own_cost(monkeypatch):
    """prices.cost against litellm.completion_cost for every OpenAI chat model in litellm's table."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    table = prices.table()
    assert table is not None, "litellm's price table was not found"
    models = [
        k
        for k, v in table.items()
        if isinstance(v, dict) and v.get("litellm_provider") == "openai" and v.get("mode") == "chat"
    ]
    usages = [
        {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        {
            "prompt_tokens": 1000,
            "completion_tokens": 300,
            "total_tokens": 1300,
            "prompt_tokens_details": {"cached_tokens": 600},
            "completion_tokens_details": {"reasoning_tokens": 200},
        },
        {"prompt_tokens": 300_000, "completion_tokens": 10, "total_tokens": 300_010},  # above a tier
    ]
    checked = 0
    for model in filter(prices.priceable, models):
        for usage in usages:
            message = {"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}
            answer = litellm.ModelResponse(model=model, choices=[message], usage=usage)
            theirs = litellm.completion_cost(completion_response=answer, model=f"openai/{model}")
            assert prices.cost([model], usage) == pytest.approx(theirs, rel=1e-9, abs=1e-15), (model, usage)
            checked += 1
    assert checked > 200


@pytest.mark.parametrize(
    ("judge_model", "imports_litellm"),
    [
        (None, False),  # the project's openai/ judge: the direct route only
        (fresh_run.LITELLM_JUDGE, True),  # an assertion's own model that only litellm reaches
    ],
)
def test_litellm_is_imported_only_by_a_run_that_names_a_model_needing_it(
    tmp_path, tmp_path_factory, judge_model, imports_litellm
):
    if imports_litellm:  # shared with the trust test of the case clock: the import takes seconds
        done = fresh_run.litellm_run(tmp_path_factory)
    else:
        with LLMServer(responder=fresh_run.judge_or_echo) as server:
            fresh_run.write_project(tmp_path, server, judge_model)
            done = fresh_run.run(tmp_path, server)
    assert (done.code, done.imported) == ("0", imports_litellm), done.output
    result = done.results["judged"]
    assert result["status"] == "passed" and result["assertions"][0]["details"]["usage"]["total_tokens"] == 15
    # the judge's own call went through litellm (its user agent; the shared run has a litellm
    # target too), or took the direct route
    judge_calls = done.sent_by("<<<BEGIN DATA")
    assert [h["User-Agent"].split("/")[0] for _, h in judge_calls] == ["litellm" if imports_litellm else "Python"]


def test_litellm_is_preloaded_only_when_a_call_may_need_it(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    local = {"api_base": "http://127.0.0.1:9/v1", "api_key": "k"}
    models = ModelClient("openai/judge", params=local)
    assert not models.needs_litellm()
    assert not models.needs_litellm([("openai/other-local-model", None)])
    assert models.needs_litellm([("anthropic/claude-3-5-haiku-latest", None)])  # an assertion's own model
    assert models.needs_litellm([("openai/gpt-4o-mini", {})])  # a litellm target without a key
    assert not models.needs_litellm([("openai/gpt-4o-mini", local)])
    assert ModelClient("anthropic/claude-3-5-haiku-latest").needs_litellm()
    assert ModelClient(models={"judge": "openai/judge", "simulator": "ollama/llama3"}, params=local).needs_litellm()
