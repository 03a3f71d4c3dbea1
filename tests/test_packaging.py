"""The wheel: exactly the three packages, with the schemas, py.typed and every plugin module.

The source tree is copied first (without .git and build leftovers) so that building never
writes build/ or *.egg-info into the working copy. Takes a few seconds; part of the default run.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.background import Job
from support.started import finish

ROOT = Path(__file__).resolve().parent.parent
# .mypy_cache too: tests/test_lint.py's mypy may be writing it while the tree is copied.
IGNORE = shutil.ignore_patterns(
    ".git", "build", "dist", "*.egg-info", "__pycache__", ".venv", ".ruff_cache", ".mypy_cache", ".specrun-cache",
    ".specrun",
    "output-*.jsonl",
)


ENGINE_PLUGINS = {  # the engine's own plugins, in its rooms: an entry point each, like a family
    "judges": "specrun._judges.assertions",
    "snapshots": "specrun._history.assertions",
    "wire-targets": "specrun._models.targets",
    "report-formats": "specrun._report.reporters",
}

def _build(folder: Path) -> list[str]:
    """``python -m build --wheel`` of a copy of the source tree, into ``folder/dist``; then the
    wheel installed from there (``pip install --target``) into ``folder/site``."""
    shutil.copytree(ROOT, folder / "src", ignore=IGNORE)
    build = [sys.executable, "-m", "build", "--wheel", "--outdir", str(folder / "dist"), str(folder / "src")]
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(folder / "site")]
    return ["sh", "-c", f"{shlex.join(build)} && {shlex.join(install)} {shlex.quote(str(folder / 'dist'))}/*.whl"]


# Started when collection finishes (tests/support/background.py): the build's 2 s and the
# install's 1 s overlap the tests before these.
BUILD = Job(__name__, "wheel", _build)


@pytest.fixture(scope="module")
def built() -> Path:
    """The folder of the built wheel (``dist``) and of its installation (``site``)."""
    result = BUILD.result(timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert BUILD.folder is not None
    return BUILD.folder


@pytest.fixture(scope="module")
def wheel(built: Path) -> Path:
    [found] = (built / "dist").glob("specrun-*.whl")
    return found


@pytest.fixture(scope="module")
def names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        return zf.namelist()


def _sources(folder: Path, pattern: str) -> set[str]:
    """Files under ``folder`` as wheel paths (relative to the folder's source root)."""
    return {
        p.relative_to(folder.parent).as_posix()
        for p in folder.rglob(pattern)
        if "__pycache__" not in p.parts
    }


def test_wheel_holds_exactly_the_three_packages(names: list[str]) -> None:
    top = {name.split("/", 1)[0] for name in names}
    dist_info = {t for t in top if t.endswith(".dist-info")}
    assert len(dist_info) == 1 and dist_info.pop().startswith("specrun-")
    assert top - {t for t in top if t.endswith(".dist-info")} == {
        "specrun", "specrun_plugins", "specrun_schemas"
    }


def test_wheel_has_no_tests_suites_bench_or_docs(names: list[str]) -> None:
    unwanted = ("tests/", "suites/", "bench/", "docs/", "examples/", "plugins/", "schemas/")
    assert not [n for n in names if n.startswith(unwanted)]
    assert not [n for n in names if "fake_plugin" in n or "bad_inputs" in n or "/test_" in n]


def test_wheel_has_the_schemas_and_py_typed(names: list[str]) -> None:
    schemas = _sources(ROOT / "schemas" / "specrun_schemas", "*.json")
    assert {"specrun_schemas/suite.schema.json", "specrun_schemas/agent.schema.json",
            "specrun_schemas/config.schema.json"} <= schemas
    assert schemas <= set(names)
    assert "specrun_schemas/__init__.py" in names
    assert "specrun/py.typed" in names


def test_wheel_has_every_engine_and_plugin_module(names: list[str]) -> None:
    engine = _sources(ROOT / "specrun", "*.py")
    plugins = _sources(ROOT / "plugins" / "specrun_plugins", "*.py")
    assert "specrun/cli/main.py" in engine
    families = {"assertions", "sources", "targets", "simulators", "executors", "adapters"}
    assert {f"specrun_plugins/{f}/__init__.py" for f in families} <= plugins
    assert set(ENGINE_PLUGINS.values()) <= {m.removesuffix("/__init__.py").replace("/", ".") for m in engine}
    assert not (engine | plugins) - set(names), "modules missing from the wheel"


def test_wheel_metadata_declares_the_script_and_every_family(wheel: Path, names: list[str]) -> None:
    with zipfile.ZipFile(wheel) as zf:
        [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        text = zf.read(entry_points).decode()
        [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = zf.read(metadata).decode()
    assert "specrun = specrun.cli.main:main" in text
    for family in ("assertions", "sources", "targets", "simulators", "executors", "adapters"):
        assert f"{family} = specrun_plugins.{family}" in text
    for name, module in ENGINE_PLUGINS.items():  # the engine's own plugins register the same way
        assert f"{name} = {module}" in text
    assert "Requires-Python: >=3.11" in meta


def test_wheel_install_behaves_like_the_editable_one(built: Path, tmp_path: Path) -> None:
    """Installed from the wheel (ahead of the editable install on the path): same plugins, and
    the example suites validate."""
    site = built / "site"
    env = {k: v for k, v in os.environ.items() if k != "SPECRUN_DISABLE_PLUGINS"}
    wheel_env = {**env, "PYTHONPATH": str(site)}
    plugins = "from specrun.cli.main import main; main(['plugins', '--json'])"
    # Four independent commands, started together so that their start-ups overlap.
    where, from_wheel, editable, suites = (
        _start("import specrun, specrun_plugins, specrun_schemas as s; "
               "print(specrun.__file__, specrun_plugins.__file__, s.__file__)", env=wheel_env, cwd=tmp_path),
        _start(plugins, env=wheel_env, cwd=tmp_path),
        _start(plugins, env=env, cwd=tmp_path),
        # -P: do not put the working folder (the repository, holding specrun/) first on the path.
        _start("import specrun, sys; assert specrun.__file__.startswith(sys.argv[1]); "
               "from specrun.cli.main import main; main(['validate', 'suites'])", str(site),
               options=["-P"], env=wheel_env, cwd=ROOT),
    )
    located = finish(where)
    assert located.returncode == 0, located.stderr
    assert located.stdout.count(str(site)) == 3, located.stdout

    def listed(process: subprocess.Popen[str]) -> dict[str, object]:
        result = finish(process)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    assert listed(from_wheel) == listed(editable)
    result = finish(suites)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok: ")


def _start(code: str, *args: str, env: dict[str, str], cwd: Path, options: tuple[str, ...] | list[str] = ()
           ) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, *options, "-c", code, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)

