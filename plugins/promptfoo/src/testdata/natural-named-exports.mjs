// A Node module hook that lets `import("natural")` see natural's exports.
//
// promptfoo 0.121.20's METEOR (dist/src/meteor-*.js) loads natural with
// `const natural = await import("natural"); PorterStemmer =
// natural.PorterStemmer`. natural 8 is CommonJS and builds its
// `module.exports` at run time, so Node's import of it exposes only
// `default`: stock promptfoo fails every meteor assertion with "Invariant
// failed: PorterStemmer should be loaded". With this hook, `natural`
// imported from ESM resolves to a wrapper that re-exports `PorterStemmer`
// and `WordNet` by name, so promptfoo's own meteor code runs on natural's
// stemmer and WordNet — what evalhost reproduces.
//
//     node --import ./natural-named-exports.mjs …   (or NODE_OPTIONS)
// scripts/conformance-promptfoo.py and meteor-oracle.mjs register it.
import { register } from "node:module";
import { isMainThread } from "node:worker_threads";

const WRAPPER = "evalhost-natural-named-exports:";

if (isMainThread) register(import.meta.url);

export async function resolve(specifier, context, next) {
  if (specifier === "natural") {
    const real = await next(specifier, context);
    return { url: WRAPPER + real.url, format: "module", shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (url.startsWith(WRAPPER)) {
    const real = JSON.stringify(url.slice(WRAPPER.length));
    return {
      format: "module",
      shortCircuit: true,
      source: `import natural from ${real};\nexport default natural;\nexport const { PorterStemmer, WordNet } = natural;\n`,
    };
  }
  return next(url, context);
}
