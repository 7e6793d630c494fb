// Query embedding in the browser: the site's model (ONNX, in _assets/model/) run by ONNX Runtime
// Web (wasm, one thread), tokenised by wordpiece.js exactly as Python's tokenizers library does.
// The vectors agree with the Python pipeline's to cosine >= 0.999 (tests/test_embed_js.py).
//
//   import { embedQuery, modelState } from "./embed.js";
//   const vector = await embedQuery("how big is a chunk?");   // Float32Array, unit length
//
// Nothing loads until the first call (about 60 MB: the model and the runtime); modelState()
// tells a page whether to show that the model is loading. A site built with
// `[search] model = false` has no _assets/model/: embedQuery then rejects and modelState()
// is "failed", and the page keeps its lexical results.

import { WordPieceTokenizer } from "./wordpiece.js";

/**
 * An embedder from already-loaded parts (also what Node tests use).
 * @param {object} parts  {ort: the onnxruntime-web module, model: Uint8Array|string (bytes or a
 *                        path/URL ort can open), vocabText: string, manifest: model.json}
 * @returns {Promise<{embed(text: string): Promise<Float32Array>, tokenizer: WordPieceTokenizer, manifest: object}>}
 */
export async function createEmbedder({ ort, model, vocabText, manifest }) {
  const vocab = vocabText.split("\n");
  if (vocab.length && vocab[vocab.length - 1] === "") vocab.pop();
  const tokenizer = new WordPieceTokenizer(vocab, manifest.tokenizer);
  const session = await ort.InferenceSession.create(model, { executionProviders: ["wasm"] });
  const [idsName, maskName] = manifest.inputs ?? ["input_ids", "attention_mask"];
  const outputName = manifest.output ?? "sentence_embedding";
  let queue = Promise.resolve(); // one run at a time: the wasm session is not re-entrant
  async function run(text) {
    const ids = tokenizer.encode(text);
    const dims = [1, ids.length];
    const feeds = {
      [idsName]: new ort.Tensor("int64", BigInt64Array.from(ids, BigInt), dims),
      [maskName]: new ort.Tensor("int64", new BigInt64Array(ids.length).fill(1n), dims),
    };
    const result = await session.run(feeds);
    return Float32Array.from(result[outputName].data);
  }
  return {
    tokenizer,
    manifest,
    embed(text) {
      const next = queue.then(() => run(text));
      queue = next.catch(() => {});
      return next;
    },
  };
}

let loading = null;
let state = "idle";

/** "idle" (nothing requested), "loading", "ready" or "failed". */
export function modelState() {
  return state;
}

/** Load the site's model from `base` (default: ./model/ beside this script), once. */
export function loadEmbedder(base = new URL("./model/", import.meta.url)) {
  if (!loading) {
    state = "loading";
    loading = (async () => {
      const manifest = await (await fetchOk(new URL("model.json", base))).json();
      const ort = await import(new URL(manifest.runtime, base).href);
      // the .wasm beside the runtime, never a CDN (the bundle already holds the glue script)
      ort.env.wasm.wasmPaths = { wasm: new URL("ort-wasm-simd-threaded.wasm", base).href };
      ort.env.wasm.numThreads = 1; // threads need cross-origin isolation, which static hosts rarely give
      const [vocabText, model] = await Promise.all([
        fetchOk(new URL(manifest.vocab, base)).then((r) => r.text()),
        fetchOk(new URL(manifest.onnx, base)).then((r) => r.arrayBuffer()).then((b) => new Uint8Array(b)),
      ]);
      return createEmbedder({ ort, model, vocabText, manifest });
    })().then(
      (embedder) => {
        state = "ready";
        return embedder;
      },
      (error) => {
        state = "failed";
        throw error;
      },
    );
  }
  return loading;
}

/** The query's vector (Float32Array, unit length), loading the model on first use. */
export async function embedQuery(text) {
  return (await loadEmbedder()).embed(text);
}

async function fetchOk(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response;
}
