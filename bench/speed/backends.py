"""Encoding backends side by side on this machine: throughput and agreement with torch fp32.

Texts: a seeded sample of the chunks our default strategy makes of Chroma's five corpora (256
pieces, heading context included: what a build embeds; ``sample_texts``). Every backend of
``pipeline.embedding.backends`` encodes the same block back to back, order rotating between rounds; a
backend's speed-up is torch fp32's time / its time *in that round*, then the median over rounds
(the 2 cores are shared). Each embedder is the pipeline's own class, so length-bucketed batching
(ONNX Runtime, OpenVINO) and sentence-transformers' length sort (torch) are what is timed. Models
are loaded and warmed up outside every timing. Agreement: cosine of each text's vector with torch
fp32, min and mean. The JSON also records what ``auto`` chooses here and whether that is the
fastest backend whose min cosine is ≥ 0.999.
"""

from __future__ import annotations

import gc
import random
import time
import warnings

import numpy as np

from bench import arguments, log, write_json
from bench.speed import SPEED_DIR, median

BASELINE = "torch"
FLOOR = 0.999


def sample_texts(n: int, seed: int = 0) -> list[str]:
    """``n`` chunk texts drawn (seeded) from the default strategy's chunks of Chroma's corpora."""
    from pipeline.chunking import chunk_text
    from pipeline.embedding.models import default_counter

    from bench.speed.chunking import chroma_corpus

    counter, texts = default_counter(), []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, text in chroma_corpus():
            texts += [c.content for c in chunk_text(text, path=label, counter=counter, max_tokens=256)]
    return random.Random(seed).sample(texts, min(n, len(texts)))


def embedders() -> dict:
    from pipeline.embedding.backends import BACKENDS, make_local
    from pipeline.embedding.models import DEFAULT_MODEL

    return {name: make_local(DEFAULT_MODEL, name) for name in BACKENDS}


def run(texts: list[str], *, block: int, repeats: int, log) -> dict:
    from pipeline.embedding.backends import choose_backend
    from pipeline.embedding.local import cpu_has_native_bf16

    runs = embedders()
    t = time.perf_counter()
    for name, e in runs.items():  # load + warm up, outside the timings
        e.embed(texts[:4])
    load_seconds = time.perf_counter() - t
    names = list(runs)
    blocks = [texts[i : i + block] for i in range(0, len(texts), block)]
    times: dict[str, list[float]] = {k: [] for k in names}
    ratios: dict[str, list[float]] = {k: [] for k in names}
    vectors: dict[str, list[np.ndarray]] = {k: [] for k in names}
    rounds = 0
    for r in range(repeats):
        for b, chunk in enumerate(blocks):
            order = names[rounds % len(names):] + names[: rounds % len(names)]
            this = {}
            for name in order:
                gc.collect()
                t = time.perf_counter()
                v = runs[name].embed(chunk)
                this[name] = time.perf_counter() - t
                if r == 0:
                    vectors[name].append(v)
            for name in names:
                times[name].append(this[name])
                ratios[name].append(this[BASELINE] / this[name])
            rounds += 1
            log(f"  backends round {rounds}/{repeats * len(blocks)}: "
                + ", ".join(f"{k} {len(chunk) / this[k]:.1f}/s" for k in names))
    stacked = {k: np.vstack(v) for k, v in vectors.items()}
    base = stacked[BASELINE]
    rows = []
    for name in names:
        cos = np.sum(base * stacked[name], axis=1)
        rows.append({
            "backend": name, "texts_per_s": len(texts) * repeats / sum(times[name]),
            "speedup_vs_torch_fp32": median(ratios[name]), "speedup_per_round": ratios[name],
            "cosine_min": float(cos.min()), "cosine_mean": float(cos.mean()),
        })
    eligible = [r for r in rows if r["cosine_min"] >= FLOOR]
    fastest = max(eligible, key=lambda r: r["speedup_vs_torch_fp32"])["backend"]
    chosen = choose_backend()
    return {
        "texts": len(texts), "block": block, "repeats": repeats, "rounds": rounds,
        "native_bf16": cpu_has_native_bf16(), "auto_chooses": chosen, "fastest_eligible": fastest,
        # What the rule picks on a CPU of the other kind, with the same runtimes installed.
        "auto_on_other_cpu": choose_backend(native_bf16=not cpu_has_native_bf16()),
        "auto_is_fastest": chosen == fastest, "cosine_floor": FLOOR, "load_and_warmup_seconds": load_seconds,
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, SPEED_DIR / "backends.json", quick="32 texts, 1 round")
    ap.add_argument("--sample", type=int, default=512, help="texts (the encoding target asks for 500 or more)")
    ap.add_argument("--block", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)

    n, block, repeats = (32, 32, 1) if args.quick else (args.sample, args.block, args.repeats)
    t0 = time.perf_counter()
    payload = run(sample_texts(n), block=block, repeats=repeats, log=log)
    payload["seconds"] = time.perf_counter() - t0
    write_json(args.out, payload)
    for r in payload["rows"]:
        log(f"  {r['backend']:>18}: {r['texts_per_s']:6.1f}/s  x{r['speedup_vs_torch_fp32']:.2f}  "
            f"cos min {r['cosine_min']:.5f} mean {r['cosine_mean']:.6f}")
    log(f"auto chooses {payload['auto_chooses']}; fastest with cos >= {FLOOR}: {payload['fastest_eligible']}")
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
