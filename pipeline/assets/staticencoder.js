// The site's static query encoder (_search/encoder/, docs/ARCHITECTURE.md "Static query encoder"): a
// query's vector is the sum of its word pieces' rows, scaled to unit length, in the same space as
// the documents' vectors. The pieces come from wordpiece.js over the encoder's vocabulary (the
// model's own, less the tokens no text can produce); only the row shards of the query's pieces are
// fetched. The twin of pipeline/client/staticembed.py: the same vectors
// (tests/vectors/static_encoder.json).
//
//   import { staticEncoder } from "./staticencoder.js";
//   const encoder = staticEncoder(site, meta.encoder);   // meta: the site's _search/ manifest
//   const vector = await encoder.embed("how big is a chunk?");   // Float32Array, unit length

import { WordPieceTokenizer } from "./wordpiece.js";

export const PREFIX_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz";

/** The tokens of a front-coded vocabulary file (pipeline/siteformat/frontcode.py front_code). */
export function frontDecode(text) {
  const tokens = [];
  let previous = "";
  const lines = text.split("\n");
  lines.pop(); // every line ends with "\n"
  for (const line of lines) {
    previous = previous.slice(0, PREFIX_DIGITS.indexOf(line[0])) + line.slice(1);
    tokens.push(previous);
  }
  return tokens;
}

const ROW_BYTES = { int8: (d) => 4 + d, float32: (d) => 4 * d };

/** Rows of a shard as Float32Arrays (each value scale x int8, rounded to float32 as Python's numpy does). */
export function decodeEncoderRows(buffer, dtype, dimension) {
  const width = ROW_BYTES[dtype]?.(dimension);
  if (!width || buffer.byteLength % width) throw new Error(`static encoder shard of ${buffer.byteLength} bytes (${dtype})`);
  const view = new DataView(buffer);
  const rows = [];
  for (let offset = 0; offset < buffer.byteLength; offset += width) {
    const row = new Float32Array(dimension);
    if (dtype === "float32") {
      for (let j = 0; j < dimension; j++) row[j] = view.getFloat32(offset + 4 * j, true);
    } else {
      const scale = view.getFloat32(offset, true);
      for (let j = 0; j < dimension; j++) row[j] = Math.fround(scale * view.getInt8(offset + 4 + j));
    }
    rows.push(row);
  }
  return rows;
}

/** Sum of `rows` in order (float64), scaled to unit length; zeros when it sums to zero. */
export function sumToUnit(rows, dimension) {
  const out = new Float64Array(dimension);
  for (const row of rows) for (let j = 0; j < dimension; j++) out[j] += row[j];
  let norm = 0;
  for (let j = 0; j < dimension; j++) norm += out[j] * out[j];
  norm = Math.sqrt(norm);
  return Float32Array.from(out, (x) => (norm > 0 ? x / norm : 0));
}

export class StaticEncoder {
  /**
   * @param {object} entry  the manifest's `encoder` entry (href, dtype, dimension, count, ascii, rows, vocab, other, tokenizer)
   * @param {(rel: string, as: "text"|"bytes") => Promise<string|ArrayBuffer>} get  fetches a path under the encoder's folder
   */
  constructor(entry, get) {
    this.entry = entry;
    this.name = entry.model;
    this.get = get;
    this.fetches = 0; // files fetched: the vocabulary and row shards
    this.tokens = null; // the ASCII part, then all once a query needed the rest
    this.tokenizers = new Map();
    this.shards = new Map(); // shard number -> Promise<Float32Array[]>
  }

  async _tokens(other) {
    if (!this.tokens) {
      this.tokens = (async () => {
        this.fetches += 1;
        const ascii = frontDecode(await this.get(this.entry.vocab, "text"));
        if (ascii.length !== this.entry.ascii) throw new Error(`${ascii.length} tokens, ${this.entry.ascii} announced`);
        return ascii;
      })();
    }
    let tokens = await this.tokens;
    if (other && tokens.length < this.entry.count) {
      if (!this.others) {
        this.fetches += 1;
        this.others = this.get(this.entry.other, "text").then(frontDecode);
      }
      tokens = [...tokens, ...(await this.others)];
    }
    return tokens;
  }

  async _tokenizer(other) {
    const key = other && this.entry.count > this.entry.ascii;
    if (!this.tokenizers.has(key)) {
      this.tokenizers.set(key, this._tokens(key).then((tokens) => {
        const settings = this.entry.tokenizer;
        // special tokens the table has no row for ([CLS], [SEP]...) get ids past its rows
        const known = new Set(tokens);
        const vocab = [...tokens, ...[settings.cls_token, settings.sep_token, ...settings.special_tokens].filter((t) => !known.has(t) && (known.add(t), true))];
        const ids = new Map(tokens.map((t, i) => [t, i]));
        // rows that are all zero (the manifest's `zero`) add nothing: never fetched
        const zero = new Set((this.entry.zero ?? []).map((t) => ids.get(t)).filter((i) => i !== undefined));
        return { tokenizer: new WordPieceTokenizer(vocab, settings), rows: tokens.length, zero };
      }));
    }
    return this.tokenizers.get(key);
  }

  /** The table rows of `text`'s word pieces in order ([CLS], [SEP] and other special tokens but the
   *  unknown one dropped, and the manifest's `zero` tokens, whose rows add nothing). */
  async pieces(text) {
    const { tokenizer, rows, zero } = await this._tokenizer(!/^[\x00-\x7f]*$/.test(text));
    return tokenizer.encode(text).slice(1, -1).filter((id) => id < rows && !zero.has(id));
  }

  _shard(s) {
    if (!this.shards.has(s)) {
      this.fetches += 1;
      const loading = this.get(`${s}.bin`, "bytes").then((buffer) => decodeEncoderRows(buffer, this.entry.dtype, this.entry.dimension));
      loading.catch(() => this.shards.delete(s)); // a failed fetch is tried again by the next query
      this.shards.set(s, loading);
    }
    return this.shards.get(s);
  }

  /** The unit vector of `text` (Float32Array): its pieces' shards fetched concurrently, their rows summed. */
  async embed(text) {
    const ids = await this.pieces(text);
    const per = this.entry.rows;
    await Promise.all([...new Set(ids.map((i) => Math.floor(i / per)))].map((s) => this._shard(s)));
    const rows = [];
    for (const i of ids) rows.push((await this._shard(Math.floor(i / per)))[i % per]);
    return sumToUnit(rows, this.entry.dimension);
  }
}

/** The site's static encoder for manifest entry `entry` (made once per site and entry), or null. */
export function staticEncoder(site, entry) {
  if (!entry) return null;
  if (!site._staticEncoder || site._staticEncoder.entry !== entry) {
    const base = `${SEARCH_DIR}/${entry.href}`;
    site._staticEncoder = new StaticEncoder(entry, (rel, as) => site._get(`${base}${rel}`, as));
  }
  return site._staticEncoder;
}

const SEARCH_DIR = "_search";
