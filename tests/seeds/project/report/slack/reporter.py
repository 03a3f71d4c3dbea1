import json


def summary(messages, ctx):
    s = json.loads(messages[-1].text)["report"]["summary"]
    return f":white_check_mark: {s['passed']}/{s['total']} agent tests passed ({s['failed']} failed)"
