"""The demo agents over HTTP: ``POST /chat {"message": ..., "agent": "general"}`` → ``{"response": ...}``.

``python server.py --port 8000`` serves on 127.0.0.1 until stopped; ``GET /health`` answers
``ok`` once it is ready.
"""

from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from demo import AGENTS, answer


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/health":
            self._reply(200, {"status": "ok"})
        else:
            self._reply(404, {"error": "not found"})

    def do_POST(self) -> None:
        if self.path != "/chat":
            self._reply(404, {"error": "not found"})
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            message, agent = str(body["message"]), body.get("agent", "general")
        except (ValueError, KeyError, TypeError):
            self._reply(400, {"error": 'expected {"message": "..."}'})
            return
        if agent not in AGENTS:
            self._reply(400, {"error": f"unknown agent {agent!r}"})
            return
        self._reply(200, {"response": answer(agent, message)})

    def _reply(self, status: int, data: dict) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:  # quiet: no access log on stderr
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
