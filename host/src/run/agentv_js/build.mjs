// evalhost's builder of sandboxed AgentV assertions:
//   node build.mjs bundle SCRIPT KIND ROOT ENTRIES OUT.mjs   (esbuild: adapter + script + shim)
//   node build.mjs component IN.mjs WITDIR OUT.wasm  (componentize-js, WASI off)
// and of promptfoo's TypeScript (or importing) assertion files, run by the
// sandboxed JavaScript plugin:
//   node build.mjs script SCRIPT ROOT OUT.mjs   (esbuild: the script and its imports, one ES module)
//
// The bundle is confined: every import is resolved here, by the plugin
// below, and refused unless it is the project's own file (after following
// links, inside ROOT) or the @agentv/sdk shim. No absolute or `file:`
// specifier, no import attribute but `{ type: "json" }`, nothing outside
// the project: the bytes of a file end up in the component, and from its
// answers in results.jsonl, so a script must not reach the operator's
// files (`/proc/self/environ`, `~/.aws/credentials`, `../../secret.txt`).
import { build } from "esbuild";
import { readFile, writeFile, realpath, stat } from "node:fs/promises";
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
        if (args.path === "@agentv/sdk" && entry !== script) return { path: shim };
        if (args.importer === entry && entry !== script) {
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
        // One answer for "missing" and "outside", so that refusals do not
        // tell which host paths exist.
        const outside = "it does not resolve to a file of the project (a sandboxed assertion may bundle only the project's files)";
        if (found.errors.length > 0 || found.external || found.namespace !== "file" || !found.path) {
          return refuse(args, outside);
        }
        let real;
        try {
          real = await realpath(found.path);
        } catch {
          return refuse(args, outside);
        }
        if (!inside(real, root)) {
          return refuse(args, outside);
        }
        // A FIFO or a device would hang or flood the bundler.
        if (!(await stat(real)).isFile()) {
          return refuse(args, "it is not a regular file");
        }
        return { path: real, sideEffects: found.sideEffects };
      });
      b.onLoad({ filter: /.*/ }, async (args) => {
        const attrs = args.with ?? {};
        const keys = Object.keys(attrs);
        if (keys.some((k) => k !== "type") || (keys.length > 0 && attrs.type !== "json")) {
          return { errors: [{ text: `${args.path}: the import attributes ${JSON.stringify(attrs)} are not allowed (only { type: "json" })` }] };
        }
        if (args.path !== shim && args.path !== entry && !inside(args.path, root)) {
          return { errors: [{ text: "a file outside the project is refused" }] };
        }
        if (!(await stat(args.path)).isFile()) {
          return { errors: [{ text: `${args.path} is not a regular file; refused` }] };
        }
        return undefined;
      });
    },
  };
}

// esbuild's options for both modes: one ES module of `entry` and what it
// imports, confined to the project.
function options(root, entry, script) {
  return {
    entryPoints: [entry],
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    write: false,
    logLevel: "silent",
    mainFields: ["module", "main"],
    nodePaths: [join(dirname(script), "node_modules")],
    // No tsconfig.json is read: one could be a link to any file.
    tsconfigRaw: "{}",
    plugins: [confine(root, entry, script)],
  };
}

// An error is shown only when it is ours or lies in a regular file of the
// project: esbuild quotes the text it could not read, and a package.json
// linked to a host file would print that file.
async function failed(e, root) {
  const first = e.errors?.[0];
  let shown = "esbuild could not bundle the script";
  if (first && first.text.startsWith("import \"")) {
    shown = `${first.location ? `${first.location.file}:${first.location.line}: ` : ""}${first.text}`;
  } else if (first && first.location) {
    let real = null;
    try {
      real = await realpath(resolve(first.location.file));
    } catch {}
    if (real && inside(real, root) && (await stat(real)).isFile()) {
      shown = `${first.location.file}:${first.location.line}: ${first.text}`;
    } else {
      shown = "esbuild could not read a file the script needs (its text is not shown: it is not a file of the project)";
    }
  } else if (first) {
    shown = first.text;
  }
  console.error(shown);
  process.exit(1);
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
    const result = await build(options(root, entry, script));
    await writeFile(out, result.outputFiles[0].text);
  } catch (e) {
    await failed(e, root);
  }
} else if (mode === "script") {
  // A promptfoo assertion file (TypeScript, or JavaScript that imports the
  // project's modules): the file and what it imports, confined as above,
  // as one ES module that keeps the file's exports.
  const [scriptArg, rootArg, out] = rest;
  const root = await realpath(rootArg);
  const script = await realpath(scriptArg);
  if (!inside(script, root)) {
    console.error(`${script} is outside the project ${root}; refused`);
    process.exit(1);
  }
  try {
    const result = await build(options(root, script, script));
    await writeFile(out, result.outputFiles[0].text);
  } catch (e) {
    await failed(e, root);
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
  console.error("usage: build.mjs bundle SCRIPT KIND ROOT ENTRIES OUT.mjs | script SCRIPT ROOT OUT.mjs | component IN.mjs WITDIR OUT.wasm");
  process.exit(2);
}
