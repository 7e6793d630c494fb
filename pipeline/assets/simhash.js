// SimHash of a question, bit-identical to pipeline/simhash.py (the reference).
//
// ES module, no build step, no dependencies; runs in browsers and Node >= 18.
// 64-bit hashes are BigInt; the JSON-safe form is 16 lowercase hex digits, because
// JSON.parse rounds integers above 2**53 (index.json publishes both forms).
//
// Feature definition (ALGORITHM "simhash64-w3-v1"; see pipeline/simhash.py for the why):
//   1. NFKC, toLowerCase(), final sigma "ς" -> "σ".
//   2. Words: maximal runs of /[\p{L}\p{M}\p{N}]/u; everything else separates.
//   3. Drop STOP_WORDS unless that would drop every word.
//   4. Features: code-point trigrams of "_" + word + "_", weighted by count.
//   5. SimHash: each feature's value is the last 8 bytes of md5(utf8(feature)), big-endian;
//      bit j is 1 iff the weight of features with bit j set is more than half the total.
//   A text with no word hashes to 0n.
// Identical to Python for every character assigned in Unicode 14.0 or earlier.

export const ALGORITHM = "simhash64-w3-v1";

export const STOP_WORDS = new Set(
  (
    "a about am an and are as at be been being by can could did do does for from had has " +
    "have how i if in into is it its me my of on or our should so than that the their them " +
    "then there these they this those to was we were what when where which who whom why " +
    "will with would you your"
  ).split(" "),
);

const MASK64 = (1n << 64n) - 1n;
const HEX16 = /^[0-9a-fA-F]{16}$/;
const WORD = /[\p{L}\p{M}\p{N}]+/gu;

/** NFKC, full lowercase, final sigma to sigma (step 1). */
export function normalize(text) {
  return text.normalize("NFKC").toLowerCase().replaceAll("\u03c2", "\u03c3");
}

/** The normalized words of `text` in order, stop words included (step 2). */
export function words(text) {
  return normalize(text).match(WORD) ?? [];
}

/** The weighted trigram features of `text` as a Map feature -> count (steps 3-4). */
export function features(text) {
  const all = words(text);
  const kept = all.filter((w) => !STOP_WORDS.has(w));
  const content = kept.length > 0 ? kept : all;
  const counts = new Map();
  for (const word of content) {
    const cps = Array.from(`_${word}_`); // code points, not UTF-16 units
    for (let i = 0; i + 3 <= cps.length; i++) {
      const gram = cps[i] + cps[i + 1] + cps[i + 2];
      counts.set(gram, (counts.get(gram) ?? 0) + 1);
    }
  }
  return counts;
}

/** The 64-bit SimHash of `text` as a BigInt in [0, 2**64); 0n when it has no word. */
export function simhash64(text) {
  if (typeof text !== "string") {
    throw new TypeError(`simhash64 expects a string, got ${typeof text}`);
  }
  const weighted = features(text);
  if (weighted.size === 0) return 0n;
  const sums = new Array(64).fill(0); // sums[j]: weight of features whose bit j (LSB = 0) is set
  let total = 0;
  const encoder = new TextEncoder();
  for (const [gram, weight] of weighted) {
    const digest = md5(encoder.encode(gram));
    const hi = ((digest[8] << 24) | (digest[9] << 16) | (digest[10] << 8) | digest[11]) >>> 0;
    const lo = ((digest[12] << 24) | (digest[13] << 16) | (digest[14] << 8) | digest[15]) >>> 0;
    for (let j = 0; j < 32; j++) {
      if ((lo >>> j) & 1) sums[j] += weight;
      if ((hi >>> j) & 1) sums[j + 32] += weight;
    }
    total += weight;
  }
  let value = 0n;
  for (let j = 63; j >= 0; j--) {
    value = (value << 1n) | (2 * sums[j] > total ? 1n : 0n);
  }
  return value;
}

function check(h, name) {
  if (typeof h !== "bigint") throw new TypeError(`${name} must be a BigInt, got ${typeof h}`);
  if (h < 0n || h > MASK64) throw new RangeError(`${name} must be in [0, 2**64), got ${h}`);
  return h;
}

/** Number of differing bits between two 64-bit BigInt hashes (0..64). */
export function hamming(a, b) {
  let x = check(a, "a") ^ check(b, "b");
  let count = 0;
  while (x) {
    x &= x - 1n;
    count++;
  }
  return count;
}

/** `h` as exactly 16 lowercase hex digits, zero-padded. */
export function toHex(h) {
  return check(h, "hash").toString(16).padStart(16, "0");
}

/** Inverse of toHex; accepts exactly 16 hex digits (either case), else throws RangeError. */
export function fromHex(s) {
  if (typeof s !== "string" || !HEX16.test(s)) {
    throw new RangeError(`expected 16 hex digits, got ${JSON.stringify(s)}`);
  }
  return BigInt(`0x${s}`);
}

/** Hamming distance between two hashes given in their hex form. */
export function hammingHex(aHex, bHex) {
  return hamming(fromHex(aHex), fromHex(bHex));
}

// --- MD5 (RFC 1321) over a Uint8Array; returns the 16-byte digest. -------------------------

const S = [
  7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
  5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
  4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
  6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
];
// K[i] = floor(|sin(i + 1)| * 2**32), spelled out: Math.sin is not exact on every engine.
const K = [
  0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee,
  0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
  0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be,
  0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
  0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa,
  0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
  0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed,
  0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
  0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c,
  0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
  0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05,
  0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
  0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039,
  0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
  0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1,
  0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
];

/** MD5 digest of `bytes` (Uint8Array) as a Uint8Array of 16 bytes. */
export function md5(bytes) {
  const length = bytes.length;
  const padded = new Uint8Array((((length + 8) >> 6) + 1) << 6);
  padded.set(bytes);
  padded[length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, (length * 8) >>> 0, true);
  view.setUint32(padded.length - 4, Math.floor(length / 0x20000000), true);

  let a0 = 0x67452301;
  let b0 = 0xefcdab89;
  let c0 = 0x98badcfe;
  let d0 = 0x10325476;
  const m = new Uint32Array(16);
  for (let off = 0; off < padded.length; off += 64) {
    for (let i = 0; i < 16; i++) m[i] = view.getUint32(off + 4 * i, true);
    let a = a0;
    let b = b0;
    let c = c0;
    let d = d0;
    for (let i = 0; i < 64; i++) {
      let f;
      let g;
      if (i < 16) {
        f = (b & c) | (~b & d);
        g = i;
      } else if (i < 32) {
        f = (d & b) | (~d & c);
        g = (5 * i + 1) & 15;
      } else if (i < 48) {
        f = b ^ c ^ d;
        g = (3 * i + 5) & 15;
      } else {
        f = c ^ (b | ~d);
        g = (7 * i) & 15;
      }
      const sum = (a + f + K[i] + m[g]) | 0;
      a = d;
      d = c;
      c = b;
      b = (b + ((sum << S[i]) | (sum >>> (32 - S[i])))) | 0;
    }
    a0 = (a0 + a) | 0;
    b0 = (b0 + b) | 0;
    c0 = (c0 + c) | 0;
    d0 = (d0 + d) | 0;
  }
  const out = new Uint8Array(16);
  const outView = new DataView(out.buffer);
  outView.setUint32(0, a0, true);
  outView.setUint32(4, b0, true);
  outView.setUint32(8, c0, true);
  outView.setUint32(12, d0, true);
  return out;
}
