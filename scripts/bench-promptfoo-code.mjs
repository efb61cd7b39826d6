// Per-call cost of promptfoo 0.121.20's inline `javascript` and `python`
// assertions, in one process through its own runAssertion — the side of
// the dispatch benchmark that evalhost is compared with
// (`cargo bench --bench dispatch` runs this with node when promptfoo is
// installed in target/promptfoo). Prints one JSON line:
// {"js_first_us", "js_warm_us", "py_first_us"?, "py_warm_us"?}.
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(here, "..", "target", "promptfoo", "node_modules");
process.env.PROMPTFOO_DISABLE_TELEMETRY = "1";
const pf = await import(path.join(modules, "promptfoo/dist/src/index.js"));
const { runAssertion } = (pf.default ?? pf).assertions;

const OUTPUT =
  "The capital of France is Paris. It has been the capital since the tenth century, and it is also the country's largest city.";
const run = (type, value) =>
  runAssertion({ assertion: { type, value }, test: { vars: {} }, providerResponse: { output: OUTPUT }, prompt: "p" });

async function time(type, value, warm) {
  let t = process.hrtime.bigint();
  const first = await run(type, value);
  const firstUs = Number(process.hrtime.bigint() - t) / 1e3;
  if (!first.pass) throw new Error(`${type} did not pass: ${first.reason}`);
  for (let i = 0; i < Math.min(warm, 50); i++) await run(type, value);
  const rounds = [];
  for (let r = 0; r < 11; r++) {
    t = process.hrtime.bigint();
    for (let i = 0; i < warm; i++) await run(type, value);
    rounds.push(Number(process.hrtime.bigint() - t) / 1e3 / warm);
  }
  rounds.sort((a, b) => a - b);
  return [firstUs, rounds[5]];
}

const out = {};
[out.js_first_us, out.js_warm_us] = await time("javascript", "output.includes('Paris') && output.length > 10", 2000);
if (process.argv.includes("--python")) {
  try {
    [out.py_first_us, out.py_warm_us] = await time("python", "'Paris' in output and len(output) > 10", 20);
  } catch (e) {
    out.py_error = String(e.message ?? e);
  }
}
console.log(JSON.stringify(out));
