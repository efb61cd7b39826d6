// evalhost's builder of sandboxed AgentV assertions:
//   node build.mjs bundle SCRIPT KIND ROOT ENTRIES OUT.mjs   (esbuild: adapter + script + shim)
//   node build.mjs component IN.mjs WITDIR OUT.wasm  (componentize-js, WASI off)
//
// The bundle is confined: every import is resolved here, by the plugin
// below, and refused unless it is the project's own file (after following
// links, inside ROOT) or the @agentv/sdk shim. No absolute or `file:`
// specifier, no import attribute but `{ type: "json" }`, nothing outside
// the project: the bytes of a file end up in the component, and from its
// answers in results.jsonl, so a script must not reach the operator's
// files (`/proc/self/environ`, `~/.aws/credentials`, `../../secret.txt`).
import { build } from "esbuild";
import { readFile, writeFile, realpath } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const shim = join(here, "sdk-shim.mjs");
const [mode, ...rest] = process.argv.slice(2);

const inside = (path, dir) => {
  const r = relative(dir, path);
  return r === "" || (!r.startsWith(".." + sep) && r !== ".." && !isAbsolute(r));
};

function confine(root, entry, script) {
  const refuse = (args, why) => ({
    errors: [{ text: `import "${args.path}"${args.importer && args.importer !== entry ? ` in ${args.importer}` : ""} is refused: ${why}` }],
  });
  return {
    name: "evalhost-confine",
    setup(b) {
      b.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData?.evalhostInner || args.kind === "entry-point") return undefined;
        const attrs = args.with ?? {};
        const keys = Object.keys(attrs);
        if (keys.some((k) => k !== "type") || (keys.length > 0 && attrs.type !== "json")) {
          return refuse(args, `the import attributes ${JSON.stringify(attrs)} are not allowed (only { type: "json" })`);
        }
        if (args.path === "@agentv/sdk") return { path: shim };
        if (args.importer === entry) {
          // The adapter imports the script itself, by its absolute path.
          if (args.path === script) return { path: script };
          return refuse(args, "the adapter imports only the script and @agentv/sdk");
        }
        if (isAbsolute(args.path) || /^[a-z][a-z0-9+.-]*:/i.test(args.path)) {
          return refuse(args, "a sandboxed assertion may import only relative paths and packages installed in its project (no absolute paths, no `file:`, `node:` or other schemes)");
        }
        const found = await b.resolve(args.path, {
          kind: args.kind,
          resolveDir: args.resolveDir,
          importer: args.importer,
          with: args.with,
          pluginData: { evalhostInner: true },
        });
        if (found.errors.length > 0) return { errors: found.errors };
        if (found.external || found.namespace !== "file" || !found.path) {
          return refuse(args, "it does not resolve to a file of the project");
        }
        let real;
        try {
          real = await realpath(found.path);
        } catch (e) {
          return refuse(args, `cannot resolve ${found.path}: ${e.message}`);
        }
        if (!inside(real, root)) {
          return refuse(args, `it resolves to ${real}, outside the project ${root}: a sandboxed assertion may bundle only the project's files`);
        }
        return { path: real, sideEffects: found.sideEffects };
      });
      b.onLoad({ filter: /.*/ }, (args) => {
        const attrs = args.with ?? {};
        const keys = Object.keys(attrs);
        if (keys.some((k) => k !== "type") || (keys.length > 0 && attrs.type !== "json")) {
          return { errors: [{ text: `${args.path}: the import attributes ${JSON.stringify(attrs)} are not allowed (only { type: "json" })` }] };
        }
        if (args.path !== shim && args.path !== entry && !inside(args.path, root)) {
          return { errors: [{ text: `${args.path} is outside the project ${root}; refused` }] };
        }
        return undefined;
      });
    },
  };
}

if (mode === "bundle") {
  const [scriptArg, kind, rootArg, entries, out] = rest;
  const root = await realpath(rootArg);
  const script = await realpath(scriptArg);
  if (!inside(script, root)) {
    console.error(`${script} is outside the project ${root}; refused`);
    process.exit(1);
  }
  const adapter = (await readFile(join(here, "adapter.mjs"), "utf8"))
    .replace("__SCRIPT__", script.replaceAll("\\", "\\\\").replaceAll('"', '\\"'))
    .replace("__KIND__", kind.replaceAll("\\", "\\\\").replaceAll('"', '\\"'));
  // A stable entry path: the bundle (and so the component's digest) is
  // the same for the same script. Not inside this directory: the toolchain
  // is checked against its tag before every use, so it never changes.
  const { createHash } = await import("node:crypto");
  const { mkdir } = await import("node:fs/promises");
  const work = entries;
  await mkdir(work, { recursive: true });
  try {
    const entry = join(work, `${createHash("sha256").update(script).update(kind).digest("hex").slice(0, 16)}.mjs`);
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
      nodePaths: [join(dirname(script), "node_modules")],
      plugins: [confine(root, entry, script)],
    });
    await writeFile(out, result.outputFiles[0].text);
  } catch (e) {
    const first = e.errors?.[0];
    console.error(first ? `${first.location ? `${first.location.file}:${first.location.line}: ` : ""}${first.text}` : String(e));
    process.exit(1);
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
  console.error("usage: build.mjs bundle SCRIPT KIND ROOT ENTRIES OUT.mjs | component IN.mjs WITDIR OUT.wasm");
  process.exit(2);
}
