// evalhost's builder of sandboxed AgentV assertions:
//   node build.mjs bundle SCRIPT KIND OUT.mjs   (esbuild: adapter + script + shim)
//   node build.mjs component IN.mjs WITDIR OUT.wasm   (componentize-js, WASI off)
import { build } from "esbuild";
import { readFile, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const [mode, ...rest] = process.argv.slice(2);
if (mode === "bundle") {
  const [script, kind, out] = rest;
  const adapter = (await readFile(join(here, "adapter.mjs"), "utf8"))
    .replace("__SCRIPT__", resolve(script).replaceAll("\\", "\\\\").replaceAll('"', '\\"'))
    .replace("__KIND__", kind.replaceAll("\\", "\\\\").replaceAll('"', '\\"'));
  // A stable entry path: the bundle (and so the component's digest) is
  // the same for the same script.
  const { createHash } = await import("node:crypto");
  const { mkdir } = await import("node:fs/promises");
  const work = join(here, "entries");
  await mkdir(work, { recursive: true });
  try {
    const entry = join(work, `${createHash("sha256").update(resolve(script)).update(kind).digest("hex").slice(0, 16)}.mjs`);
    await writeFile(entry, adapter);
    const result = await build({
      entryPoints: [entry],
      bundle: true,
      format: "esm",
      platform: "neutral",
      target: "es2022",
      write: false,
      logLevel: "silent",
      mainFields: ["module", "main"],
      alias: { "@agentv/sdk": join(here, "sdk-shim.mjs") },
      nodePaths: [join(dirname(resolve(script)), "node_modules")],
    });
    await writeFile(out, result.outputFiles[0].text);
  } catch (e) {
    const first = e.errors?.[0];
    console.error(first ? `${first.location ? `${first.location.file}:${first.location.line}: ` : ""}${first.text}` : String(e));
    process.exit(1);
  } finally {
    // The entry is kept: it is what the bundle's comments name.
  }
} else if (mode === "component") {
  const { componentize } = await import("@bytecodealliance/componentize-js");
  const [input, wit, out] = rest;
  const source = await readFile(input, "utf8");
  const outPath = resolve(out);
  process.chdir(dirname(resolve(wit)));
  const { component } = await componentize(source, {
    witPath: wit.split(/[\\/]/).pop(),
    worldName: "plugin",
    disableFeatures: ["random", "stdio", "clocks", "http", "fetch-event"],
  });
  await writeFile(outPath, component);
} else {
  console.error("usage: build.mjs bundle SCRIPT KIND OUT.mjs | component IN.mjs WITDIR OUT.wasm");
  process.exit(2);
}
