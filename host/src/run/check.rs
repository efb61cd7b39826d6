//! Checks that need the plugins: every assertion type must be provided by a
//! plugin, and every assertion's config must pass its plugin's
//! `check-config`, so a bad regex or a missing `value` is reported when the
//! suite is loaded, with the file, the test and the assertion named.

use std::collections::HashMap;
use std::sync::Arc;

use crate::diag::{Diagnostic, Diagnostics, nearest};
use crate::plugin::Registry;
use crate::suite::model::{Assertion, Suite};
use crate::suite::source_map::Pos;

/// Checks every assertion of `suite` against `registry`.
pub fn check_assertions(suite: &Suite, registry: &Registry) -> Diagnostics {
    let mut diags = Diagnostics::default();
    let mut seen_suite_level = std::collections::HashSet::new();
    // By type (its place in the registry, which outlives this check) and
    // config.
    let mut verdicts: HashMap<(usize, Arc<str>), Result<(), String>> = HashMap::new();
    let mut schemas = Schemas::default();
    for test in &suite.tests {
        // Groups (`composite`, `assert-set`) are the host's; their members
        // are checked like any assertion.
        let leaves = test
            .assertions
            .iter()
            .flat_map(Assertion::walk)
            .filter(|a| a.group.is_none());
        for assertion in leaves {
            // A suite-level assertion is the same in every test: check it
            // once per place, which is its file and key path together (an
            // `include:` template's `assertions[0]` is not EVAL.yaml's).
            if assertion.from_suite
                && !seen_suite_level.insert((assertion.loc.file.clone(), assertion.loc.key.clone()))
            {
                continue;
            }
            let owner = if assertion.from_suite {
                "suite-level assertion".to_owned()
            } else {
                format!("test `{}`, assertion", test.id)
            };
            let Some((plugin, ty)) = registry.resolve_for(assertion) else {
                diags.push(match assertion.wasm.as_deref() {
                    Some((path, _)) => Diagnostic::error(
                        &assertion.loc.file,
                        format!(
                            "{owner} `{}`: the plugin {} does not grade `{}` and has more than one type",
                            assertion.name,
                            path.display(),
                            assertion.kind
                        ),
                    )
                    .at(assertion.loc.pos)
                    .key(assertion.loc.key.key("wasm")),
                    None => unknown_type(assertion, &owner, registry),
                });
                continue;
            };
            // One verdict per plugin, type and config: a config repeated
            // across tests is checked once.
            let key = (
                std::ptr::from_ref(ty) as usize,
                assertion.config_json.clone(),
            );
            let verdict = verdicts
                .entry(key)
                .or_insert_with(|| {
                    let checked = match plugin.check_config(&ty.name, &assertion.config_json) {
                        Ok(verdict) => verdict,
                        Err(failure) => Err(format!(
                            "plugin `{}` failed while checking the config ({}): {}",
                            plugin.name, failure.class, failure.message
                        )),
                    };
                    match (checked, schemas.validator(Some(ty))) {
                        (Ok(()), Some(validator)) => schema_verdict(validator, &assertion.config),
                        (checked, _) => checked,
                    }
                })
                .clone();
            if let Err(message) = verdict {
                // Point at the key the message names; else at `value`, the
                // usual culprit; else at the assertion.
                let blamed = blamed_key(assertion, &message).or_else(|| {
                    assertion
                        .key_positions
                        .find(&assertion.config, "value")
                        .map(|p| ("value".to_owned(), p))
                });
                let (key, pos) = match blamed {
                    Some((rel, pos)) => (assertion.loc.key.join(&rel), Some(pos)),
                    None => (assertion.loc.key.clone(), None),
                };
                diags.push(
                    Diagnostic::error(
                        &assertion.loc.file,
                        format!(
                            "{owner} `{}` ({}): {message}",
                            assertion.name, assertion.kind
                        ),
                    )
                    .at(pos.or(assertion.loc.pos))
                    .key(key),
                );
            }
        }
    }
    diags
}

/// The config key a message is about: the first key path it names in
/// backticks (`` `value` ``, `` `fields[1].match` ``), or the path of a
/// schema error (`at `/fields/1/match``), that the assertion has.
fn blamed_key(assertion: &Assertion, message: &str) -> Option<(String, Pos)> {
    let find = |name: &str| {
        assertion
            .key_positions
            .find(&assertion.config, name)
            .map(|p| (name.to_owned(), p))
    };
    let mut rest = message;
    while let Some(start) = rest.find('`') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('`') else { break };
        let token = &after[..end];
        let candidate = match token.strip_prefix('/') {
            // A JSON pointer (schema errors): /fields/1/match → fields[1].match
            Some(pointer) => pointer_to_path(pointer),
            None => token.to_owned(),
        };
        // The key itself, else its nearest parent that was written
        // (`expected[0].tool` is missing: point at `expected[0]`).
        let mut path = candidate.as_str();
        loop {
            if let Some(found) = find(path) {
                return Some(found);
            }
            match path.rfind(['.', '[']) {
                Some(i) if i > 0 => path = &path[..i],
                _ => break,
            }
        }
        rest = &after[end + 1..];
    }
    None
}

fn pointer_to_path(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/') {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if seg.parse::<usize>().is_ok() {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    out
}

fn unknown_type(assertion: &Assertion, owner: &str, registry: &Registry) -> Diagnostic {
    let hint = if &*assertion.kind == "rubrics" {
        "string entries in an assertion list are rubric criteria for an LLM judge; no plugin in this \
         build provides `rubrics` yet — use deterministic assertions, or a `.wasm` plugin under `plugins:`"
            .to_owned()
    } else {
        match nearest(&assertion.kind, registry.type_names()) {
            Some(near) => format!("did you mean `{near}`?"),
            None => format!(
                "known types: {} (a `not-` prefix negates any of them; third-party types come from `plugins:`)",
                registry.type_names().collect::<Vec<_>>().join(", ")
            ),
        }
    };
    Diagnostic::error(
        &assertion.loc.file,
        format!(
            "{owner} `{}`: unknown assertion type `{}`",
            assertion.name, assertion.kind
        ),
    )
    .at(assertion.loc.pos)
    .key(assertion.loc.key.key("type"))
    .hint(hint)
}

/// Compiled config schemas, one per type.
/// What the type's JSON Schema says of `config`.
fn schema_verdict(
    validator: &jsonschema::Validator,
    config: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), String> {
    let config = serde_json::Value::Object(config.clone());
    let errors: Vec<String> = validator
        .iter_errors(&config)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("at `{at}`: {e}")
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "config does not match the type's schema: {}",
            errors.join("; ")
        ))
    }
}

#[derive(Default)]
struct Schemas {
    compiled: HashMap<String, Option<jsonschema::Validator>>,
}

impl Schemas {
    fn validator(
        &mut self,
        info: Option<&crate::plugin::TypeInfo>,
    ) -> Option<&jsonschema::Validator> {
        let info = info?;
        self.compiled
            .entry(format!("{:p}", info))
            // A plugin whose schema does not compile is checked by its own
            // `check-config` only.
            .or_insert_with(|| jsonschema::validator_for(&info.config_schema).ok())
            .as_ref()
    }
}
