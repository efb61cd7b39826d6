//! One AgentV 5 assertion rewritten into AgentV 4's shape.

use super::*;

impl Rewriter {
    /// One assertion, in AgentV 4's shape.
    pub(super) fn assertion(&mut self, value: &Value, at: &KeyPath) -> Value {
        let Value::Object(a) = value else {
            // A plain string: a rubric criterion, in both.
            return value.clone();
        };
        let mut a = a.clone();
        if let Some(m) = a.remove("metric") {
            a.insert("name".into(), m);
        }
        let Some(Value::String(t)) = a.get("type").cloned() else {
            return Value::Object(a);
        };
        let removed = match t.replace('_', "-").as_str() {
            "code-grader" | "code-judge" | "script-grader" => Some("a command grader is `type: script` in AgentV 5".to_owned()),
            "llm-grader" | "llm-judge" | "rubrics" | "rubric" => Some("an LLM grader is `type: llm-rubric` in AgentV 5 (criteria under `value`)".to_owned()),
            "composite" => Some("a group is `type: assert-set` in AgentV 5 (its `threshold` is the weighted mean score, not the share of members that pass)".to_owned()),
            "skill-trigger" => Some(match (a.get("skill").and_then(Value::as_str), a.get("should_trigger")) {
                (Some(skill), Some(Value::Bool(false))) => format!("write `type: not-skill-used` with `value: {skill}`"),
                (Some(skill), _) => format!("write `type: skill-used` with `value: {skill}`"),
                _ => "write `type: skill-used` (or `not-skill-used`) with the skill's name as `value`".to_owned(),
            }),
            "tool-trajectory" => Some("AgentV 5 checks tool use with `trajectory:tool-used`, `trajectory:tool-sequence` and `trajectory:tool-args-match`".to_owned()),
            _ => None,
        };
        if let Some(hint) = removed {
            self.error(
                &at.key("type"),
                format!("`{t}` is an AgentV 4 grader type AgentV 5 refuses"),
            )
            .hint = Some(hint);
            return Value::Null;
        }
        if a.get("required").is_some_and(Value::is_number) {
            self.error(
                &at.key("required"),
                "a numeric `required` is refused by AgentV 5",
            )
            .hint = Some("write `required: true` with `min_score`".into());
        }
        for key in ["preprocessors", "postprocess"] {
            if a.contains_key(key) {
                self.error(
                    &at.key(key),
                    format!("`{key}` has been removed from authored eval YAML in AgentV 5"),
                );
            }
        }
        if t == "script" {
            if a.contains_key("target") {
                self.error(
                    &at.key("target"),
                    "a `script` takes `provider`, not `target`, in AgentV 5",
                );
            }
            if a.contains_key("script") {
                self.error(
                    &at.key("script"),
                    "a `script` takes `command` in AgentV 5; the `script:` field is refused",
                );
            }
        }
        if t.contains('_') {
            self.error(
                &at.key("type"),
                format!(
                    "`{t}`: AgentV 5 writes types with `-`; use `{}`",
                    t.replace('_', "-")
                ),
            );
        }
        let base = t.strip_prefix("not-").unwrap_or(&t).to_owned();
        // AgentV 5 takes `not-` only on skill-used and trajectory:*; any
        // other `not-X` is an unknown grader type that fails its run.
        if t.starts_with("not-") && base != "skill-used" && !base.starts_with("trajectory:") {
            self.error(
                &at.key("type"),
                format!("`{t}`: AgentV 5 has no `not-` form of `{base}` (only skill-used and trajectory:* take one); it fails the run as an unknown grader type"),
            )
            .hint = Some(format!("write `type: {base}` with `negate: true`"));
            return Value::Null;
        }
        if base == "llm-rubric" {
            // AgentV 5 reads a promptfoo-shaped reply with its own rules,
            // and its threshold is `threshold` (kept in the grader's
            // config), else `min_score`.
            a.insert("agentv5".into(), Value::Bool(true));
            let threshold = a
                .remove("threshold")
                .and_then(|t| t.as_f64())
                .or_else(|| {
                    a.get("config")
                        .and_then(|c| c.get("threshold"))
                        .and_then(Value::as_f64)
                })
                .or_else(|| a.get("min_score").and_then(Value::as_f64));
            if let Some(t) = threshold {
                a.insert("agentv5_threshold".into(), json!(t));
            }
            if let Some(p) = a.remove("provider") {
                a.insert("target".into(), p);
            } else if let Some(g) = &self.grader {
                a.insert("target".into(), Value::String(g.clone()));
            }
            if !a.contains_key("prompt")
                && let Some(p) = &self.rubric_prompt
            {
                a.insert("prompt".into(), Value::String(p.clone()));
            }
        }
        match base.as_str() {
            "llm-rubric" => match a.remove("value") {
                Some(Value::Array(items)) => {
                    a.insert("type".into(), "rubrics".into());
                    a.insert("criteria".into(), Value::Array(items));
                }
                Some(Value::String(s)) => {
                    a.insert("type".into(), "rubrics".into());
                    a.insert("criteria".into(), json!([s]));
                }
                Some(other) => {
                    a.insert("value".into(), other);
                    a.insert("type".into(), "llm-grader".into());
                }
                None => {
                    a.insert("type".into(), "llm-grader".into());
                }
            },
            "script" => {
                a.insert("type".into(), "code-grader".into());
                a.insert("protocol".into(), "agentv5".into());
                if let Some(p) = a.remove("provider") {
                    a.insert("target".into(), p);
                }
            }
            "similar" => {
                if a.get("value")
                    .and_then(Value::as_str)
                    .is_none_or(|s| s.trim().is_empty())
                {
                    self.error(
                        &at.key("value"),
                        "AgentV 5's `similar` compares against one text: `value` must be a non-empty string (a list, as promptfoo takes, is refused by AgentV 5's schema)",
                    );
                    return Value::Null;
                }
                let Some(embedder) = self.embedder(&a, at) else {
                    return Value::Null;
                };
                a.remove("config");
                a.remove("provider");
                a.insert("type".into(), "agentv5-similar".into());
                a.insert("__embedder".into(), Value::String(embedder));
            }
            "assert-set" => {
                if let Some(Value::Array(members)) = a.remove("assert") {
                    // AgentV 5's `withAssertSetConfig`: the set's `config`
                    // under each member's own, key by key.
                    let shared = a.remove("config").and_then(|c| c.as_object().cloned());
                    let list: Vec<Value> = members
                        .iter()
                        .enumerate()
                        .map(|(i, m)| {
                            // Only the members that read a `config` get it
                            // (the others would be warned about a key they
                            // ignore).
                            let m = match (&shared, m) {
                                (Some(shared), Value::Object(child))
                                    if matches!(
                                        child.get("type").and_then(Value::as_str),
                                        Some("similar" | "script")
                                    ) =>
                                {
                                    let mut child = child.clone();
                                    let mut config = shared.clone();
                                    if let Some(Value::Object(own)) = child.get("config") {
                                        config.extend(own.clone());
                                    }
                                    child.insert("config".into(), Value::Object(config));
                                    Value::Object(child)
                                }
                                _ => m.clone(),
                            };
                            self.assertion(&m, &at.key("assert").index(i))
                        })
                        .collect();
                    a.insert("assert".into(), Value::Array(list));
                }
            }
            "skill-used"
            | "trajectory:tool-used"
            | "trajectory:tool-sequence"
            | "trajectory:tool-args-match"
            | "trajectory:step-count" => {
                // Graded by evalhost-metrics with AgentV 5's own inversion
                // (a forbidden list passes only when none of it was used).
                let kind = match base.as_str() {
                    "skill-used" => "agentv5-skill-used".to_owned(),
                    b => format!("agentv5-trajectory-{}", &b["trajectory:".len()..]),
                };
                a.insert("type".into(), kind.into());
                if t.starts_with("not-") || a.remove("negate") == Some(Value::Bool(true)) {
                    a.insert("inverse".into(), Value::Bool(true));
                }
            }
            "agent-rubric" | "javascript" | "python" | "webhook" | "trajectory:goal-success" => {
                self.error(
                    &at.key("type"),
                    format!(
                        "assertion type `{t}` (AgentV 5) is not graded by this version of evalhost"
                    ),
                );
                return Value::Null;
            }
            b if b.starts_with("trajectory:") => {
                self.error(
                    &at.key("type"),
                    format!("`{t}` is not an AgentV 5 trajectory type"),
                )
                .hint = Some(
                    "AgentV 5 has trajectory:tool-used, tool-sequence, tool-args-match, step-count and goal-success"
                        .into(),
                );
                return Value::Null;
            }
            _ => {}
        }
        Value::Object(a)
    }
}
