"""The adaptive (AIMD) concurrency limiter: halve on 429, +1 per success at full use, fair queue, no leaks."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from support.llm_server import LLMServer

from specrun import Context, Message, TargetError
from specrun._models.limiter import CASE_DEADLINE, LIMITERS, AdaptiveLimiter, Limiters, Slot, endpoint_key
from specrun._models.targets.http import HttpTarget

USER = [{"role": "user", "content": "hi"}]


async def hold(limiter: AdaptiveLimiter, n: int) -> list[Slot]:
    return [await limiter.acquire() for _ in range(n)]


def done(limiter: AdaptiveLimiter, slot: Slot, status: int | None) -> None:
    slot.report(status)
    limiter.release(slot)


async def test_unbounded_until_the_first_429_then_half_of_what_was_in_flight():
    limiter = AdaptiveLimiter()
    slots = await hold(limiter, 40)
    assert limiter.limit is None and limiter.in_flight == 40
    done(limiter, slots.pop(), 429)
    assert limiter.limit == 20  # half of the 40 in flight when the 429 came
    for slot in slots:
        limiter.release(slot)
    assert limiter.in_flight == 0 and limiter.limit == 20  # neutral releases change nothing


async def test_halves_down_to_one_never_zero():
    limiter = AdaptiveLimiter(8)
    for expected in (4, 2, 1, 1, 1):
        done(limiter, await limiter.acquire(), 429)
        assert limiter.limit == expected
    slot = await asyncio.wait_for(limiter.acquire(), 1)  # still one call may run
    limiter.release(slot)


async def test_a_burst_of_429s_sent_under_one_limit_halves_it_once():
    limiter = AdaptiveLimiter(32)
    slots = await hold(limiter, 32)
    for slot in slots:
        done(limiter, slot, 429)
    assert limiter.limit == 16 and limiter.throttles == 1
    # A 429 to a call sent after the halving counts again.
    done(limiter, await limiter.acquire(), 429)
    assert limiter.limit == 8 and limiter.throttles == 2


async def test_grows_by_one_per_success_up_to_the_max():
    limiter = AdaptiveLimiter(6)
    done(limiter, await limiter.acquire(), 429)
    assert limiter.limit == 3
    slots = await hold(limiter, 3)  # the limit in full use
    for expected in (4, 5, 6):
        done(limiter, slots.pop(), 200)
        assert limiter.limit == expected
    slots = await hold(limiter, 6)
    for _ in range(6):
        done(limiter, slots.pop(), 200)
        assert limiter.limit == 6
    slots = await hold(limiter, 6)
    done(limiter, slots.pop(), 500)  # a server error is no rate signal
    assert limiter.limit == 6


async def test_successes_under_a_limit_not_in_full_use_do_not_raise_it():
    """Application-limited callers (RFC 7661): a run that keeps fewer calls in flight than the
    limit has not shown the endpoint takes more, so their successes leave the limit alone;
    otherwise it would climb back to unbounded and the next burst would all go out at once."""
    limiter = AdaptiveLimiter()
    slots = await hold(limiter, 32)
    done(limiter, slots.pop(), 429)
    assert limiter.limit == 16
    for slot in slots:
        limiter.release(slot)
    held = await hold(limiter, 8)  # 8 in flight under a limit of 16, for a long while
    for _ in range(100):
        done(limiter, held.pop(0), 200)
        held.append(await limiter.acquire())
    assert limiter.limit == 16
    # Once the callers fill it, every call in flight then counts: each success is one more.
    held += await hold(limiter, 8)
    for expected in range(17, 33):
        done(limiter, held.pop(0), 200)
        assert limiter.limit == (expected if expected < 32 else None)  # 32: the peak, unbounded


async def test_successes_of_calls_sent_before_a_halving_do_not_raise_it():
    """Sent under the limit the endpoint refused (TCP's fast recovery): the replies of that
    burst, handled in one batch by a busy process, would otherwise undo the halving at once."""
    limiter = AdaptiveLimiter(16)
    slots = await hold(limiter, 16)
    queued = asyncio.create_task(limiter.acquire())
    await asyncio.sleep(0)
    done(limiter, slots.pop(), 429)
    assert limiter.limit == 8
    for slot in slots:  # 15 successes of calls sent under the old limit of 16
        done(limiter, slot, 200)
    assert limiter.limit == 8
    limiter.release(await queued)
    slots = await hold(limiter, 8)  # sent under the new limit, which they fill
    done(limiter, slots.pop(), 200)
    assert limiter.limit == 9


async def test_waiters_are_served_first_come_first_served():
    limiter = AdaptiveLimiter(2)
    first = await hold(limiter, 2)
    order: list[int] = []

    async def caller(i: int) -> None:
        async with limiter.slot():
            order.append(i)
            await asyncio.sleep(0)

    tasks = [asyncio.create_task(caller(i)) for i in range(6)]
    await asyncio.sleep(0.01)
    assert limiter.waiting == 6 and order == []
    # A newcomer does not jump the queue even when a slot is free for an instant.
    limiter.release(first.pop())
    late = asyncio.create_task(caller(99))
    limiter.release(first.pop())
    await asyncio.gather(*tasks, late)
    assert order == [0, 1, 2, 3, 4, 5, 99]
    assert limiter.in_flight == 0


async def test_never_more_in_flight_than_the_limit():
    limiter = AdaptiveLimiter(4)
    peak = 0

    async def caller(i: int) -> None:
        nonlocal peak
        async with limiter.slot() as slot:
            peak = max(peak, limiter.in_flight)
            await asyncio.sleep(0.001)
            slot.report(429 if i == 10 else 200)

    await asyncio.gather(*(caller(i) for i in range(60)))
    assert peak <= 4 and limiter.in_flight == 0 and limiter.waiting == 0


async def test_a_cancelled_waiter_leaves_no_trace_and_a_cancelled_grant_is_passed_on():
    limiter = AdaptiveLimiter(1)
    slot = await limiter.acquire()
    waiter = asyncio.create_task(limiter.acquire())
    second = asyncio.create_task(limiter.acquire())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert limiter.waiting == 1
    # Granted and cancelled in the same loop turn: the slot goes to the next in line.
    third = asyncio.create_task(limiter.acquire())
    await asyncio.sleep(0)
    limiter.release(slot)  # grants `second`
    second.cancel()
    with pytest.raises(asyncio.CancelledError):
        await second
    granted = await asyncio.wait_for(third, 1)
    assert limiter.in_flight == 1
    limiter.release(granted)
    assert limiter.in_flight == 0 and limiter.waiting == 0


async def test_waiting_does_not_spin():
    limiter = AdaptiveLimiter(1)
    slot = await limiter.acquire()
    waiters = [asyncio.create_task(limiter.acquire()) for _ in range(100)]
    cpu = time.process_time()
    await asyncio.sleep(0.3)
    assert time.process_time() - cpu < 0.1  # 100 callers waited 0.3 s without burning CPU
    limiter.release(slot)
    for task in waiters:
        limiter.release(await task)
    assert limiter.in_flight == 0


async def test_an_unbounded_limit_recovers_to_unbounded_at_the_peak_concurrency():
    limiter = AdaptiveLimiter()
    slots = await hold(limiter, 10)
    done(limiter, slots.pop(), 429)
    assert limiter.limit == 5
    for slot in slots:
        limiter.release(slot)
    slots = await hold(limiter, 5)  # the limit in full use
    for expected in (6, 7, 8, 9, None):  # 10 were in flight at most: unbounded again
        done(limiter, slots.pop(), 200)
        assert limiter.limit == expected


def test_max_limit_must_be_positive_and_registry_makes_one_per_key():
    with pytest.raises(ValueError):
        AdaptiveLimiter(0)
    limiters = Limiters()
    a = limiters.get("m", 5)
    assert limiters.get("m") is a and a.limit == 5 and "m" in limiters
    assert limiters.get("other") is not a


def test_endpoint_key_is_host_and_path():
    assert endpoint_key("http://127.0.0.1:8000/v1/chat/completions?x=1") == "127.0.0.1:8000/v1/chat/completions"
    assert endpoint_key("https://user:pw@API.example.com") == "api.example.com/"


# -- hooked into the http target --------------------------------------------------------------


async def test_http_target_reports_429_and_success_to_its_endpoint_limiter():
    with LLMServer() as server:
        url = f"{server.base_url}/chat/completions"
        target = HttpTarget({"type": "http", "url": url}, Path("."))
        ctx, messages = Context(case_id="c"), [Message("user", "hi")]
        limiter = LIMITERS.get(endpoint_key(url))
        server.script(*[{"status": 429, "delay": 0.05} for _ in range(8)])
        results = await asyncio.gather(*(target.respond(messages, ctx) for _ in range(8)), return_exceptions=True)
        assert all(isinstance(r, TargetError) and "HTTP 429" in str(r) for r in results)
        assert limiter.limit == 4 and limiter.throttles == 1  # 8 in flight, one halving
        await target.respond(messages, ctx)  # 1 in flight: the limit of 4 was not in use
        assert limiter.limit == 4 and limiter.in_flight == 0
        await asyncio.gather(*(target.respond(messages, ctx) for _ in range(4)))  # in full use
        assert limiter.limit is None and limiter.in_flight == 0  # back to the 8 once in flight: unbounded
        await target.aclose()


async def test_model_calls_share_one_limiter_per_model_that_429s_halve():
    from specrun._models.client import ModelClient

    with LLMServer() as server:
        client = ModelClient(
            "openai/mock-model", params={"api_base": server.base_url, "api_key": "test-key"}, base_delay=0.01
        )
        server.script(*[{"status": 429, "headers": {"retry-after": "0"}, "delay": 0.1} for _ in range(6)])
        answers = await asyncio.gather(*(client.complete(USER, cache=False) for _ in range(6)))
        assert [a.text for a in answers] == ["echo: hi"] * 6  # each retried once
        limiter = client.limiters.get("openai/mock-model")
        assert limiter.throttles == 1 and limiter.in_flight == 0
        assert server.max_in_flight == 6
        await client.aclose()


async def test_waiting_for_a_slot_pauses_the_case_timeout():
    limiter = AdaptiveLimiter(1)
    held = await limiter.acquire()
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(0.1) as deadline:
        token = CASE_DEADLINE.set(deadline)
        due = deadline.when()
        assert due is not None
        loop.call_at(due + 0.1, limiter.release, held)  # the slot frees 0.1 s after the timeout was due
        started = loop.time()
        slot = await limiter.acquire()  # waits about 0.2 s: longer than the whole timeout
        assert loop.time() > due  # past when it was due, and it did not fire
        assert slot.waited >= 0.15
        assert deadline.when() is not None and deadline.when() - started >= 0.25  # pushed back by the wait
        limiter.release(slot)
        CASE_DEADLINE.reset(token)
    with pytest.raises(TimeoutError):  # and it still runs once the call has its slot
        async with asyncio.timeout(0.1) as deadline:
            CASE_DEADLINE.set(deadline)
            async with limiter.slot():
                await asyncio.sleep(10)


async def test_a_slot_granted_at_once_leaves_the_case_timeout_alone():
    limiter = AdaptiveLimiter(2)
    async with asyncio.timeout(5) as deadline:
        CASE_DEADLINE.set(deadline)
        due = deadline.when()
        slot = await limiter.acquire()
        assert slot.waited == 0 and deadline.when() == due
        limiter.release(slot)
