//! AgentV 5's trace graders, with its semantics and texts
//! (`packages/core/src/evaluation/graders/trajectory.ts` and
//! `skill-used.ts` at commit `58f316ca`): `trajectory:tool-used`,
//! `trajectory:tool-sequence`, `trajectory:tool-args-match`,
//! `trajectory:step-count` and `skill-used`, here named
//! `agentv5-trajectory-*` and `agentv5-skill-used`. A `not-` form is
//! `inverse: true` in the config: AgentV 5 inverts each with its own rule
//! (a forbidden list passes only when none of it was used), not by flipping
//! the score.

use evalhost_plugin_sdk::{Check, Config, Grade, Request, Value};

use crate::js::deep_equal;

/// The names evalhost gives them.
pub const TOOL_USED: &str = "agentv5-trajectory-tool-used";
pub const TOOL_SEQUENCE: &str = "agentv5-trajectory-tool-sequence";
pub const TOOL_ARGS_MATCH: &str = "agentv5-trajectory-tool-args-match";
pub const STEP_COUNT: &str = "agentv5-trajectory-step-count";
pub const SKILL_USED: &str = "agentv5-skill-used";

const COMMAND_TOOLS: &[&str] = &["exec_command", "local_shell", "shell"];
const STEP_TYPES: &[&str] = &["command", "message", "reasoning", "search", "span", "tool"];

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

/// One step of the trajectory.
struct Step {
    kind: &'static str,
    name: String,
    aliases: Vec<String>,
    args: Option<Value>,
}

impl Step {
    fn label(&self) -> String {
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
fn steps(request: &Request) -> Vec<Step> {
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
struct Matcher {
    pattern: Option<String>,
    types: Option<Vec<String>>,
}

impl Matcher {
    fn label(&self) -> String {
        self.pattern.clone().unwrap_or_else(|| "*".into())
    }

    fn matches(&self, step: &Step) -> bool {
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

fn matcher(value: &Value, default_type: Option<&str>, what: &str) -> Result<Matcher, String> {
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

fn count(o: &serde_json::Map<String, Value>, key: &str, what: &str) -> Result<Option<f64>, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => Err(format!(
            "{what}: `{key}` must be a number, got {}",
            crate::show(other)
        )),
    }
}

fn inverse(config: &Config) -> Result<bool, String> {
    match config.get("inverse") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(format!(
            "`inverse` must be true or false, got {}",
            crate::show(other)
        )),
    }
}

fn value(config: &Config) -> Result<&Value, String> {
    config
        .get("value")
        .filter(|v| !v.is_null())
        .ok_or_else(|| "missing `value`".to_owned())
}

fn list_or(steps: &[String]) -> String {
    if steps.is_empty() {
        "(none)".into()
    } else {
        steps.join(", ")
    }
}

/// What `trajectory:tool-used` expects.
enum Used {
    List(Vec<Matcher>),
    Count(Matcher, f64, Option<f64>),
}

fn tool_used_spec(config: &Config) -> Result<Used, String> {
    let what = "trajectory:tool-used";
    match value(config)? {
        Value::String(s) => Ok(Used::List(vec![matcher(
            &Value::String(s.clone()),
            Some("tool"),
            what,
        )?])),
        Value::Array(items) if items.iter().all(Value::is_string) => {
            if items.is_empty() {
                return Err(format!(
                    "{what} assertion requires at least one expected tool"
                ));
            }
            Ok(Used::List(
                items
                    .iter()
                    .map(|i| matcher(i, Some("tool"), what))
                    .collect::<Result<_, _>>()?,
            ))
        }
        v @ Value::Object(o) => {
            let m = matcher(v, Some("tool"), what)?;
            if m.pattern.is_none() {
                return Err(format!(
                    "{what} assertion object must include a name or pattern property"
                ));
            }
            let min = count(o, "min", what)?.unwrap_or(1.0);
            Ok(Used::Count(m, min, count(o, "max", what)?))
        }
        _ => Err(format!(
            "{what} assertion must have a string, string array, or object value"
        )),
    }
}

fn sequence_spec(config: &Config) -> Result<(bool, Vec<Matcher>), String> {
    let what = "trajectory:tool-sequence";
    let (exact, raw) = match value(config)? {
        Value::Array(items) => (false, items.clone()),
        Value::Object(o) => (
            o.get("mode").and_then(Value::as_str) == Some("exact"),
            match o.get("steps") {
                Some(Value::Array(s)) => s.clone(),
                _ => Vec::new(),
            },
        ),
        _ => {
            return Err(format!(
                "{what} assertion must have an array or object value"
            ));
        }
    };
    let mut steps = Vec::new();
    for (i, s) in raw.iter().enumerate() {
        let m = matcher(s, Some("tool"), what)?;
        if m.pattern.is_none() {
            return Err(format!(
                "{what} assertion step {} must include a name or pattern property",
                i + 1
            ));
        }
        steps.push(m);
    }
    if steps.is_empty() {
        return Err(format!(
            "{what} assertion requires at least one expected step"
        ));
    }
    Ok((exact, steps))
}

struct ArgsSpec {
    matcher: Matcher,
    expected: Value,
    exact: bool,
    defaults: Option<serde_json::Map<String, Value>>,
    ignore: Vec<String>,
}

fn args_spec(config: &Config) -> Result<ArgsSpec, String> {
    let what = "trajectory:tool-args-match";
    let v = value(config)?;
    let Value::Object(o) = v else {
        return Err(format!("{what} assertion must have an object value"));
    };
    let matcher = matcher(v, Some("tool"), what)?;
    if matcher.pattern.is_none() {
        return Err(format!(
            "{what} assertion object must include a name or pattern property"
        ));
    }
    let expected = o
        .get("args")
        .or_else(|| o.get("arguments"))
        .cloned()
        .ok_or_else(|| format!("{what} assertion must include an args or arguments property"))?;
    let exact = match o.get("mode") {
        None | Some(Value::Null) => false,
        Some(Value::String(m)) if m == "partial" => false,
        Some(Value::String(m)) if m == "exact" => true,
        Some(_) => {
            return Err(format!(
                "{what} assertion mode must be \"partial\" or \"exact\""
            ));
        }
    };
    let defaults = match o.get("defaults") {
        None | Some(Value::Null) => None,
        Some(Value::Object(d)) => Some(d.clone()),
        Some(_) => {
            return Err(format!(
                "{what} assertion defaults must be an object mapping argument names to default values"
            ));
        }
    };
    let ignore = match o.get("ignore") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) if !s.trim().is_empty() => vec![s.clone()],
        Some(Value::Array(items))
            if items
                .iter()
                .all(|i| i.as_str().is_some_and(|s| !s.trim().is_empty())) =>
        {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        }
        Some(_) => {
            return Err(format!(
                "{what} assertion ignore must be a non-empty string or an array of non-empty strings"
            ));
        }
    };
    Ok(ArgsSpec {
        matcher,
        expected,
        exact,
        defaults,
        ignore,
    })
}

fn step_count_spec(config: &Config) -> Result<(Matcher, Option<f64>, Option<f64>), String> {
    let what = "trajectory:step-count";
    let v = value(config)?;
    let Value::Object(o) = v else {
        return Err(format!("{what} assertion must have an object value"));
    };
    let m = matcher(v, None, what)?;
    let (min, max) = (count(o, "min", what)?, count(o, "max", what)?);
    if min.is_none() && max.is_none() {
        return Err(format!(
            "{what} assertion must include a min or max property"
        ));
    }
    Ok((m, min, max))
}

/// What `skill-used` expects.
enum Skills {
    List(Vec<String>),
    Count {
        name: Option<String>,
        pattern: Option<String>,
        min: Option<u64>,
        max: Option<u64>,
    },
}

fn skill_spec(config: &Config) -> Result<Skills, String> {
    match value(config)? {
        Value::String(s) if !s.trim().is_empty() => Ok(Skills::List(vec![s.trim().to_owned()])),
        Value::Array(items)
            if !items.is_empty()
                && items
                    .iter()
                    .all(|i| i.as_str().is_some_and(|s| !s.trim().is_empty())) =>
        {
            Ok(Skills::List(
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|s| s.trim().to_owned())
                    .collect(),
            ))
        }
        Value::Object(o) => {
            let text = |k: &str| {
                o.get(k)
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
            };
            let (name, pattern) = (text("name"), text("pattern"));
            if name.is_none() && pattern.is_none() {
                return Err(
                    "skill-used assertion object must include a name or pattern property".into(),
                );
            }
            let bound = |k: &str| -> Result<Option<u64>, String> {
                match o.get(k) {
                    None => Ok(None),
                    Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
                    Some(_) => Err(format!(
                        "skill-used assertion object {k} must be a finite non-negative integer"
                    )),
                }
            };
            let (min, max) = (bound("min")?, bound("max")?);
            if let (Some(a), Some(b)) = (min, max)
                && b < a
            {
                return Err(
                    "skill-used assertion object max must be greater than or equal to min".into(),
                );
            }
            if inverse(config)? && (min.is_some() || max.is_some_and(|m| m != 0)) {
                return Err("not-skill-used object assertions only support name/pattern with no count bounds, or max: 0".into());
            }
            Ok(Skills::Count {
                name,
                pattern,
                min,
                max,
            })
        }
        _ => Err("skill-used assertion must have a string, string array, or object value".into()),
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

fn verdict(pass: bool, text: String) -> Grade {
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

fn tool_used(spec: &Used, tools: &[&Step], actual: &[String], inv: bool) -> Grade {
    match spec {
        Used::List(matchers) => {
            let used = |m: &Matcher| tools.iter().any(|s| m.matches(s));
            let missing: Vec<String> = matchers
                .iter()
                .filter(|m| !used(m))
                .map(Matcher::label)
                .collect();
            let matched: Vec<String> = matchers
                .iter()
                .filter(|m| used(m))
                .map(Matcher::label)
                .collect();
            let expected: Vec<String> = matchers.iter().map(Matcher::label).collect();
            if inv {
                let pass = matched.is_empty();
                return verdict(
                    pass,
                    if pass {
                        format!("Forbidden tool(s) were not used: {}", expected.join(", "))
                    } else {
                        format!(
                            "Forbidden tool(s) were used: {}. Actual tools: {}",
                            matched.join(", "),
                            list_or(actual)
                        )
                    },
                );
            }
            let pass = missing.is_empty();
            verdict(
                pass,
                if pass {
                    format!(
                        "Observed required tool(s): {}. Actual tools: {}",
                        expected.join(", "),
                        list_or(actual)
                    )
                } else {
                    format!(
                        "Missing required tool(s): {}. Actual tools: {}",
                        missing.join(", "),
                        list_or(actual)
                    )
                },
            )
        }
        Used::Count(m, min, max) => {
            let matches: Vec<String> = tools
                .iter()
                .filter(|s| m.matches(s))
                .map(|s| s.label())
                .collect();
            let n = matches.len() as f64;
            let base = n >= *min && max.is_none_or(|x| n <= x);
            let label = m.label();
            if inv {
                return verdict(
                    !base,
                    if base {
                        format!(
                            "Tool \"{label}\" matched {} time(s), which violates the inverse assertion",
                            matches.len()
                        )
                    } else {
                        format!("Tool \"{label}\" did not satisfy the forbidden match condition")
                    },
                );
            }
            let mut reason = format!("Matched tool \"{label}\" {} time(s)", matches.len());
            match max {
                None => reason += &format!(" (expected at least {})", js_num(*min)),
                Some(x) => reason += &format!(" (expected {}-{})", js_num(*min), js_num(*x)),
            }
            if !matches.is_empty() {
                reason += &format!(". Matches: {}", matches.join(", "));
            }
            verdict(base, reason)
        }
    }
}

fn tool_sequence(
    spec: &(bool, Vec<Matcher>),
    tools: &[&Step],
    actual: &[String],
    inv: bool,
) -> Grade {
    let (exact, expected) = spec;
    let (base, reason) = if *exact {
        let base =
            tools.len() == expected.len() && expected.iter().zip(tools).all(|(m, s)| m.matches(s));
        let reason = if base {
            format!("Observed exact tool sequence: {}", list_or(actual))
        } else {
            format!(
                "Expected exact tool sequence of {}, but actual tools were {}",
                expected
                    .iter()
                    .map(Matcher::label)
                    .collect::<Vec<_>>()
                    .join(", "),
                list_or(actual)
            )
        };
        (base, reason)
    } else {
        let mut next = 0;
        let mut matched = Vec::new();
        for s in tools {
            if next >= expected.len() {
                break;
            }
            if expected[next].matches(s) {
                matched.push(s.label());
                next += 1;
            }
        }
        let base = next == expected.len();
        let reason = if base {
            format!(
                "Observed tool sequence in order: {}. Actual tools: {}",
                matched.join(", "),
                list_or(actual)
            )
        } else {
            format!(
                "Expected tool \"{}\" was not observed in order. Actual tools: {}",
                expected[next].label(),
                list_or(actual)
            )
        };
        (base, reason)
    };
    if inv {
        return verdict(
            !base,
            if base {
                format!(
                    "Forbidden tool sequence was observed. Actual tools: {}",
                    list_or(actual)
                )
            } else {
                "Forbidden tool sequence was not observed".into()
            },
        );
    }
    verdict(base, reason)
}

/// AgentV's partial match: every expected key present and matching;
/// arrays element by element with the same length.
fn partial(actual: &Value, expected: &Value) -> bool {
    match expected {
        Value::Array(e) => {
            matches!(actual, Value::Array(a) if a.len() == e.len() && e.iter().zip(a).all(|(x, y)| partial(y, x)))
        }
        Value::Object(e) => match actual {
            Value::Object(a) => e
                .iter()
                .all(|(k, v)| a.get(k).is_some_and(|av| partial(av, v))),
            _ => false,
        },
        other => deep_equal(actual, other),
    }
}

fn strip(value: &Value, drop: impl Fn(&str, &Value) -> bool) -> (Value, Vec<String>) {
    let Value::Object(o) = value else {
        return (value.clone(), Vec::new());
    };
    let mut kept = serde_json::Map::new();
    let mut stripped = Vec::new();
    for (k, v) in o {
        if drop(k, v) {
            stripped.push(k.clone());
        } else {
            kept.insert(k.clone(), v.clone());
        }
    }
    (Value::Object(kept), stripped)
}

fn ignored(value: &Value, ignore: &[String]) -> (Value, Vec<String>) {
    strip(value, |k, _| {
        ignore.iter().any(|e| {
            if e.contains('*') || e.contains('?') {
                glob(k, e)
            } else {
                e == k
            }
        })
    })
}

fn defaulted(
    value: &Value,
    defaults: Option<&serde_json::Map<String, Value>>,
) -> (Value, Vec<String>) {
    match defaults {
        None => (value.clone(), Vec::new()),
        Some(d) => strip(value, |k, v| d.get(k).is_some_and(|dv| deep_equal(v, dv))),
    }
}

fn args_match(spec: &ArgsSpec, actual: &Value) -> bool {
    let (a, _) = ignored(actual, &spec.ignore);
    let (a, _) = defaulted(&a, spec.defaults.as_ref());
    let (e, _) = ignored(&spec.expected, &spec.ignore);
    if spec.exact {
        deep_equal(&a, &e)
    } else {
        partial(&a, &e)
    }
}

fn json_text(v: Option<&Value>) -> String {
    v.map_or_else(|| "(none)".into(), Value::to_string)
}

fn tool_args(spec: &ArgsSpec, tools: &[&Step], actual: &[String], inv: bool) -> Grade {
    let label = spec.matcher.label();
    let mode = if spec.exact { "exact" } else { "partial" };
    let matching: Vec<&&Step> = tools.iter().filter(|s| spec.matcher.matches(s)).collect();
    let with_args: Vec<&&Step> = matching
        .iter()
        .copied()
        .filter(|s| s.args.is_some())
        .collect();
    let hit = with_args
        .iter()
        .find(|s| s.args.as_ref().is_some_and(|a| args_match(spec, a)));
    let base = hit.is_some();
    let observed = if with_args.is_empty() {
        "(none)".to_owned()
    } else {
        with_args
            .iter()
            .map(|s| json_text(s.args.as_ref()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if inv {
        return verdict(
            !base,
            match hit {
                Some(s) => format!(
                    "Forbidden argument match for tool \"{label}\" was observed on {}. Args: {}",
                    s.label(),
                    json_text(s.args.as_ref())
                ),
                None if matching.is_empty() => format!(
                    "Forbidden argument match for tool \"{label}\" was not observed because no tool call matched it"
                ),
                None => format!(
                    "Forbidden argument match for tool \"{label}\" was not observed. Observed args: {observed}"
                ),
            },
        );
    }
    if let Some(s) = hit {
        let args = s.args.clone().unwrap_or(Value::Null);
        let (after_ignore, ignored_keys) = ignored(&args, &spec.ignore);
        let (_, default_keys) = defaulted(&after_ignore, spec.defaults.as_ref());
        let mut text = format!(
            "Tool \"{label}\" matched expected arguments ({mode}) on {}. Args: {}",
            s.label(),
            args
        );
        if !ignored_keys.is_empty() {
            text += &format!(". Ignored argument(s): {}", ignored_keys.join(", "));
        }
        if !default_keys.is_empty() {
            text += &format!(". Ignored default argument(s): {}", default_keys.join(", "));
        }
        return verdict(true, text);
    }
    let text = if matching.is_empty() {
        format!(
            "No tool call matched \"{label}\". Actual tools: {}",
            list_or(actual)
        )
    } else if with_args.is_empty() {
        format!(
            "Tool \"{label}\" was observed but no arguments were captured. Actual tools: {}",
            list_or(actual)
        )
    } else {
        format!(
            "No call to tool \"{label}\" matched expected arguments ({mode}): {}. Observed args: {observed}",
            spec.expected
        )
    };
    verdict(false, text)
}

fn step_count(spec: &(Matcher, Option<f64>, Option<f64>), all: &[Step], inv: bool) -> Grade {
    let (m, min, max) = spec;
    let matches: Vec<String> = all
        .iter()
        .filter(|s| m.matches(s))
        .map(Step::label)
        .collect();
    let n = matches.len() as f64;
    let base = min.is_none_or(|x| n >= x) && max.is_none_or(|x| n <= x);
    if inv {
        return verdict(
            !base,
            if base {
                "Trajectory step count satisfied the forbidden range".into()
            } else {
                "Trajectory step count did not satisfy the forbidden range".into()
            },
        );
    }
    let mut filters = Vec::new();
    if let Some(t) = &m.types {
        filters.push(format!("type={}", t.join("|")));
    }
    if let Some(p) = &m.pattern {
        filters.push(format!("pattern={p}"));
    }
    let mut reason = format!("Matched {} trajectory step(s)", matches.len());
    if !filters.is_empty() {
        reason += &format!(" for {}", filters.join(", "));
    }
    reason += &match (min, max) {
        (Some(a), Some(b)) => format!(" (expected {}-{})", js_num(*a), js_num(*b)),
        (Some(a), None) => format!(" (expected at least {})", js_num(*a)),
        (None, Some(b)) => format!(" (expected at most {})", js_num(*b)),
        (None, None) => String::new(),
    };
    if !matches.is_empty() {
        reason += &format!(". Matches: {}", matches.join(", "));
    }
    verdict(base, reason)
}

fn js_num(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        f.to_string()
    }
}

/// A skill the agent loaded, as AgentV 5 derives it from tool calls
/// (`providers/skill-calls.ts`).
struct SkillCall {
    name: String,
    path: Option<String>,
    source: &'static str,
}

impl SkillCall {
    fn label(&self) -> String {
        match &self.path {
            Some(p) => format!("{} ({}, {p})", self.name, self.source),
            None => format!("{} ({})", self.name, self.source),
        }
    }
}

fn valid_skill_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
}

/// `…skills/<name>/SKILL.md` at the end of `path` (optionally under
/// `.agents/`).
fn skill_from_path(path: &str) -> Option<String> {
    let p = path.replace('\\', "/");
    let rest = p.strip_suffix("/SKILL.md")?;
    let (before, name) = rest.rsplit_once('/')?;
    let ok_dir = before == "skills" || before.ends_with("/skills");
    (ok_dir && valid_skill_name(name)).then(|| name.to_owned())
}

/// The skill paths a text mentions, token by token.
fn skill_paths_in(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let trim_start: &[char] = &['`', '"', '\'', '(', '[', '{', '<'];
    let trim_end: &[char] = &['`', '"', '\'', ',', ';', ':', ')', ']', '}', '>'];
    for raw in text.split_whitespace() {
        let token = raw
            .trim_start_matches(trim_start)
            .trim_end_matches(trim_end)
            .replace('\\', "/");
        // The part from `skills/` or `.agents/skills/` on.
        if let Some(name) = skill_from_path(&token) {
            let start = token
                .rfind(".agents/skills/")
                .filter(|i| token[*i..].matches('/').count() == 3)
                .or_else(|| token.rfind("skills/"))
                .unwrap_or(0);
            let path = token[start..].to_owned();
            if !out.iter().any(|(_, p)| *p == path) {
                out.push((name, path));
            }
        }
    }
    out
}

fn skill_calls(request: &Request) -> Vec<SkillCall> {
    let mut out: Vec<SkillCall> = Vec::new();
    let push = |out: &mut Vec<SkillCall>, call: SkillCall| {
        if !out
            .iter()
            .any(|c| c.source == "heuristic" && c.name == call.name && c.path == call.path)
        {
            out.push(call);
        }
    };
    for call in crate::metrics::tool_calls(request) {
        // AgentV drops calls whose status is an error.
        if call
            .status
            .as_deref()
            .is_some_and(|s| s != "ok" && s != "unknown")
        {
            continue;
        }
        let tool = call.tool.to_lowercase();
        let input = call.input.as_ref().and_then(Value::as_object);
        let text = |k: &str| {
            input
                .and_then(|i| i.get(k))
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
        };
        if tool == "skill" {
            if let Some(name) = text("skill").or_else(|| text("name")) {
                out.push(SkillCall {
                    name: name.to_owned(),
                    path: None,
                    source: "tool",
                });
            }
            continue;
        }
        if tool == "read" {
            if let Some(path) = text("file_path")
                .or_else(|| text("path"))
                .or_else(|| text("filePath"))
                && let Some(name) = skill_from_path(path)
            {
                push(
                    &mut out,
                    SkillCall {
                        name,
                        path: Some(path.to_owned()),
                        source: "heuristic",
                    },
                );
            }
            continue;
        }
        if tool == "bash"
            && let Some(command) = text("command")
        {
            for (name, path) in skill_paths_in(command) {
                push(
                    &mut out,
                    SkillCall {
                        name,
                        path: Some(path),
                        source: "heuristic",
                    },
                );
            }
        }
        if let Some(output) = call.output.as_ref().filter(|o| !o.is_null()) {
            let text = match output {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            for (name, path) in skill_paths_in(&text) {
                push(
                    &mut out,
                    SkillCall {
                        name,
                        path: Some(path),
                        source: "heuristic",
                    },
                );
            }
        }
    }
    out
}

fn skill_used(request: &Request, inv: bool) -> Result<Grade, String> {
    let spec = skill_spec(&request.config)?;
    let calls = skill_calls(request);
    let actual = list_or(&calls.iter().map(SkillCall::label).collect::<Vec<_>>());
    Ok(match spec {
        Skills::List(names) => {
            let used = |n: &String| calls.iter().any(|c| c.name == *n);
            let missing: Vec<&String> = names.iter().filter(|n| !used(n)).collect();
            let matched: Vec<&String> = names.iter().filter(|n| used(n)).collect();
            let join = |v: &[&String]| v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ");
            if inv {
                let pass = matched.is_empty();
                verdict(
                    pass,
                    if pass {
                        format!("Forbidden skill(s) were not used: {}", names.join(", "))
                    } else {
                        format!(
                            "Forbidden skill(s) were used: {}. Actual skills: {actual}",
                            join(&matched)
                        )
                    },
                )
            } else {
                let pass = missing.is_empty();
                verdict(
                    pass,
                    if pass {
                        format!(
                            "Observed required skill(s): {}. Actual skills: {actual}",
                            names.join(", ")
                        )
                    } else {
                        format!(
                            "Missing required skill(s): {}. Actual skills: {actual}",
                            join(&missing)
                        )
                    },
                )
            }
        }
        Skills::Count {
            name,
            pattern,
            min,
            max,
        } => {
            let hit = |c: &SkillCall| {
                name.as_ref().is_none_or(|n| c.name == *n)
                    && pattern.as_ref().is_none_or(|p| glob(&c.name, p))
            };
            let matches: Vec<String> = calls
                .iter()
                .filter(|c| hit(c))
                .map(SkillCall::label)
                .collect();
            let n = matches.len() as u64;
            let label = pattern
                .clone()
                .or(name.clone())
                .unwrap_or_else(|| "*".into());
            if inv {
                let pass = n == 0;
                verdict(
                    pass,
                    if pass {
                        format!("Forbidden skill \"{label}\" was not used. Actual skills: {actual}")
                    } else {
                        format!(
                            "Forbidden skill \"{label}\" was used {n} time(s). Matches: {}",
                            matches.join(", ")
                        )
                    },
                )
            } else {
                let lo = min.unwrap_or(if max.is_some() { 0 } else { 1 });
                let pass = n >= lo && max.is_none_or(|m| n <= m);
                let mut reason = format!("Matched skill \"{label}\" {n} time(s)");
                reason += &match max {
                    None => format!(" (expected at least {lo})"),
                    Some(m) => format!(" (expected {lo}-{m})"),
                };
                if !matches.is_empty() {
                    reason += &format!(". Matches: {}", matches.join(", "));
                }
                verdict(pass, reason)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalhost_plugin_sdk::{Message, ToolCall, json};

    fn call(tool: &str, input: Value) -> ToolCall {
        let mut c = ToolCall::new(tool);
        c.input = Some(input);
        c
    }

    fn request(kind: &str, config: Value, calls: Vec<ToolCall>) -> Request {
        let mut r = Request::new(kind, "done");
        r.config = Config::from_value(config).unwrap();
        r.output_messages = vec![Message::new("assistant", "done").with_tool_calls(calls)];
        r
    }

    fn graded(kind: &str, config: Value, calls: Vec<ToolCall>) -> (bool, String) {
        let g = grade(&request(kind, config, calls)).unwrap();
        (g.checks[0].passed, g.checks[0].text.clone())
    }

    #[test]
    fn globs_match_whole_names_case_insensitively() {
        assert!(glob("knowledgeSearch", "knowledge*"));
        assert!(glob("READ", "re?d"));
        assert!(!glob("xread", "read"));
        assert!(glob("", "*"));
    }

    #[test]
    fn tool_used_lists_counts_and_inverse() {
        let calls = || {
            vec![
                call("search", json!({"q": "a"})),
                call("search", json!({})),
                call("read", json!({})),
            ]
        };
        let (ok, text) = graded(TOOL_USED, json!({"value": ["search", "read"]}), calls());
        assert!(ok, "{text}");
        assert_eq!(
            text,
            "Observed required tool(s): search, read. Actual tools: tool:search, tool:search, tool:read"
        );
        let (ok, text) = graded(
            TOOL_USED,
            json!({"value": {"name": "search", "min": 3}}),
            calls(),
        );
        assert!(!ok);
        assert_eq!(
            text,
            "Matched tool \"search\" 2 time(s) (expected at least 3). Matches: tool:search, tool:search"
        );
        // A forbidden list passes only when none of it was used.
        let (ok, text) = graded(
            TOOL_USED,
            json!({"value": ["delete", "read"], "inverse": true}),
            calls(),
        );
        assert!(!ok);
        assert!(
            text.starts_with("Forbidden tool(s) were used: read."),
            "{text}"
        );
        // A shell call is a command step, not a tool.
        let (ok, _) = graded(
            TOOL_USED,
            json!({"value": "shell"}),
            vec![call("shell", json!({"command": ["ls", "-la"]}))],
        );
        assert!(!ok);
    }

    #[test]
    fn sequences_in_order_and_exact() {
        let calls = || {
            vec![
                call("a", json!({})),
                call("x", json!({})),
                call("b", json!({})),
            ]
        };
        assert!(graded(TOOL_SEQUENCE, json!({"value": ["a", "b"]}), calls()).0);
        let (ok, text) = graded(
            TOOL_SEQUENCE,
            json!({"value": {"mode": "exact", "steps": ["a", "b"]}}),
            calls(),
        );
        assert!(!ok);
        assert_eq!(
            text,
            "Expected exact tool sequence of a, b, but actual tools were tool:a, tool:x, tool:b"
        );
        let (ok, text) = graded(TOOL_SEQUENCE, json!({"value": ["b", "a"]}), calls());
        assert!(!ok);
        assert_eq!(
            text,
            "Expected tool \"a\" was not observed in order. Actual tools: tool:a, tool:x, tool:b"
        );
    }

    #[test]
    fn args_match_partial_exact_ignore_and_defaults() {
        let calls = || {
            vec![call(
                "search",
                json!({"query": "ml", "limit": 10, "trace_id": "z"}),
            )]
        };
        assert!(
            graded(
                TOOL_ARGS_MATCH,
                json!({"value": {"name": "search", "args": {"query": "ml"}}}),
                calls()
            )
            .0
        );
        assert!(
            !graded(
                TOOL_ARGS_MATCH,
                json!({"value": {"name": "search", "args": {"query": "ml"}, "mode": "exact"}}),
                calls()
            )
            .0
        );
        let (ok, text) = graded(
            TOOL_ARGS_MATCH,
            json!({"value": {"name": "search", "args": {"query": "ml"}, "mode": "exact", "ignore": "trace_*", "defaults": {"limit": 10}}}),
            calls(),
        );
        assert!(ok, "{text}");
        assert!(
            text.ends_with(". Ignored argument(s): trace_id. Ignored default argument(s): limit"),
            "{text}"
        );
        // String inputs are parsed as JSON, as AgentV does.
        assert!(
            graded(
                TOOL_ARGS_MATCH,
                json!({"value": {"name": "search", "args": {"query": "ml"}}}),
                vec![call("search", json!("{\"query\":\"ml\"}"))]
            )
            .0
        );
    }

    #[test]
    fn no_trace_fails_with_the_reason() {
        let mut r = request(TOOL_USED, json!({"value": "a"}), vec![]);
        r.output_messages.clear();
        let g = grade(&r).unwrap();
        assert!(!g.checks[0].passed);
        assert_eq!(
            g.checks[0].text,
            "No trace data available for trajectory:tool-used assertion"
        );
    }

    #[test]
    fn skills_from_the_skill_tool_reads_and_commands() {
        let calls = || {
            vec![
                call("Skill", json!({"skill": "acme-deploy"})),
                call(
                    "Read",
                    json!({"file_path": "/w/.agents/skills/csv-analyzer/SKILL.md"}),
                ),
                call("Bash", json!({"command": "cat skills/notes/SKILL.md"})),
            ]
        };
        let (ok, text) = graded(
            SKILL_USED,
            json!({"value": ["acme-deploy", "csv-analyzer", "notes"]}),
            calls(),
        );
        assert!(ok, "{text}");
        let (ok, text) = graded(
            SKILL_USED,
            json!({"value": "csv-analyzer", "inverse": true}),
            calls(),
        );
        assert!(!ok);
        assert!(
            text.starts_with("Forbidden skill(s) were used: csv-analyzer."),
            "{text}"
        );
        assert!(
            graded(
                SKILL_USED,
                json!({"value": "other", "inverse": true}),
                calls()
            )
            .0
        );
        let (ok, text) = graded(
            SKILL_USED,
            json!({"value": {"pattern": "acme-*", "min": 2}}),
            calls(),
        );
        assert!(!ok);
        assert_eq!(
            text,
            "Matched skill \"acme-*\" 1 time(s) (expected at least 2). Matches: acme-deploy (tool)"
        );
        assert!(
            check(
                SKILL_USED,
                &Config::from_value(json!({"value": {"name": "a", "min": 1}, "inverse": true}))
                    .unwrap()
            )
            .is_err()
        );
    }
}
