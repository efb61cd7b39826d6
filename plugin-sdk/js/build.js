#!/usr/bin/env node
// Builds a JS/TS grader into an evalhost component:
//   evalhost-plugin-build grader.ts -o my_grader.wasm
// esbuild bundles the module (TypeScript included) with this SDK into one
// ES module; componentize-js makes it a component of the WIT world
// `plugin`, with every WASI feature disabled: no clock, random, stdio or
// HTTP imports — the component can reach only what evalhost grants.
import { build } from "esbuild";
import { componentize } from "@bytecodealliance/componentize-js";
import { writeFile, mkdtemp, rm, cp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, dirname, resolve, basename } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const value = (flag) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : undefined);
const out = value("-o");
// --js OUT.mjs: only the bundle, for native tests (`node --test`).
const js = value("--js");
const entry = args.find((a, i) => !a.startsWith("-") && !["-o", "--js"].includes(args[i - 1]));
if (!entry || (!out && !js)) {
  console.error("usage: evalhost-plugin-build GRADER.ts -o OUT.wasm   (or --js OUT.mjs: the bundle only)");
  process.exit(2);
}
const bundled = await build({
  entryPoints: [resolve(entry)],
  bundle: true,
  format: "esm",
  platform: "neutral",
  target: "es2022",
  write: false,
  logLevel: "error",
  alias: { "@evalhost/plugin-sdk": join(here, "index.js") },
});
const source = bundled.outputFiles[0].text;
if (js) {
  const { mkdir } = await import("node:fs/promises");
  await mkdir(dirname(resolve(js)), { recursive: true });
  await writeFile(resolve(js), source);
  if (!out) process.exit(0);
}
// componentize-js reads the WIT from a relative path.
const work = await mkdtemp(join(tmpdir(), "evalhost-js-"));
const cwd = process.cwd();
try {
  await cp(join(here, "wit"), join(work, "wit"), { recursive: true });
  process.chdir(work);
  const { component } = await componentize(source, {
    witPath: "wit",
    worldName: "plugin",
    disableFeatures: ["random", "stdio", "clocks", "http", "fetch-event"],
  });
  process.chdir(cwd);
  await writeFile(resolve(out), component);
  console.error(`built ${basename(out)} (${(component.length / 1e6).toFixed(1)} MB) from ${entry}`);
} finally {
  process.chdir(cwd);
  await rm(work, { recursive: true, force: true });
}
