"""``specrun view``: browse the run history in a local web app (see :mod:`specrun.viewer`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .history import project_option


@click.command("view")
@click.option("--port", type=click.IntRange(0, 65535), default=8642, show_default=True, help="Port (0: any free one).")
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on; anything but loopback is public."
)
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The history database (default: the project's, .specrun/history.db unless specrun.yaml says otherwise).",
)
@project_option
def command(port: int, host: str, db: Path | None, folder: Path | None) -> None:
    """Browse recorded runs: transcripts, a case across runs, two runs compared, agents side by side.

    Prints its URL first and opens a browser when run in a terminal. Read-only, except the
    Approve button of a failing snapshot, which rewrites that snapshot, and I agree / I
    disagree on a judge's verdict, which keeps a label for `specrun calibrate` in the history.
    """
    import asyncio

    from .._core.errors import UsageError
    from .._history.store import History
    from .._project.plugin_manager import default_plugins
    from .._project.project import Project
    from ..viewer.app import LOOPBACK, Viewer, serve
    from ..viewer.store import Store

    project = Project.discover(folder or Path.cwd(), default_plugins().registry)
    config = {**project.config, "history": str(db.resolve())} if db else project.config
    history = History.open(project.root, config)  # a HistoryError says why not (off, missing, too new)
    viewer = Viewer(Store(history), project.root, host)

    async def main() -> None:
        try:
            runner, url = await serve(viewer, port)
        except OSError as exc:
            raise UsageError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc} (pass --port N; 0 picks a free one)"
            ) from None
        click.echo(url)
        sys.stdout.flush()
        if host not in LOOPBACK:
            click.echo(f"warning: listening on {host}: anyone who can reach it can read this history", err=True)
        if sys.stdout.isatty():
            import webbrowser

            webbrowser.open(url)
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    finally:
        history.close()
