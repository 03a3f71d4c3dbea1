"""A validator agent: passes a response that is not empty and mentions no error."""

import json


def judge(messages, ctx):
    request = messages[-1].text
    ok = bool(request.strip()) and "error" not in json.dumps(ctx.metadata).lower()
    return {"passed": ok, "score": 1.0 if ok else 0.0, "reason": f"criteria: {ctx.metadata.get('criteria')}"}
