"""V1's test environment (user, team, locale, client type and IP, referer, accept) in every case's
``ctx``: defaults, per case, ``specrun.yaml``, ``--ctx`` and the flags, end to end through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import run_cli

FIELDS = ("user", "team", "locale", "client_type", "client_ip", "referer", "accept")

AGENT = """
FIELDS = {fields!r}


def respond(messages, ctx):
    seen = ctx.to_dict()
    attrs = {{f: getattr(ctx, f) for f in FIELDS}}
    return {{"attrs": attrs, "dict": {{f: seen[f] for f in FIELDS}}, "extra": ctx.extra}}
"""


def project(root: Path, cases: list[dict], config: str = "timeout: 30s\n") -> Path:
    (root / "specrun.yaml").write_text(config)
    (root / "agent.yaml").write_text("target: python:env_agent:respond\n")
    (root / "env_agent.py").write_text(AGENT.format(fields=FIELDS))
    (root / "tests").mkdir()
    (root / "tests" / "inputs.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return root


def outputs(root: Path, *args: str) -> dict[str, dict]:
    done = run_cli(["-i", "tests/inputs.jsonl", "-o", "out.jsonl", *args], root)
    assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(line) for line in (root / "out.jsonl").read_text().splitlines()]
    found = {r["id"]: r["output"] for r in records if r.get("type") == "result"}
    for output in found.values():
        assert output["attrs"] == output["dict"]  # ctx.<field> and ctx.to_dict() never disagree
    return {case: output["attrs"] for case, output in found.items()} | {
        f"{case}.extra": output["extra"] for case, output in found.items()
    }


def test_v1s_defaults_and_per_case_fields_reach_the_agent(tmp_path):
    cases = [
        {"id": "T1", "input": "hi"},
        {
            "id": "T2",
            "input": "hi",
            "client_type": "mobile",
            "client_ip": "10.0.0.9",
            "referer": "app",
            "accept": "cui",
        },
    ]
    seen = outputs(project(tmp_path, cases))
    assert seen["T1"] == {
        "user": "test-user",
        "team": "test-team",
        "locale": "en-us",
        "client_type": "test",
        "client_ip": "127.0.0.1",
        "referer": "test",
        "accept": "standard",
    }
    assert seen["T2"]["client_type"] == "mobile" and seen["T2"]["client_ip"] == "10.0.0.9"
    assert (seen["T2"]["referer"], seen["T2"]["accept"]) == ("app", "cui")


def test_ctx_file_keys_set_the_fields_over_the_case_and_under_the_flags(tmp_path):
    cases = [{"id": "T1", "input": "hi", "user": "case-user", "client_type": "mobile", "team": "case-team"}]
    root = project(tmp_path, cases, "timeout: 30s\nclient_ip: 192.168.0.1\nreferer: project\n")
    (root / "ctx.json").write_text(json.dumps({"user": "ctx-user", "client_type": "web", "tenant": "acme"}))
    seen = outputs(root, "--ctx", "ctx.json", "-t", "flag-team")
    assert seen["T1"]["user"] == "ctx-user"  # --ctx over the case's field: ctx.user agrees with to_dict()
    assert seen["T1"]["client_type"] == "web" and seen["T1"]["team"] == "flag-team"
    assert (seen["T1"]["client_ip"], seen["T1"]["referer"]) == ("192.168.0.1", "project")  # specrun.yaml
    assert seen["T1.extra"] == {"tenant": "acme"}
    seen = outputs(root, "--ctx", "ctx.json", "-u", "flag-user")
    assert seen["T1"]["user"] == "flag-user"


def test_ctx_keys_specrun_sets_per_case_are_refused(tmp_path):
    root = project(tmp_path, [{"id": "T1", "input": "hi"}])
    (root / "ctx.json").write_text(json.dumps({"run": 3, "user": "u"}))
    done = run_cli(["-i", "tests/inputs.jsonl", "--ctx", "ctx.json"], root)
    assert done.returncode == 2 and "--ctx ctx.json: run cannot be set for every case" in done.stderr
    (root / "ctx.json").write_text(json.dumps({"client_ip": 10}))
    done = run_cli(["-i", "tests/inputs.jsonl", "--ctx", "ctx.json"], root)
    assert done.returncode == 2 and "client_ip must be a non-empty string, not 10" in done.stderr
