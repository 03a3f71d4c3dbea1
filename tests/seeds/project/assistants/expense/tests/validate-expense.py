"""V2's `scripts:tests.validate-expense`: the amount the agent filed is within the options' limits."""


def validate_expense(output, input, expected, context):
    limits = context["options"]["metadata"]
    amounts = [c["arguments"]["amount"] for c in context["tool_calls"] if c["name"] == "create_expense"]
    ok = bool(amounts) and all(limits["min_amount"] <= a <= limits["max_amount"] for a in amounts)
    return {"pass": ok, "message": f"amounts {amounts} within {limits['min_amount']}..{limits['max_amount']}"}
