// staticencoder.js must give the pieces and vectors the Python client gives, from the same site
// files, fetching only the shards of a text's pieces (vectors: tests/vectors/make_static_encoder_vectors.py).
// Run: node --test tests/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { StaticEncoder, frontDecode } from "../../pipeline/assets/staticencoder.js";

const vectors = JSON.parse(readFileSync(new URL("../vectors/static_encoder.json", import.meta.url), "utf8"));
const { entry } = vectors;
const base = `encoder/${entry.href.split("/")[1]}/`;

function encoder(log = []) {
  return new StaticEncoder(entry, async (rel, as) => {
    log.push(rel);
    const data = vectors.files[base + rel];
    if (data === undefined) throw new Error(`no file ${rel}`);
    if (as === "text") return data;
    const bytes = Buffer.from(data, "base64");
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  });
}

test("the vocabulary decodes to the table's tokens", () => {
  const ascii = frontDecode(vectors.files[`${base}vocab.txt`]);
  const other = frontDecode(vectors.files[`${base}other.txt`]);
  assert.equal(ascii.length, entry.ascii);
  assert.equal(ascii.length + other.length, entry.count);
  assert.ok(ascii.every((t) => /^[\x00-\x7f]+$/.test(t)) && other.every((t) => !/^[\x00-\x7f]+$/.test(t)));
  assert.deepEqual([...ascii].sort(), ascii.slice().sort());
});

test("pieces and vectors are Python's", async () => {
  assert.ok(vectors.cases.length > 40);
  const all = encoder();
  const tokens = [...frontDecode(vectors.files[`${base}vocab.txt`]), ...frontDecode(vectors.files[`${base}other.txt`])];
  for (const c of vectors.cases) {
    const ids = await all.pieces(c.text);
    assert.deepEqual(ids.map((i) => tokens[i]), c.pieces, c.text);
    const v = await all.embed(c.text);
    assert.equal(v.length, c.vector.length);
    for (let j = 0; j < v.length; j++) assert.ok(Math.abs(v[j] - c.vector[j]) < 1e-6, `${c.text} [${j}]: ${v[j]} vs ${c.vector[j]}`);
  }
});

test("a text fetches the vocabulary once and only the shards of its own pieces", async () => {
  const c = vectors.cases.find((x) => x.text === "how big is a chunk?");
  const log = [];
  const one = encoder(log);
  await one.embed(c.text);
  const tokens = frontDecode(vectors.files[`${base}vocab.txt`]);
  const shards = new Set(c.pieces.map((p) => `${Math.floor(tokens.indexOf(p) / entry.rows)}.bin`));
  assert.deepEqual(log.filter((r) => r.endsWith(".bin")).sort(), [...shards].sort());
  assert.deepEqual(log.filter((r) => r.endsWith(".txt")), ["vocab.txt"]); // ASCII: no other.txt
  assert.equal(one.fetches, log.length);
  log.length = 0;
  await one.embed(c.text); // warm: nothing fetched again
  assert.deepEqual(log, []);
  await one.embed("Comment déployer le site ?");
  assert.ok(log.includes("other.txt"));
});
