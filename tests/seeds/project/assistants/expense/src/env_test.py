"""V2's env_test script (src/env_test.ts) in Python: before/after hooks, per case and global.

AfterAll writes what it received to after_all.json, for the corpus to check (V2: AfterAll gets
the full results, outputs included).
"""

import json
from pathlib import Path

LEDGER = []


def Before(ctx, case):
    LEDGER.append(case.id)
    return {"data": {"userId": ctx.user, "testId": case.id}}


def After(ctx, case, result, before_data):
    assert before_data["testId"] == case.id
    LEDGER.remove(case.id)


def BeforeAll(ctx, cases):
    return {"data": {"initialized": True, "cases": [c.id for c in cases]}}


def AfterAll(ctx, results, before_data):
    report = {"before_data": before_data, "results": results}
    Path("after_all.json").write_text(json.dumps(report, default=str))
