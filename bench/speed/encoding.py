"""Faster MiniLM encoding that keeps embeddings equivalent: speed and agreement with fp32.

    .venv/bin/python -m bench.speed.encoding [--sample 256] [--repeats 3] [--quick] [--no-retrieval]

Texts: a seeded sample of the chunks our default strategy (``markdown``, 256 pieces, heading
context included — what the build embeds) makes of Chroma's five corpora, in blocks of 128: in
each round every variant encodes the same block back to back (order rotating), and its speed-up
is the baseline's time / its time *in that round*, then the median over rounds (2 blocks x 3
repeats): the 2 cores are shared, and load shifts within seconds. Agreement:
cosine of each text's vector with the fp32 batch-32 baseline (the pipeline's setting), min and
mean. Variants:

* fp32 at batch 16 / 32 (baseline) / 64 / 128 — sentence-transformers sorts inputs by character
  length before batching (``SentenceTransformer.encode``: ``length_sorted_idx``), so every variant
  but the two below is length-sorted;
* ``unsorted``: batches of 32 in sample order (one ``encode`` call per batch: no global sort);
* ``token-sorted``: batches of 32 sorted by exact MiniLM token count (one call per batch);
* ``bf16 autocast``: ``torch.autocast("cpu", dtype=torch.bfloat16)`` around ``encode``;
* ``bf16 weights``: the model cast to bfloat16 (a copy);
* ``int8 dynamic``: ``torch.ao.quantization.quantize_dynamic`` on the Linear layers (a copy);
* ``1 thread``: ``torch.set_num_threads(1)`` (the default is one per core).

Backends (unless ``--no-backends``): ``bench.speed.backends`` on the same texts — torch fp32 / bf16,
ONNX Runtime, OpenVINO fp32 / bf16 through the pipeline's own embedders, and what ``auto`` picks.

Retrieval check (full run): Chroma's questions against the pooled ``langchain-recursive-250``
collection (its fp32 vectors come from the harness cache), re-encoded with bf16 autocast: the
share of questions whose top-5 set / order changes, and recall@5 / IoU@5 both ways.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import gc
import inspect
import json
import random
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from bench.speed import SPEED_DIR, median


def sample_texts(n: int, seed: int = 0) -> list[str]:
    from pipeline.chunking import chunk_text
    from pipeline.parsing.tokens import default_counter

    from bench.speed.chunking import chroma_corpus

    counter = default_counter()
    texts = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, text in chroma_corpus():
            texts += [c.content for c in chunk_text(text, path=label, counter=counter, max_tokens=256)]
    rng = random.Random(seed)
    return rng.sample(texts, min(n, len(texts)))


def load_model():
    from sentence_transformers import SentenceTransformer

    from pipeline.embedding.models import DEFAULT_MODEL

    return SentenceTransformer(str(DEFAULT_MODEL.directory()), device="cpu")


def _encode(model, texts, batch_size=32):
    v = model.encode(list(texts), batch_size=batch_size, show_progress_bar=False, convert_to_tensor=True,
                     normalize_embeddings=True)
    v = v.float().cpu().numpy()
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def model_copies(model):
    """bf16 and int8 copies of ``model``, made once, outside every timing."""
    import torch

    bf16 = copy.deepcopy(model).to(torch.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantize_dynamic is deprecated in favour of torchao
        int8 = torch.ao.quantization.quantize_dynamic(copy.deepcopy(model), {torch.nn.Linear}, dtype=torch.qint8)
    return bf16, int8


def variants(model, texts, counter, copies):
    import torch

    lengths = [counter.count(t) for t in texts]
    dim = _encode(model, texts[:1]).shape[1]
    bf16, int8 = copies

    def per_batch(order, bs=32):
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for s in range(0, len(order), bs):
            idx = order[s : s + bs]
            out[idx] = _encode(model, [texts[i] for i in idx], bs)
        return out

    @contextlib.contextmanager
    def threads(n):
        before = torch.get_num_threads()
        torch.set_num_threads(n)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    def autocast_bf16(bs):
        def run():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return _encode(model, texts, bs)
        return run

    def one_thread():
        with threads(1):
            return _encode(model, texts, 32)

    return {
        "fp32 batch 32 (baseline)": lambda: _encode(model, texts, 32),
        "fp32 batch 16": lambda: _encode(model, texts, 16),
        "fp32 batch 64": lambda: _encode(model, texts, 64),
        "fp32 batch 128": lambda: _encode(model, texts, 128),
        "fp32 unsorted batches of 32": lambda: per_batch(list(range(len(texts)))),
        "fp32 token-sorted batches of 32": lambda: per_batch(sorted(range(len(texts)), key=lambda i: -lengths[i])),
        "fp32 batch 32, 1 thread": one_thread,
        "bf16 autocast batch 32": autocast_bf16(32),
        "bf16 autocast batch 64": autocast_bf16(64),
        "bf16 weights batch 32": lambda: _encode(bf16, texts, 32),
        "int8 dynamic batch 32": lambda: _encode(int8, texts, 32),
    }


def retrieval_check(model, log) -> dict:
    """top-5 agreement on Chroma's questions, langchain-recursive-250 collection, bf16 vs fp32."""
    import torch

    from bench import chroma_eval as ce
    from bench.chunkers import REGISTRY

    dataset = ce.load_dataset()
    chunker = REGISTRY["langchain-recursive-250"]()
    chunks = ce.build_chunks(chunker, dataset, progress=False)
    fp32, _, cached = ce.chunk_embeddings(chunker, chunks, dataset, progress=False)
    q32 = ce.question_embeddings(dataset, progress=False)
    t = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        bf = _encode(model, chunks.texts, 32)
        qbf = _encode(model, [q.text for q in dataset.questions], 32)
    seconds = time.perf_counter() - t
    cos = np.sum(fp32 * bf, axis=1)
    qcos = np.sum(q32 * qbf, axis=1)
    top32 = np.argsort(-(q32 @ fp32.T), axis=1, kind="stable")[:, :5]
    topbf = np.argsort(-(qbf @ bf.T), axis=1, kind="stable")[:, :5]
    set_changed = sum(set(a) != set(b) for a, b in zip(top32.tolist(), topbf.tolist()))
    order_changed = sum(a != b for a, b in zip(top32.tolist(), topbf.tolist()))
    s32 = ce.score(dataset, chunks, fp32, q32)
    sbf = ce.score(dataset, chunks, bf, qbf)
    out = {
        "collection": "langchain-recursive-250 (Chroma, pooled)",
        "chunks": len(chunks.texts), "questions": len(dataset.questions),
        "fp32_from_cache": cached,
        "bf16_seconds": seconds, "bf16_texts_per_s": (len(chunks.texts) + len(dataset.questions)) / seconds,
        "chunk_cosine_min": float(cos.min()), "chunk_cosine_mean": float(cos.mean()),
        "question_cosine_min": float(qcos.min()), "question_cosine_mean": float(qcos.mean()),
        "top5_set_changed": set_changed, "top5_order_changed": order_changed,
        "fp32": {m: 100 * float(np.mean(s32[m])) for m in ("recall", "iou", "recall_at_budget")},
        "bf16": {m: 100 * float(np.mean(sbf[m])) for m in ("recall", "iou", "recall_at_budget")},
    }
    log(f"  retrieval check: top-5 set changed for {set_changed}/{len(dataset.questions)} questions; "
        f"recall {out['fp32']['recall']:.2f} -> {out['bf16']['recall']:.2f}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sample", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--block", type=int, default=128, help="texts per round (every variant encodes each block)")
    ap.add_argument("--quick", action="store_true", help="64 texts, 1 repeat, no retrieval check")
    ap.add_argument("--no-retrieval", action="store_true")
    ap.add_argument("--no-backends", action="store_true", help="skip bench.speed.backends (every encoding backend)")
    ap.add_argument("--out", type=Path, default=SPEED_DIR / "encoding.json")
    args = ap.parse_args(argv)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    import torch
    from sentence_transformers import SentenceTransformer

    from pipeline.parsing.tokens import default_counter

    n, repeats = (64, 1) if args.quick else (args.sample, args.repeats)
    if args.quick:
        args.block = 32
    t0 = time.perf_counter()
    texts = sample_texts(n)
    counter = default_counter()
    tokens = [counter.count(t) for t in texts]
    model = load_model()
    _encode(model, texts[:8])  # warm-up
    blocks = [list(range(i, min(i + args.block, n))) for i in range(0, n, args.block)]
    copies = model_copies(model)
    for m in copies:
        _encode(m, texts[:4])  # warm-up
    block_runs = [variants(model, [texts[i] for i in idx], counter, copies) for idx in blocks]
    names = list(block_runs[0])
    times: dict[str, list[float]] = {k: [] for k in names}  # one entry per round
    ratios: dict[str, list[float]] = {k: [] for k in names}
    vectors: dict[str, np.ndarray] = {}
    rounds = 0
    for r in range(repeats):
        for b, runs in enumerate(block_runs):
            # every variant encodes the same block, back to back, order rotating between rounds:
            # the ratio to the baseline is taken within the round, under the same load
            order = names[rounds % len(names):] + names[: rounds % len(names)]
            this = {}
            for name in order:
                gc.collect()
                t = time.perf_counter()
                vecs = runs[name]()
                this[name] = time.perf_counter() - t
                if r == 0:
                    vectors.setdefault(name, [])
                    vectors[name].append(vecs)
            for name in names:
                times[name].append(this[name])
                ratios[name].append(this["fp32 batch 32 (baseline)"] / this[name])
            rounds += 1
            log(f"  encoding round {rounds}/{repeats * len(blocks)}: "
                + ", ".join(f"{k} {len(blocks[b]) / this[k]:.1f}/s" for k in names))
    vectors = {k: np.vstack(v) for k, v in vectors.items()}
    base = vectors["fp32 batch 32 (baseline)"]
    rows = []
    for name in names:
        cos = np.sum(base * vectors[name], axis=1)
        total = sum(times[name])
        rows.append({
            "variant": name, "seconds": times[name], "total_seconds": total,
            "texts_per_s": n * repeats / total,
            "speedup_vs_baseline": median(ratios[name]),
            "speedup_per_round": ratios[name],
            "cosine_min": float(cos.min()), "cosine_mean": float(cos.mean()),
        })
    retrieval = None
    if not (args.quick or args.no_retrieval):
        try:
            retrieval = retrieval_check(model, log)
        except FileNotFoundError as exc:
            retrieval = {"skipped": str(exc)}
    backends = None
    if not args.no_backends:
        from bench.speed.backends import run as run_backends

        quick = args.quick
        backends = run_backends(texts[:32] if quick else texts, block=32 if quick else 64, repeats=1 if quick else 2, log=log)
    src = inspect.getsource(inspect.getmodule(SentenceTransformer))
    payload = {
        "texts": n, "mean_tokens": float(np.mean(tokens)), "max_tokens": int(max(tokens)),
        "repeats": repeats, "block": args.block, "rounds": repeats * len(blocks), "torch_threads": torch.get_num_threads(),
        "bf16_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "st_sorts_by_length": "length_sorted_idx" in src,
        "rows": rows, "retrieval": retrieval, "backends": backends, "seconds": time.perf_counter() - t0,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1))
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
