//! Groups the host grades: `composite` (weighted average or threshold) and
//! `assert-set` (all pass, or a threshold).

use super::*;

impl Loader {
    /// The members and aggregator of a `composite` or `assert-set`.
    pub(super) fn group(
        &mut self,
        doc: &Arc<Doc>,
        entry: &Map<String, Value>,
        at: &KeyPath,
        kind_name: &str,
        from_suite: bool,
        owner: &str,
    ) -> Option<Group> {
        let composite = kind_name == "composite";
        let (own_keys, member_keys): (&[&str], &[&str]) = if composite {
            (
                &[
                    "type",
                    "name",
                    "weight",
                    "required",
                    "min_score",
                    "negate",
                    "aggregator",
                    "assertions",
                    "assert",
                    "evaluators",
                ],
                &["assertions", "assert", "evaluators"],
            )
        } else {
            (
                &[
                    "type",
                    "name",
                    "weight",
                    "required",
                    "min_score",
                    "negate",
                    "threshold",
                    "metric",
                    "config",
                    "assert",
                    "assertions",
                ],
                &["assert", "assertions"],
            )
        };
        for key in entry.keys().filter(|k| !own_keys.contains(&k.as_str())) {
            self.error(
                doc,
                &at.key(key),
                format!(
                    "`{key}` is not a key of {kind_name} (its keys: {})",
                    own_keys.join(", ")
                ),
            );
        }
        if !composite && entry.contains_key("metric") {
            self.warning(
                doc,
                &at.key("metric"),
                "`metric` (promptfoo's named metric) is ignored: evalhost reports the set's score under its `name`",
            )
            .hint = Some("give the assert-set a `name` to label its score".into());
        }
        let Some((list_key, list)) = member_keys
            .iter()
            .find_map(|k| entry.get(*k).map(|v| (*k, v)))
        else {
            self.error(
                doc,
                at,
                format!("a {kind_name} needs its members under `{}`", member_keys[0]),
            );
            return None;
        };
        let items = match list {
            Value::Array(items) if !items.is_empty() => items,
            Value::Array(_) => {
                self.error(
                    doc,
                    &at.key(list_key),
                    format!("`{list_key}` is empty: a {kind_name} needs at least one member"),
                );
                return None;
            }
            other => {
                self.error(
                    doc,
                    &at.key(list_key),
                    format!(
                        "`{list_key}` must be a non-empty list of assertions, got {}",
                        kind(other)
                    ),
                );
                return None;
            }
        };
        // assert-set `config` is passed into every member (a member's own keys win).
        let shared = match entry.get("config") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(c)) if !composite => c.clone(),
            Some(other) => {
                self.error(
                    doc,
                    &at.key("config"),
                    format!("`config` must be a mapping, got {}", kind(other)),
                );
                Map::new()
            }
        };
        let mut members = Vec::new();
        let mut names = std::collections::HashSet::new();
        let before = self.diags.error_count();
        for (i, item) in items.iter().enumerate() {
            let item_at = at.key(list_key).index(i);
            let Value::Object(member) = item else {
                self.error(
                    doc,
                    &item_at,
                    format!(
                        "a {kind_name} member must be a mapping with a `type`, got {}",
                        kind(item)
                    ),
                );
                continue;
            };
            if member.contains_key("include") {
                self.error(
                    doc,
                    &item_at.key("include"),
                    format!("`include` is not supported inside a {kind_name}; list its members"),
                );
                continue;
            }
            if composite {
                // AgentV skips these members with a warning; evalhost refuses
                // them, since the composite would grade something else.
                match member.get("name") {
                    Some(Value::String(n)) if !n.trim().is_empty() => {
                        if !names.insert(n.clone()) {
                            self.error(
                                doc,
                                &item_at.key("name"),
                                format!("two members of this composite are named `{n}`"),
                            );
                        }
                    }
                    _ => {
                        self.error(doc, &item_at, "a composite member needs a `name` (the aggregator refers to it; AgentV skips a member without one)");
                        continue;
                    }
                }
                if let Some(Value::String(t)) = member.get("type")
                    && t.contains('_')
                {
                    self.error(
                        doc,
                        &item_at.key("type"),
                        format!(
                            "write composite member types with `-` (`{}`): AgentV skips `{t}` here",
                            t.replace('_', "-")
                        ),
                    );
                }
                for key in ["weight", "required", "min_score", "negate"] {
                    if member.contains_key(key) {
                        let hint = if key == "weight" {
                            "set it in `aggregator.weights`"
                        } else {
                            "set it on the composite"
                        };
                        self.error(doc, &item_at.key(key), format!("a composite member's `{key}` has no effect (AgentV ignores it): {hint}"));
                    }
                }
            }
            let merged;
            let member = if shared.is_empty() {
                member
            } else {
                let mut m = shared.clone();
                m.extend(member.clone());
                merged = m;
                &merged
            };
            if let Some(a) = self.assertion(doc, member, &item_at, from_suite, owner) {
                members.push(a);
            }
        }
        if self.diags.error_count() > before {
            return None;
        }
        let aggregate = if composite {
            self.composite_aggregate(doc, entry, at, &members)?
        } else {
            self.assert_set_aggregate(doc, entry, at)?
        };
        Some(Group { members, aggregate })
    }

    /// A composite's `aggregator`: weighted average, threshold, a code
    /// grader or an LLM grader over the members' results.
    fn composite_aggregate(
        &mut self,
        doc: &Arc<Doc>,
        entry: &Map<String, Value>,
        at: &KeyPath,
        members: &[Assertion],
    ) -> Option<Aggregate> {
        let aggregator = match entry.get("aggregator") {
            Some(Value::Object(a)) => a,
            Some(other) => {
                self.error(
                    doc,
                    &at.key("aggregator"),
                    format!(
                        "`aggregator` must be a mapping with a `type`, got {}",
                        kind(other)
                    ),
                );
                return None;
            }
            None => {
                self.error(doc, at, "a composite needs an `aggregator`: {type: weighted_average, weights?} or {type: threshold, threshold}");
                return None;
            }
        };
        let agg_at = at.key("aggregator");
        Some(match aggregator.get("type").and_then(Value::as_str) {
            Some("weighted_average") => self.weighted_average(doc, &agg_at, aggregator, members),
            Some("threshold") => {
                for key in aggregator
                    .keys()
                    .filter(|k| !matches!(k.as_str(), "type" | "threshold"))
                {
                    self.error(doc, &agg_at.key(key), format!("`{key}` is not a key of a threshold aggregator (its keys: type, threshold)"));
                }
                match aggregator.get("threshold").and_then(Value::as_f64) {
                    Some(t) if (0.0..=1.0).contains(&t) => Aggregate::Threshold(t),
                    _ => {
                        self.error(
                            doc,
                            &agg_at.key("threshold"),
                            "a threshold aggregator needs `threshold`, a number between 0 and 1",
                        );
                        return None;
                    }
                }
            }
            Some("code-grader" | "code_grader") => {
                for key in aggregator
                    .keys()
                    .filter(|k| !matches!(k.as_str(), "type" | "path" | "cwd"))
                {
                    self.error(doc, &agg_at.key(key), format!("`{key}` is not a key of a code-grader aggregator (its keys: type, path)"));
                }
                match aggregator.get("path") {
                    Some(Value::String(command)) if !command.trim().is_empty() => {
                        if aggregator.contains_key("cwd") {
                            self.warning(doc, &agg_at.key("cwd"), "AgentV ignores `cwd` on a code-grader aggregator (it runs in the eval file's directory); so does evalhost");
                        }
                        Aggregate::Code {
                            command: command.clone(),
                            cwd: self.roots.eval_dir.clone(),
                        }
                    }
                    _ => {
                        self.error(doc, &agg_at.key("path"), "a code-grader aggregator needs `path`, the command line that reads the members' results on stdin")
                            .hint = Some("for example `path: node ../scripts/aggregate.js`".into());
                        return None;
                    }
                }
            }
            Some("llm-grader" | "llm_grader") => self.llm_aggregate(doc, &agg_at, aggregator)?,
            Some(t @ ("code-judge" | "llm-judge")) => {
                let new = t.replace("judge", "grader");
                self.error(
                    doc,
                    &agg_at.key("type"),
                    format!("aggregator type `{t}` is a removed alias; use `{new}`"),
                );
                return None;
            }
            other => {
                self.error(
                    doc,
                    &agg_at.key("type"),
                    format!(
                        "aggregator `type` must be weighted_average, threshold, code-grader or llm-grader, got {}",
                        other.map_or("nothing".to_owned(), |t| format!("`{t}`"))
                    ),
                );
                return None;
            }
        })
    }

    /// A `weighted_average` aggregator's `weights`, each naming a member.
    fn weighted_average(
        &mut self,
        doc: &Arc<Doc>,
        agg_at: &KeyPath,
        aggregator: &Map<String, Value>,
        members: &[Assertion],
    ) -> Aggregate {
        for key in aggregator
            .keys()
            .filter(|k| !matches!(k.as_str(), "type" | "weights"))
        {
            self.error(doc, &agg_at.key(key), format!("`{key}` is not a key of a weighted_average aggregator (its keys: type, weights)"));
        }
        let mut weights = Vec::new();
        match aggregator.get("weights") {
            None | Some(Value::Null) => {}
            Some(Value::Object(w)) => {
                for (name, value) in w {
                    if !members.iter().any(|m| *m.name == **name) {
                        let known: Vec<&str> = members.iter().map(|m| &*m.name).collect();
                        self.error(
                            doc,
                            &agg_at.key("weights").key(name),
                            format!(
                                "no member is named `{name}` (members: {})",
                                known.join(", ")
                            ),
                        );
                    }
                    match value.as_f64() {
                        Some(x) if x.is_finite() && x >= 0.0 => weights.push((name.clone(), x)),
                        _ => {
                            self.error(
                                doc,
                                &agg_at.key("weights").key(name),
                                format!("a weight must be a number ≥ 0, got {}", show(value)),
                            );
                        }
                    }
                }
            }
            Some(other) => {
                self.error(
                    doc,
                    &agg_at.key("weights"),
                    format!(
                        "`weights` must map member names to numbers, got {}",
                        kind(other)
                    ),
                );
            }
        }
        Aggregate::WeightedAverage { weights }
    }

    /// An `llm-grader` aggregator and its `prompt` (text or `file://`).
    fn llm_aggregate(
        &mut self,
        doc: &Arc<Doc>,
        agg_at: &KeyPath,
        aggregator: &Map<String, Value>,
    ) -> Option<Aggregate> {
        for key in aggregator
            .keys()
            .filter(|k| !matches!(k.as_str(), "type" | "prompt"))
        {
            self.error(
                doc,
                &agg_at.key(key),
                format!(
                    "`{key}` is not a key of an llm-grader aggregator (its keys: type, prompt)"
                ),
            );
        }
        let prompt = match aggregator.get("prompt") {
            None | Some(Value::Null) => None,
            Some(Value::String(p)) => match p.strip_prefix("file://") {
                Some(path) => {
                    let found = match self.roots.find(path, Some(&doc.dir.clone())) {
                        Ok(f) => f,
                        Err(err) => {
                            self.path_error(doc, &agg_at.key("prompt"), path, &err);
                            return None;
                        }
                    };
                    let display = self.display(&found);
                    let text = self.read_text(
                        &found,
                        &display,
                        Some((doc, &agg_at.key("prompt"))),
                        crate::limits::MAX_FILE_BYTES,
                    )?;
                    self.extension(doc, &agg_at.key("prompt"), format!("`prompt: file://{path}` on an llm-grader aggregator: evalhost sends the file's text; AgentV 4.42 sends the path itself as the prompt"));
                    Some(text)
                }
                None => {
                    if !p.contains(char::is_whitespace) && p.ends_with(".md") {
                        self.warning(doc, &agg_at.key("prompt"), format!("the aggregator prompt `{p}` looks like a file path, but it is sent to the judge as the prompt text itself (as AgentV does)"))
                            .hint = Some(format!("write `prompt: file://{p}` to send the file's text"));
                    }
                    Some(p.clone())
                }
            },
            Some(other) => {
                self.error(
                    doc,
                    &agg_at.key("prompt"),
                    format!(
                        "an aggregator `prompt` must be text or `file://<path>`, got {}",
                        kind(other)
                    ),
                );
                return None;
            }
        };
        if let Some(p) = &prompt
            && !p.contains("{{EVALUATOR_RESULTS_JSON}}")
        {
            self.warning(doc, &agg_at.key("prompt"), "the aggregator prompt has no {{EVALUATOR_RESULTS_JSON}}, so the judge does not see the members' results (as in AgentV)")
                .hint = Some("add {{EVALUATOR_RESULTS_JSON}} where the results belong".into());
        }
        Some(Aggregate::Llm { prompt })
    }

    /// An `assert-set`'s `threshold` (else every member must pass).
    fn assert_set_aggregate(
        &mut self,
        doc: &Arc<Doc>,
        entry: &Map<String, Value>,
        at: &KeyPath,
    ) -> Option<Aggregate> {
        let threshold = match entry.get("threshold") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_f64() {
                Some(t) if (0.0..=1.0).contains(&t) => Some(t),
                _ => {
                    self.error(
                        doc,
                        &at.key("threshold"),
                        format!(
                            "`threshold` must be a number between 0 and 1, got {}",
                            show(v)
                        ),
                    );
                    return None;
                }
            },
        };
        Some(Aggregate::AssertSet { threshold })
    }
}
