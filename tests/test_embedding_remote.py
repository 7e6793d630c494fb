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

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeServer.requests.append((self.path, body, self.headers.get("Authorization")))
        texts = body["input"]
        rows = [[float(len(t)), 1.0, 0.0] for t in texts]
        if self.path == "/api/embed":
            answer = {"embeddings": rows}
        else:  # OpenAI answers may come out of order; `index` says where each belongs
            answer = {"data": [{"index": i, "embedding": r} for i, r in reversed(list(enumerate(rows)))]}
        data = json.dumps(answer).encode()
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
