"""Query embedding as the search page does it, timed under Node (the browser runtime, wasm).

    .venv/bin/python -m bench.speed.browser_embed [--runs 20]

Publishes ``_assets/model/`` into a temporary site (``site/browser_model.py``), then in one Node
process: session creation from the model bytes (what a page pays once, after the download) and
the time of each of ``--runs`` queries (``embedQuery``'s work: WordPiece + one wasm run, one
thread), median reported. Download time is not included (it depends on the network).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.speed import REPO_ROOT, SPEED_DIR

QUERIES = ["how do I declare a path parameter?", "return a custom response status code",
           "dependency injection with yield", "run the app with uvicorn", "validate query string length"]

SCRIPT = r"""
import { readFileSync } from "node:fs";
import { createEmbedder } from "%(embed)s";
const [folder, queriesJson, runs] = process.argv.slice(1);
const manifest = JSON.parse(readFileSync(`${folder}/model.json`, "utf8"));
const ort = await import(`${folder}/${manifest.runtime}`);
ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmBinary = readFileSync(`${folder}/ort-wasm-simd-threaded.wasm`);
const model = new Uint8Array(readFileSync(`${folder}/${manifest.onnx}`));
const vocabText = readFileSync(`${folder}/${manifest.vocab}`, "utf8");
let t = performance.now();
const embedder = await createEmbedder({ ort, model, vocabText, manifest });
const load = performance.now() - t;
const queries = JSON.parse(queriesJson);
const times = [];
for (let i = 0; i < Number(runs); i++) {
  t = performance.now();
  await embedder.embed(queries[i %% queries.length]);
  times.push(performance.now() - t);
}
console.log(JSON.stringify({ session_ms: load, query_ms: times }));
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--out", type=Path, default=SPEED_DIR / "browser_embed.json")
    args = ap.parse_args(argv)
    node = shutil.which("node")
    if node is None:
        raise SystemExit("node is not installed")
    from pipeline.config import SiteConfig
    from pipeline.embedding.models import DEFAULT_MODEL
    from pipeline.site.browser_model import MODEL_DIR, publish_browser_model
    from pipeline.topicspec.specfile import DATA_MARKER

    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp)
        (site / "kb").mkdir()
        (site / "kb" / "topic-spec.md").write_text(
            f"{DATA_MARKER}\n```json\n{json.dumps({'model': DEFAULT_MODEL.name})}\n```\n", encoding="utf-8")
        publish_browser_model(site, SiteConfig())
        folder = site / "_assets" / MODEL_DIR
        sizes = {p.name: p.stat().st_size for p in folder.iterdir()}
        embed = (REPO_ROOT / "pipeline" / "assets" / "embed.js").as_uri()
        done = subprocess.run([node, "--input-type=module", "-e", SCRIPT % {"embed": embed}, str(folder),
                               json.dumps(QUERIES), str(args.runs)], capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    times = sorted(result["query_ms"][1:])  # the first query also warms the wasm kernels
    payload = {"bytes": sizes, "total_bytes": sum(sizes.values()), "session_ms": result["session_ms"],
               "first_query_ms": result["query_ms"][0], "query_ms_median": times[len(times) // 2], "runs": args.runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1))
    print(f"model + runtime {payload['total_bytes'] / 1e6:.1f} MB; session {payload['session_ms']:.0f} ms; first query "
          f"{payload['first_query_ms']:.0f} ms, then median {payload['query_ms_median']:.0f} ms", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
