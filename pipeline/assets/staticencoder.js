// The site's static query encoder (_search/encoder/, docs/ARCHITECTURE.md "Static query encoder"): a
// query's vector is the sum of its word pieces' rows, scaled to unit length, in the same space as
// the documents' vectors. Where the site's term shards carry its words' rows (the manifest's
// encoder says `words: "terms"`; pipeline/search/wordrows.py), a word found in its term's shard
// (which the query's lexical side fetches anyway) costs no request of its own; the others'
// pieces come from wordpiece.js over the encoder's vocabulary (the model's own, less the tokens
// no text can produce), and only the row shards of those pieces are fetched. The twin of
// pipeline/client/staticembed.py: the same vectors (tests/vectors/static_encoder.json,
// tests/test_js_parity.py).
//
//   import { staticEncoder } from "./staticencoder.js";
//   const encoder = staticEncoder(site, meta.encoder, meta);   // meta: the site's _search/ manifest
//   const vector = await encoder.embed("how big is a chunk?");   // Float32Array, unit length

import { shardOf, wordTerm } from "./lexical.js";
import { WordPieceTokenizer, normalize, preTokenize } from "./wordpiece.js";

const WHOLE_WORD = /^[a-z0-9]+$/; // a word a term shard may carry a row for (searchlayout.py WHOLE_WORD)
const WORD_ROWS = ""; // the key of a term shard's word rows (searchlayout.py WORD_ROWS)

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

const ROW_BYTES = { int8: (d) => 4 + d, int4: (d) => 4 + (d >> 1), float32: (d) => 4 * d };

/** Rows of a shard as Float32Arrays (each value scale x int8, or x a 4-bit value: value + 8, two a
 *  byte, low nibble first; rounded to float32 as Python's numpy does). */
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
      if (dtype === "int8") for (let j = 0; j < dimension; j++) row[j] = Math.fround(scale * view.getInt8(offset + 4 + j));
      else {
        for (let j = 0; j < dimension; j++) {
          const byte = view.getUint8(offset + 4 + (j >> 1));
          row[j] = Math.fround(scale * ((j & 1 ? byte >> 4 : byte & 15) - 8));
        }
      }
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
  constructor(entry, get, termRows = null) {
    this.entry = entry;
    this.termRows = termRows; // (term) => Promise<object|null>: the word rows of its term shard, when the site has them
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

  /** The rows of table ids `ids`, in order: their shards fetched concurrently. */
  async _rows(ids) {
    const per = this.entry.rows;
    await Promise.all([...new Set(ids.map((i) => Math.floor(i / per)))].map((s) => this._shard(s)));
    const rows = [];
    for (const i of ids) rows.push((await this._shard(Math.floor(i / per)))[i % per]);
    return rows;
  }

  /** `text` split as the model's tokenizer splits it before WordPiece, or null when it holds a
   *  special token's text (matched whole there; staticembed.py words). */
  words(text) {
    const settings = this.entry.tokenizer;
    if ((settings.special_tokens ?? []).some((t) => t && text.includes(t))) return null;
    return preTokenize(normalize(text, { lowercase: settings.lowercase ?? true, stripAccents: settings.strip_accents ?? true }));
  }

  /** The rows whose sum is `text`'s vector, reading the word rows of the term shards: per word,
   *  none for a zero token, its row there when its term's shard has one, else the mean of its
   *  term's words' rows there (sameTermRow), else its pieces' rows;
   *  null when the site's shards carry none or the text may be long enough to be truncated
   *  (staticembed.py word_rows). */
  async wordRows(text) {
    if (!this.termRows) return null;
    const words = this.words(text);
    if (!words || words.length * (this.entry.word_pieces || 1) > this.entry.tokenizer.max_tokens - 2) return null;
    const zero = new Set(this.entry.zero ?? []);
    const homes = new Map();
    for (const w of words) {
      const term = !zero.has(w) && WHOLE_WORD.test(w) ? wordTerm(w) : null;
      if (term !== null && !homes.has(w)) homes.set(w, this.termRows(term));
    }
    const found = new Map();
    for (const [w, loading] of homes) {
      const held = await loading;
      const row = held && (Object.hasOwn(held, w) ? held[w] : sameTermRow(held, wordTerm(w), this.entry.dimension));
      if (row) found.set(w, row);
    }
    const pieces = new Map();
    for (const w of words) if (!zero.has(w) && !found.has(w) && !pieces.has(w)) pieces.set(w, await this.pieces(w));
    const fetched = await this._rows([...pieces.values()].flat());
    const byId = new Map([...pieces.values()].flat().map((id, k) => [id, fetched[k]]));
    const rows = [];
    for (const w of words) {
      if (found.has(w)) rows.push(found.get(w));
      else if (pieces.has(w)) for (const id of pieces.get(w)) rows.push(byId.get(id));
    }
    return rows;
  }

  /** The unit vector of `text` (Float32Array): its rows (wordRows, else its pieces') summed. */
  async embed(text) {
    const rows = (await this.wordRows(text)) ?? (await this._rows(await this.pieces(text)));
    return sumToUnit(rows, this.entry.dimension);
  }
}

/** The mean of the rows in `held` ({word: Float32Array}) of the words whose index term is `term`,
 *  or null: summed in float32 in sorted word order, then divided by their number, as
 *  staticembed.py's same_term_row (the same bits). */
export function sameTermRow(held, term, dimension) {
  const words = Object.keys(held).filter((w) => wordTerm(w) === term).sort();
  if (!words.length) return null;
  const total = Float32Array.from(held[words[0]]);
  for (const w of words.slice(1)) for (let j = 0; j < dimension; j++) total[j] += held[w][j];
  for (let j = 0; j < dimension; j++) total[j] /= words.length;
  return total;
}

/** A term shard's word rows (its WORD_ROWS object) decoded: {word: Float32Array}. */
export function decodeWordRows(held, dtype, dimension) {
  const out = Object.create(null);
  for (const [word, text] of Object.entries(held ?? {})) {
    const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
    const rows = decodeEncoderRows(bytes.buffer, dtype, dimension);
    if (rows.length !== 1) throw new Error(`a term shard's row for ${word} is ${bytes.length} bytes`);
    out[word] = rows[0];
  }
  return out;
}

/** The site's static encoder for the manifest `meta`'s entry `entry` (made once per site and
 *  entry), or null; it reads word rows where the entry says (`words`: "terms", the site-wide
 *  term shards `meta.terms` names, or a small site's word files). */
export function staticEncoder(site, entry, meta = null) {
  if (!entry) return null;
  if (!site._staticEncoder || site._staticEncoder.entry !== entry) {
    const base = `${SEARCH_DIR}/${entry.href}`;
    // the rows of a term's words: in its site-wide term shard, or in a small site's word files
    const [kind, shards] = entry.words === "terms" ? ["terms", meta?.terms] : ["words", Array.isArray(entry.words) ? entry.words : null];
    const decoded = new Map(); // file -> Promise of its decoded word rows
    const termRows = shards?.length ? (term) => {
      const rel = `${SEARCH_DIR}/${kind}/${shards[shardOf(term, shards.length)]}.json`;
      if (!decoded.has(rel)) {
        // a file the query's lexical side is not reading is the encoder's: outside the request
        // budget, as its own files are (searchindex.js starts the lexical fetches first)
        if (kind === "terms" && !site._docs.has(rel) && !site._loading?.has(rel)) site._searchSettled = (site._searchSettled ?? 0) + 1;
        const loading = site._data(rel).then((held) => decodeWordRows(held?.[WORD_ROWS], entry.word_dtype ?? entry.dtype, entry.dimension));
        loading.catch(() => decoded.delete(rel)); // a failed fetch is tried again by the next query
        decoded.set(rel, loading);
      }
      return decoded.get(rel);
    } : null;
    site._staticEncoder = new StaticEncoder(entry, (rel, as) => site._get(`${base}${rel}`, as), termRows);
  }
  return site._staticEncoder;
}

const SEARCH_DIR = "_search";
