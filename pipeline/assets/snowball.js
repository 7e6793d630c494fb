// The Snowball English ("Porter2") stemmer, written from the published algorithm so that the
// browser stems exactly as PyStemmer 3.1 (Snowball 3.0) does on the Python side; the rules
// that differ from the 2005 description (the R1 prefix list, undoubling, "past") were checked
// against PyStemmer word by word.
//
// ES module, no dependencies. Input: a lowercase word of ASCII letters (the lexical tokenizer
// only stems such words; identifiers, numbers and non-ASCII words are kept whole).
// Checked against PyStemmer word for word by tests/vectors/lexical.json (tests/js/lexical.test.mjs).

const EXCEPTIONS1 = new Map([
  ["skis", "ski"], ["skies", "sky"], ["idly", "idl"], ["gently", "gentl"], ["ugly", "ugli"],
  ["early", "earli"], ["only", "onli"], ["singly", "singl"], ["sky", "sky"], ["news", "news"],
  ["howe", "howe"], ["atlas", "atlas"], ["cosmos", "cosmos"], ["bias", "bias"], ["andes", "andes"],
  ["dying", "die"], ["lying", "lie"], ["tying", "tie"],
]);
const EXCEPTIONS2 = new Set(["inning", "outing", "canning", "herring", "earring", "proceed", "exceed", "succeed"]);
const R1_PREFIXES = ["gener", "commun", "arsen", "inter", "past", "univers", "later", "emerg", "organ"];
const VOWELS = new Set(["a", "e", "i", "o", "u", "y"]);
const DOUBLES = ["bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt"];
const LI_ENDING = new Set(["c", "d", "e", "g", "h", "k", "m", "n", "r", "t"]);

function isVowel(w, i) {
  return VOWELS.has(w[i]); // "Y" (a consonant y) is not in VOWELS
}

// The position after the first non-vowel that follows a vowel, searching from `start`.
function regionAfter(w, start) {
  for (let i = start + 1; i < w.length; i++) {
    if (!isVowel(w, i) && isVowel(w, i - 1)) return i + 1;
  }
  return w.length;
}

// A short syllable ending at position i (exclusive end i).
function shortSyllableAt(w, end) {
  if (end === 2) return isVowel(w, 0) && !isVowel(w, 1);
  if (end < 3) return false;
  const c = w[end - 1];
  return !isVowel(w, end - 3) && isVowel(w, end - 2) && !isVowel(w, end - 1) && c !== "w" && c !== "x" && c !== "Y";
}

function longest(w, suffixes) {
  let best = null;
  for (const s of suffixes) if (w.endsWith(s) && (best === null || s.length > best.length)) best = s;
  return best;
}

function hasVowel(w, from, to) {
  for (let i = from; i < to; i++) if (isVowel(w, i)) return true;
  return false;
}

const STEP2 = {
  tional: "tion", enci: "ence", anci: "ance", abli: "able", entli: "ent", izer: "ize", ization: "ize",
  ational: "ate", ation: "ate", ator: "ate", alism: "al", aliti: "al", alli: "al", fulness: "ful",
  ousli: "ous", ousness: "ous", iveness: "ive", iviti: "ive", biliti: "ble", bli: "ble", ogi: "og",
  fulli: "ful", lessli: "less", li: "", ogist: "og",
};
const STEP3 = { tional: "tion", ational: "ate", alize: "al", icate: "ic", iciti: "ic", ical: "ic", ful: "", ness: "", ative: "" };
const STEP4 = ["al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ism", "ate", "iti", "ous", "ive", "ize", "ion"];

/** The Snowball English stem of `word` (lowercase ASCII letters). */
export function stem(word) {
  if (word.length <= 2) return word;
  let w = word;
  if (w.startsWith("'")) w = w.slice(1);
  if (EXCEPTIONS1.has(w)) return EXCEPTIONS1.get(w);
  // prelude: y as a consonant becomes Y
  let chars = w.split("");
  if (chars[0] === "y") chars[0] = "Y";
  for (let i = 1; i < chars.length; i++) if (chars[i] === "y" && VOWELS.has(chars[i - 1])) chars[i] = "Y";
  w = chars.join("");
  let p1 = null;
  for (const prefix of R1_PREFIXES) if (w.startsWith(prefix)) { p1 = prefix.length; break; }
  if (p1 === null) p1 = regionAfter(w, 0);
  const p2 = regionAfter(w, p1);
  // PyStemmer 3 (Snowball 3.0) treats "past" as ending in a short syllable ("pasting" -> "paste")
  const pastPrefix = w.startsWith("past");
  const short = (x, end) => shortSyllableAt(x, end) || (pastPrefix && end === 4);
  const inR1 = (s) => w.length - s.length >= p1;
  const inR2 = (s) => w.length - s.length >= p2;

  // Step 0
  const s0 = longest(w, ["'s'", "'s", "'"]);
  if (s0) w = w.slice(0, -s0.length);
  // Step 1a
  const s1a = longest(w, ["sses", "ied", "ies", "us", "ss", "s"]);
  if (s1a === "sses") w = w.slice(0, -2);
  else if (s1a === "ied" || s1a === "ies") w = w.slice(0, -3) + (w.length - 3 > 1 ? "i" : "ie");
  else if (s1a === "s" && hasVowel(w, 0, w.length - 2)) w = w.slice(0, -1);
  if (EXCEPTIONS2.has(w)) return w;
  // Step 1b
  const s1b = longest(w, ["eed", "eedly", "ed", "edly", "ing", "ingly"]);
  if (s1b === "eed" || s1b === "eedly") {
    if (inR1(s1b)) w = w.slice(0, -s1b.length) + "ee";
  } else if (s1b && hasVowel(w, 0, w.length - s1b.length)) {
    w = w.slice(0, -s1b.length);
    if (w.endsWith("at") || w.endsWith("bl") || w.endsWith("iz")) w += "e";
    else if (DOUBLES.some((d) => w.endsWith(d))) {
      // Snowball 3 keeps the double of a three-letter a/e/o word ("add", "egg", "off")
      if (!(w.length === 3 && "aeo".includes(w[0]))) w = w.slice(0, -1);
    }
    else if (p1 === w.length && short(w, w.length)) w += "e";
  }
  // Step 1c
  if (w.length > 2 && (w.endsWith("y") || w.endsWith("Y")) && !isVowel(w, w.length - 2)) w = w.slice(0, -1) + "i";
  // Step 2
  const s2 = longest(w, Object.keys(STEP2));
  if (s2 && inR1(s2)) {
    if (s2 === "ogi") {
      if (w.length - 3 >= 1 && w[w.length - 4] === "l") w = w.slice(0, -3) + "og";
    } else if (s2 === "li") {
      if (w.length >= 3 && LI_ENDING.has(w[w.length - 3])) w = w.slice(0, -2);
    } else {
      w = w.slice(0, -s2.length) + STEP2[s2];
    }
  }
  // Step 3
  const s3 = longest(w, Object.keys(STEP3));
  if (s3 && inR1(s3)) {
    if (s3 === "ative") {
      if (inR2(s3)) w = w.slice(0, -5);
    } else {
      w = w.slice(0, -s3.length) + STEP3[s3];
    }
  }
  // Step 4
  const s4 = longest(w, STEP4);
  if (s4 && inR2(s4)) {
    if (s4 === "ion") {
      const c = w[w.length - 4];
      if (c === "s" || c === "t") w = w.slice(0, -3);
    } else {
      w = w.slice(0, -s4.length);
    }
  }
  // Step 5
  if (w.endsWith("e")) {
    if (inR2("e") || (inR1("e") && !short(w, w.length - 1))) w = w.slice(0, -1);
  } else if (w.endsWith("l")) {
    if (inR2("l") && w[w.length - 2] === "l") w = w.slice(0, -1);
  }
  return w.replaceAll("Y", "y");
}
