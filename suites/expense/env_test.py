"""Before/after hooks for the expense suite (the seed's env_test): a clean ledger per case."""

import expense_agent


def Before(ctx, case):
    expense_agent.LEDGER.clear()
    return {"data": {"case": case.id, "user": ctx.user}}


def After(ctx, case, result, before_data):
    assert before_data["case"] == case.id
    expense_agent.LEDGER.clear()
