//! AgentV's custom assertion types (§3.7): an assertion type no plugin
//! provides is looked up as a script, `<type>.ts|.js|.mts|.mjs`, in
//! `.agentv/assertions/` of the eval file's directory and each ancestor up
//! to the project root, then in `.agentv/graders/` and `.agentv/judges/`
//! (the nearest first). A script found is run as AgentV runs it — a code
//! grader on the host, `bun run <script>` — through the built-in
//! code-grader plugin's `exec` grant: `execution.allow_commands` applies
//! and `--sandbox strict` refuses it. A warning says so at load. A script
//! that calls `defineAssertion` from `@agentv/sdk` is instead compiled into
//! a sandboxed component (`agentv_js`) when Node.js and npm are here to
//! build it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::plugin::Registry;
use crate::suite::{Assertion, Suite};
use evalhost_suite::diag::{Diagnostic, Diagnostics};

const EXTENSIONS: [&str; 4] = ["ts", "js", "mts", "mjs"];

/// The script of a custom type, searched as AgentV searches.
fn find_script(kind: &str, eval_dir: &Path, project_root: &Path) -> Option<PathBuf> {
    let levels: Vec<&Path> = eval_dir
        .ancestors()
        .take_while(|d| d.starts_with(project_root))
        .collect();
    let lookup = |sub: &str| {
        levels.iter().find_map(|level| {
            EXTENSIONS
                .iter()
                .map(|ext| {
                    level
                        .join(".agentv")
                        .join(sub)
                        .join(format!("{kind}.{ext}"))
                })
                .find(|p| p.is_file())
        })
    };
    lookup("assertions")
        .or_else(|| lookup("graders"))
        .or_else(|| lookup("judges"))
}

/// `program` on the PATH.
fn on_path(program: &str) -> bool {
    crate::process::which(program).is_some()
}

/// Node's major and minor version, when node runs.
fn node_version() -> Option<(u32, u32)> {
    let out = crate::process::run(&crate::process::Spec {
        argv: &["node".to_owned(), "--version".to_owned()],
        timeout: Some(std::time::Duration::from_secs(30)),
        ..crate::process::Spec::default()
    })
    .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text.trim().trim_start_matches('v').split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The command that runs `script`: AgentV's `bun run`, else node when it
/// can run the file; with why it may not run, when neither can.
fn runner(script: &Path) -> (Vec<String>, Option<String>) {
    let path = script.display().to_string();
    let bun = || vec!["bun".to_owned(), "run".to_owned(), path.clone()];
    if on_path("bun") {
        return (bun(), None);
    }
    let typescript = matches!(
        script.extension().and_then(|e| e.to_str()),
        Some("ts" | "mts")
    );
    match node_version() {
        Some(_) if !typescript => (vec!["node".into(), path.clone()], None),
        Some((major, minor)) if major > 22 || (major == 22 && minor >= 6) => (
            vec![
                "node".into(),
                "--experimental-strip-types".into(),
                path.clone(),
            ],
            None,
        ),
        Some((major, minor)) => (
            bun(),
            Some(format!(
                "`bun` is not installed and node {major}.{minor} cannot run TypeScript (22.6 or later can): these assertions will fail until one is"
            )),
        ),
        None => (
            bun(),
            Some(
                "neither `bun` nor `node` is installed: these assertions will fail until one is"
                    .into(),
            ),
        ),
    }
}

fn rewrite(assertion: &mut Assertion, found: &BTreeMap<Arc<str>, Vec<String>>) {
    if assertion.wasm.is_some() {
        return;
    }
    if let Some(command) = found.get(&assertion.kind) {
        let mut config = Map::new();
        config.insert(
            "command".into(),
            Value::Array(command.iter().cloned().map(Value::String).collect()),
        );
        assertion.config_json = Value::Object(config.clone()).to_string().into();
        assertion.config = Arc::new(config);
    }
}

/// Turns the suite's assertions of custom types into code graders running
/// their scripts, and registers those types with the code-grader plugin.
pub(super) fn discover(
    suite: &mut Suite,
    engine: &std::sync::Arc<crate::plugin::PluginEngine>,
    registry: &mut Registry,
    diags: &mut Diagnostics,
) {
    let mut unknown: BTreeMap<Arc<str>, &Assertion> = BTreeMap::new();
    for a in suite
        .tests
        .iter()
        .flat_map(|t| t.every_assertion())
        .flat_map(Assertion::walk)
        .filter(|a| a.group.is_none() && a.wasm.is_none() && a.plugin_type.is_none())
    {
        if registry.resolve(&a.kind).is_none() {
            unknown.entry(a.kind.clone()).or_insert(a);
        }
    }
    if unknown.is_empty() {
        return;
    }
    let root = evalhost_suite::roots::Roots::for_eval(&suite.file).project_root;
    let root = root.canonicalize().unwrap_or(root);
    let eval_dir = suite
        .dir
        .canonicalize()
        .unwrap_or_else(|_| suite.dir.clone());
    let mut found: BTreeMap<Arc<str>, Vec<String>> = BTreeMap::new();
    for (kind, first) in &unknown {
        let Some(script) = find_script(kind, &eval_dir, &root) else {
            continue;
        };
        // `defineAssertion` from `@agentv/sdk`: compiled into a sandboxed
        // component, where Node.js and npm are here to build it.
        // A regular file of at most the suite-file cap (32 MiB).
        let source =
            evalhost_suite::roots::read_regular_text(&script, evalhost_suite::load::MAX_FILE_BYTES)
                .unwrap_or_default();
        let mut why_not_sandboxed = None;
        if super::agentv_js::is_define_assertion(&source) {
            let at = |d: Diagnostic| d.at(first.loc.pos).key(first.loc.key.key("type"));
            match super::agentv_js::toolchain() {
                Ok(_) => {
                    let built = super::agentv_js::compile(&script, kind, &root).and_then(|bytes| {
                        let digest = crate::plugin::sha256_hex(&bytes);
                        let label = format!("{} (sandboxed)", script.display());
                        crate::plugin::LoadedPlugin::load_with_digest(
                            engine, &label, &bytes, &digest,
                        )
                        .map_err(|e| e.to_string())
                    });
                    match built.and_then(|p| registry.add(p).map(|_| ()).map_err(|e| e.to_string())) {
                        Ok(()) => {}
                        Err(message) => diags.push(
                            at(Diagnostic::error(
                                &first.loc.file,
                                format!("the custom assertion `{kind}` ({}) could not be compiled into a sandboxed component: {message}", script.display()),
                            ))
                            .hint("fix the script (it must bundle: its imports installed beside it), or delete it"),
                        ),
                    }
                    continue;
                }
                Err(reason) => why_not_sandboxed = Some(reason),
            }
        }
        if !registry.alias(kind, "code-grader") {
            continue;
        }
        let (command, problem) = runner(&script);
        let shown = script.strip_prefix(&root).map_or_else(
            |_| script.display().to_string(),
            |p| p.display().to_string(),
        );
        let mut warning = Diagnostic::warning(
            &first.loc.file,
            format!(
                "`{kind}` is a custom assertion type ({shown}): it runs on the host as `{}`, as AgentV runs it, not in the sandbox",
                command.join(" ")
            ),
        )
        .at(first.loc.pos)
        .key(first.loc.key.key("type"));
        warning = warning.hint(match (&problem, &why_not_sandboxed) {
            (_, Some(reason)) => format!(
                "it uses defineAssertion: {reason}; install them to grade it in the sandbox instead. `--sandbox strict` refuses the host route"
            ),
            (Some(p), None) => format!("{p}; `--sandbox strict` refuses it"),
            (None, None) => {
                "`--sandbox strict` refuses it; `execution.allow_commands` applies".to_owned()
            }
        });
        diags.push(warning);
        found.insert(kind.clone(), command);
    }
    // Keys written beside the type: AgentV passes none of them to the
    // script; neither does evalhost, and says so.
    for a in suite
        .tests
        .iter()
        .flat_map(|t| t.every_assertion())
        .flat_map(Assertion::walk)
        .filter(|a| found.contains_key(&a.kind) && a.wasm.is_none() && !a.config.is_empty())
    {
        let keys: Vec<&str> = a.config.keys().map(String::as_str).collect();
        diags.push(
            Diagnostic::warning(
                &a.loc.file,
                format!(
                    "`{}` (a custom assertion script) is not given {}: AgentV passes no config to such scripts, and neither does evalhost",
                    a.kind,
                    keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                ),
            )
            .at(a.loc.pos)
            .key(a.loc.key.clone()),
        );
    }
    if found.is_empty() {
        return;
    }
    for test in &mut suite.tests {
        for a in &mut test.assertions {
            a.walk_mut(&mut |a| rewrite(a, &found));
        }
        if let Some(c) = &mut test.conversation {
            for turn in &mut c.turns {
                for a in &mut turn.assertions {
                    a.walk_mut(&mut |a| rewrite(a, &found));
                }
            }
        }
    }
}
