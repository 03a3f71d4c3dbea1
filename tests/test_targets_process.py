"""The process target: real CLI agents from tests/agents over stdin/stdout."""

from __future__ import annotations

import asyncio
import os
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from specrun_plugins.targets.process import AgentProcess, ProcessTarget, strip_ansi
from support.waiting import until

from specrun import Context, Message, TargetError

AGENTS = Path(__file__).parent / "agents"
CTX = Context(case_id="case-9", user="ann")


def target(*args: str, **config) -> ProcessTarget:
    return ProcessTarget({"type": "process", "command": [sys.executable, *args], **config}, AGENTS)


def alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for a parent that is not us)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


async def test_reply_banner_discarded_and_agent_name():
    session = target("echo_cli.py").session(CTX)
    try:
        response = await session.send([Message("user", "hello")])
        assert response.content == "[echo] echo: hello (#1)"
        assert response.latency_ms > 0
        assert session.agent_name == "echo"
        assert session.process.banner == "Echo agent 1.0\nType !exit to quit."
    finally:
        await session.close()


async def test_history_replay_sends_only_new_user_messages():
    session = target("echo_cli.py").session(CTX)
    history = [
        Message("system", "ignored"),
        Message("user", "a"),
        Message("assistant", "an old answer"),
        Message("user", "b"),
    ]
    try:
        assert (await session.send(history)).content == "[echo] echo: b (#2)"
        history += [Message("assistant", "whatever"), Message("user", "c")]
        assert (await session.send(history)).content == "[echo] echo: c (#3)"
        with pytest.raises(TargetError, match="no new user message"):
            await session.send(history)
    finally:
        await session.close()


async def test_select_switches_the_agent_name_and_multiline_replies():
    session = target("echo_cli.py").session(CTX)
    try:
        assert (await session.send([Message("user", "!select billing")])).content == "selected billing"
        assert session.agent_name == "billing"
        messages = [Message("user", "!select billing"), Message("user", "two\nlines")]
        assert (await session.send(messages)).content == "[billing] echo: two lines (#2)"
        messages.append(Message("user", "!multi"))
        assert (await session.send(messages)).content == "line one\nline two"
    finally:
        await session.close()


@pytest.mark.parametrize("flags", [["--color"], ["--color", "--chunked"]])
async def test_ansi_codes_are_stripped_even_when_split_across_chunks(flags):
    session = target("echo_cli.py", *flags).session(CTX)
    try:
        assert (await session.send([Message("user", "hi")])).content == "[echo] echo: hi (#1)"
        assert session.agent_name == "echo"
        assert session.process.banner.startswith("Echo agent 1.0")
    finally:
        await session.close()


def test_strip_ansi():
    assert strip_ansi("\x1b[1;31mred\x1b[0m \x1b]0;title\x07x\x1b(By\r\n") == "red xy\n"


async def test_stderr_is_kept_apart():
    process = AgentProcess([sys.executable, "echo_cli.py"], cwd=AGENTS)
    try:
        assert await process.ask("quiet") == "[echo] echo: quiet (#1)"
        await until(lambda: process.stderr_tail != "")  # stderr is read apart, as it comes
        assert process.stderr_tail == "log: got 'quiet'"
    finally:
        await process.close()


async def test_silent_agent_hits_the_read_timeout():
    session = target("silent_cli.py", read_timeout="300ms").session(CTX)
    start = time.perf_counter()
    with pytest.raises(TargetError, match=r"no prompt within 0\.3s; last output: 'Loading models\.\.\.'"):
        await session.send([Message("user", "hi")])
    assert time.perf_counter() - start < 2
    pid = session.process.pid
    await session.close()
    assert not alive(pid)


async def test_agent_crashing_at_start_reports_exit_code_and_stderr():
    session = target("crash_cli.py").session(CTX)
    with pytest.raises(TargetError) as info:
        await session.send([Message("user", "hi")])
    await session.close()
    message = str(info.value)
    assert message.startswith("agent process exited with code 2 before printing its prompt")
    assert "last output: 'Starting...'" in message
    assert "RuntimeError: boom: no API key" in message


async def test_agent_exiting_mid_conversation():
    session = target("echo_cli.py").session(CTX)
    messages = [Message("user", "hi"), Message("user", "!exit 3")]
    with pytest.raises(TargetError, match=r"exited with code 3 .*fatal: asked to exit"):
        await session.send(messages)
    await session.close()


async def test_sending_to_a_dead_agent():
    process = AgentProcess([sys.executable, "echo_cli.py"], cwd=AGENTS)
    await process.start()
    os.kill(process.pid, 9)
    while process.returncode is None:
        await asyncio.sleep(0.01)
    with pytest.raises(TargetError, match="agent process exited with code -9"):
        await process.ask("anyone?")
    await process.close()


async def test_environment_of_the_case_and_config():
    session = target("echo_cli.py", env={"MY_FLAG": True}).session(CTX)
    messages = [Message("user", "!env SPECRUN_CASE_ID")]
    try:
        assert (await session.send(messages)).content == "case-9"
        messages.append(Message("user", "!env MY_FLAG"))
        assert (await session.send(messages)).content == "true"
    finally:
        await session.close()


async def test_cancelled_send_then_close_leaves_no_process():
    session = target("echo_cli.py").session(CTX)
    send = asyncio.create_task(session.send([Message("user", "!sleep 30")]))
    await until(lambda: "!sleep 30" in session.process.stderr_tail)  # the agent sleeps on it
    send.cancel()
    with pytest.raises(asyncio.CancelledError):
        await send
    pid = session.process.pid
    await session.close()
    assert session.process.returncode is not None and not alive(pid)


async def test_close_kills_an_agent_ignoring_sigterm_and_its_children():
    process = AgentProcess([sys.executable, "echo_cli.py", "--ignore-term", "--spawn"], cwd=AGENTS, grace=0.2)
    banner = await process.start()
    child = int(banner.split()[1])
    assert alive(child)
    await process.close()
    assert process.returncode == -9
    for _ in range(50):  # the orphaned child is reaped by init, asynchronously
        if not alive(child):
            break
        await asyncio.sleep(0.02)
    assert not alive(child)


async def test_respond_is_one_shot():
    response = await target("echo_cli.py").respond([Message("user", "a"), Message("user", "b")], CTX)
    assert response.content == "[echo] echo: b (#2)"


async def test_attachments_are_refused():
    session = target("echo_cli.py").session(CTX)
    parts = [{"type": "text", "text": "see"}, {"type": "image", "path": "/x.png", "mime": "image/png"}]
    with pytest.raises(TargetError, match="sends text only"):
        await session.send([Message("user", parts)])
    await session.close()


def test_string_command_and_py_file_use_this_interpreter():
    t = ProcessTarget({"type": "process", "command": "echo_cli.py --color"}, AGENTS)
    assert t.argv == [sys.executable, "echo_cli.py", "--color"]
    assert list(t.problems()) == []


def test_problems():
    assert dict(target("x.py", prompt="(").problems())["prompt"].startswith("invalid regex '('")
    assert "does not exist" in dict(target("x.py", cwd="nowhere").problems())["cwd"]
    missing = ProcessTarget({"type": "process", "command": "no-such-program-xyz --flag"}, AGENTS)
    assert dict(missing.problems()) == {"command": "program 'no-such-program-xyz' not found"}
    relative = ProcessTarget({"type": "process", "command": ["./nope.sh"]}, AGENTS)
    assert dict(relative.problems()) == {"command": "program './nope.sh' not found"}


async def test_unstartable_program_is_a_target_error():
    session = ProcessTarget({"type": "process", "command": "no-such-program-xyz"}, AGENTS).session(CTX)
    with pytest.raises(TargetError, match="cannot start agent 'no-such-program-xyz'"):
        await session.send([Message("user", "hi")])
    await session.close()


async def test_many_sessions_in_parallel():
    t = target("echo_cli.py")
    sessions = [t.session(Context(case_id=str(i))) for i in range(8)]
    try:
        replies = await asyncio.gather(*(s.send([Message("user", f"m{i}")]) for i, s in enumerate(sessions)))
        assert [r.content for r in replies] == [f"[echo] echo: m{i} (#1)" for i in range(8)]
    finally:
        await asyncio.gather(*(s.close() for s in sessions))
    assert all(s.process.returncode is not None for s in sessions)


async def test_a_reply_past_the_bound_kills_the_agent_and_the_next_case_gets_a_fresh_one():
    """65 MiB on one line before the prompt: the reply is an error naming the 64 MiB bound, its
    text is never held whole (memory stays near the bound), the process is killed then and
    there, and the next session starts a new one that answers."""
    flooding = target("echo_cli.py")
    session = flooding.session(CTX)
    tracemalloc.start()
    try:
        with pytest.raises(TargetError) as info:
            await session.send([Message("user", "!flood 65")])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(info.value).startswith("agent process printed a reply over the 64 MiB bound (67,1")
    assert str(info.value).endswith(" bytes read) before its prompt; it was killed")
    assert peak < 100 << 20  # the 64 MiB read, never a second copy of it
    pid = session.process.pid
    assert session.process.returncode == -9 and not alive(pid)  # before the session is closed
    await session.close()
    fresh = flooding.session(CTX)
    try:
        assert (await fresh.send([Message("user", "hi")])).content == "[echo] echo: hi (#1)"
    finally:
        await fresh.close()
