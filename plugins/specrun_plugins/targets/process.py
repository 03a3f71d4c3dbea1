"""The ``process`` target: a CLI agent over stdin/stdout, one process per case (stateful).

:class:`AgentProcess` is the reusable part (the pytest ``Test`` API drives one directly): it
starts the command, reads stdout in chunks until the prompt regex matches, strips ANSI codes,
keeps stderr apart, never waits longer than ``read_timeout`` for a prompt, and never reads a
reply past ``Target.reply_limit`` bytes (64 MiB: the process is then killed). Each chunk is
searched together with at most ``PROMPT_WINDOW`` characters before it, never the whole output
again, so reading a reply takes time linear in its length. Closing it ends
everything the agent started (:mod:`specrun._run.proctree`).
"""

from __future__ import annotations

import asyncio
import codecs
import os
import re
import shlex
import shutil
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from specrun.plugin import (
    Context,
    Message,
    PatternError,
    ProcessTree,
    Response,
    Session,
    Target,
    TargetError,
    compile_pattern,
    parse_duration,
)

DEFAULT_PROMPT = r"\(([^)]*)\) >> $"
"""Agent Kernel's ``(agent) >> `` prompt; the group is the current agent's name."""
DEFAULT_READ_TIMEOUT = 30.0
PROMPT_WINDOW = 4096
"""The longest text a prompt may match: how far back into output already searched each new
chunk's search starts (a prompt printed across two chunks is still found)."""
GRACE_SECONDS = 2.0
"""Default of ``grace``: seconds from SIGTERM to SIGKILL when a case's process tree is ended."""
STDERR_LIMIT = 16384

_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: window titles, links
    r"|\x1b[ -/]+[0-~]"  # nF: charset selection
    r"|\x1b(?![\[\]])[0-~]"  # two-byte escapes (not an unfinished CSI or OSC)
)
# An escape cut by a chunk boundary: held back until the next chunk completes it.
_PARTIAL = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*\x1b?|[ -/]*)\Z")
_HOLD_LIMIT = 256


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences, ``\\r\\n`` as ``\\n``."""
    return _ANSI.sub("", text).replace("\r\n", "\n")


def _tail(text: str, limit: int = 500) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def command_argv(command: str | list[str]) -> list[str]:
    """The argv of ``command``: a string is shell-split; a leading ``.py`` file runs with this
    interpreter (``sys.executable``), so ``agent.py`` works from any virtual environment."""
    argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    if argv and argv[0].endswith(".py"):
        argv = [sys.executable, *argv]
    return argv


def command_problems(argv: list[str], cwd: Path, env: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """``(field, message)`` when ``argv`` cannot start in ``cwd``: no such folder, an empty
    command, a program found neither there nor on the ``PATH`` (``env``'s, else this process's)."""
    if not cwd.is_dir():
        yield "cwd", f"folder {str(cwd)!r} does not exist"
    elif not argv:
        yield "command", "the command is empty"
    else:
        program = argv[0]
        path = env.get("PATH", os.environ.get("PATH"))
        found = (cwd / program).exists() if os.sep in program else shutil.which(program, path=path)
        if not found:
            yield "command", f"program {program!r} not found"


class AgentProcess:
    """A CLI agent driven line by line: ``await start()``, ``await ask(text)``, ``await close()``.

    A reply is the text printed before the next prompt (``prompt`` is a regex in RE2 syntax; its
    first group, if any, is kept as ``agent_name``). Any failure (exit, no prompt within
    ``read_timeout``) is a ``TargetError`` carrying the last output and the stderr tail; after
    one, close it (a reply past ``Target.reply_limit`` bytes has killed it already). ``warnings``
    lists what made replies doubtful (a prompt in mid-output).
    """

    def __init__(
        self,
        command: str | list[str],
        *,
        cwd: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        prompt: str = DEFAULT_PROMPT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        grace: float = GRACE_SECONDS,
    ):
        self.argv = command_argv(command)
        if not self.argv:
            raise TargetError("the agent command is empty")
        self.cwd = cwd
        self.env = dict(env or {})
        try:
            self.prompt = compile_pattern(prompt)
            self._prompt_in_line = compile_pattern(prompt, "m")  # $ at any line end: a prompt-like line
        except PatternError as exc:
            raise TargetError(f"prompt: {exc}") from None
        self.read_timeout = read_timeout
        self.grace = grace
        self.agent_name: str | None = None
        self.banner = ""
        self.last_reply = ""
        self.warnings: list[str] = []
        self._proc: asyncio.subprocess.Process | None = None
        self._tree = ProcessTree()
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        # Cleaned output not yet consumed as a reply: searched text (the last PROMPT_WINDOW + 1
        # characters of it in _tail), then text after the last prompt, not searched yet.
        self._searched: list[str] = []
        self._tail = ""
        self._unsearched = ""
        self._held = ""  # a partial escape sequence awaiting the next chunk
        self._stderr = bytearray()
        self._stderr_task: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode if self._proc else None

    @property
    def started(self) -> bool:
        return self._proc is not None

    @property
    def stderr_tail(self) -> str:
        """The end of what the process wrote to stderr (ANSI stripped)."""
        return _tail(strip_ansi(self._stderr.decode("utf-8", "replace")))

    async def start(self) -> str:
        """Start the process and wait for its first prompt; returns the banner printed before it."""
        if self._proc is not None:
            raise TargetError("the agent process is already started")
        # Unbuffered Python output, so print() before a prompt is not stuck in a pipe buffer.
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env, **self._tree.env}
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.cwd,
                env=env,
                # Its own process group, so close() also stops what the agent spawned.
                start_new_session=hasattr(os, "killpg"),
            )
        except OSError as exc:
            raise TargetError(f"cannot start agent {shlex.join(self.argv)!r}: {exc}") from None
        self._tree.started(self._proc.pid)
        self._stderr_task = asyncio.create_task(self._drain_stderr())
        self.banner = await self._read_reply()
        return self.banner

    async def ask(self, text: str) -> str:
        """Send ``text`` as one input line (newlines become spaces); return the reply text."""
        if self._proc is None:
            await self.start()
        assert self._proc is not None and self._proc.stdin is not None
        line = " ".join(text.splitlines())
        try:
            self._proc.stdin.write(line.encode() + b"\n")
            await self._proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise await self._exit_error("while reading its input") from None
        self.last_reply = await self._read_reply()
        return self.last_reply

    @property
    def _text(self) -> str:
        """All output not yet consumed as a reply (joined on demand, for error messages)."""
        return "".join(self._searched) + self._tail + self._unsearched

    async def _read_reply(self) -> str:
        assert self._proc is not None and self._proc.stdout is not None
        try:
            async with asyncio.timeout(self.read_timeout):
                new, self._unsearched = self._unsearched, ""
                seen = 0  # bytes of this reply read: an endless one must not fill memory
                while (reply := self._search(new)) is None:
                    chunk = await self._proc.stdout.read(65536)
                    if not chunk:
                        raise await self._exit_error("before printing its prompt")
                    seen += len(chunk)
                    if seen > Target.reply_limit:
                        raise await self._overrun(seen)
                    new = self._clean(chunk)
                return reply
        except TimeoutError:
            raise TargetError(
                f"no prompt within {self.read_timeout:g}s; last output: "
                f"{_tail(self._text + self._held)!r}{self._stderr_note()}"
            ) from None

    def _search(self, new: str) -> str | None:
        """The reply if the prompt is in the searched tail plus ``new``; else None (``new`` is kept)."""
        window = self._tail + new
        # With searched text before the window, window[0] is there only as context for ^ and \b.
        match = self.prompt.search(window, 1 if self._searched else 0)
        if match is None:
            cut = len(window) - PROMPT_WINDOW - 1
            if cut > 0:
                self._searched.append(window[:cut])
            self._tail = window[max(cut, 0) :]
            return None
        reply = "".join(self._searched) + window[: match.start()]
        self._searched, self._tail, self._unsearched = [], "", window[match.end() :]
        if self.prompt.groups:
            self.agent_name = match.group(1)
        self._check_prompt_inside(reply)
        return reply.strip()

    def _check_prompt_inside(self, reply: str) -> None:
        """Warn when the prompt also shows inside the output: output after the prompt that was
        read with it (it will open the next reply), or a prompt-like line in the reply (cut
        there when a read ends with that line). Either way replies may shift by a turn."""
        inside = self._prompt_in_line.search(reply)
        if inside is None and not self._unsearched.strip():
            return
        where = inside.group(0) if inside is not None else _tail(self._unsearched, 60)
        self.warnings.append(
            f"the prompt also appears in the middle of the agent's output ({where!r}): replies may be "
            "shifted by a turn; make the prompt pattern match only the real prompt"
        )

    def _clean(self, chunk: bytes) -> str:
        """A chunk of stdout as text without ANSI codes; a cut escape sequence waits in _held."""
        text = strip_ansi(self._held + self._decoder.decode(chunk))
        partial = _PARTIAL.search(text)
        if partial and len(text) - partial.start() <= _HOLD_LIMIT:
            text, self._held = text[: partial.start()], text[partial.start() :]
        else:
            self._held = ""
        return text

    async def _drain_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        while chunk := await self._proc.stderr.read(4096):
            self._stderr += chunk
            if len(self._stderr) > STDERR_LIMIT:  # bounded: a chatty agent cannot fill memory
                del self._stderr[: len(self._stderr) - STDERR_LIMIT]

    def _stderr_note(self) -> str:
        tail = self.stderr_tail
        return f"; stderr: {tail!r}" if tail else ""

    async def _exit_error(self, when: str) -> TargetError:
        assert self._proc is not None
        try:  # stdout closed: the process is exiting; let it finish and stderr drain
            await asyncio.wait_for(self._proc.wait(), 2.0)
            if self._stderr_task is not None:
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 1.0)
        except TimeoutError:
            pass
        code = self._proc.returncode
        what = f"exited with code {code}" if code is not None else "closed its output"
        output = _tail(self._text + self._held)
        return TargetError(
            f"agent process {what} {when}" + (f"; last output: {output!r}" if output else "") + self._stderr_note()
        )

    async def _overrun(self, seen: int) -> TargetError:
        """A reply past the bound: its text is dropped and the process tree killed at once (it
        would go on printing); the next case's process is a fresh one, as after a crash."""
        self._searched, self._tail, self._unsearched, self._held = [], "", "", ""
        self._tree.kill()
        await self.close()
        return TargetError(f"agent process printed {Target.over_bound(seen)} before its prompt; it was killed")

    async def close(self) -> None:
        """Stop the process and everything it started: SIGTERM, then SIGKILL to whatever is
        left after ``grace`` seconds; always reaped."""
        proc = self._proc
        if proc is None:
            return
        try:
            await self._tree.end(proc, self.grace)
        finally:
            if proc.stdin is not None:
                proc.stdin.close()
            if self._stderr_task is not None:
                self._stderr_task.cancel()
                try:
                    await self._stderr_task
                except (asyncio.CancelledError, Exception):
                    pass


class ProcessSession(Session):
    """One agent process for one case: sends the user messages it has not sent yet."""

    def __init__(self, process: AgentProcess):
        self.process = process
        self.sent = 0

    @property
    def agent_name(self) -> str | None:
        """The agent named by the latest prompt (``(name) >> ``), if the prompt names one."""
        return self.process.agent_name

    async def send(self, messages: list[Message]) -> Response:
        new = [m for m in messages if m.role == "user"][self.sent :]
        if not new:
            raise TargetError("no new user message to send to the agent process")
        for message in new:
            if message.attachments:
                raise TargetError("the process target sends text only; a message has attachments")
        if not self.process.started:
            await self.process.start()
        reply, start = "", time.perf_counter()
        for message in new:
            start = time.perf_counter()
            reply = await self.process.ask(message.text)
            self.sent += 1
        latency_ms = (time.perf_counter() - start) * 1000
        return Response(content=reply, latency_ms=latency_ms, warnings=list(self.process.warnings))

    async def close(self) -> None:
        await self.process.close()


class ProcessTarget(Target):
    """Starts ``command`` once per case and talks to it over stdin/stdout."""

    name = "process"
    mock_tools = True  # its agent finds the case's mocked tools (docs/suite-format.md#mocked-tools)
    trace_receiver = "127.0.0.1:0"  # traces: otel: a free port, given to the agent in its environment
    env_fields = ("env",)
    command_param = "command"  # the target of an agent given as a command (specrun.testing)
    description = "A CLI agent over stdin/stdout: one process per case, replies end at a prompt."
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {
            "command": {
                "description": "The command: a list, or a string split like a shell does.",
                "type": ["string", "array"],
                "minLength": 1,
                "minItems": 1,
                "items": {"type": "string"},
            },
            "cwd": {"type": "string", "description": "Working folder, relative to the agent file."},
            "env": {
                "type": "object",
                "additionalProperties": {"type": ["string", "number", "boolean"]},
                "description": "Extra environment variables; ${NAME} is replaced by variable NAME.",
            },
            "prompt": {
                "type": "string",
                "description": "Regex (RE2 syntax) marking the end of a reply; group 1 is the agent "
                "name (default: Agent Kernel's '(name) >> ').",
            },
            "read_timeout": {
                "$ref": "#/$defs/duration",
                "description": "Longest wait for a prompt (default 30s).",
            },
            "grace": {
                "$ref": "#/$defs/duration",
                "description": "When a case ends, how long its processes get between SIGTERM and SIGKILL (default 2s).",
            },
        },
        "required": ["command"],
    }

    def __init__(self, config: dict[str, Any], base_dir: Path):
        super().__init__(config, base_dir)
        config = self.config  # ${NAME} replaced in env
        self.argv = command_argv(config["command"])
        self.cwd = (Path(base_dir) / config.get("cwd", ".")).resolve()
        self.env = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in config.get("env", {}).items()}
        self.prompt = config.get("prompt", DEFAULT_PROMPT)
        self.read_timeout = parse_duration(config.get("read_timeout", DEFAULT_READ_TIMEOUT))
        self.grace = parse_duration(config.get("grace", GRACE_SECONDS))

    def problems(self) -> Iterable[tuple[str, str]]:
        yield from super().problems()
        try:
            compile_pattern(self.prompt)
        except PatternError as exc:
            yield "prompt", str(exc)
        yield from command_problems(self.argv, self.cwd, self.env)

    def process(self, context: Context) -> AgentProcess:
        """An unstarted process for one case; the case is named in ``SPECRUN_*`` variables (its
        mocked tools' MCP server in ``SPECRUN_MCP_URL``, when it declares ``tools:``). A
        traced case's agent also gets ``context.trace.environment()`` (``TRACEPARENT`` and the
        OTLP endpoints, over ``env``) and, unless ``env`` says, OTLP/HTTP protobuf as the
        protocol and batches exported every 100 ms (so spans arrive within the grace)."""
        trace = context.trace.environment() if context.trace is not None else {}
        defaults = {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_BSP_SCHEDULE_DELAY": "100"} if trace else {}
        env = {
            "SPECRUN_CASE_ID": context.case_id,
            "SPECRUN_USER": context.user,
            "SPECRUN_TEAM": context.team,
            "SPECRUN_LOCALE": context.locale,
            "SPECRUN_CLIENT_TYPE": context.client_type,
            "SPECRUN_CLIENT_IP": context.client_ip,
            "SPECRUN_REFERER": context.referer,
            "SPECRUN_ACCEPT": context.accept,
            "SPECRUN_RUN": str(context.run),
            **({"SPECRUN_MCP_URL": context.mcp_url} if context.mcp_url else {}),  # the case's mocked tools
            **defaults,
            **self.env,
            **trace,
        }
        return AgentProcess(
            self.argv, cwd=self.cwd, env=env, prompt=self.prompt, read_timeout=self.read_timeout, grace=self.grace
        )

    def session(self, context: Context) -> ProcessSession:
        return ProcessSession(self.process(context))

    async def respond(self, messages: list[Message], context: Context) -> Response:
        """One-shot: a fresh process replays ``messages`` and is closed."""
        session = self.session(context)
        try:
            return await session.send(messages)
        finally:
            await session.close()
