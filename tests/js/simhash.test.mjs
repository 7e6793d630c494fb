// pipeline/assets/simhash.js must reproduce pipeline/simhash.py exactly.
// Run: node --test tests/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import {
  ALGORITHM,
  features,
  fromHex,
  hamming,
  hammingHex,
  md5,
  simhash64,
  toHex,
} from "../../pipeline/assets/simhash.js";

const raw = readFileSync(new URL("../vectors/simhash.json", import.meta.url), "utf8");
const document = JSON.parse(raw);
const vectors = document.vectors;

test("vectors were made for this algorithm", () => {
  assert.equal(document.algorithm, ALGORITHM);
  assert.ok(vectors.length >= 40);
});

test("features match Python for every vector", () => {
  for (const v of vectors) {
    assert.deepEqual(Object.fromEntries(features(v.text)), v.features, JSON.stringify(v.text));
  }
});

test("hex and decimal hashes match Python for every vector", () => {
  for (const v of vectors) {
    const h = simhash64(v.text);
    assert.equal(typeof h, "bigint");
    assert.equal(toHex(h), v.hex, JSON.stringify(v.text));
    assert.equal(h, BigInt(v.decimal), JSON.stringify(v.text));
    assert.equal(h.toString(), v.decimal);
  }
});

test("md5 matches known digests", () => {
  const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  const enc = new TextEncoder();
  assert.equal(hex(md5(enc.encode(""))), "d41d8cd98f00b204e9800998ecf8427e");
  assert.equal(hex(md5(enc.encode("abc"))), "900150983cd24fb0d6963f7d28e17f72");
  assert.equal(
    hex(md5(enc.encode("12345678901234567890123456789012345678901234567890123456789012345678901234567890"))),
    "57edf4a22be3c955ac49da2e2107b67a",
  );
});

test("JSON.parse rounds 64-bit integers; the hex field round-trips", () => {
  const big = vectors.filter((v) => BigInt(v.decimal) > 2n ** 53n);
  assert.ok(big.length > 0);
  // At least one published integer does not survive JSON.parse (a Number has 53 bits).
  const lost = big.filter((v) => BigInt(v.value) !== BigInt(v.decimal));
  assert.ok(lost.length > 0, "expected JSON.parse to lose precision on some value");
  // The seed's example, max u64, becomes 2**64 exactly: out of range and wrong.
  const parsed = JSON.parse('{"h": 18446744073709551615, "hex": "ffffffffffffffff"}');
  assert.notEqual(BigInt(parsed.h), 18446744073709551615n);
  assert.equal(fromHex(parsed.hex), 18446744073709551615n);
  for (const v of vectors) {
    assert.equal(toHex(fromHex(v.hex)), v.hex);
    assert.equal(fromHex(v.hex), BigInt(v.decimal));
  }
});

test("hamming and hammingHex agree and are symmetric", () => {
  const hs = vectors.map((v) => v.hex);
  for (const a of hs.slice(0, 10)) {
    for (const b of hs.slice(0, 10)) {
      const d = hammingHex(a, b);
      assert.equal(d, hammingHex(b, a));
      assert.equal(d, hamming(fromHex(a), fromHex(b)));
      assert.ok(d >= 0 && d <= 64);
      assert.equal(d === 0, a === b);
    }
  }
  assert.equal(hammingHex("0000000000000000", "ffffffffffffffff"), 64);
  assert.equal(hammingHex("0000000000000000", "8000000000000001"), 2);
});

test("bad inputs throw", () => {
  assert.throws(() => fromHex("abc"), RangeError);
  assert.throws(() => fromHex("0x00000000000000"), RangeError);
  assert.throws(() => fromHex("000000000000000g"), RangeError);
  assert.throws(() => toHex(-1n), RangeError);
  assert.throws(() => toHex(2n ** 64n), RangeError);
  assert.throws(() => toHex(5), TypeError);
  assert.throws(() => hamming(1, 2), TypeError);
  assert.throws(() => simhash64(42), TypeError);
  assert.equal(toHex(1n), "0000000000000001");
});
