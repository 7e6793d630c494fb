"""The local model run by ONNX Runtime: no torch on this path once the model is exported.

Texts are tokenised with the model's own ``tokenizer.json`` (the ``tokenizers`` library, as
sentence-transformers does: truncated to the model's ``max_seq_length``), then encoded in
length-bucketed batches: sorted by token count, batched, each batch padded only to its own
longest text, rows put back in input order. Padding never changes a vector (the mask hides it
from attention and pooling); it only costs time, which sorting saves.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from pathlib import Path
from typing import Iterator

import numpy as np

from pipeline.embedding.base import normalize, progress_bar
from pipeline.embedding.models import LocalModel
from pipeline.parsing.tokens import TokenCounter

WINDOW = 4096  # texts tokenised and length-sorted together


def length_buckets(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Indices of ``lengths`` in batches of at most ``batch_size``, longest first; every index
    exactly once (stable among equal lengths, so the batches are deterministic)."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [order[s : s + batch_size] for s in range(0, len(order), batch_size)]


class OnnxEmbedder:
    """``model`` exported to ONNX (``onnx_export``) and run on the CPU with ONNX Runtime.

    ``embed`` loads the session on first use: ~0.3 s when the export is cached, else the export
    (torch, once per model and machine) first; ``warm`` loads it ahead from another thread.
    Loading is thread-safe: the session and the tokenizer are made once per instance, and a
    thread that needs one while another makes it waits for that one. ``variant`` picks the
    exported file (``fp32`` or ``fp16w``). The name is the model's: the vectors agree with the torch fp32 encoder to cosine
    ≥ 0.9999 (tests/test_embedding_onnx.py), so caches and sites mix them.
    """

    backend = "onnx"

    def __init__(self, model: LocalModel, *, batch_size: int = 32, variant: str = "fp32",
                 path: Path | None = None, threads: int | None = None):
        self.model = model
        self.name = model.name
        self.batch_size = batch_size
        self.variant = variant
        self.path = path
        self.threads = threads
        self._session = None
        self._tokenizer = None
        # held while the session or the tokenizer is made (``warm`` may run in another thread)
        self._loading = threading.RLock()

    def counter(self) -> TokenCounter:
        return self.model.counter()

    def tokenizer(self):
        """The model's tokenizer: no padding, truncation at the model's ``max_seq_length``."""
        if self._tokenizer is None:
            with self._loading:
                if self._tokenizer is None:  # not made by another thread meanwhile
                    from tokenizers import Tokenizer

                    tok = Tokenizer.from_file(str(self.model.directory() / "tokenizer.json"))
                    tok.no_padding()
                    tok.enable_truncation(max_length=self.model.max_tokens() or 512)
                    self._tokenizer = tok
        return self._tokenizer

    def warm(self) -> bool:
        """Load the session and the tokenizer now, as the first ``embed`` would, when that needs
        no export (which imports torch: left to ``embed``, in the thread that encodes). Returns
        whether it loaded; an error is raised here and again by the ``embed`` that retries."""
        from pipeline.embedding.onnx_export import cached_onnx

        if self.path is None and cached_onnx(self.model, self.variant) is None:
            return False
        self.session()  # the attribute, not the method: a benchmark's timer may wrap it
        self.tokenizer()
        return True

    def session(self):
        if self._session is None:
            with self._loading:
                if self._session is None:  # not made by another thread meanwhile
                    self._session = self._load_session()
        return self._session

    def _load_session(self):
        import onnxruntime as ort

        from pipeline.embedding.onnx_export import cached_onnx, export_onnx

        path = self.path or cached_onnx(self.model, self.variant) or export_onnx(self.model, self.variant)
        options = ort.SessionOptions()
        if self.threads:
            options.intra_op_num_threads = self.threads
        options.log_severity_level = 3
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def _run(self, session, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        (vectors,) = session.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})
        return vectors

    def _run_batches(self, session, batches: list[tuple[np.ndarray, np.ndarray]]) -> Iterator[np.ndarray]:
        """The vectors of each ``(ids, mask)`` batch, in order, each as soon as it is done."""
        for ids, mask in batches:
            yield self._run(session, ids, mask)

    def embed(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        session = self.session()
        texts = list(texts)
        out: np.ndarray | None = None
        bar = progress_bar(len(texts)) if progress else None
        # Tokenise and bucket a window at a time: a window of thousands of texts pads about as
        # little as the whole input, and memory stays bounded for 100k-chunk builds.
        for start in range(0, len(texts), WINDOW):
            encodings = self.tokenizer().encode_batch(texts[start : start + WINDOW], add_special_tokens=True)
            buckets = length_buckets([len(e.ids) for e in encodings], self.batch_size)
            arrays = []
            for batch in buckets:
                width = max(len(encodings[i].ids) for i in batch)
                ids = np.zeros((len(batch), width), dtype=np.int64)
                mask = np.zeros((len(batch), width), dtype=np.int64)
                for row, i in enumerate(batch):
                    seq = encodings[i].ids
                    ids[row, : len(seq)] = seq
                    mask[row, : len(seq)] = 1
                arrays.append((ids, mask))
            for batch, vectors in zip(buckets, self._run_batches(session, arrays)):
                if out is None:
                    out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
                out[[start + i for i in batch]] = vectors
                if bar is not None:
                    bar.update(len(batch))
        if bar is not None:
            bar.close()
        return normalize(out)


OPENVINO_PRECISIONS = {"fp32": "f32", "bf16": "bf16"}


def cores() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class OpenVinoEmbedder(OnnxEmbedder):
    """The same exported graph compiled by OpenVINO for the CPU (tokenisation and batching as
    ``OnnxEmbedder``). ``precision="fp32"`` pins the inference precision to f32; ``"bf16"`` asks
    for bf16 (OpenVINO's default where the CPU has native bf16; emulated and slow elsewhere).

    With two or more threads the model runs as two streams, each on half of them, with two
    batches in flight: the same vectors, bit for bit, as one stream on all the threads, and as
    fast alone. But a build's own Python work beside the encode takes one core from one stream
    only, where it held back every step of a single stream (its threads wait for each other):
    3 s of Python beside a 4.3 s encode on 2 cores cost 2.8 s of encode with one stream and
    1.5 s with two, the least two cores allow (docs/decisions/embedding.md "OpenVINO: two streams")."""

    backend = "openvino"

    def __init__(self, model: LocalModel, *, precision: str = "fp32", streams: int | None = None, **options):
        if precision not in OPENVINO_PRECISIONS:
            from pipeline.errors import PipelineError

            raise PipelineError(f"unknown OpenVINO precision {precision!r}; use fp32 or bf16")
        super().__init__(model, **options)
        self.precision = precision
        # None: two where there are two threads to split, else one
        self.streams = streams or (2 if (self.threads or cores()) >= 2 else 1)

    def _load_session(self):
        import openvino as ov

        from pipeline.embedding.onnx_export import cached_onnx, compiled_cache, export_onnx

        path = self.path or cached_onnx(self.model, self.variant) or export_onnx(self.model, self.variant)
        config = {"INFERENCE_PRECISION_HINT": OPENVINO_PRECISIONS[self.precision], "NUM_STREAMS": str(self.streams)}
        if self.path is None:
            # the compiled model kept for the next process: 0.08 s to load instead of 0.35 s to
            # compile, the same vectors bit for bit (docs/decisions/embedding.md "OpenVINO: two streams")
            config["CACHE_DIR"] = str(compiled_cache(self.model, self.precision))
        if self.threads:
            config["INFERENCE_NUM_THREADS"] = self.threads
        # OpenVINO pins a process's compute threads to the first cores; two processes (Ray's
        # actors on one machine, two builds) then share those: two one-thread processes encoded
        # 30 + 30 texts/s pinned, 60 + 60 unpinned. One process is as fast either way.
        config["ENABLE_CPU_PINNING"] = False
        return ov.Core().compile_model(str(path), "CPU", config)

    def _run_batches(self, session, batches):
        """Up to ``streams`` batches in flight, one infer request each (made per call, so
        concurrent calls never share one); the vectors come back in batch order (a request's
        output is copied out before it takes the next batch)."""
        output = session.output("sentence_embedding")
        idle = [session.create_infer_request() for _ in range(self.streams)]
        running: deque = deque()
        try:
            for ids, mask in batches:
                if not idle:
                    yield self._collect(running.popleft(), output, idle)
                request = idle.pop()
                request.start_async({"input_ids": ids, "attention_mask": mask})
                running.append(request)
            while running:
                yield self._collect(running.popleft(), output, idle)
        finally:  # an abandoned generator or an error: no request is left running
            for request in running:
                request.wait()

    @staticmethod
    def _collect(request, output, idle: list) -> np.ndarray:
        request.wait()
        vectors = np.array(request.get_tensor(output).data, dtype=np.float32)  # a copy: the request is reused
        idle.append(request)
        return vectors
