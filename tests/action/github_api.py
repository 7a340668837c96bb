"""A stand-in for the parts of GitHub's API the Action's steps call, on 127.0.0.1.

It answers what marocchino/sticky-pull-request-comment@v2 asks (GraphQL: find the PR's
comments, update one; REST: create one) and what actions/download-artifact@v4 asks for an
artifact of another run (list a run's artifacts, a 302 to the zip, the zip), and records
every call. Tokens decide permissions as GitHub's do: `WRITE_TOKEN` may comment, any other
token may read but gets 403 "Resource not accessible by integration" when it writes.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

WRITE_TOKEN = "ghs_test_token_that_may_comment"
READ_ONLY_TOKEN = "ghs_test_token_read_only"
BOT_LOGIN = "github-actions"


@dataclass
class Call:
    """One request, as the server saw it."""

    method: str
    path: str
    token: str
    body: Any
    status: int = 0

    @property
    def kind(self) -> str:
        """`create`, `update`, `find`, `artifacts`, `download`, ... (for assertions)."""
        if self.path.endswith("/graphql"):
            query = str((self.body or {}).get("query", ""))
            for word, kind in (("updateIssueComment", "update"), ("pullRequest(", "find")):
                if word in query:
                    return kind
            return "graphql"
        if self.method == "POST" and re.search(r"/issues/\d+/comments$", self.path):
            return "create"
        if self.path.startswith("/blob/") or self.path.endswith("/zip"):
            return "download"
        if "/artifacts" in self.path:
            return "artifacts"
        return f"{self.method} {self.path}"


@dataclass
class Comment:
    id: int
    number: int
    body: str
    author: str = BOT_LOGIN

    @property
    def node_id(self) -> str:
        return f"IC_{self.id}"


@dataclass
class GitHubStandIn:
    """The recorded calls and the state they changed."""

    calls: list[Call] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    artifacts: dict[int, dict[str, Path]] = field(default_factory=dict)
    """Workflow run id -> artifact name -> zip file (what act's artifact server stored)."""
    url: str = ""
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def kinds(self, *, writes_only: bool = False) -> list[str]:
        kinds = [call.kind for call in self.calls]
        return [k for k in kinds if k in ("create", "update")] if writes_only else kinds

    def start(self) -> GitHubStandIn:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                stand_in._handle(self, "GET")

            def do_POST(self) -> None:
                stand_in._handle(self, "POST")

            def do_PATCH(self) -> None:
                stand_in._handle(self, "PATCH")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # ------------------------------------------------------------------ requests

    def _handle(self, request: BaseHTTPRequestHandler, method: str) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        raw = request.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        auth = request.headers.get("Authorization", "")
        token = auth.split(" ", 1)[1] if " " in auth else auth
        call = Call(method, request.path, token, body)
        with self._lock:
            self.calls.append(call)
            status, headers, payload = self._answer(call)
        call.status = status
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        request.send_response(status)
        for name, value in headers.items():
            request.send_header(name, value)
        if not isinstance(payload, bytes):
            request.send_header("Content-Type", "application/json; charset=utf-8")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)

    def _answer(self, call: Call) -> tuple[int, dict[str, str], Any]:
        path = call.path.split("?", 1)[0]
        match = re.fullmatch(r"/blob/(\d+)\.zip", path)
        if match:  # blob storage: the signed URL is the credential, as on GitHub
            return 200, {"Content-Type": "application/zip"}, self._zip(int(match[1])).read_bytes()
        if call.token not in (WRITE_TOKEN, READ_ONLY_TOKEN):
            return 401, {}, {"message": "Bad credentials"}
        if path == "/graphql":
            return self._graphql(call)
        match = re.fullmatch(r"/repos/[^/]+/[^/]+/issues/(\d+)/comments", path)
        if match and call.method == "POST":
            if call.token != WRITE_TOKEN:
                return _forbidden()
            comment = Comment(len(self.comments) + 1, int(match[1]), str(call.body["body"]))
            self.comments.append(comment)
            return 201, {}, {"id": comment.id, "node_id": comment.node_id, "body": comment.body}
        match = re.fullmatch(r"/repos/[^/]+/[^/]+/actions/runs/(\d+)/artifacts", path)
        if match:
            return 200, {}, self._artifact_list(int(match[1]), call.path)
        match = re.fullmatch(r"/repos/[^/]+/[^/]+/actions/artifacts/(\d+)/zip", path)
        if match:
            return 302, {"Location": f"{self.url}/blob/{match[1]}.zip"}, b""
        return 404, {}, {"message": "Not Found"}

    def _graphql(self, call: Call) -> tuple[int, dict[str, str], Any]:
        query = str(call.body.get("query", ""))
        variables = call.body.get("variables") or {}
        if "updateIssueComment" in query:
            if call.token != WRITE_TOKEN:  # GraphQL says it in the body, with status 200
                error = {"type": "FORBIDDEN", "message": "Resource not accessible by integration"}
                return 200, {}, {"data": {"updateIssueComment": None}, "errors": [error]}
            wanted = variables["input"]["id"]
            comment = next(c for c in self.comments if c.node_id == wanted)
            comment.body = variables["input"]["body"]
            return 200, {}, {"data": {"updateIssueComment": {"issueComment": {"id": wanted}}}}
        if "pullRequest(" in query:
            nodes = [
                {
                    "id": c.node_id,
                    "author": {"login": c.author},
                    "isMinimized": False,
                    "body": c.body,
                }
                for c in self.comments
                if c.number == int(variables["number"])
            ]
            pull = {"comments": {"nodes": nodes, "pageInfo": {"hasNextPage": False}}}
            data = {"viewer": {"login": f"{BOT_LOGIN}[bot]"}, "repository": {"pullRequest": pull}}
            return 200, {}, {"data": data}
        return 200, {}, {"errors": [{"message": "the stand-in does not answer this query"}]}

    def _artifact_list(self, run_id: int, full_path: str) -> dict[str, Any]:
        wanted = re.search(r"[?&]name=([^&]+)", full_path)
        listed = []
        for index, (name, zip_path) in enumerate(sorted(self.artifacts.get(run_id, {}).items())):
            if wanted and wanted[1] != name:
                continue
            digest = hashlib.sha256(zip_path.read_bytes()).hexdigest()
            listed.append(
                {
                    "id": run_id * 1000 + index,
                    "name": name,
                    "size_in_bytes": zip_path.stat().st_size,
                    "created_at": "2026-01-01T00:00:00Z",
                    "digest": f"sha256:{digest}",
                }
            )
        return {"total_count": len(listed), "artifacts": listed}

    def _zip(self, artifact_id: int) -> Path:
        run_id, index = divmod(artifact_id, 1000)
        return sorted(self.artifacts[run_id].items())[index][1]


def _forbidden() -> tuple[int, dict[str, str], Any]:
    return 403, {}, {"message": "Resource not accessible by integration"}
