"""HTTP embedders against a fake server on 127.0.0.1: the request shape and the answer's order."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from pipeline.embedding.registry import make_embedder
from pipeline.errors import PipelineError


class FakeServer(BaseHTTPRequestHandler):
    requests: list = []
    answer = None  # a fixed answer (any JSON value, or bytes) instead of the right one

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeServer.requests.append((self.path, body, self.headers.get("Authorization")))
        texts = body["input"]
        rows = [[float(len(t)), 1.0, 0.0] for t in texts]
        if self.path == "/api/embed":
            answer = {"embeddings": rows}
        else:  # OpenAI answers may come out of order; `index` says where each belongs
            answer = {"data": [{"index": i, "embedding": r} for i, r in reversed(list(enumerate(rows)))]}
        if FakeServer.answer is not None:
            answer = FakeServer.answer
        data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture()
def server():
    FakeServer.requests = []
    FakeServer.answer = None
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeServer)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def expected(texts):
    rows = np.array([[len(t), 1.0, 0.0] for t in texts], dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_ollama_posts_model_and_inputs(server):
    embedder = make_embedder(f"ollama:mxbai-embed-large@{server}")
    vectors = embedder.embed(["a", "bbb"])
    assert FakeServer.requests[0][:2] == ("/api/embed", {"model": "mxbai-embed-large", "input": ["a", "bbb"]})
    assert np.allclose(vectors, expected(["a", "bbb"]))
    assert embedder.name == "mxbai-embed-large"


def test_openai_compatible_reorders_by_index_and_sends_key(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    vectors = make_embedder(f"openai:text-embedding-3-small@{server}").embed(["xx", "y", "zzzz"])
    path, body, auth = FakeServer.requests[0]
    assert path == "/v1/embeddings" and auth == "Bearer sk-test"
    assert np.allclose(vectors, expected(["xx", "y", "zzzz"]))


def test_unreachable_server_is_a_clear_error():
    embedder = make_embedder("ollama:m@http://127.0.0.1:9")
    embedder.timeout = 2
    with pytest.raises(PipelineError, match="embedding server http://127.0.0.1:9/api/embed failed"):
        embedder.embed(["text"])


@pytest.mark.parametrize("spec", ["nope", "ollama:", "local:", "minilm:extra"])
def test_unknown_specs_are_rejected(spec):
    with pytest.raises(PipelineError, match="unknown embedder"):
        make_embedder(spec)


@pytest.mark.parametrize(
    "spec, answer, message",
    [
        ("openai", {"error": {"message": "The model `m` does not exist", "type": "invalid_request_error"}},
         r"/v1/embeddings answered 200 without a `data` list of embeddings: The model `m` does not exist$"),
        ("openai", {"object": "list"}, r"answered 200 without a `data` list of embeddings \(keys: object\)$"),
        ("openai", {"data": [{"index": 0, "embedding": [1.0, 2.0]}]}, r"answered 1 vectors for 2 texts"),
        ("openai", {"data": [{"index": 0, "embedding": "AAAA"}, {"index": 1, "embedding": [1.0]}]}, "not a list of numbers"),
        ("openai", {"data": [{"index": "0", "embedding": [1.0]}, {"index": 1, "embedding": [1.0]}]}, "`index` is not a whole number"),
        ("openai", [1, 2], "answered a JSON list, not an object"),
        ("openai", b"<html>502</html>", "failed: Expecting value"),
        ("ollama", {"embeddings": [[1.0, 2.0], [1.0]]}, "vectors of 2 and 1 numbers"),
        ("ollama", {"error": "model 'm' not found"}, r"/api/embed answered no list of vectors: model 'm' not found$"),
    ],
)
def test_a_wrong_answer_is_a_one_line_error_naming_the_server(server, spec, answer, message):
    """Issue 34: a server answering 200 without ``data`` dumped a ~150-line traceback."""
    FakeServer.answer = answer
    with pytest.raises(PipelineError, match=message) as info:
        make_embedder(f"{spec}:m@{server}").embed(["a", "bbb"])
    assert "\n" not in str(info.value) and server in str(info.value)


def test_the_build_reports_a_wrong_answer_in_one_line(server, tmp_path):
    from typer.testing import CliRunner

    from pipeline.cli import app

    FakeServer.answer = {"error": {"message": "invalid api key"}}
    (tmp_path / "content").mkdir()
    (tmp_path / "content" / "a.md").write_text("# A\n\nSome text to embed.\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["build", str(tmp_path / "content"), "--out", str(tmp_path / "site"),
                                      "--embedder", f"openai:m@{server}", "--cache-dir", str(tmp_path / "cache"), "-q"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert errors == [f"error: embedding server {server}/v1/embeddings answered 200 without a `data` list of embeddings: invalid api key"]
    assert not (tmp_path / "site").exists()
