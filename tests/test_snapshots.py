"""The ``snapshot`` assertion and ``--update-snapshots``: golden outputs beside the suite or
inline in a YAML suite, rewritten with the suite's comments and layout kept."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path

import aiohttp
from support.cli import run_cli

from specrun._history.store import History
from specrun.viewer.app import Viewer, serve
from specrun.viewer.store import Store

BOT = """
import os

def answer(messages, ctx):
    version = os.environ.get("BOT_VERSION", "1")
    if messages[-1].text == "json":
        return {"version": version, "items": [1, 2]}
    return f"Hello from v{version}\\nYou said: {messages[-1].text}"
"""

SUITE = """\
# Greetings: this comment stays
cases:
  - id: hello   # the first case
    input: "hi"
    assertions:
      - {type: contains, value: Hello}
      - type: snapshot
        value:
  - id: file-snap
    input: there
    assertions: [{type: snapshot}]
  - id: data
    input: json
    assertions:
      - {type: snapshot, name: api}
"""


def make_project(tmp_path: Path, suite: str = SUITE, name: str = "suite.yaml") -> Path:
    (tmp_path / "specrun.yaml").write_text("timeout: 10s\n")
    (tmp_path / "snap_bot.py").write_text(BOT)
    (tmp_path / "agent.yaml").write_text("target: python:snap_bot:answer\n")
    (tmp_path / name).write_text(suite)
    return tmp_path / name


def run(tmp_path: Path, *args: str, version: str = "1", **env: str):
    return run_cli([*args, "-o", "output-run.jsonl"], tmp_path, {**os.environ, "BOT_VERSION": version, **env})


def results(tmp_path: Path) -> dict[str, dict]:
    lines = [json.loads(line) for line in (tmp_path / "output-run.jsonl").read_text().splitlines()]
    return {r["id"]: r for r in lines if r["type"] == "result"}


def snapshot_of(record: dict) -> dict:
    return next(a for a in record["assertions"] if a["type"] == "snapshot")


def test_missing_snapshot_is_an_error_not_a_pass(tmp_path):
    make_project(tmp_path)
    proc = run(tmp_path, "suite.yaml")
    assert proc.returncode == 1
    found = results(tmp_path)
    assert {k: r["status"] for k, r in found.items()} == {"hello": "error", "file-snap": "error", "data": "error"}
    message = snapshot_of(found["file-snap"])["message"]
    assert "no approved snapshot yet" in message and "--update-snapshots" in message
    assert snapshot_of(found["file-snap"])["details"]["snapshot"]["case_id"] == "file-snap"  # approvable later
    assert not (tmp_path / "__snapshots__").exists()


def test_update_writes_files_and_inline_values_then_changes_fail(tmp_path):
    suite = make_project(tmp_path)
    proc = run(tmp_path, "suite.yaml", "--update-snapshots")
    assert proc.returncode == 0, proc.stdout
    folder = tmp_path / "__snapshots__" / "suite.yaml"
    assert (folder / "file-snap.txt").read_text() == "Hello from v1\nYou said: there"
    assert json.loads((folder / "data@api.json").read_text()) == {"version": "1", "items": [1, 2]}
    assert suite.read_text() == SUITE.replace(
        "        value:\n", "        value: |-\n          Hello from v1\n          You said: hi\n"
    )  # only the value changed: comments, quotes, flow style and indentation are as written

    proc = run(tmp_path, "suite.yaml")
    assert proc.returncode == 0, proc.stdout
    assert all(r["status"] == "passed" for r in results(tmp_path).values())

    proc = run(tmp_path, "suite.yaml", version="2")
    assert proc.returncode == 1
    found = results(tmp_path)
    assert {k: r["status"] for k, r in found.items()} == {"hello": "failed", "file-snap": "failed", "data": "failed"}
    failed = snapshot_of(found["file-snap"])
    assert failed["expected"] == "Hello from v1\nYou said: there"
    assert failed["actual"] == "Hello from v2\nYou said: there"
    assert "differs from the approved snapshot" in failed["message"]
    assert snapshot_of(found["data"])["expected"] == {"version": "1", "items": [1, 2]}


def test_update_rewrites_only_the_changed_inline_value(tmp_path):
    suite = make_project(tmp_path)
    run(tmp_path, "suite.yaml", "--update-snapshots")
    approved = suite.read_text()
    proc = run(tmp_path, "suite.yaml", "--update-snapshots", version="2")
    assert proc.returncode == 0, proc.stdout
    assert suite.read_text() == approved.replace("Hello from v1", "Hello from v2")
    assert "snapshot updated" in snapshot_of(results(tmp_path)["hello"])["message"]


def test_structured_output_compares_as_json_whatever_the_key_order(tmp_path):
    make_project(tmp_path)
    folder = tmp_path / "__snapshots__" / "suite.yaml"
    folder.mkdir(parents=True)
    (folder / "data@api.json").write_text('{"items": [1, 2], "version": "1"}')
    proc = run(tmp_path, "suite.yaml", "--run", "^data$")
    assert proc.returncode == 0, proc.stdout
    assert results(tmp_path)["data"]["status"] == "passed"


def test_inline_snapshot_in_a_json_suite_cannot_be_rewritten(tmp_path):
    cases = {"cases": [{"id": "j", "input": "hi", "assertions": [{"type": "snapshot", "value": None}]}]}
    make_project(tmp_path, json.dumps(cases), "suite.json")
    proc = run(tmp_path, "suite.json", "--update-snapshots")
    assert proc.returncode == 1
    assert "an inline snapshot needs a YAML suite" in snapshot_of(results(tmp_path)["j"])["message"]


def test_folder_search_skips_snapshots(tmp_path):
    make_project(tmp_path)
    run(tmp_path, "suite.yaml", "--update-snapshots")
    proc = run(tmp_path, ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr  # data@api.json is no suite
    assert len(results(tmp_path)) == 3


ECHO = """
import os

def answer(messages, ctx):
    text, version = messages[-1].text, os.environ.get("BOT_VERSION", "1")
    if text == "key":
        return f"Your key is {os.environ['SNAP_API_KEY']} (v{version})"
    if text == "data":
        return {"v": version, "tags": ["a", "b"]}
    if text.startswith("lines"):
        return f"{text}\\nsecond line"
    return f"{text} (v{version})"
"""

CLASHING = [  # (id, name): before, the first two shared a file, as did the last two (cut at 100)
    ("greet", "v1"),
    ("greet.v1", None),
    ("greet", None),
    ("Greet", None),  # the same file as greet's on a disk that ignores case
    ("a/b", None),
    ("a_b", None),
    ("x" * 100 + "1", None),
    ("x" * 100 + "2", None),
]


def test_each_case_snapshot_has_its_own_file_whatever_the_ids(tmp_path):
    cases = []
    for n, (case_id, name) in enumerate(CLASHING):
        snap = {"type": "snapshot", **({"name": name} if name else {})}
        cases.append({"id": case_id, "input": f"case {n}", "assertions": [snap]})
    make_project(tmp_path, json.dumps({"cases": cases}), "suite.json")
    (tmp_path / "snap_bot.py").write_text(ECHO)
    assert run(tmp_path, "suite.json", "--update-snapshots").returncode == 0
    files = sorted((tmp_path / "__snapshots__" / "suite.json").iterdir())
    assert len({f.name.lower() for f in files}) == len(CLASHING)  # one each, even ignoring case
    assert sorted(f.read_text() for f in files) == sorted(f"case {n} (v1)" for n in range(len(CLASHING)))
    assert {f.name for f in files} >= {"greet@v1.txt", "greet.v1.txt", "greet.txt"}  # plain ids stay readable


def test_two_file_snapshots_under_one_name_and_old_file_names_are_pointed_out(tmp_path):
    make_project(
        tmp_path, SUITE + "  - id: twice\n    input: hi\n    assertions: [{type: snapshot}, {type: snapshot}]\n"
    )
    folder = tmp_path / "__snapshots__" / "suite.yaml"
    folder.mkdir(parents=True)
    (folder / "data.api.json").write_text('{"version": "1", "items": [1, 2]}')  # how it was named before
    assert run(tmp_path, "suite.yaml", "--run", "^(data|twice)$").returncode == 1
    found = results(tmp_path)
    assert "2 snapshots named None kept in files; give each its own name" in snapshot_of(found["twice"])["message"]
    missing = snapshot_of(found["data"])["message"]
    assert "no approved snapshot yet" in missing and "data@api.json" in missing
    assert "data.api.json is where an older specrun kept it: rename it if it is this case's" in missing


# Comments, a directive and a document marker with its own comment, flow style with odd spacing,
# a block value with blank lines after it, a comment after an empty value: all kept byte for byte.
KEEP = """\
%YAML 1.2
---   # the greeting suite
# heading comment
cases:
  - id: one      # first
    input:   "lines one"
    assertions:
      - {type:   contains,   value: "one"}   # flow, odd spacing
      - type: snapshot
        value:      # approve me
  - id: two
    input: lines two
    assertions: [ {type: snapshot,  value: null} ]
  - id: three
    input: three
    assertions:
      - type: snapshot
        name: kept
        value: |-
          stale text
          from before


      # a comment after the value
  - id: four
    input: data
    assertions:
      - type: snapshot
        value: {v: "0",   tags: []}   # flow stays flow
...
"""

KEPT = """\
%YAML 1.2
---   # the greeting suite
# heading comment
cases:
  - id: one      # first
    input:   "lines one"
    assertions:
      - {type:   contains,   value: "one"}   # flow, odd spacing
      - type: snapshot
        value: |-      # approve me
          lines one
          second line
  - id: two
    input: lines two
    assertions: [ {type: snapshot,  value: "lines two\\nsecond line"} ]
  - id: three
    input: three
    assertions:
      - type: snapshot
        name: kept
        value: three (v1)


      # a comment after the value
  - id: four
    input: data
    assertions:
      - type: snapshot
        value: {v: '1', tags: [a, b]}   # flow stays flow
...
"""


def test_inline_update_changes_only_the_values_byte_for_byte(tmp_path):
    suite = make_project(tmp_path, KEEP)
    crlf = tmp_path / "crlf.yaml"  # a byte-order mark and Windows line endings
    windows = "\ufeffcases:\n  - id: w\n    input: lines w\n    assertions:\n      - type: snapshot\n        value:{}\n"
    windows = windows.replace("\n", "\r\n")
    crlf.write_bytes(windows.format("").encode())
    (tmp_path / "snap_bot.py").write_text(ECHO)
    proc = run(tmp_path, "suite.yaml", "crlf.yaml", "--update-snapshots")
    assert proc.returncode == 0, proc.stdout
    assert suite.read_bytes() == KEPT.encode()
    assert crlf.read_bytes() == windows.format(" |-\r\n          lines w\r\n          second line").encode()
    proc = run(tmp_path, "suite.yaml", "crlf.yaml")
    assert proc.returncode == 0, proc.stdout


SECRET = "sk-snap-0123456789abcdef"
SECRET_SUITE = """\
cases:
  - id: key-file
    input: key
    assertions: [{type: snapshot}]
  - id: key-inline
    input: key
    assertions:
      - type: snapshot
        value:
"""


async def approve_in_viewer(root: Path, case_id: str) -> None:
    """Press the Approve button of ``case_id`` on the latest run's page of ``specrun view``."""
    history = History.open(root, {})
    runner, url = await serve(Viewer(Store(history), root, "127.0.0.1"), 0)
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{url}run", params={"id": str(history.runs(1)[0]["id"])}) as page:
                forms = re.findall(r'<form class="approve".*?</form>', await page.text())
            form = next(f for f in forms if f'name="case" value="{case_id}"' in f)
            async with http.post(f"{url}approve", data=dict(re.findall(r'name="(\w+)" value="([^"]*)"', form))) as done:
                assert done.status == 200 and f"Approved: {case_id}" in await done.text()
    finally:
        await runner.cleanup()
        history.close()


def test_a_snapshot_never_holds_a_secret_whichever_way_it_is_approved(tmp_path):
    suite = make_project(tmp_path, SECRET_SUITE)
    (tmp_path / "snap_bot.py").write_text(ECHO)
    assert run(tmp_path, "suite.yaml", SNAP_API_KEY=SECRET).returncode == 1  # none approved yet
    asyncio.run(approve_in_viewer(tmp_path, "key-file"))
    assert run(tmp_path, "suite.yaml", "--run", "key-inline", "--update-snapshots", SNAP_API_KEY=SECRET).returncode == 0
    file_snap = tmp_path / "__snapshots__" / "suite.yaml" / "key-file.txt"
    for kept in (file_snap.read_text(), suite.read_text()):
        assert SECRET not in kept and "Your key is [REDACTED:SNAP_API_KEY] (v1)" in kept
    proc = run(tmp_path, "suite.yaml", SNAP_API_KEY=SECRET)  # compared masked: both pass
    assert proc.returncode == 0, proc.stdout
    assert [r["status"] for r in results(tmp_path).values()] == ["passed", "passed"]
