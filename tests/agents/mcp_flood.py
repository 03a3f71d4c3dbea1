"""A bare MCP server over stdio (JSON-RPC lines, no SDK, so that it starts and writes at once):
its tool ``huge`` answers with one line of 65 MiB, past the mcp target's bound; ``add`` answers
as a server does."""

from __future__ import annotations

import json
import sys

NUMBER = {"type": "integer"}
TOOLS = [
    {"name": "add", "inputSchema": {"type": "object", "properties": {"a": NUMBER, "b": NUMBER}}},
    {"name": "huge", "inputSchema": {"type": "object"}},
]

out = sys.stdout.buffer
for line in sys.stdin.buffer:
    request = json.loads(line)
    if "id" not in request:
        continue  # a notification
    head = b'{"jsonrpc":"2.0","id":' + json.dumps(request["id"]).encode()
    method, params = request["method"], request.get("params") or {}
    if method == "initialize":
        info = {"name": "flood", "version": "1"}
        version = params["protocolVersion"]
        answer = {"result": {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}}
    elif method == "tools/list":
        answer = {"result": {"tools": TOOLS}}
    elif method == "tools/call" and params["name"] == "huge":
        out.write(head + b',"result":{"content":[{"type":"text","text":"' + b"x" * (65 << 20) + b'"}]}}\n')
        out.flush()
        continue
    elif method == "tools/call":
        answer = {"result": {"content": [{"type": "text", "text": str(sum(params["arguments"].values()))}]}}
    else:
        answer = {"error": {"code": -32601, "message": f"no method {method}"}}
    out.write(head + b"," + json.dumps(answer)[1:].encode() + b"\n")
    out.flush()
