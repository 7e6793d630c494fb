// BERT WordPiece tokenizer for the browser, giving the same token ids as the `tokenizers`
// library running the model's tokenizer.json (BertNormalizer, BertPreTokenizer, WordPiece,
// [CLS] text [SEP] template, truncation to the model's max_seq_length). Shared test vectors:
// tests/vectors/wordpiece.json (made by tests/vectors/make_wordpiece_vectors.py from Python).
//
// Character classes come from wordpiece-tables.js, read off the tokenizers library itself,
// so the result does not depend on which Unicode version the browser ships.

import { NONSPACING, OTHER, PUNCTUATION } from "./wordpiece-tables.js";

function inRanges(ranges, cp) {
  let lo = 0;
  let hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cp < ranges[mid][0]) hi = mid - 1;
    else if (cp > ranges[mid][1]) lo = mid + 1;
    else return true;
  }
  return false;
}

// Rust's char::is_whitespace (the White_Space property): stable, short, listed here.
const WHITESPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
  0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);

function isChinese(cp) {
  return (
    (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x20000 && cp <= 0x2a6df) || (cp >= 0x2a700 && cp <= 0x2b73f) ||
    (cp >= 0x2b740 && cp <= 0x2b81f) || (cp >= 0x2b920 && cp <= 0x2ceaf) ||
    (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0x2f800 && cp <= 0x2fa1f)
  );
}

function isPunctuation(cp) {
  return inRanges(PUNCTUATION, cp);
}

/** BertNormalizer: clean text, space out CJK ideographs, NFD + drop Mn, lowercase per char. */
export function normalize(text, { lowercase = true, stripAccents = lowercase } = {}) {
  let out = "";
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    if (cp === 0 || cp === 0xfffd || inRanges(OTHER, cp)) continue;
    if (cp === 0x09 || cp === 0x0a || cp === 0x0d || WHITESPACE.has(cp)) out += " ";
    else if (isChinese(cp)) out += ` ${ch} `;
    else out += ch;
  }
  if (stripAccents) {
    let kept = "";
    for (const ch of out.normalize("NFD")) if (!inRanges(NONSPACING, ch.codePointAt(0))) kept += ch;
    out = kept;
  }
  if (lowercase) {
    // one code point at a time, as Rust's char::to_lowercase: no final-sigma context rule
    let lower = "";
    for (const ch of out) lower += ch.toLowerCase();
    out = lower;
  }
  return out;
}

/** BertPreTokenizer: split at whitespace (dropped) and around punctuation (kept alone). */
export function preTokenize(text) {
  const words = [];
  let word = "";
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    if (WHITESPACE.has(cp)) {
      if (word) words.push(word);
      word = "";
    } else if (isPunctuation(cp)) {
      if (word) words.push(word);
      words.push(ch);
      word = "";
    } else {
      word += ch;
    }
  }
  if (word) words.push(word);
  return words;
}

export class WordPieceTokenizer {
  /**
   * @param {string[]} vocab   tokens in id order (vocab.txt lines)
   * @param {object} config    from model.json: {max_tokens, lowercase, strip_accents, unk_token,
   *                           cls_token, sep_token, continuing_subword_prefix,
   *                           max_input_chars_per_word, special_tokens: [content...]}
   */
  constructor(vocab, config) {
    this.ids = new Map(vocab.map((token, id) => [token, id]));
    this.config = config;
    this.prefix = config.continuing_subword_prefix ?? "##";
    this.maxChars = config.max_input_chars_per_word ?? 100;
    this.unk = this.id(config.unk_token ?? "[UNK]");
    this.cls = this.id(config.cls_token ?? "[CLS]");
    this.sep = this.id(config.sep_token ?? "[SEP]");
    // longest first: at one position the longest special token wins, as in tokenizers
    this.specials = [...(config.special_tokens ?? [])].sort((a, b) => b.length - a.length);
  }

  id(token) {
    const id = this.ids.get(token);
    if (id === undefined) throw new Error(`token ${token} is not in the vocabulary`);
    return id;
  }

  wordPiece(word, out) {
    const chars = Array.from(word);
    if (chars.length > this.maxChars) {
      out.push(this.unk);
      return;
    }
    const pieces = [];
    let start = 0;
    while (start < chars.length) {
      let end = chars.length;
      let found;
      while (start < end) {
        const piece = (start > 0 ? this.prefix : "") + chars.slice(start, end).join("");
        found = this.ids.get(piece);
        if (found !== undefined) break;
        end -= 1;
      }
      if (found === undefined) {
        out.push(this.unk);
        return;
      }
      pieces.push(found);
      start = end;
    }
    out.push(...pieces);
  }

  /** Split raw text at special tokens (matched before normalisation, case-sensitive). */
  splitSpecials(text) {
    const parts = [];
    let plain = "";
    let i = 0;
    outer: while (i < text.length) {
      for (const special of this.specials) {
        if (special && text.startsWith(special, i)) {
          if (plain) parts.push({ text: plain });
          parts.push({ special });
          plain = "";
          i += special.length;
          continue outer;
        }
      }
      plain += text[i];
      i += 1;
    }
    if (plain) parts.push({ text: plain });
    return parts;
  }

  /** Token ids of `text`: [CLS] pieces [SEP], truncated to max_tokens in all. */
  encode(text) {
    const body = [];
    const options = { lowercase: this.config.lowercase ?? true, stripAccents: this.config.strip_accents ?? true };
    for (const part of this.splitSpecials(String(text))) {
      if (part.special) body.push(this.id(part.special));
      else for (const word of preTokenize(normalize(part.text, options))) this.wordPiece(word, body);
    }
    const room = (this.config.max_tokens ?? 512) - 2;
    return [this.cls, ...body.slice(0, room), this.sep];
  }
}
