//! `prompts` × `tests[].vars` expanded into AgentV 4 cases, as
//! `expandPromptMatrix` does; test files, conversation turns, prompt files.

use super::*;

impl Rewriter {
    /// A prompt file's text (CRLF → LF), inside the project root.
    pub(super) fn prompt_file(&mut self, rel: &str, at: &KeyPath) -> Option<String> {
        let path = match self.roots.relative(rel, &self.dir.clone()) {
            Ok(p) => p,
            Err(e) => {
                self.error(at, format!("Prompt file `{rel}`: {e}"));
                return None;
            }
        };
        match crate::roots::read_regular_text(&path, crate::limits::MAX_FILE_BYTES) {
            Ok(t) => Some(t.replace("\r\n", "\n")),
            Err(e) => {
                self.error(
                    at,
                    format!("Prompt file `{rel}`: cannot read {}: {e}", path.display()),
                );
                None
            }
        }
    }

    pub(super) fn prompts(&mut self, value: Option<&Value>, at: &KeyPath) -> Vec<(String, Value)> {
        let items: Vec<Value> = match value {
            None | Some(Value::Null) => {
                return vec![("default".into(), Value::String("{{ input }}".into()))];
            }
            Some(Value::Array(items)) if items.iter().all(|i| i.get("role").is_some()) => {
                vec![Value::Array(items.clone())]
            }
            Some(Value::Array(items)) => items.clone(),
            Some(v) => vec![v.clone()],
        };
        let mut out = Vec::new();
        for (i, item) in items.into_iter().enumerate() {
            let iat = at.index(i);
            let (id, template) = match item {
                Value::String(s) if s.starts_with("file://") => {
                    // AgentV 5's `readPromptFile`: the file's text is the
                    // template, its path the id.
                    let shown = s["file://".len()..].to_owned();
                    let Some(text) = self.prompt_file(&shown, &iat) else {
                        continue;
                    };
                    (shown, Value::String(text))
                }
                Value::String(s) => (format!("prompt-{}", i + 1), Value::String(s)),
                Value::Array(messages) => (format!("chat-{}", i + 1), Value::Array(messages)),
                Value::Object(o) => {
                    let id = o
                        .get("id")
                        .and_then(Value::as_str)
                        .map_or_else(|| format!("prompt-{}", i + 1), str::to_owned);
                    if let Some(Value::String(file)) = o.get("file") {
                        let shown = file.strip_prefix("file://").unwrap_or(file).to_owned();
                        let Some(text) = self.prompt_file(&shown, &iat) else {
                            continue;
                        };
                        let id = o
                            .get("id")
                            .and_then(Value::as_str)
                            .map_or_else(|| shown.clone(), str::to_owned);
                        out.push((id, Value::String(text)));
                        continue;
                    }
                    if o.contains_key("function")
                        || o.contains_key("function_file")
                        || o.contains_key("command")
                    {
                        self.error(&iat, "a prompt computed by a function or command is not run by this version of evalhost; write the prompt, or point `file:` at its text");
                        continue;
                    }
                    match o.get("prompt").or(o.get("raw")).or(o.get("messages")) {
                        Some(p) => (id, p.clone()),
                        None => {
                            self.error(&iat, "a prompt object needs `prompt`, `raw` or `messages`");
                            continue;
                        }
                    }
                }
                other => {
                    self.error(
                        &iat,
                        format!(
                            "a prompt must be text, a chat message list or an object, got {}",
                            crate::agentv4::kind(&other)
                        ),
                    );
                    continue;
                }
            };
            out.push((id, template));
        }
        out
    }

    pub(super) fn tests(
        &mut self,
        value: Option<&Value>,
        at: &KeyPath,
        prompts: &[(String, Value)],
        default_vars: &Map<String, Value>,
        scenario_rows: Vec<Value>,
    ) -> Value {
        // Tests from files are expanded like inline ones.
        let mut inlined;
        let tests = match value {
            Some(Value::Array(items)) => {
                let mut all = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(spec) => all.extend(
                            self.test_file(spec, &at.index(i))
                                .into_iter()
                                .map(from_file),
                        ),
                        other => all.push(other.clone()),
                    }
                }
                inlined = all;
                &inlined
            }
            Some(Value::String(spec)) => {
                inlined = self
                    .test_file(spec, at)
                    .into_iter()
                    .map(from_file)
                    .collect();
                &inlined
            }
            None | Some(Value::Null) if !scenario_rows.is_empty() => {
                inlined = Vec::new();
                &inlined
            }
            // Nothing: the AgentV 4 reader reports it.
            _ => return value.cloned().unwrap_or(Value::Null),
        };
        let tests: &Vec<Value> = if scenario_rows.is_empty() {
            tests
        } else {
            inlined = tests.iter().cloned().chain(scenario_rows).collect();
            &inlined
        };
        let mut out = Vec::new();
        for (i, test) in tests.iter().enumerate() {
            let tat = at.index(i);
            let Value::Object(t) = test else {
                out.push(test.clone());
                continue;
            };
            // A template evalhost cannot render as Nunjucks does: refused
            // at its key, never rendered differently.
            if let Some((key, why)) = t.iter().find_map(|(k, v)| refused_leaf(v).map(|w| (k, w))) {
                self.error(
                    &tat.key(key),
                    format!("this template cannot be rendered as Nunjucks renders it: {why}"),
                )
                .hint = Some("rewrite it without that construct; every other Nunjucks construct renders as in AgentV".into());
                continue;
            }
            let mut vars = default_vars.clone();
            if let Some(Value::Object(v)) = t.get("vars") {
                vars.extend(v.clone());
            }
            let Some(combos) =
                crate::vars::cartesian(&vars, crate::vars::EmptyList::NoRows, MAX_CASES)
                    .filter(|c| c.len().saturating_mul(prompts.len()) <= MAX_CASES)
            else {
                self.error(&tat.key("vars"), format!("these vars expand into more tests than evalhost reads from one suite ({MAX_CASES})"));
                continue;
            };
            // AgentV 5 expands an empty list into no values: the test has
            // no rows. Said, not done quietly.
            if combos.is_empty() {
                let empty: Vec<&str> = vars
                    .iter()
                    .filter(|(_, v)| v.as_array().is_some_and(Vec::is_empty))
                    .map(|(k, _)| k.as_str())
                    .collect();
                self.warning(
                    &tat.key("vars"),
                    format!(
                        "`vars.{}` is an empty list, so this test expands into no rows and does not run (as in AgentV 5)",
                        empty.join("`, `vars.")
                    ),
                )
                .hint = Some("give the list a value, or make it a single value".into());
                continue;
            }
            for (k, combo) in combos.iter().enumerate() {
                for (pid, template) in prompts {
                    let mut case = Map::new();
                    for (key, v) in t {
                        match key.as_str() {
                            "vars" | "assert" | "run" | "options" | "environment" | "provider"
                            | "providers" | "prompts" | "input" | "threshold" | "__from_file"
                            | "assertions" | "expected_output" | "preprocessors"
                            | "postprocess" | "provider_output" => {}
                            "turns" => {
                                case.insert(key.clone(), self.turns(v, &tat.key("turns"), combo));
                            }
                            "description" => {
                                let text = match v {
                                    Value::String(s) => Value::String(render(s, combo, &self.env)),
                                    other => other.clone(),
                                };
                                let meta = case.entry("metadata").or_insert_with(|| json!({}));
                                if let Value::Object(m) = meta {
                                    m.entry("description").or_insert(text);
                                }
                            }
                            "metadata" => {
                                let meta = case.entry("metadata").or_insert_with(|| json!({}));
                                if let (Value::Object(m), Value::Object(own)) = (meta, v) {
                                    for (mk, mv) in own {
                                        m.insert(mk.clone(), mv.clone());
                                    }
                                } else {
                                    case.insert(key.clone(), v.clone());
                                }
                            }
                            "id" | "criteria" => {
                                case.insert(
                                    key.clone(),
                                    match v {
                                        Value::String(s) => {
                                            Value::String(render(s, combo, &self.env))
                                        }
                                        other => other.clone(),
                                    },
                                );
                            }
                            _ => {
                                case.insert(key.clone(), v.clone());
                            }
                        }
                    }
                    if k == 0 && pid == &prompts[0].0 {
                        let raw = t.get("__from_file") == Some(&Value::Bool(true));
                        if t.contains_key("assertions") {
                            self.warning(&tat.key("assertions"), "a test's `assertions` is ignored: AgentV 5's loader never reads it (its validator refuses it)")
                                .hint = Some("AgentV 5 names it `assert`".into());
                        }
                        if t.contains_key("input") && !raw {
                            self.error(&tat.key("input"), "a test's `input` has been removed in AgentV 5 (only raw cases from `tests: file://…` may carry one)")
                                .hint = Some("put it in `vars` and render it with `prompts`".into());
                        }
                        for key in [
                            "expected_output",
                            "preprocessors",
                            "postprocess",
                            "provider_output",
                        ] {
                            // A raw case from `tests: file://…` keeps its
                            // `expected_output` (AgentV 5's loader reads it
                            // as the case's expected messages; its validator
                            // refuses it in the suite file only).
                            if t.contains_key(key) && !(raw && key == "expected_output") {
                                self.error(&tat.key(key), format!("a test's `{key}` has been removed in AgentV 5"))
                                    .hint = Some(match key {
                                        "expected_output" => "put the reference answer in `vars.expected_output` and grade with an assertion that uses it".into(),
                                        _ => "AgentV 5 shapes output with `options.transform`".into(),
                                    });
                            }
                        }
                    }
                    if t.contains_key("threshold") && k == 0 && pid == &prompts[0].0 {
                        self.warning(&tat.key("threshold"), "a test's `threshold` is ignored (as AgentV ignores it: AgentV 5's schema accepts it, its loader never reads it)")
                            .hint = Some("write `run: {threshold: …}`, the per-test gate AgentV 5 reads".into());
                    }
                    for key in ["environment", "provider", "providers", "prompts", "options"] {
                        if t.contains_key(key) && k == 0 && pid == &prompts[0].0 {
                            self.error(&tat.key(key), format!("a test's `{key}` (AgentV 5) is not read by this version of evalhost"));
                        }
                    }
                    if let Some(Value::Object(run)) = t.get("run")
                        && let Some(th) = run.get("threshold")
                    {
                        let exec = case.entry("execution").or_insert_with(|| json!({}));
                        if let Value::Object(e) = exec {
                            e.insert("threshold".into(), th.clone());
                        }
                    }
                    let id = t
                        .get("id")
                        .and_then(Value::as_str)
                        .map(|s| render(s, combo, &self.env))
                        .unwrap_or_else(|| format!("test-{}", i + 1));
                    let mut id = id;
                    if combos.len() > 1 {
                        id = format!("{id}__vars_{}", k + 1);
                    }
                    if prompts.len() > 1 {
                        id = format!("{id}__prompt_{pid}");
                    }
                    case.insert("id".into(), Value::String(id));
                    // A raw case's own `input` is its `input` var (AgentV 5
                    // lowers it so).
                    let mut combo = combo.clone();
                    if let Some(input) = t.get("input") {
                        combo.insert("input".into(), input.clone());
                    }
                    let combo = &combo;
                    let input = render_prompt(template, combo, &self.env);
                    let empty = matches!(&input, Value::String(s) if s.trim().is_empty());
                    if !(empty && t.get("mode").and_then(Value::as_str) == Some("conversation")) {
                        case.insert("input".into(), input);
                    }
                    if let Some(expected) = combo.get("expected_output") {
                        case.entry("expected_output")
                            .or_insert_with(|| expected.clone());
                    }
                    if let Some(Value::Array(a)) = t.get("assert") {
                        let list: Vec<Value> = a
                            .iter()
                            .enumerate()
                            .map(|(j, x)| {
                                let rendered = render_value(x, combo, &self.env);
                                self.assertion(&rendered, &tat.key("assert").index(j))
                            })
                            .filter(|a| !a.is_null())
                            .collect();
                        let list = self.group_criteria(list);
                        case.insert("assertions".into(), Value::Array(list));
                    }
                    if let Some(Value::Object(exec)) = t.get("execution") {
                        let mut e = exec.clone();
                        if let Some(a) = e.remove("assert") {
                            e.insert("assertions".into(), a);
                        }
                        case.insert("execution".into(), Value::Object(e));
                    }
                    out.push(Value::Object(case));
                }
            }
        }
        Value::Array(out)
    }

    /// The tests of `file://cases.yaml|json|jsonl` (a list, or one test).
    pub(super) fn test_file(&mut self, spec: &str, at: &KeyPath) -> Vec<Value> {
        let rel = spec.strip_prefix("file://").unwrap_or(spec);
        let path = match self.roots.relative(rel, &self.dir.clone()) {
            Ok(p) => p,
            Err(e) => {
                self.error(at, format!("`{spec}`: {e}"))
                    .hint = Some("a suite may read only files inside its project root (the nearest directory with `.git`)".into());
                return Vec::new();
            }
        };
        let text = match crate::roots::read_regular_text(&path, crate::limits::MAX_FILE_BYTES) {
            Ok(t) => t,
            Err(e) => {
                self.error(at, format!("`{spec}`: cannot read {}: {e}", path.display()));
                return Vec::new();
            }
        };
        if rel.ends_with(".jsonl") {
            let mut out = Vec::new();
            for (i, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                match serde_json::from_str::<Value>(line) {
                    Ok(v) => out.push(v),
                    Err(e) => {
                        self.error(at, format!("{}:{}: not JSON: {e}", path.display(), i + 1));
                    }
                }
            }
            return out;
        }
        if rel.ends_with(".csv") {
            return self.csv_tests(&text, &path, at);
        }
        if !(rel.ends_with(".yaml") || rel.ends_with(".yml") || rel.ends_with(".json")) {
            self.error(at, format!("`{spec}`: tests from this kind of file are not read by this version of evalhost (yaml, json, jsonl are)"));
            return Vec::new();
        }
        match crate::yaml::parse(&text) {
            Ok(Value::Array(items)) => items,
            Ok(Value::Object(o)) => match o.get("tests") {
                Some(Value::Array(items)) => items.clone(),
                _ => vec![Value::Object(o)],
            },
            Ok(_) | Err(_) => {
                self.error(at, format!("`{spec}`: not a list of tests"));
                Vec::new()
            }
        }
    }

    pub(super) fn turns(
        &mut self,
        value: &Value,
        at: &KeyPath,
        vars: &Map<String, Value>,
    ) -> Value {
        let Value::Array(turns) = value else {
            return value.clone();
        };
        Value::Array(
            turns
                .iter()
                .enumerate()
                .map(|(i, turn)| {
                    let Value::Object(t) = render_value(turn, vars, &self.env) else {
                        return turn.clone();
                    };
                    let mut t = t.clone();
                    if let Some(Value::Array(a)) = t.remove("assert") {
                        let list: Vec<Value> = a
                            .iter()
                            .enumerate()
                            .map(|(j, x)| self.assertion(x, &at.index(i).key("assert").index(j)))
                            .collect();
                        t.insert("assertions".into(), Value::Array(list));
                    }
                    Value::Object(t)
                })
                .collect(),
        )
    }
}

/// A test read from a `tests: file://…` file (a raw case may carry its own
/// `input` there, lowered to the `input` var).
pub(super) fn from_file(test: Value) -> Value {
    match test {
        Value::Object(mut o) => {
            o.insert("__from_file".into(), Value::Bool(true));
            Value::Object(o)
        }
        other => other,
    }
}

/// The first refusal among `v`'s strings.
fn refused_leaf(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => super::render::refused(s),
        Value::Array(items) => items.iter().find_map(refused_leaf),
        Value::Object(m) => m.values().find_map(refused_leaf),
        _ => None,
    }
}
