//! Nunjucks templating as AgentV 5 renders prompts and vars (through the
//! shared minijinja engine and its limits), `{{ env.X }}`, and the
//! cartesian expansion of list vars.

use super::*;

/// `{{ env.NAME }}` references filled from `env`; everything else kept.
pub(super) fn render_env(s: &str, env: &Map<String, Value>) -> String {
    if !s.contains("{{") {
        return s.to_owned();
    }
    let mut vars = Map::new();
    vars.insert("env".into(), Value::Object(env.clone()));
    render(s, &vars, env)
}

/// The Nunjucks environment AgentV 5 renders with, and its translations.
fn engine() -> &'static (minijinja::Environment<'static>, crate::nunjucks::Cache) {
    static ENGINE: std::sync::OnceLock<(minijinja::Environment<'static>, crate::nunjucks::Cache)> =
        std::sync::OnceLock::new();
    ENGINE.get_or_init(|| {
        (
            crate::nunjucks::environment(crate::budget::TEMPLATE_FUEL),
            crate::nunjucks::Cache::default(),
        )
    })
}

/// Why `s` cannot be rendered as Nunjucks renders it, if it cannot.
pub(super) fn refused(s: &str) -> Option<String> {
    if !s.contains("{{") && !s.contains("{%") {
        return None;
    }
    match engine().1.translate(s) {
        Err(e @ crate::nunjucks::TranslateError::Refused(_)) => Some(e.to_string()),
        _ => None,
    }
}

/// A template rendered with `vars` (and `env`), as AgentV 5's Nunjucks
/// does (`crate::nunjucks`); one that does not render is kept as written.
pub(super) fn render(s: &str, vars: &Map<String, Value>, env: &Map<String, Value>) -> String {
    if !s.contains("{{") && !s.contains("{%") {
        return s.to_owned();
    }
    let (e, cache) = engine();
    let mut ctx = vars.clone();
    ctx.entry("vars")
        .or_insert_with(|| Value::Object(vars.clone()));
    ctx.entry("env")
        .or_insert_with(|| Value::Object(env.clone()));
    crate::budget::guarded(|| {
        crate::nunjucks::render(
            e,
            cache,
            s,
            minijinja::Value::from_serialize(Value::Object(ctx)),
        )
    })
    .and_then(|text| crate::budget::rendered(text.len()).map(|()| text))
    .unwrap_or_else(|_| s.to_owned())
}

/// A value's strings rendered (objects and lists recursively); a string
/// that is one whole `{{ name }}` reference takes the var's value itself,
/// keeping its type (a message list stays a list).
pub(super) fn render_value(
    v: &Value,
    vars: &Map<String, Value>,
    env: &Map<String, Value>,
) -> Value {
    match v {
        Value::String(s) => {
            let trimmed = s.trim();
            if let Some(name) = trimmed
                .strip_prefix("{{")
                .and_then(|r| r.strip_suffix("}}"))
                .map(str::trim)
                .filter(|n| {
                    n.chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
                })
            {
                let name = name.strip_prefix("vars.").unwrap_or(name);
                if let Some(value) = vars.get(name) {
                    return value.clone();
                }
            }
            Value::String(render(s, vars, env))
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| render_value(i, vars, env)).collect())
        }
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), render_value(x, vars, env)))
                .collect(),
        ),
        other => other.clone(),
    }
}

pub(super) fn render_prompt(
    template: &Value,
    vars: &Map<String, Value>,
    env: &Map<String, Value>,
) -> Value {
    render_value(template, vars, env)
}

/// `{{ env.NAME }}` filled in every string of `v`.
pub(super) fn render_env_value(v: &Value, env: &Map<String, Value>) -> Value {
    match v {
        Value::String(s) => Value::String(fill_env_refs(s, env)),
        Value::Array(a) => Value::Array(a.iter().map(|x| render_env_value(x, env)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), render_env_value(x, env)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Only the `{{ env.NAME }}` references of `s` filled; every other
/// template expression is kept for the per-test rendering.
pub(super) fn fill_env_refs(s: &str, env: &Map<String, Value>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start..].find("}}") else {
            break;
        };
        let inner = rest[start + 2..start + len].trim();
        out.push_str(&rest[..start]);
        match inner.strip_prefix("env.") {
            Some(name) if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                match env.get(name) {
                    Some(Value::String(v)) => out.push_str(v),
                    Some(other) => out.push_str(&other.to_string()),
                    None => {}
                }
            }
            _ => out.push_str(&rest[start..start + len + 2]),
        }
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    out
}

/// The variables `{{ env.NAME }}` (or `{{ env['NAME'] }}`) references in `s`
/// name, in order.
pub(super) fn env_names(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else { break };
        let inner = after[..close].trim();
        let name = inner
            .strip_prefix("env.")
            .map(|n| {
                n.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .or_else(|| {
                inner
                    .strip_prefix("env[")
                    .and_then(|n| n.strip_prefix(['\'', '"']))
                    .map(|n| {
                        n.chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect()
                    })
            });
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            out.push(name);
        }
        rest = &after[close + 2..];
    }
    out
}
