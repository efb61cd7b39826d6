//! Checks that need the plugins: every assertion type must be provided by a
//! plugin, and every assertion's config must pass its plugin's
//! `check-config`, so a bad regex or a missing `value` is reported when the
//! suite is loaded, with the file, the test and the assertion named.

use std::collections::HashMap;
use std::sync::Arc;

use crate::diag::{Diagnostic, Diagnostics, nearest, typo_of};
use crate::plugin::Registry;
use crate::suite::model::{Assertion, Suite};
use crate::suite::source_map::Pos;

/// Checks every assertion of `suite` against `registry`. `unloaded` holds
/// the plugins that did not load (their error is reported already): an
/// assertion pinned to one is not checked, and while a `plugins:` entry is
/// missing, a type no loaded plugin provides may be its, so those
/// assertions get one warning instead of an "unknown type" error each.
pub fn check_assertions(
    suite: &Suite,
    registry: &mut Registry,
    unloaded: &std::collections::HashSet<std::path::PathBuf>,
) -> Diagnostics {
    let mut diags = Diagnostics::default();
    let suite_plugin_missing = suite.plugins.iter().any(|p| unloaded.contains(&p.path));
    let mut unchecked: std::collections::BTreeMap<Arc<str>, (usize, &Assertion)> =
        std::collections::BTreeMap::new();
    let mut seen_suite_level = std::collections::HashSet::new();
    // By type (its place in the registry, which outlives this check) and
    // config.
    let mut verdicts: HashMap<(usize, Arc<str>), Result<(), String>> = HashMap::new();
    let mut schemas = Schemas::default();
    let promptfoo = suite.dialect == evalhost_suite::dialect::Dialect::Promptfoo;
    let mut warned_missing = std::collections::HashSet::new();
    let mut invalid = Vec::new();
    for test in &suite.tests {
        // Groups (`composite`, `assert-set`) are the host's; their members
        // are checked like any assertion.
        let leaves = test
            .every_assertion()
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
            if assertion
                .wasm
                .as_deref()
                .is_some_and(|(path, _)| unloaded.contains(path))
            {
                continue;
            }
            let Some((plugin, ty)) = registry.resolve_for(assertion) else {
                // The Python runner could not be loaded: said once, with why.
                if assertion.plugin_type.as_deref() == Some(super::python_runner::TYPE) {
                    continue;
                }
                if suite_plugin_missing && assertion.wasm.is_none() {
                    unchecked
                        .entry(assertion.kind.clone())
                        .or_insert((0, assertion))
                        .0 += 1;
                    continue;
                }
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
            let builtin = plugin.label.starts_with("builtin:");
            diags.0.extend(unknown_keys(assertion, &owner, ty, builtin));
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
                        (Ok(()), Some(validator)) => {
                            // Keys a built-in's closed schema does not
                            // declare were warned about above, and are
                            // ignored.
                            let mut config = (*assertion.config).clone();
                            if builtin && let Some(declared) = declared_keys(ty) {
                                config.retain(|k, _| declared.contains(&k.as_str()));
                            }
                            schema_verdict(validator, &config)
                        }
                        (checked, _) => checked,
                    }
                })
                .clone();
            if let Err(message) = verdict {
                // promptfoo does not check an assertion's `value` before the
                // call: one that has none throws while grading, and the
                // row is an error. So is evalhost's, said here once per
                // place.
                if promptfoo
                    && matches!(
                        assertion.config.get("value"),
                        None | Some(serde_json::Value::Null)
                    )
                {
                    // Graded as this error, without a call: what the
                    // plugin would make of a missing value is its own.
                    invalid.push((assertion.loc.clone(), message.clone()));
                    if warned_missing
                        .insert((assertion.loc.file.clone(), assertion.loc.key.clone()))
                    {
                        diags.push(
                            Diagnostic::warning(
                                &assertion.loc.file,
                                format!(
                                    "assertion `{}` ({}): {message}; the rows that use it are errors (`failure_class: plugin_error`), as promptfoo makes them",
                                    assertion.name, assertion.kind
                                ),
                            )
                            .at(assertion.loc.pos)
                            .key(assertion.loc.key.clone())
                            .hint("give it a `value:`"),
                        );
                    }
                    continue;
                }
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
    for (loc, message) in invalid {
        registry.mark_invalid(&loc, &message);
    }
    if !unchecked.is_empty() {
        let (_, first) = unchecked.values().next().expect("not empty");
        let types: Vec<String> = unchecked
            .iter()
            .map(|(kind, (n, _))| format!("`{kind}` ({n})"))
            .collect();
        diags.push(
            Diagnostic::warning(
                &first.loc.file,
                format!(
                    "assertions of type {} are not checked: no loaded plugin provides the type, and a plugin under `plugins:` did not load (see its error)",
                    types.join(", ")
                ),
            )
            .at(first.loc.pos)
            .key(first.loc.key.key("type")),
        );
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

/// The host key `key` is a typo of ([`typo_of`]), remembered per key: a
/// suite of thousands of assertions asks about the same few keys.
fn host_typo(key: &str, host: &[&'static str]) -> Option<&'static str> {
    thread_local! {
        static SEEN: std::cell::RefCell<std::collections::HashMap<String, Option<&'static str>>> =
            Default::default();
    }
    if let Some(known) = SEEN.with(|seen| seen.borrow().get(key).copied()) {
        return known;
    }
    let near = typo_of(key, host.iter().copied());
    SEEN.with(|seen| {
        let mut seen = seen.borrow_mut();
        if seen.len() < 4096 {
            seen.insert(key.to_owned(), near);
        }
    });
    near
}

/// Keys of an assertion that neither the host nor its plugin knows. A
/// misspelled host key (`requird: true` would drop the gate, `wieght: 5`
/// the weight, silently) is an error at the key, with the nearest key. A
/// key that a plugin closing its schema (`additionalProperties: false`)
/// does not declare is an error for a third-party plugin (its author closed
/// it) and a warning for a built-in type: AgentV ignores such keys (its own
/// suites put an `id` on assertions), and so does the built-in plugin.
fn unknown_keys(
    assertion: &Assertion,
    owner: &str,
    ty: &crate::plugin::TypeInfo,
    builtin: bool,
) -> Vec<Diagnostic> {
    let declared = declared_keys(ty);
    let host: Vec<&str> = crate::suite::load::host_assertion_keys().collect();
    let mut out = Vec::new();
    for key in assertion.config.keys() {
        let diagnostic = if declared.as_ref().is_some_and(|d| d.contains(&key.as_str())) {
            continue;
        } else if let Some(near) = host_typo(key, &host) {
            Diagnostic::error(
                &assertion.loc.file,
                format!(
                    "{owner} `{}` ({}): unknown key `{key}`; did you mean `{near}`?",
                    assertion.name, assertion.kind
                ),
            )
            .hint(format!(
                "as written, `{key}` goes to the plugin and `{near}` keeps its default"
            ))
        } else if let Some(declared) = &declared {
            let known: Vec<&str> = declared.iter().chain(&host).copied().collect();
            let suggestion = nearest(key, known.iter().copied())
                .map(|n| format!("; did you mean `{n}`?"))
                .unwrap_or_default();
            let message = format!(
                "{owner} `{}` ({}): `{}` has no key `{key}`{}{suggestion}",
                assertion.name,
                assertion.kind,
                ty.name,
                if builtin {
                    "; it is ignored (as AgentV ignores it)"
                } else {
                    ""
                }
            );
            if builtin {
                Diagnostic::warning(&assertion.loc.file, message)
            } else {
                Diagnostic::error(&assertion.loc.file, message)
            }
            .hint(if declared.is_empty() {
                format!("`{}` takes no keys of its own", ty.name)
            } else {
                format!("its keys: {}", declared.join(", "))
            })
        } else {
            continue;
        };
        let pos = assertion
            .key_positions
            .find(&assertion.config, key)
            .or(assertion.loc.pos);
        out.push(diagnostic.at(pos).key(assertion.loc.key.key(key)));
    }
    out
}

/// The config keys a type declares, when its schema is closed
/// (`additionalProperties: false`); `None` for an open schema.
fn declared_keys(ty: &crate::plugin::TypeInfo) -> Option<Vec<&str>> {
    let schema = &ty.config_schema;
    if schema.get("additionalProperties") != Some(&serde_json::Value::Bool(false)) {
        return None;
    }
    Some(
        schema
            .get("properties")
            .and_then(serde_json::Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default(),
    )
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_key_typos_are_near_but_plugin_keys_are_not() {
        let host: Vec<&str> = crate::suite::load::host_assertion_keys().collect();
        for (typo, key) in [
            ("requird", "required"),
            ("wieght", "weight"),
            ("min_scor", "min_score"),
            ("negte", "negate"),
            ("nmae", "name"),
            ("limts", "limits"),
        ] {
            assert_eq!(typo_of(typo, host.iter().copied()), Some(key), "{typo}");
        }
        for plugin_key in [
            "tone", "value", "flags", "rubric", "command", "prompt", "names_x",
        ] {
            assert_eq!(
                typo_of(plugin_key, host.iter().copied()),
                None,
                "{plugin_key}"
            );
        }
    }
}
