//! `skill-trigger`: whether the agent loaded a skill (Claude Code's `Skill`
//! tool, or reading a file under `skills/<name>/`), as AgentV 4.42 decides.

use evalhost_plugin_sdk::{Check, Config, Grade, Request, Value};

fn skill(config: &Config) -> Result<String, String> {
    match config.get("skill") {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(other) => Err(format!(
            "`skill` must be the skill's name, got {}",
            crate::show(other)
        )),
        None => Err("missing `skill` (the skill's name)".into()),
    }
}

fn should_trigger(config: &Config) -> Result<bool, String> {
    match config.get("should_trigger") {
        None | Some(Value::Null) => Ok(true),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(format!(
            "`should_trigger` must be true or false, got {}",
            crate::show(other)
        )),
    }
}

pub fn check(config: &Config) -> Result<(), String> {
    skill(config)?;
    should_trigger(config).map(drop)
}

/// JavaScript's `String(v)` of a JSON value (absent or null → "").
fn js_string(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(_)) => "[object Object]".into(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| match x {
                Value::Null => String::new(),
                other => js_string(Some(other)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(other) => other.to_string(),
    }
}

pub fn grade(request: &Request) -> Result<Grade, String> {
    let name = skill(&request.config)?;
    let should = should_trigger(&request.config)?;
    if request.output_messages.is_empty() {
        return Ok(Grade::from_check(Check::fail(
            "No trace available for evaluation",
        )));
    }
    let calls: Vec<_> = crate::metrics::tool_calls(request).collect();
    let marker = format!("skills/{name}/");
    let mut evidence = None;
    for call in &calls {
        let input = call.input.as_ref();
        let field = |k: &str| input.and_then(|i| i.get(k)).filter(|v| !v.is_null());
        if call.tool.eq_ignore_ascii_case("skill") {
            let arg = js_string(field("skill"));
            if arg.contains(&name) {
                evidence = Some(format!("Skill tool invoked with skill=\"{arg}\""));
                break;
            }
        } else if call.tool.eq_ignore_ascii_case("read") {
            let path = js_string(field("file_path").or_else(|| field("path")));
            if path.contains(&marker) {
                evidence = Some(format!("Read tool loaded skill file: {path}"));
                break;
            }
        }
        if let Some(output) = call.output.as_ref().filter(|o| !o.is_null()) {
            let text = match output {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if text.contains(&marker) {
                evidence = Some(format!(
                    "Tool \"{}\" output referenced skill file for \"{name}\"",
                    call.tool
                ));
                break;
            }
        }
    }
    let triggered = evidence.is_some();
    let passed = triggered == should;
    let text = match (passed, should) {
        (true, true) => {
            evidence.unwrap_or_else(|| format!("Skill \"{name}\" triggered as expected"))
        }
        (true, false) => format!("Skill \"{name}\" correctly did not trigger"),
        (false, true) if calls.is_empty() => "No tool calls recorded".to_owned(),
        (false, true) => format!("Skill \"{name}\" not found in {} tool call(s)", calls.len()),
        (false, false) => {
            evidence.unwrap_or_else(|| format!("Skill \"{name}\" triggered unexpectedly"))
        }
    };
    Ok(Grade::from_check(Check::new(passed, text)))
}
