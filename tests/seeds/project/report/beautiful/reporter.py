import html
import json


def page(messages, ctx):
    report = json.loads(messages[-1].text)["report"]
    s = report["summary"]
    rows = "".join(f"<li>{html.escape(r['id'])}: {r['status']}</li>" for r in report["results"])
    return f"<html><body><h1>Beautiful report</h1><p>{s['passed']}/{s['total']} passed</p><ul>{rows}</ul></body></html>"
