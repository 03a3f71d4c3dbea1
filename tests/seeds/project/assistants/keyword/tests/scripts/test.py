"""V1's script assertion `scripts.test.ValidateOutput`: receives (output, input, expected)."""

import json


def ValidateOutput(output, input, expected):
    data = json.loads(output) if isinstance(output, str) else output
    keywords = data.get("keywords") or []
    return {"pass": bool(keywords), "message": f"Validation passed: output contains keywords {keywords}"}
