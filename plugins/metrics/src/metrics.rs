//! `latency`, `cost`, `token-usage` and `execution-metrics`: limits on what
//! the target's trace reports, with AgentV 4.42's checks and texts. Missing
//! data fails the check with the reason; it never passes.

use evalhost_plugin_sdk::{Check, Config, Grade, Request, Value, json};

use crate::js::{num, to_fixed};

/// A config number that must be finite and ≥ 0: `Ok(None)` when absent.
/// `keys` are the accepted spellings, the first preferred.
pub fn limit(config: &Config, keys: &[&str]) -> Result<Option<f64>, String> {
    let Some((key, value)) = keys
        .iter()
        .find_map(|k| config.get(k).filter(|v| !v.is_null()).map(|v| (*k, v)))
    else {
        return Ok(None);
    };
    match value.as_f64() {
        Some(n) if n.is_finite() && n >= 0.0 => Ok(Some(n)),
        _ => Err(format!(
            "`{key}` must be a non-negative number, got {}",
            crate::show(value)
        )),
    }
}

fn required_limit(config: &Config, key: &str, what: &str) -> Result<f64, String> {
    limit(config, &[key])?.ok_or_else(|| format!("missing `{key}` ({what})"))
}

pub fn check_latency(config: &Config) -> Result<(), String> {
    required_limit(
        config,
        "threshold",
        "the longest allowed duration, in milliseconds",
    )
    .map(drop)
}

pub fn latency(request: &Request) -> Result<Grade, String> {
    let threshold = required_limit(&request.config, "threshold", "milliseconds")?;
    let Some(duration) = request.trace.duration_ms else {
        return Ok(
            Grade::from_check(Check::fail("No duration data available in trace"))
                .with_details(json!({"threshold": threshold, "duration_ms": null})),
        );
    };
    let d = duration as f64;
    let passed = d <= threshold;
    let text = if passed {
        format!("Duration {duration}ms <= {}ms threshold", num(threshold))
    } else {
        format!("Duration {duration}ms > {}ms threshold", num(threshold))
    };
    Ok(Grade::from_check(Check::new(passed, text))
        .with_details(json!({"threshold": threshold, "duration_ms": duration})))
}

pub fn check_cost(config: &Config) -> Result<(), String> {
    required_limit(config, "budget", "the largest allowed cost, in US dollars").map(drop)
}

fn dollars(x: f64) -> String {
    format!("${}", to_fixed(x, 4))
}

pub fn cost(request: &Request) -> Result<Grade, String> {
    let budget = required_limit(&request.config, "budget", "US dollars")?;
    let Some(cost) = request.trace.cost_usd else {
        return Ok(
            Grade::from_check(Check::fail("No cost data available in trace"))
                .with_details(json!({"budget": budget, "cost_usd": null})),
        );
    };
    let passed = cost <= budget;
    let op = if passed { "<=" } else { ">" };
    let text = format!("Cost {} {op} {} budget", dollars(cost), dollars(budget));
    Ok(Grade::from_check(Check::new(passed, text))
        .with_details(json!({"budget": budget, "cost_usd": cost})))
}

struct TokenLimits {
    total: Option<f64>,
    input: Option<f64>,
    output: Option<f64>,
}

fn token_limits(config: &Config) -> Result<TokenLimits, String> {
    let limits = TokenLimits {
        total: limit(config, &["max_total", "maxTotal"])?,
        input: limit(config, &["max_input", "maxInput"])?,
        output: limit(config, &["max_output", "maxOutput"])?,
    };
    if limits.total.is_none() && limits.input.is_none() && limits.output.is_none() {
        return Err("set at least one of `max_total`, `max_input`, `max_output`".into());
    }
    Ok(limits)
}

pub fn check_token_usage(config: &Config) -> Result<(), String> {
    token_limits(config).map(drop)
}

pub fn token_usage(request: &Request) -> Result<Grade, String> {
    let limits = token_limits(&request.config)?;
    let configured = json!({
        "max_total": limits.total,
        "max_input": limits.input,
        "max_output": limits.output,
    });
    let Some(usage) = &request.trace.token_usage else {
        let mut details = configured;
        details["token_usage"] = Value::Null;
        return Ok(
            Grade::from_check(Check::fail("No token usage data available in trace"))
                .with_details(details),
        );
    };
    // As AgentV: total counts cached tokens too.
    let total = usage.input + usage.output + usage.cached;
    let mut checks = Vec::new();
    for (label, actual, max) in [
        ("Input", usage.input, limits.input),
        ("Output", usage.output, limits.output),
        ("Total", total, limits.total),
    ] {
        if let Some(max) = max {
            let passed = actual as f64 <= max;
            let op = if passed { "<=" } else { ">" };
            checks.push(Check::new(
                passed,
                format!("{label} tokens {actual} {op} {}", num(max)),
            ));
        }
    }
    let all = checks.iter().all(|c| c.passed);
    let mut grade = Grade::new(if all { 1.0 } else { 0.0 });
    grade.checks = checks;
    let mut details = configured;
    details["token_usage"] = json!({
        "input": usage.input, "output": usage.output, "cached": usage.cached, "total": total,
    });
    Ok(grade.with_details(details))
}

/// Tools that count as exploration (AgentV's list; names are exact).
pub const EXPLORATION_TOOLS: &[&str] = &[
    "read",
    "grep",
    "glob",
    "search",
    "list",
    "Read",
    "Grep",
    "Glob",
    "WebSearch",
    "WebFetch",
];

struct MetricLimits {
    tool_calls: Option<f64>,
    llm_calls: Option<f64>,
    tokens: Option<f64>,
    cost: Option<f64>,
    duration: Option<f64>,
    exploration: Option<f64>,
    tolerance: f64,
}

fn metric_limits(config: &Config) -> Result<MetricLimits, String> {
    let limits = MetricLimits {
        tool_calls: limit(config, &["max_tool_calls", "maxToolCalls"])?,
        llm_calls: limit(config, &["max_llm_calls", "maxLlmCalls"])?,
        tokens: limit(config, &["max_tokens", "maxTokens"])?,
        cost: limit(config, &["max_cost_usd", "maxCostUsd"])?,
        duration: limit(config, &["max_duration_ms", "maxDurationMs"])?,
        exploration: limit(
            config,
            &["target_exploration_ratio", "targetExplorationRatio"],
        )?,
        tolerance: limit(config, &["exploration_tolerance", "explorationTolerance"])?
            .unwrap_or(0.2),
    };
    if [
        limits.tool_calls,
        limits.llm_calls,
        limits.tokens,
        limits.cost,
        limits.duration,
        limits.exploration,
    ]
    .iter()
    .all(Option::is_none)
    {
        return Err(
            "set at least one threshold: `max_tool_calls`, `max_llm_calls`, `max_tokens`, \
                    `max_cost_usd`, `max_duration_ms` or `target_exploration_ratio`"
                .into(),
        );
    }
    Ok(limits)
}

pub fn check_execution_metrics(config: &Config) -> Result<(), String> {
    metric_limits(config).map(drop)
}

/// Every tool call of the output messages, in order (all roles).
pub fn tool_calls(request: &Request) -> impl Iterator<Item = &evalhost_plugin_sdk::ToolCall> {
    request.output_messages.iter().flat_map(|m| &m.tool_calls)
}

fn bound(label: &str, actual: String, max: f64, unit: &str, passed: bool) -> Check {
    let op = if passed { "<=" } else { ">" };
    Check::new(
        passed,
        format!("{label} {actual}{unit} {op} {}{unit} max", num(max)),
    )
}

pub fn execution_metrics(request: &Request) -> Result<Grade, String> {
    let l = metric_limits(&request.config)?;
    // No output messages: the target reported no trace, so tool calls are
    // unknown (not zero).
    let traced = !request.output_messages.is_empty();
    let calls: Vec<&str> = tool_calls(request).map(|c| c.tool.as_str()).collect();
    let mut checks = Vec::new();
    let mut actual = serde_json::Map::new();
    if let Some(max) = l.tool_calls {
        if traced {
            let n = calls.len();
            actual.insert("tool_calls".into(), json!(n));
            let passed = n as f64 <= max;
            let op = if passed { "<=" } else { ">" };
            checks.push(Check::new(
                passed,
                format!("Tool calls {n} {op} {} max", num(max)),
            ));
        } else {
            checks.push(Check::fail(
                "Tool call data not available (the target reported no trace)",
            ));
        }
    }
    if let Some(max) = l.llm_calls {
        match request.trace.llm_calls {
            Some(n) => {
                actual.insert("llm_calls".into(), json!(n));
                let passed = f64::from(n) <= max;
                let op = if passed { "<=" } else { ">" };
                checks.push(Check::new(
                    passed,
                    format!("LLM calls {n} {op} {} max", num(max)),
                ));
            }
            None => checks.push(Check::fail("LLM call count data not available")),
        }
    }
    if let Some(max) = l.tokens {
        match &request.trace.token_usage {
            Some(u) => {
                // As AgentV: input + output, without cached tokens.
                let t = u.input + u.output;
                actual.insert("tokens".into(), json!(t));
                let passed = t as f64 <= max;
                let op = if passed { "<=" } else { ">" };
                checks.push(Check::new(
                    passed,
                    format!("Total tokens {t} {op} {} max", num(max)),
                ));
            }
            None => checks.push(Check::fail("Token usage data not available")),
        }
    }
    if let Some(max) = l.cost {
        match request.trace.cost_usd {
            Some(c) => {
                actual.insert("cost_usd".into(), json!(c));
                let passed = c <= max;
                let op = if passed { "<=" } else { ">" };
                checks.push(Check::new(
                    passed,
                    format!("Cost ${} {op} ${} max", to_fixed(c, 4), to_fixed(max, 4)),
                ));
            }
            None => checks.push(Check::fail("Cost data not available")),
        }
    }
    if let Some(max) = l.duration {
        match request.trace.duration_ms {
            Some(d) => {
                actual.insert("duration_ms".into(), json!(d));
                checks.push(bound("Duration", d.to_string(), max, "ms", d as f64 <= max));
            }
            None => checks.push(Check::fail("Duration data not available")),
        }
    }
    if let Some(target) = l.exploration {
        if calls.is_empty() {
            checks.push(Check::fail(
                "Exploration ratio not available (no tool calls)",
            ));
        } else {
            let explored = calls
                .iter()
                .filter(|t| EXPLORATION_TOOLS.contains(t))
                .count();
            let ratio = explored as f64 / calls.len() as f64;
            actual.insert("exploration_ratio".into(), json!(ratio));
            let diff = (ratio - target).abs();
            let passed = diff <= l.tolerance;
            let text = if passed {
                format!(
                    "Exploration ratio {} within tolerance of target {}",
                    to_fixed(ratio, 2),
                    num(target)
                )
            } else {
                format!(
                    "Exploration ratio {} outside tolerance of target {} (diff: {}, tolerance: {})",
                    to_fixed(ratio, 2),
                    num(target),
                    to_fixed(diff, 2),
                    num(l.tolerance)
                )
            };
            checks.push(Check::new(passed, text));
        }
    }
    let mut config = serde_json::Map::new();
    for (key, value) in [
        ("max_tool_calls", l.tool_calls),
        ("max_llm_calls", l.llm_calls),
        ("max_tokens", l.tokens),
        ("max_cost_usd", l.cost),
        ("max_duration_ms", l.duration),
        ("target_exploration_ratio", l.exploration),
    ] {
        if let Some(v) = value {
            config.insert(key.into(), json!(v));
        }
    }
    if l.exploration.is_some() {
        config.insert("exploration_tolerance".into(), json!(l.tolerance));
    }
    Ok(Grade::from_checks(checks).with_details(json!({"config": config, "actual": actual})))
}
