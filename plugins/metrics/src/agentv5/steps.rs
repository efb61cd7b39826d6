//! The trajectory as AgentV 5 reads it (tool calls, shell commands,
//! messages) and the step matchers its graders take.

use evalhost_plugin_sdk::{Request, Value};

use super::glob;

const COMMAND_TOOLS: &[&str] = &["exec_command", "local_shell", "shell"];
const STEP_TYPES: &[&str] = &["command", "message", "reasoning", "search", "span", "tool"];

/// One step of the trajectory.
pub(super) struct Step {
    pub(super) kind: &'static str,
    name: String,
    aliases: Vec<String>,
    pub(super) args: Option<Value>,
}

impl Step {
    pub(super) fn label(&self) -> String {
        format!("{}:{}", self.kind, self.name)
    }
}

/// A string input parsed as JSON when it is JSON (AgentV's
/// `normalizeStructuredValue`).
fn structured(v: Option<&Value>) -> Option<Value> {
    match v? {
        Value::Null => None,
        Value::String(s) => {
            let t = s.trim();
            if t.is_empty() {
                None
            } else {
                Some(serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.to_owned())))
            }
        }
        other => Some(other.clone()),
    }
}

fn command_of(args: Option<&Value>) -> Option<String> {
    let Some(Value::Object(o)) = args else {
        return None;
    };
    let (key, command) = ["cmd", "command", "commands"]
        .iter()
        .find_map(|k| o.get(*k).filter(|v| !v.is_null()).map(|v| (*k, v)))?;
    match command {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::Array(parts) => {
            let parts: Vec<String> = parts
                .iter()
                .map(|p| match p {
                    Value::String(s) => s.trim().to_owned(),
                    other => other.to_string(),
                })
                .filter(|s| !s.is_empty())
                .collect();
            let sep = if key == "commands" { "; " } else { " " };
            Some(parts.join(sep)).filter(|s| !s.is_empty())
        }
        _ => None,
    }
}

/// The trajectory: each output message's tool calls in order, and each
/// assistant message with text as a `message` step.
pub(super) fn steps(request: &Request) -> Vec<Step> {
    let mut out = Vec::new();
    for m in &request.output_messages {
        if m.role == "assistant" && !m.content.trim().is_empty() {
            out.push(Step {
                kind: "message",
                name: "message".into(),
                aliases: vec!["message".into()],
                args: None,
            });
        }
        for call in &m.tool_calls {
            let args = structured(call.input.as_ref());
            let command = COMMAND_TOOLS
                .contains(&call.tool.to_lowercase().as_str())
                .then(|| command_of(args.as_ref()))
                .flatten();
            if let Some(command) = command {
                let mut aliases = vec![command.clone(), call.tool.clone()];
                if let Some(exe) = command.split_whitespace().next()
                    && !aliases.iter().any(|a| a == exe)
                {
                    aliases.push(exe.to_owned());
                }
                out.push(Step {
                    kind: "command",
                    name: command,
                    aliases,
                    args,
                });
            } else {
                out.push(Step {
                    kind: "tool",
                    name: call.tool.clone(),
                    aliases: vec![call.tool.clone()],
                    args,
                });
            }
        }
    }
    out
}

/// A step matcher: a name or glob, and the step types it may match.
#[derive(Debug, Clone, Default)]
pub(super) struct Matcher {
    pub(super) pattern: Option<String>,
    pub(super) types: Option<Vec<String>>,
}

impl Matcher {
    pub(super) fn label(&self) -> String {
        self.pattern.clone().unwrap_or_else(|| "*".into())
    }

    pub(super) fn matches(&self, step: &Step) -> bool {
        if let Some(types) = &self.types
            && !types.iter().any(|t| t == step.kind)
        {
            return false;
        }
        match &self.pattern {
            Some(p) => step.aliases.iter().any(|a| glob(a, p)),
            None => true,
        }
    }
}

pub(super) fn matcher(
    value: &Value,
    default_type: Option<&str>,
    what: &str,
) -> Result<Matcher, String> {
    let mut m = Matcher::default();
    match value {
        Value::String(s) => m.pattern = Some(s.clone()),
        Value::Object(o) => {
            // AgentV reads `pattern ?? name`.
            for key in ["pattern", "name"] {
                match o.get(key) {
                    None | Some(Value::Null) => {}
                    Some(Value::String(s)) if !s.is_empty() => {
                        if m.pattern.is_none() {
                            m.pattern = Some(s.clone());
                        }
                    }
                    Some(other) => {
                        return Err(format!(
                            "{what}: `{key}` must be a string, got {}",
                            crate::show(other)
                        ));
                    }
                }
            }
            match o.get("type") {
                None | Some(Value::Null) => {}
                Some(Value::String(t)) => m.types = Some(vec![t.clone()]),
                Some(Value::Array(ts)) => {
                    m.types = Some(
                        ts.iter()
                            .map(|t| t.as_str().map(str::to_owned))
                            .collect::<Option<Vec<_>>>()
                            .ok_or_else(|| {
                                format!("{what}: `type` must be a string or a list of strings")
                            })?,
                    );
                }
                Some(other) => {
                    return Err(format!(
                        "{what}: `type` must be a string or a list of strings, got {}",
                        crate::show(other)
                    ));
                }
            }
            if let Some(types) = &m.types
                && let Some(bad) = types.iter().find(|t| !STEP_TYPES.contains(&t.as_str()))
            {
                return Err(format!(
                    "{what}: step type `{bad}` is not one of {}",
                    STEP_TYPES.join(", ")
                ));
            }
        }
        other => {
            return Err(format!(
                "{what} must be a string or an object, got {}",
                crate::show(other)
            ));
        }
    }
    if m.types.is_none()
        && let Some(t) = default_type
    {
        m.types = Some(vec![t.to_owned()]);
    }
    Ok(m)
}

pub(super) fn count(
    o: &serde_json::Map<String, Value>,
    key: &str,
    what: &str,
) -> Result<Option<f64>, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => Err(format!(
            "{what}: `{key}` must be a number, got {}",
            crate::show(other)
        )),
    }
}
