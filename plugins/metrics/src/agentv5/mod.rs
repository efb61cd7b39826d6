//! AgentV 5's trace graders, with its semantics and texts
//! (`packages/core/src/evaluation/graders/trajectory.ts` and
//! `skill-used.ts` at commit `58f316ca`): `trajectory:tool-used`,
//! `trajectory:tool-sequence`, `trajectory:tool-args-match`,
//! `trajectory:step-count` and `skill-used`, here named
//! `agentv5-trajectory-*` and `agentv5-skill-used`. A `not-` form is
//! `inverse: true` in the config: AgentV 5 inverts each with its own rule
//! (a forbidden list passes only when none of it was used), not by flipping
//! the score.

mod args;
mod skills;
mod steps;
mod trajectory;

use evalhost_plugin_sdk::{Check, Config, Grade, Request, Value};

use args::{args_spec, tool_args};
use skills::{skill_spec, skill_used};
use steps::{Step, steps};
use trajectory::{
    sequence_spec, step_count, step_count_spec, tool_sequence, tool_used, tool_used_spec,
};

/// The names evalhost gives them.
pub const TOOL_USED: &str = "agentv5-trajectory-tool-used";
pub const TOOL_SEQUENCE: &str = "agentv5-trajectory-tool-sequence";
pub const TOOL_ARGS_MATCH: &str = "agentv5-trajectory-tool-args-match";
pub const STEP_COUNT: &str = "agentv5-trajectory-step-count";
pub const SKILL_USED: &str = "agentv5-skill-used";

/// AgentV 5's name for the type (in messages).
fn agentv_name(kind: &str) -> String {
    match kind {
        SKILL_USED => "skill-used".into(),
        other => other
            .strip_prefix("agentv5-trajectory-")
            .map(|t| format!("trajectory:{t}"))
            .unwrap_or_else(|| other.to_owned()),
    }
}

/// `*` and `?` globs, whole string, case-insensitive (AgentV's
/// `matchesPattern`).
pub fn glob(value: &str, pattern: &str) -> bool {
    let v: Vec<char> = value.to_lowercase().chars().collect();
    let p: Vec<char> = pattern.to_lowercase().chars().collect();
    // dp[j]: pattern[..i] matches value[..j].
    let mut dp = vec![false; v.len() + 1];
    dp[0] = true;
    for &pc in &p {
        let mut next = vec![false; v.len() + 1];
        if pc == '*' {
            let mut any = false;
            for j in 0..=v.len() {
                any |= dp[j];
                next[j] = any;
            }
        } else {
            for j in 1..=v.len() {
                next[j] = dp[j - 1] && (pc == '?' || pc == v[j - 1]);
            }
        }
        dp = next;
    }
    dp[v.len()]
}

pub(super) fn inverse(config: &Config) -> Result<bool, String> {
    match config.get("inverse") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(format!(
            "`inverse` must be true or false, got {}",
            crate::show(other)
        )),
    }
}

pub(super) fn value(config: &Config) -> Result<&Value, String> {
    config
        .get("value")
        .filter(|v| !v.is_null())
        .ok_or_else(|| "missing `value`".to_owned())
}

pub(super) fn list_or(steps: &[String]) -> String {
    if steps.is_empty() {
        "(none)".into()
    } else {
        steps.join(", ")
    }
}

pub fn check(kind: &str, config: &Config) -> Result<(), String> {
    inverse(config)?;
    config.optional_bool("require_trace")?;
    match kind {
        TOOL_USED => tool_used_spec(config).map(drop),
        TOOL_SEQUENCE => sequence_spec(config).map(drop),
        TOOL_ARGS_MATCH => args_spec(config).map(drop),
        STEP_COUNT => step_count_spec(config).map(drop),
        SKILL_USED => skill_spec(config).map(drop),
        other => Err(format!("evalhost-metrics does not grade `{other}`")),
    }
}

pub(super) fn verdict(pass: bool, text: String) -> Grade {
    Grade::from_check(Check::new(pass, text))
}

pub fn grade(request: &Request) -> Result<Grade, String> {
    let kind = request.assertion_type.as_str();
    let inv = inverse(&request.config)?;
    if kind == SKILL_USED {
        return skill_used(request, inv);
    }
    let no_trace = format!(
        "No trace data available for {} assertion",
        agentv_name(kind)
    );
    // promptfoo reads trajectories from trace spans: a target that reported
    // no tool calls has none, and promptfoo makes that an error row.
    if request.config.get("require_trace") == Some(&Value::Bool(true))
        && crate::metrics::tool_calls(request).next().is_none()
    {
        return Err(no_trace);
    }
    if request.output_messages.is_empty() {
        return Ok(verdict(false, no_trace));
    }
    let all = steps(request);
    let tools: Vec<&Step> = all.iter().filter(|s| s.kind == "tool").collect();
    let actual: Vec<String> = tools.iter().map(|s| s.label()).collect();
    match kind {
        TOOL_USED => Ok(tool_used(
            &tool_used_spec(&request.config)?,
            &tools,
            &actual,
            inv,
        )),
        TOOL_SEQUENCE => Ok(tool_sequence(
            &sequence_spec(&request.config)?,
            &tools,
            &actual,
            inv,
        )),
        TOOL_ARGS_MATCH => Ok(tool_args(
            &args_spec(&request.config)?,
            &tools,
            &actual,
            inv,
        )),
        STEP_COUNT => Ok(step_count(&step_count_spec(&request.config)?, &all, inv)),
        other => Err(format!("evalhost-metrics does not grade `{other}`")),
    }
}

pub(super) fn js_num(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        f.to_string()
    }
}

#[cfg(test)]
mod tests;
