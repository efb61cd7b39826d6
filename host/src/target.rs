//! Targets: what produces the output under test. Read from
//! `.evalhost/targets.yaml` (falling back to `.agentv/targets.yaml`), found
//! by walking up from the eval file's directory, or from `--targets`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::diag::{Diagnostic, Diagnostics};
use crate::suite::TestCase;
use crate::suite::load::{kind, parse_yaml};
use crate::suite::source_map::{KeyPath, SourceMap};

/// AgentV's mock response when none is configured.
pub const MOCK_DEFAULT_RESPONSE: &str =
    "{\"answer\":\"Mock provider response. Configure targets.yaml to supply a custom value.\"}";

/// The file names searched in each directory, in order.
pub const CANDIDATES: &[&str] = &[
    ".evalhost/targets.yaml",
    ".evalhost/targets.yml",
    ".agentv/targets.yaml",
    ".agentv/targets.yml",
];

/// What a target is.
#[derive(Debug, Clone, PartialEq)]
pub enum Provider {
    /// AgentV's `mock`: the same response for every test.
    Mock {
        /// The response text.
        response: String,
        /// How long to take, in milliseconds (an evalhost extension, for
        /// exercising timeouts and interruption).
        delay_ms: u64,
    },
    /// A provider this version of evalhost does not run yet.
    Unsupported(String),
}

/// One entry of a targets file.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Its name.
    pub name: String,
    /// Its provider.
    pub provider: Provider,
}

/// A target's output for one test.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TargetOutput {
    /// The candidate: text of the last assistant message.
    pub text: String,
    /// Every message produced, as `(role, text)`.
    pub messages: Vec<(String, String)>,
    /// Time the target took, in milliseconds, when it reports one.
    pub duration_ms: Option<u64>,
}

/// The targets of a run and the file they came from.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    /// The file, when one was found.
    pub file: Option<PathBuf>,
    /// Its entries.
    pub targets: Vec<Target>,
}

/// The first targets file found walking up from `start`.
pub fn find_targets_file(start: &Path) -> Option<PathBuf> {
    let start = std::path::absolute(start).unwrap_or_else(|_| start.to_path_buf());
    for dir in start.ancestors() {
        for candidate in CANDIDATES {
            let path = dir.join(candidate);
            if path.is_file() {
                return Some(path);
            }
        }
    }
    None
}

/// Reads a targets file.
pub fn load_targets(path: &Path) -> Result<Targets, Diagnostics> {
    let mut diags = Diagnostics::default();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(err) => {
            diags.push(Diagnostic::error(
                path,
                format!("cannot read the targets file: {err}"),
            ));
            return Err(diags);
        }
    };
    let root = match parse_yaml(&text) {
        Ok(v) => v,
        Err(err) => {
            let pos = err.location().map(|l| crate::suite::source_map::Pos {
                line: l.line(),
                col: l.column(),
            });
            diags.push(Diagnostic::error(path, format!("invalid YAML: {err}")).at(pos));
            return Err(diags);
        }
    };
    let map = SourceMap::build(&text);
    let top = KeyPath::default();
    let Some(Value::Array(items)) = root.get("targets") else {
        diags.push(
            Diagnostic::error(path, "the targets file must have a `targets` list")
                .at(map.locate(&top))
                .hint(
                    "targets:\n    - name: default\n      provider: mock\n      response: \"...\"",
                ),
        );
        return Err(diags);
    };
    let mut targets = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = top.key("targets").index(i);
        let error = |message: String, key: KeyPath| {
            Diagnostic::error(path, message)
                .at(map.locate(&key))
                .key(key)
        };
        let Value::Object(entry) = item else {
            diags.push(error(
                format!("a target must be a mapping, got {}", kind(item)),
                at,
            ));
            continue;
        };
        let Some(Value::String(name)) = entry.get("name") else {
            diags.push(error("the target has no `name`".into(), at));
            continue;
        };
        let provider = match entry.get("provider") {
            Some(Value::String(p)) if p == "mock" => {
                let response = match entry.get("response") {
                    None | Some(Value::Null) => MOCK_DEFAULT_RESPONSE.to_owned(),
                    Some(Value::String(r)) => r.clone(),
                    Some(other) => {
                        diags.push(error(
                            format!("`response` must be a string, got {}", kind(other)),
                            at.key("response"),
                        ));
                        continue;
                    }
                };
                let delay_ms = match entry.get("delay_ms") {
                    None | Some(Value::Null) => 0,
                    Some(Value::Number(n)) if n.as_u64().is_some() => {
                        n.as_u64().unwrap_or_default()
                    }
                    Some(other) => {
                        diags.push(error(
                            format!(
                                "`delay_ms` must be a non-negative integer, got {}",
                                kind(other)
                            ),
                            at.key("delay_ms"),
                        ));
                        continue;
                    }
                };
                Provider::Mock { response, delay_ms }
            }
            Some(Value::String(p)) => Provider::Unsupported(p.clone()),
            _ => {
                diags.push(error(format!("target `{name}` has no `provider`"), at));
                continue;
            }
        };
        targets.push(Target {
            name: name.clone(),
            provider,
        });
    }
    if diags.has_errors() {
        return Err(diags);
    }
    Ok(Targets {
        file: Some(path.to_path_buf()),
        targets,
    })
}

impl Targets {
    /// The target named `name`, checked to be runnable.
    pub fn select(&self, name: &str) -> Result<&Target, String> {
        let Some(target) = self.targets.iter().find(|t| t.name == name) else {
            let available: Vec<&str> = self.targets.iter().map(|t| t.name.as_str()).collect();
            return Err(match &self.file {
                Some(file) => format!(
                    "target `{name}` is not in {} (available: {})",
                    file.display(),
                    if available.is_empty() {
                        "none".into()
                    } else {
                        available.join(", ")
                    }
                ),
                None => format!(
                    "no targets file found for target `{name}`; create `.evalhost/targets.yaml` next to the \
                     eval file (or in a parent directory), e.g.\n\n  targets:\n    - name: {name}\n      \
                     provider: mock\n      response: \"Paris\"\n\nor pass one with --targets FILE"
                ),
            });
        };
        if let Provider::Unsupported(p) = &target.provider {
            return Err(format!(
                "target `{name}` uses provider `{p}`, which this version of evalhost does not run yet \
                 (supported: mock)"
            ));
        }
        Ok(target)
    }
}

/// Why a target produced no output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetFailure {
    /// `target`, or `case_timeout` when the case's deadline passed.
    pub class: crate::failure::FailureClass,
    /// What happened.
    pub message: String,
}

impl Target {
    /// Produces the output for one test, before `deadline` when there is one.
    pub fn invoke(
        &self,
        _test: &TestCase,
        deadline: Option<std::time::Instant>,
    ) -> Result<TargetOutput, TargetFailure> {
        match &self.provider {
            Provider::Mock { response, delay_ms } => {
                if *delay_ms > 0 {
                    let wanted = std::time::Duration::from_millis(*delay_ms);
                    let allowed = deadline.map_or(wanted, |d| {
                        d.saturating_duration_since(std::time::Instant::now())
                    });
                    std::thread::sleep(wanted.min(allowed));
                    if allowed < wanted {
                        return Err(TargetFailure {
                            class: crate::failure::FailureClass::CaseTimeout,
                            message:
                                "the case ran past its timeout_ms while the target was running"
                                    .into(),
                        });
                    }
                }
                Ok(TargetOutput {
                    text: response.clone(),
                    messages: vec![("assistant".into(), response.clone())],
                    // AgentV's mock reports no duration.
                    duration_ms: None,
                })
            }
            Provider::Unsupported(p) => Err(TargetFailure {
                class: crate::failure::FailureClass::Target,
                message: format!("provider `{p}` is not supported"),
            }),
        }
    }
}
