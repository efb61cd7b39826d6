//! promptfoo's TypeScript assertion files (`javascript` with
//! `value: file://check.ts[:fn]`): the reader leaves the file's path in the
//! assertion (`__script.bundle`); here, before the run, each file is
//! bundled with what it imports into one ES module by the toolchain that
//! builds AgentV's sandboxed assertions (esbuild, confined to the project:
//! see `agentv_js`), and the JavaScript plugin runs that module in its
//! sandbox like any `.js` file. promptfoo compiles such files with `tsx`
//! and runs them on the host; evalhost never runs them outside the sandbox.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::suite::Suite;
use evalhost_suite::diag::{Diagnostic, Diagnostics};

/// Bundles every TypeScript assertion file of `suite` (once per file), or
/// says at the assertion why it cannot.
pub(super) fn bundle(suite: &mut Suite, diags: &mut Diagnostics) {
    let wanted = |a: &crate::suite::Assertion| {
        a.config
            .get("__script")
            .and_then(|s| s.get("bundle"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    if !suite
        .tests
        .iter()
        .flat_map(|t| t.assertions.iter())
        .flat_map(|a| a.walk())
        .any(|a| wanted(a).is_some())
    {
        return;
    }
    let root = evalhost_suite::roots::Roots::for_eval(&suite.file).project_root;
    let mut done: HashMap<String, Result<String, String>> = HashMap::new();
    let mut said = std::collections::HashSet::new();
    for test in &mut suite.tests {
        for assertion in &mut test.assertions {
            assertion.walk_mut(&mut |a| {
                let Some(path) = wanted(a) else {
                    return;
                };
                let built = done
                    .entry(path.clone())
                    .or_insert_with(|| super::agentv_js::bundle_script(Path::new(&path), &root))
                    .clone();
                match built {
                    Ok(source) => {
                        let mut config = (*a.config).clone();
                        if let Some(Value::Object(script)) = config.get_mut("__script") {
                            script.remove("bundle");
                            script.insert("source".into(), Value::String(source));
                            script.insert("esm".into(), Value::Bool(true));
                        }
                        a.config_json = Value::Object(config.clone()).to_string().into();
                        a.config = Arc::new(config);
                    }
                    Err(why) => {
                        if said.insert(path.clone()) {
                            diags.push(
                                Diagnostic::error(
                                    &a.loc.file,
                                    format!("the TypeScript assertion {path} could not be bundled for the sandbox: {why}"),
                                )
                                .at(a.loc.pos)
                                .key(a.loc.key.clone())
                                .hint("it is bundled with Node.js and npm (esbuild, installed once into evalhost's cache); its imports must be the project's own files or packages installed beside it"),
                            );
                        }
                    }
                }
            });
        }
    }
}
