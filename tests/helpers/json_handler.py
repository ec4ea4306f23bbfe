"""The request handler the tests' stand-in HTTP servers share (imported, not collected)."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet handler that answers JSON: subclasses write ``do_GET``/``do_POST``."""

    def log_message(self, *args: object) -> None:
        pass

    def send_json(self, status: int, payload: dict) -> None:
        blob = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(blob)))
        self.end_headers()
        self.wfile.write(blob)
