"""``specrun``: the entry point. Commands load lazily so that ``--help`` and ``--version`` are instant."""

from __future__ import annotations

import gc
import importlib.util
import io
import os
import sys
from typing import Any

import click

from .. import __version__
from .._core.errors import SpecrunError, SuiteError
from .._core.redact import redact

COMMANDS = {
    "run": "specrun.cli.run",
    "validate": "specrun.cli.validate",
    "schema": "specrun.cli.schema",
    "plugins": "specrun.cli.plugins",
    "diff": "specrun.cli.diff",
    "merge": "specrun.cli.merge",
    "calibrate": "specrun.cli.calibrate",
    "view": "specrun.cli.view",
    "init": "specrun.cli.init",
    "history": "specrun.cli.history",
    "rejudge": "specrun.cli.rejudge",
}


DEBUG_HELP = "Show tracebacks of errors and of agents' exceptions."


def _set_debug(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        ctx.ensure_object(dict)["debug"] = True


def _debug_option() -> click.Option:
    """``--debug`` on every command, so that it works after the command and its paths too."""
    return click.Option(["--debug"], is_flag=True, expose_value=False, callback=_set_debug, help=DEBUG_HELP)


def debugging(ctx: click.Context) -> bool:
    """``--debug`` given anywhere on the command line, or ``SPECRUN_DEBUG`` set."""
    return bool((ctx.find_object(dict) or {}).get("debug") or os.environ.get("SPECRUN_DEBUG"))


class SpecrunGroup(click.Group):
    """Commands imported on first use; a path or a source (``agents:ID``) first runs ``run``."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, module in COMMANDS.items() if importlib.util.find_spec(module)]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS or not importlib.util.find_spec(COMMANDS[name]):
            return None
        command: click.Command = importlib.import_module(COMMANDS[name]).command
        if not any(param.name == "debug" for param in command.params):  # --debug anywhere on the line
            command.params.append(_debug_option())
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        return super().resolve_command(ctx, self._route(ctx, args))

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # A leading --debug is the group's; what follows it is routed as if it came first.
        lead = 0
        while lead < len(args) and args[lead] == "--debug":
            lead += 1
        rest = args[lead:]
        if not rest or rest[0] not in ("--help", "-h", "--version"):
            rest = self._route(ctx, rest)
        return super().parse_args(ctx, [*args[:lead], *rest])

    def _route(self, ctx: click.Context, args: list[str]) -> list[str]:
        """``args`` for the command they name, else for ``run``. A first word that is no command,
        no existing path and no ``source:`` yet resembles a command is a typo: stop before
        anything runs (``run`` rejects the other stray words)."""
        if (args and args[0] in COMMANDS) or "run" not in self.list_commands(ctx):
            return args
        word = args[0] if args else ""
        if word and not word.startswith("-") and ":" not in word and not os.path.exists(word):
            import difflib

            close = difflib.get_close_matches(word, self.list_commands(ctx), n=1)
            if close:
                ctx.fail(f"No such command {word!r}. Did you mean {close[0]!r}?")
        return ["run", *args]


@click.group(cls=SpecrunGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="specrun")
@click.option("--debug", is_flag=True, expose_value=False, callback=_set_debug, help=DEBUG_HELP)
def cli() -> None:
    """Test AI agents from declarative suites (JSONL, YAML or JSON).

    \b
    specrun suites/                 run every suite under suites/
    specrun                         run the suites specrun.yaml lists
    specrun -i "hello" -n my.agent  send one message to an agent
    specrun validate suites/        check suites without running them
    specrun init                    scaffold a project here
    specrun history                 recent runs; --flaky for the flaky cases
    specrun view                    browse the run history in a web app
    """


def _traceback() -> None:
    """``--debug``: the traceback, through redact like every other message."""
    import traceback

    click.echo(redact(traceback.format_exc()), err=True, nl=False)


def _standard_streams_open() -> None:
    """A closed stdin, stdout or stderr (``specrun ... >&-``) is opened onto /dev/null: else the
    next file the run opened took its number, and the event loop, closing that file as the run
    ended, aborted the process (exit 134) after the reports were written."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free number: fd, if those before are open
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; errors become a message and an exit code, never a traceback (unless --debug)."""
    _standard_streams_open()
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args or bool(os.environ.get("SPECRUN_DEBUG"))
    try:
        # The command line as given (the run history records it; a test calls main in-process).
        code = cli.main(args=args, prog_name="specrun", standalone_mode=False, obj={"argv": list(args)})
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:  # shown through redact: click quotes the bad value
        shown = io.StringIO()
        exc.show(file=shown)
        click.echo(redact(shown.getvalue()), err=True, nl=False)
        code = exc.exit_code
    except click.exceptions.Abort:
        click.echo("specrun: interrupted", err=True)
        code = 130
    except SuiteError as exc:
        if debug:
            _traceback()
        # One problem per line, each starting with file:line:col, so editors can jump to it.
        for problem in exc.problems:
            click.echo(redact(str(problem)), err=True)
        files, count = len({p.file for p in exc.problems}), len(exc.problems)
        click.echo(f"specrun: {count} problem{'s' * (count != 1)} in {files} file{'s' * (files != 1)}", err=True)
        code = exc.exit_code
    except SpecrunError as exc:
        if debug:
            _traceback()
        message = redact(str(exc))
        click.echo(message if "\n" in message else f"specrun: {message}", err=True)
        code = exc.exit_code
    except KeyboardInterrupt:
        click.echo("specrun: interrupted", err=True)
        code = 130
    except Exception as exc:  # a bug in specrun or a plugin: say so, exit 3
        if debug:
            _traceback()
        click.echo(f"specrun: internal error: {type(exc).__name__}: {redact(str(exc))} (rerun with --debug)", err=True)
        code = 3
    # All that is alive now lives until exit: out of the collector's sight, the exit does not
    # sweep it. With litellm imported (in the background, after the run froze what it had
    # loaded) that sweep alone took 1-2 s after the run had finished.
    gc.freeze()
    sys.exit(code if isinstance(code, int) else 0)
