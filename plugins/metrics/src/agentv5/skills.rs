//! `skill-used`: what it expects, the skills AgentV 5 derives from tool
//! calls (the skill tool, reads of a `SKILL.md`, paths in commands and
//! outputs), and its verdict.

use evalhost_plugin_sdk::{Config, Grade, Request, Value};

use super::{glob, inverse, list_or, value, verdict};

/// What `skill-used` expects.
pub(super) enum Skills {
    List(Vec<String>),
    Count {
        name: Option<String>,
        pattern: Option<String>,
        min: Option<u64>,
        max: Option<u64>,
    },
}

pub(super) fn skill_spec(config: &Config) -> Result<Skills, String> {
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

pub(super) fn skill_used(request: &Request, inv: bool) -> Result<Grade, String> {
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
