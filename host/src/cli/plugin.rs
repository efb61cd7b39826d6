//! `evalhost plugin inspect` and `evalhost plugin new`.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::plugin_sdk;
use crate::exit_codes;
use crate::plugin::{API_VERSION, LoadedPlugin};

/// Runs a `plugin` subcommand.
pub fn run(command: &PluginCommand, err: &mut dyn Write) -> u8 {
    let result = match command {
        PluginCommand::Inspect { file, json } => inspect(file, *json),
        PluginCommand::New {
            name,
            dir,
            lang: Lang::Rust,
            sdk,
        } => scaffold(name, dir.as_deref(), sdk.as_deref(), err),
        PluginCommand::Push { file, reference } => push(file, reference, err),
        PluginCommand::Add { reference, lock } => add(reference, lock, err),
        PluginCommand::New {
            name,
            dir,
            lang: Lang::Python,
            sdk,
        } => scaffold_python(name, dir.as_deref(), sdk.as_deref(), err),
        PluginCommand::New {
            name,
            dir,
            lang: Lang::Ts,
            sdk,
        } => scaffold_ts(name, dir.as_deref(), sdk.as_deref(), err),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            let _ = writeln!(err, "error: {message}");
            exit_codes::USAGE
        }
    }
}

fn push(file: &Path, reference: &str, err: &mut dyn Write) -> Result<u8, String> {
    let r = crate::oci::OciRef::parse(reference)?;
    let bytes = std::fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    // Only a grader component this evalhost can load is pushed.
    let engine = crate::run::engine(false, 1).map_err(|e| format!("{e:#}"))?;
    let plugin = LoadedPlugin::load(&engine, &file.display().to_string(), &bytes)
        .map_err(|e| e.to_string())?;
    let (digest, sha) = crate::oci::push(&bytes, &r)?;
    let _ = writeln!(
        err,
        "pushed {} {} to {reference}\n  manifest {digest}\n  component sha256:{sha}",
        plugin.name, plugin.version
    );
    Ok(exit_codes::SUCCESS)
}

fn add(reference: &str, lock: &Path, err: &mut dyn Write) -> Result<u8, String> {
    let r = crate::oci::OciRef::parse(reference)?;
    let entry = crate::oci::add(&r, lock)?;
    let _ = writeln!(
        err,
        "locked {reference} in {}\n  manifest {}\n  component sha256:{}\nname it in a suite: plugins: [{{oci: {reference}}}]",
        lock.display(),
        entry.manifest_digest,
        entry.sha256
    );
    Ok(exit_codes::SUCCESS)
}

fn inspect(file: &Path, json: bool) -> Result<u8, String> {
    let bytes = std::fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let engine = crate::run::engine(false, 1).map_err(|e| format!("{e:#}"))?;
    let plugin = LoadedPlugin::load(&engine, &file.display().to_string(), &bytes)
        .map_err(|e| e.to_string())?;
    let imports = plugin.imports();
    let mut out = crate::text::Terminal::new(std::io::stdout().lock());
    if json {
        let doc = serde_json::json!({
            "name": plugin.name,
            "version": plugin.version,
            "api_version": API_VERSION,
            "sha256": plugin.digest,
            "stateless": plugin.stateless,
            "imports": imports,
            "types": plugin.types.iter().map(|t| serde_json::json!({
                "name": t.name,
                "description": t.description,
                "default_threshold": t.default_threshold,
                "capabilities": t.capabilities,
                "config_schema": t.config_schema,
            })).collect::<Vec<_>>(),
        });
        // JSON for tools: C1 and format characters escaped as JSON does,
        // not through the terminal filter (which would break the JSON).
        let mut raw = std::io::stdout().lock();
        let _ = writeln!(
            raw,
            "{}",
            crate::text::json_shown(&serde_json::to_string_pretty(&doc).unwrap_or_default())
        );
        return Ok(exit_codes::SUCCESS);
    }
    let _ = writeln!(
        out,
        "{} {}",
        crate::text::shown(&plugin.name),
        crate::text::shown(&plugin.version)
    );
    let _ = writeln!(out, "  api:       evalhost:grader@{API_VERSION}");
    let _ = writeln!(out, "  sha256:    {}", plugin.digest);
    let _ = writeln!(out, "  stateless: {}", plugin.stateless);
    let _ = writeln!(
        out,
        "  imports:   {}",
        if imports.is_empty() {
            "none".into()
        } else {
            imports.join(", ")
        }
    );
    for t in &plugin.types {
        let _ = writeln!(
            out,
            "\n  type `{}` — {}",
            crate::text::shown(&t.name),
            crate::text::shown(&t.description)
        );
        let _ = writeln!(out, "    pass threshold: {}", t.default_threshold);
        let caps = if t.capabilities.is_empty() {
            "none".to_owned()
        } else {
            t.capabilities.join(", ")
        };
        let _ = writeln!(out, "    capabilities:   {caps}");
        let schema = serde_json::to_string_pretty(&t.config_schema).unwrap_or_default();
        let _ = writeln!(out, "    config schema:\n{}", indent(&schema, 6));
    }
    Ok(exit_codes::SUCCESS)
}

fn indent(text: &str, n: usize) -> String {
    text.lines()
        .map(|l| format!("{}{l}", " ".repeat(n)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The plugin-sdk version `plugin new` depends on: the WIT package's
/// major.minor (see plugin-sdk/Cargo.toml's version policy).
pub const SDK_VERSION: &str = "0.2";

/// A plugin's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// A Rust crate on `evalhost-plugin-sdk`.
    Rust,
    /// A Python module on `evalhost-plugin` (plugin-sdk/python).
    Python,
    /// A TypeScript module on `@evalhost/plugin-sdk` (plugin-sdk/js).
    #[value(alias = "typescript", alias = "js")]
    Ts,
}

/// The directory `plugin new` creates for `name` under `dir`: the name
/// checked (kebab-case), the directory new.
fn new_root(name: &str, dir: Option<&Path>) -> Result<PathBuf, String> {
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && name.starts_with(|c: char| c.is_ascii_lowercase());
    if !valid {
        return Err(format!(
            "`{name}` is not a plugin name: use lowercase letters, digits and `-`, starting with a letter"
        ));
    }
    let root = dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
        .join(name);
    if root.exists() {
        return Err(format!("{} already exists", root.display()));
    }
    Ok(root)
}

/// `shout-check` → `ShoutCheck`.
fn type_name_of(name: &str) -> String {
    name.split('-')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase())
                .into_iter()
                .chain(chars)
                .collect::<String>()
        })
        .collect()
}

/// A local copy of an SDK given with `--sdk`, made absolute: `what` names
/// it in messages, `looks_right` tells a copy of it, `missing` says what a
/// wrong directory lacks.
fn local_sdk(
    given: &Path,
    what: &str,
    looks_right: impl Fn(&Path) -> bool,
    missing: &str,
) -> Result<PathBuf, String> {
    let path = given
        .canonicalize()
        .map_err(|e| format!("the {what} is not at {}: {e}", given.display()))?;
    if looks_right(&path) {
        Ok(path)
    } else {
        Err(format!(
            "{} is not a copy of evalhost's {missing}",
            path.display()
        ))
    }
}

/// The README's paragraph on the SDK beside the project: how to switch to
/// the published package once it exists (`switch`: what to change).
fn sdk_note(vendored: bool, sdk: &plugin_sdk::Sdk, registry: &str, switch: &str) -> String {
    if !vendored {
        return String::new();
    }
    format!(
        "\n## The SDK\n\n`{dir}/` is the plugin SDK of the evalhost that wrote this project\n(evalhost:grader@{API_VERSION}), copied from the binary so that the project\nbuilds with nothing unpublished to download (the SDK's own dependencies\ncome from {registry}). Once the SDK is published, {switch}, and delete\n`{dir}/`.\n",
        dir = sdk.dir
    )
}

/// Writes the scaffold's files under `root`.
fn write_files(root: &Path, files: &[(&str, String)]) -> Result<(), String> {
    for (file, text) in files {
        let path = root.join(file);
        path.parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, text))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// `plugin new --lang ts`: `grader.ts` (the grader of the Rust scaffold),
/// `grader.test.mjs` (native tests through the SDK's harness, on the
/// bundle), `package.json` with `test` and `build` scripts, a README.
fn scaffold_ts(
    name: &str,
    dir: Option<&Path>,
    sdk: Option<&Path>,
    err: &mut dyn Write,
) -> Result<u8, String> {
    let root = new_root(name, dir)?;
    // The published SDK by version; with --sdk, a local copy (a directory
    // or the .tgz `npm pack` makes), installed as a copy, not a link.
    let dependency = match sdk {
        Some(p) => {
            let path = local_sdk(
                p,
                "JS plugin SDK",
                |p| p.join("package.json").is_file() || p.extension().is_some_and(|e| e == "tgz"),
                "plugin-sdk/js (no package.json) nor its npm pack",
            )?;
            format!("file:{}", path.display())
        }
        None => format!("file:{}", plugin_sdk::JS.dir),
    };
    let wasm = name.replace('-', "_");
    let package = serde_json::json!({
        "name": name,
        "version": "0.1.0",
        "private": true,
        "type": "module",
        "scripts": {
            "test": "evalhost-plugin-build grader.ts --js .build/grader.mjs && node --test",
            "build": format!("evalhost-plugin-build grader.ts -o {wasm}.wasm"),
        },
        "dependencies": {"@evalhost/plugin-sdk": dependency},
    });
    let files = [
        (
            "package.json",
            serde_json::to_string_pretty(&package).unwrap_or_default() + "\n",
        ),
        (".npmrc", "install-links=true\n".to_owned()),
        (
            "grader.ts",
            format!(
                r#"// `{name}`: an evalhost grader plugin in TypeScript.
//
// Build: `npm run build` (the component `{wasm}.wasm`), then name it under
// `plugins:` in a suite.

import {{ assertionType, check, exportGrader, Grade, plugin, type Grader }} from "@evalhost/plugin-sdk";

export const impl: Grader = {{
  describe() {{
    return plugin(
      "{name}",
      "0.1.0",
      [
        assertionType("{name}", "Output mentions `value`, ignoring case", {{
          schema: {{
            type: "object",
            required: ["value"],
            properties: {{ value: {{ type: "string", minLength: 1 }} }},
          }},
        }}),
      ],
      {{ stateless: true }},
    );
  }},
  checkConfig(_type, config) {{
    config.requiredStr("value");
  }},
  grade(request) {{
    const value = request.config.requiredStr("value");
    const found = request.output.toLowerCase().includes(value.toLowerCase());
    // Quoted as the Rust scaffold quotes it, so both say the same.
    return Grade.fromCheck(check(found, `Output mentions ${{JSON.stringify(value)}}`));
  }},
}};

// What the component exports.
export const grader = exportGrader(impl);
"#
            ),
        ),
        (
            "grader.test.mjs",
            format!(
                r#"// Native tests: the harness checks what evalhost checks. `npm test`.
import {{ test }} from "node:test";
import assert from "node:assert/strict";
import {{ Harness }} from "@evalhost/plugin-sdk/testing";
import {{ impl }} from "./.build/grader.mjs";

test("grades", () => {{
  const h = new Harness(impl);
  assert.equal(h.score("{name}", "Hello, World", {{ value: "world" }}), 1);
  assert.equal(h.score("{name}", "Hello", {{ value: "world" }}), 0);
  assert.notEqual(h.checkConfig("{name}", {{}}), undefined);
}});
"#
            ),
        ),
        (
            "README.md",
            format!(
                "# {name}\n\nAn evalhost grader plugin in TypeScript.\n\n```sh\nnpm install\nnpm test                 # native tests\nnpm run build            # {wasm}.wasm (esbuild + componentize-js)\nevalhost plugin inspect {wasm}.wasm\n```\n\nIn a suite:\n\n```yaml\nplugins:\n  - path: {wasm}.wasm\ntests:\n  - id: greets\n    input: Say hello\n    assertions:\n      - {{type: {name}, value: hello}}\n```\n{}",
                sdk_note(
                    sdk.is_none(),
                    &plugin_sdk::JS,
                    "npm",
                    &format!(
                        "set `package.json`'s `@evalhost/plugin-sdk` to `\"^{SDK_VERSION}.0\"` and run `npm install`"
                    )
                )
            ),
        ),
        (".gitignore", "*.wasm\nnode_modules/\n.build/\n".to_owned()),
    ];
    write_files(&root, &files)?;
    if sdk.is_none() {
        plugin_sdk::write(&root, &plugin_sdk::JS)?;
    }
    let _ = writeln!(
        err,
        "created {} — `npm install`, then `npm test` and `npm run build` in that directory",
        root.display()
    );
    Ok(exit_codes::SUCCESS)
}

/// `plugin new --lang python`: `app.py` (the grader of the Rust scaffold:
/// the output mentions `value`, ignoring case), `test_app.py` (native
/// tests through the SDK's harness) and a README with the build command.
fn scaffold_python(
    name: &str,
    dir: Option<&Path>,
    sdk: Option<&Path>,
    err: &mut dyn Write,
) -> Result<u8, String> {
    let root = new_root(name, dir)?;
    let install = match sdk {
        Some(p) => {
            let path = local_sdk(
                p,
                "Python plugin SDK",
                |p| p.join("evalhost_plugin/__init__.py").is_file(),
                "plugin-sdk/python (no evalhost_plugin/)",
            )?;
            format!(
                "pip install {}",
                crate::process::shell_quote(&path.display().to_string())
            )
        }
        None => format!("pip install ./{}", plugin_sdk::PYTHON.dir),
    };
    let class = type_name_of(name);
    let wasm = name.replace('-', "_");
    // A virtual environment, so that `pip install` works where the system
    // Python refuses to be changed (PEP 668).
    let venv = "python3 -m venv .venv && . .venv/bin/activate\n";
    let note = sdk_note(
        sdk.is_none(),
        &plugin_sdk::PYTHON,
        "PyPI",
        &format!("install it with `pip install \"evalhost-plugin~={SDK_VERSION}.0\"` instead"),
    );
    let files = [
        (
            "app.py",
            format!(
                r#""""`{name}`: an evalhost grader plugin in Python.

Build: `evalhost-plugin-build app -o {wasm}.wasm`, then name `{wasm}.wasm`
under `plugins:` in a suite.
"""

import json

import evalhost_plugin as ep


class {class}(ep.Grader):
    def describe(self):
        return ep.Plugin("{name}", "0.1.0", stateless=True).assertion_type(
            ep.AssertionType("{name}", "Output mentions `value`, ignoring case").schema(
                {{
                    "type": "object",
                    "required": ["value"],
                    "properties": {{"value": {{"type": "string", "minLength": 1}}}},
                }}
            )
        )

    def check_config(self, assertion_type, config):
        config.required_str("value")

    def grade(self, request):
        value = request.config.required_str("value")
        found = value.lower() in request.output.lower()
        # Quoted as the Rust scaffold quotes it, so both say the same.
        quoted = json.dumps(value, ensure_ascii=False)
        return ep.Grade.from_check(ep.Check(found, f"Output mentions {{quoted}}"))


# What the component exports (componentize-py looks for `Grader`); the
# bindings exist only inside the build, so native tests skip this.
try:
    Grader = ep.export({class})
except ImportError:
    pass
"#
            ),
        ),
        (
            "test_app.py",
            format!(
                r#""""Native tests: the harness checks what evalhost checks.
Run: `python -m unittest`."""

import unittest

from evalhost_plugin.testing import Harness

from app import {class}


class Test{class}(unittest.TestCase):
    def test_grades(self):
        h = Harness({class})
        self.assertEqual(h.score("{name}", "Hello, World", {{"value": "world"}}), 1.0)
        self.assertEqual(h.score("{name}", "Hello", {{"value": "world"}}), 0.0)
        self.assertIsNotNone(h.check_config("{name}", {{}}))


if __name__ == "__main__":
    unittest.main()
"#
            ),
        ),
        (
            "README.md",
            format!(
                "# {name}

An evalhost grader plugin in Python.

```sh
{venv}{install}
python -m unittest                      # native tests
evalhost-plugin-build app -o {wasm}.wasm   # the component (componentize-py)
evalhost plugin inspect {wasm}.wasm
```

In a suite:

```yaml
plugins:
  - path: {wasm}.wasm
tests:
  - id: greets
    input: Say hello
    assertions:
      - {{type: {name}, value: hello}}
```
{note}"
            ),
        ),
        (
            ".gitignore",
            "*.wasm
__pycache__/
.venv/
"
            .to_owned(),
        ),
    ];
    write_files(&root, &files)?;
    if sdk.is_none() {
        plugin_sdk::write(&root, &plugin_sdk::PYTHON)?;
    }
    let _ = writeln!(
        err,
        "created {} — in a virtual environment `{install}`, then `python -m unittest` and `evalhost-plugin-build app -o {wasm}.wasm` in that directory",
        root.display()
    );
    Ok(exit_codes::SUCCESS)
}

fn scaffold(
    name: &str,
    dir: Option<&Path>,
    sdk: Option<&Path>,
    err: &mut dyn Write,
) -> Result<u8, String> {
    let root = new_root(name, dir)?;
    // The published SDK by version, or a local copy with --sdk.
    let dependency = match sdk {
        Some(p) => {
            let path = local_sdk(
                p,
                "plugin SDK",
                |p| p.join("Cargo.toml").is_file() && p.join("wit").is_dir(),
                "plugin-sdk (no Cargo.toml and wit/)",
            )?;
            format!("{{ path = {:?} }}", path.display().to_string())
        }
        None => format!(
            "{{ version = \"{SDK_VERSION}\", path = \"{}\" }}",
            plugin_sdk::RUST.dir
        ),
    };
    let crate_name = name.replace('-', "_");
    let type_name = name.to_owned();
    let struct_name = type_name_of(name);
    let files = [
        (
            "Cargo.toml",
            format!(
                r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"

# A standalone crate, not part of an enclosing workspace.
[workspace]

[lib]
crate-type = ["cdylib", "rlib"]   # cdylib: the plugin (.wasm); rlib: native unit tests

[dependencies]
evalhost-plugin-sdk = {dependency}

# Small components; the same settings as evalhost's built-in graders.
[profile.release]
opt-level = "s"
debug = false
strip = "debuginfo"
codegen-units = 1
"#,
            ),
        ),
        (
            "src/lib.rs",
            format!(
                r#"//! `{type_name}`: an evalhost grader plugin.
//!
//! Build: `cargo build --target wasm32-wasip2 --release`, then name
//! `target/wasm32-wasip2/release/{crate_name}.wasm` under `plugins:` in a suite.

use evalhost_plugin_sdk::{{
    export_grader, json, AssertionType, Check, Config, Grade, GradeError, Grader, Plugin, Request,
}};

/// The plugin.
pub struct {struct_name};

impl Grader for {struct_name} {{
    fn describe() -> Plugin {{
        Plugin::new("{name}", env!("CARGO_PKG_VERSION")).stateless(true).assertion_type(
            AssertionType::new("{type_name}", "Output mentions `value`, ignoring case")
                .schema(json!({{
                    "type": "object",
                    "required": ["value"],
                    "properties": {{"value": {{"type": "string", "minLength": 1}}}},
                }})),
        )
    }}

    fn check_config(_type: &str, config: &Config) -> Result<(), String> {{
        config.required_str("value").map(|_| ())
    }}

    fn grade(request: &Request) -> Result<Grade, GradeError> {{
        let value = request.config.required_str("value")?;
        let found = request.output.to_lowercase().contains(&value.to_lowercase());
        // The score decides the verdict against the type's threshold; a
        // failed Check alone does not fail the assertion. A grader whose
        // partial score must not pass returns Grade::failing(score).
        Ok(Grade::from_check(Check::new(found, format!("Output mentions {{value:?}}"))))
    }}
}}

export_grader!({struct_name});

#[cfg(test)]
mod tests {{
    use super::*;
    use evalhost_plugin_sdk::testing::Harness;

    // The harness checks what evalhost checks (the type, the config, the
    // grade) and fakes its capabilities (Harness::llm, Harness::exec).
    #[test]
    fn grades_natively() {{
        let harness = Harness::<{struct_name}>::new();
        assert_eq!(harness.score("{type_name}", "Hello, World", json!({{"value": "world"}})), 1.0);
        assert_eq!(harness.score("{type_name}", "Hello", json!({{"value": "world"}})), 0.0);
        assert!(harness.check_config("{type_name}", json!({{}})).is_err());
    }}
}}
"#
            ),
        ),
        (
            "README.md",
            format!(
                "# {name}\n\nAn evalhost grader plugin providing `{type_name}`.\n\n```sh\ncargo test                                   # unit tests, natively\ncargo build --target wasm32-wasip2 --release # the plugin\nsha256sum target/wasm32-wasip2/release/{crate_name}.wasm\n```\n\n```yaml\nplugins:\n  - path: target/wasm32-wasip2/release/{crate_name}.wasm\n    sha256: <the digest>\ntests:\n  - id: hello\n    input: Say hello to the world.\n    assertions:\n      - {{type: {type_name}, value: world}}\n```\n{}",
                sdk_note(
                    sdk.is_none(),
                    &plugin_sdk::RUST,
                    "crates.io",
                    &format!(
                        "change `Cargo.toml`'s dependency to `evalhost-plugin-sdk = \"{SDK_VERSION}\"`"
                    )
                )
            ),
        ),
        (".gitignore", "/target\n".to_owned()),
    ];
    write_files(&root, &files)?;
    if sdk.is_none() {
        plugin_sdk::write(&root, &plugin_sdk::RUST)?;
    }
    let _ = writeln!(
        err,
        "created {} — build it with `cargo build --target wasm32-wasip2 --release` in that directory",
        root.display()
    );
    Ok(exit_codes::SUCCESS)
}

/// `evalhost plugin`.
#[derive(Debug, clap::Subcommand)]
pub enum PluginCommand {
    /// Print a plugin's description: name, version, API version, types with
    /// their config schemas and capabilities, imports, sha256.
    Inspect {
        /// The `.wasm` component.
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Push a component to an OCI registry (the Wasm OCI artifact layout):
    /// `evalhost plugin push FILE oci://HOST/NAME:TAG`.
    Push {
        /// The `.wasm` component.
        file: PathBuf,
        /// Where: `oci://HOST/NAME:TAG` (plain HTTP only for loopback).
        reference: String,
    },
    /// Resolve a registry reference to its digest, download and verify the
    /// component, and pin it in `evalhost.lock`.
    Add {
        /// `oci://HOST/NAME:TAG`.
        reference: String,
        /// The lock file (default: `evalhost.lock` in the current directory).
        #[arg(long, value_name = "FILE", default_value = "evalhost.lock")]
        lock: PathBuf,
    },
    /// Create a grader plugin with a test: a Rust crate (builds with `cargo
    /// build --target wasm32-wasip2 --release`), a Python module or a
    /// TypeScript module (built with `evalhost-plugin-build`), the SDK
    /// beside it in `vendor/`.
    New {
        /// The plugin's name (kebab-case); also its directory.
        name: String,
        /// Where to create it (default: the current directory).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// The language.
        #[arg(long, value_enum, default_value = "rust")]
        lang: Lang,
        /// A local copy of the SDK to depend on instead of the one this
        /// binary carries (default: the SDK is written into the project's
        /// `vendor/`, so it builds with nothing unpublished to download).
        /// Rust: plugin-sdk; Python: plugin-sdk/python; TypeScript:
        /// plugin-sdk/js or its `npm pack`.
        #[arg(long, value_name = "PATH")]
        sdk: Option<PathBuf>,
    },
}

#[cfg(test)]
mod tests {
    /// `plugin new` writes the SDK version the SDK crate has, which is the
    /// WIT version this host runs (the SDK's version policy).
    #[test]
    fn the_scaffold_depends_on_the_sdk_of_this_hosts_wit() {
        let manifest = include_str!("../../../plugin-sdk/Cargo.toml");
        let version = manifest
            .lines()
            .find_map(|l| l.strip_prefix("version = \""))
            .and_then(|v| v.strip_suffix('"'))
            .expect("plugin-sdk has its own version");
        assert!(
            version.starts_with(&format!("{}.", super::SDK_VERSION)),
            "{version}"
        );
        assert!(
            crate::plugin::API_VERSION.starts_with(&format!("{}.", super::SDK_VERSION)),
            "{}",
            crate::plugin::API_VERSION
        );
    }
}
