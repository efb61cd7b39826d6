//! Assertions: lists, `include:` templates, and one assertion (type,
//! negation, weight and gates, config rewrites, `wasm:` plugins, names).

use super::*;

impl Loader {
    pub(super) fn assertion_list(
        &mut self,
        doc: &Arc<Doc>,
        value: &Value,
        at: &KeyPath,
        from_suite: bool,
        owner: &str,
        chain: &mut Vec<PathBuf>,
    ) -> Vec<Assertion> {
        let Value::Array(items) = value else {
            self.error(
                doc,
                at,
                format!("assertions of {owner} must be a list, got {}", kind(value)),
            );
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut criteria: Vec<String> = Vec::new();
        let mut rubric_slot: Option<(usize, KeyPath)> = None;
        for (i, item) in items.iter().enumerate() {
            let item_path = at.index(i);
            match item {
                Value::String(s) if s.trim().is_empty() => {
                    self.warning(doc, &item_path, "empty rubric criterion; it is ignored");
                }
                Value::String(s) => {
                    criteria.push(s.trim().to_owned());
                    if rubric_slot.is_none() {
                        rubric_slot = Some((out.len(), item_path));
                    }
                }
                Value::Object(entry) if entry.len() == 1 && entry.contains_key("include") => {
                    out.extend(self.include(doc, entry, &item_path, from_suite, owner, chain));
                }
                Value::Object(entry) => {
                    if let Some(a) = self.assertion(doc, entry, &item_path, from_suite, owner) {
                        out.push(a);
                    }
                }
                other => {
                    self.error(
                        doc,
                        &item_path,
                        format!("an assertion must be a mapping with a `type`, or a string criterion; got {}", kind(other)),
                    );
                }
            }
        }
        if let Some((slot, path)) = rubric_slot {
            // AgentV §2.7: every string entry becomes one `rubrics` grader
            // with weight = the number of strings.
            let weight = criteria.len() as f64;
            let mut config = Map::new();
            config.insert(
                "criteria".into(),
                Value::Array(criteria.into_iter().map(Value::String).collect()),
            );
            out.insert(
                slot,
                rubric_assertion(config, weight, doc.loc(&path), from_suite),
            );
        }
        out
    }

    /// `- include: name-or-path`: the `assertions` of a template file.
    pub(super) fn include(
        &mut self,
        doc: &Arc<Doc>,
        entry: &Map<String, Value>,
        at: &KeyPath,
        from_suite: bool,
        owner: &str,
        chain: &mut Vec<PathBuf>,
    ) -> Vec<Assertion> {
        let Some(Value::String(name)) = entry.get("include") else {
            self.error(
                doc,
                &at.key("include"),
                "`include` must be a template name or path (a string)",
            );
            return Vec::new();
        };
        let is_name = !name.contains(['/', '\\']) && !name.starts_with('.');
        let found = if is_name {
            let yaml = format!(".agentv/templates/{name}.yaml");
            let yml = format!(".agentv/templates/{name}.yml");
            let evalhost = format!(".evalhost/templates/{name}.yaml");
            // The first found, looked for in order; else a link out of the
            // project, named as such rather than as "not found".
            let mut error: Option<PathError> = None;
            let mut hit = None;
            for candidate in [evalhost, yaml, yml] {
                match self.roots.find(&candidate, Some(&doc.dir)) {
                    Ok(p) => {
                        hit = Some(p);
                        break;
                    }
                    Err(e) => {
                        if !matches!(error, Some(PathError::Outside { .. })) {
                            error = Some(e);
                        }
                    }
                }
            }
            hit.ok_or_else(|| error.expect("three candidates were tried"))
        } else {
            self.roots.find(name, Some(&doc.dir))
        };
        let path = match found {
            Ok(p) => p,
            Err(err) => {
                self.path_error(doc, &at.key("include"), name, &err);
                return Vec::new();
            }
        };
        let show = |p: &PathBuf| {
            p.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        };
        if chain.contains(&path) {
            let mut names: Vec<String> = chain.iter().map(show).collect();
            names.push(show(&path));
            self.error(
                doc,
                &at.key("include"),
                format!("assertion template cycle: {}", names.join(" -> ")),
            );
            return Vec::new();
        }
        if chain.len() >= MAX_INCLUDE_DEPTH {
            let mut names: Vec<String> = chain.iter().map(show).collect();
            names.push(show(&path));
            self.error(
                doc,
                &at.key("include"),
                format!(
                    "assertion templates nest deeper than {MAX_INCLUDE_DEPTH}: {}",
                    names.join(" -> ")
                ),
            );
            return Vec::new();
        }
        let Some((value, tdoc)) = self.read_yaml(&path, Some((doc, &at.key("include")))) else {
            return Vec::new();
        };
        let Some(list) = value.get("assertions").filter(|l| l.is_array()).cloned() else {
            self.error(
                &tdoc,
                &KeyPath::default(),
                "an assertion template must be a mapping with an `assertions` list",
            );
            return Vec::new();
        };
        chain.push(path);
        let out = self.assertion_list(
            &tdoc,
            &list,
            &KeyPath::default().key("assertions"),
            from_suite,
            owner,
            chain,
        );
        chain.pop();
        out
    }

    pub(super) fn assertion(
        &mut self,
        doc: &Arc<Doc>,
        entry: &Map<String, Value>,
        at: &KeyPath,
        from_suite: bool,
        owner: &str,
    ) -> Option<Assertion> {
        let raw_type = match entry.get("type") {
            Some(Value::String(t)) if !t.trim().is_empty() => t.trim().to_owned(),
            Some(other) => {
                self.error(
                    doc,
                    &at.key("type"),
                    format!("assertion `type` must be a string, got {}", kind(other)),
                );
                return None;
            }
            None => {
                self.error(doc, at, format!("an assertion of {owner} has no `type`"))
                    .hint = Some("add `type:` (contains, regex, equals, is-json, ...)".into());
                return None;
            }
        };
        let normalized = raw_type.replace('_', "-");
        if matches!(normalized.as_str(), "code-judge" | "llm-judge") {
            let new = normalized.replace("judge", "grader");
            self.error(
                doc,
                &at.key("type"),
                format!("`{raw_type}` is a removed alias; use `{new}`"),
            );
            return None;
        }
        let (kind_name, prefixed) = match normalized.strip_prefix("not-") {
            Some(rest) => (rest.to_owned(), true),
            None => (normalized.clone(), false),
        };
        if prefixed {
            self.extension(
                doc,
                &at.key("type"),
                format!("`{raw_type}`: AgentV 4.42 has no `not-` types (an unknown grader type, scored 0); write `type: {}` with `negate: true`", &normalized[4..]),
            );
        }
        let kind_name = if kind_name == "rubric" {
            self.warning(
                doc,
                &at.key("type"),
                "`type: rubric` is deprecated; use `type: rubrics` with `criteria`",
            );
            "rubrics".to_owned()
        } else {
            kind_name
        };
        let negate = self.negate_of(doc, entry, at, (&raw_type, &kind_name, prefixed));
        let weight = self.weight_of(doc, entry, at);
        let required = self.required_of(doc, entry, at);
        let min_score = entry
            .get("min_score")
            .and_then(|v| self.unit_number(doc, v, &at.key("min_score")));
        if kind_name == "assert-set" {
            self.extension(
                doc,
                &at.key("type"),
                "`assert-set` is promptfoo's: AgentV 4.42 does not know it (an unknown grader type, scored 0); use `composite`",
            );
        }
        if entry.contains_key("wasm") {
            self.extension(
                doc,
                &at.key("wasm"),
                "`wasm:` grades with a plugin AgentV cannot run (an unknown grader type, scored 0, unless `.agentv/assertions/` defines it)",
            );
        }
        if matches!(kind_name.as_str(), "composite" | "assert-set") {
            let group = self.group(doc, entry, at, &kind_name, from_suite, owner)?;
            let name = match entry.get("name") {
                Some(Value::String(n)) if !n.trim().is_empty() => n.clone(),
                _ => kind_name.clone(),
            };
            return Some(Assertion {
                name: self.intern(&name),
                kind: self.intern(&kind_name),
                negate,
                weight,
                required,
                min_score,
                limits: LimitOverrides::default(),
                config: Arc::new(Map::new()),
                config_json: Arc::from("{}"),
                loc: doc.loc(at),
                key_positions: KeyPositions::default(),
                wasm: None,
                from_suite,
                group: Some(Box::new(group)),
                preprocessors: Arc::from([]),
                prompt_script: None,
                transform: None,
                plugin_type: None,
            });
        }
        let limits = entry
            .get("limits")
            .map(|v| self.limits(doc, v, &at.key("limits")))
            .unwrap_or_default();
        let mut config: Map<String, Value> = entry
            .iter()
            .filter(|(k, _)| !host_assertion_keys().any(|h| h == k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if matches!(kind_name.as_str(), "llm-grader" | "rubrics") {
            self.prompt_file(doc, at, &mut config);
        }
        let prompt_script = if matches!(kind_name.as_str(), "llm-grader" | "rubrics") {
            self.prompt_script(doc, at, &mut config)
        } else {
            None
        };
        let wasm = self.wasm_of(doc, entry, at);
        if let Some(script) = config.remove("script") {
            if config.contains_key("command") {
                self.warning(
                    doc,
                    &at.key("script"),
                    "both `command` and `script` are given; `script` is ignored",
                );
            } else {
                self.warning(
                    doc,
                    &at.key("script"),
                    "`script` is deprecated; use `command`",
                );
                config.insert("command".into(), script);
            }
        }
        let name = match entry.get("name") {
            Some(Value::String(n)) if !n.is_empty() => n.clone(),
            Some(Value::Null) | None => {
                let base = auto_name(&kind_name, &config);
                if prefixed {
                    format!("not-{base}")
                } else {
                    base
                }
            }
            Some(other) => {
                self.error(
                    doc,
                    &at.key("name"),
                    format!(
                        "assertion `name` must be a non-empty string, got {}",
                        show(other)
                    ),
                );
                kind_name.clone()
            }
        };
        let preprocessors: Arc<[crate::model::Preprocessor]> = match entry.get("preprocessors") {
            None | Some(Value::Null) => Arc::from([]),
            Some(list) => {
                if !matches!(kind_name.as_str(), "llm-grader" | "rubrics") {
                    self.warning(
                        doc,
                        &at.key("preprocessors"),
                        format!("`preprocessors` has no effect on a `{kind_name}` grader: only LLM graders (llm-grader, rubrics) read them, as in AgentV"),
                    );
                }
                self.preprocessors(doc, list, &at.key("preprocessors"))
                    .into()
            }
        };
        let key_positions = KeyPositions::new(doc.map.clone(), at.clone());
        let (config, config_json) = self.intern_config(config);
        Some(Assertion {
            name: self.intern(&name),
            kind: self.intern(&kind_name),
            negate,
            weight,
            required,
            min_score,
            limits,
            config,
            config_json,
            loc: doc.loc(at),
            wasm: wasm.map(Box::new),
            key_positions,
            from_suite,
            group: None,
            preprocessors,
            prompt_script,
            transform: None,
            plugin_type: None,
        })
    }

    /// `negate`, and a `not-` prefix (`(raw type, type, prefixed)`).
    fn negate_of(
        &mut self,
        doc: &Arc<Doc>,
        entry: &Map<String, Value>,
        at: &KeyPath,
        (raw_type, kind_name, prefixed): (&str, &str, bool),
    ) -> bool {
        match entry.get("negate") {
            None | Some(Value::Null) => prefixed,
            Some(Value::Bool(b)) => {
                if *b && prefixed {
                    self.error(
                        doc,
                        &at.key("negate"),
                        format!("`{raw_type}` is already negated by its `not-` prefix; `negate: true` would negate it twice"),
                    )
                    .hint = Some(format!("use `type: {kind_name}` with `negate: true`, or `type: {raw_type}` alone"));
                }
                *b != prefixed
            }
            Some(other) => {
                self.error(
                    doc,
                    &at.key("negate"),
                    format!("`negate` must be true or false, got {}", kind(other)),
                );
                prefixed
            }
        }
    }

    /// `weight` (1 unless given).
    fn weight_of(&mut self, doc: &Arc<Doc>, entry: &Map<String, Value>, at: &KeyPath) -> f64 {
        match entry.get("weight") {
            None | Some(Value::Null) => 1.0,
            Some(Value::Number(n)) if n.as_f64().is_some_and(|w| w.is_finite() && w >= 0.0) => {
                n.as_f64().expect("checked")
            }
            Some(other) => {
                self.error(
                    doc,
                    &at.key("weight"),
                    format!("`weight` must be a number ≥ 0, got {}", show(other)),
                );
                1.0
            }
        }
    }

    /// `required`: no, yes, or (deprecated) at least a score.
    fn required_of(
        &mut self,
        doc: &Arc<Doc>,
        entry: &Map<String, Value>,
        at: &KeyPath,
    ) -> Required {
        match entry.get("required") {
            None | Some(Value::Null | Value::Bool(false)) => Required::No,
            Some(Value::Bool(true)) => Required::Yes,
            Some(Value::Number(n)) if n.as_f64().is_some_and(|r| r > 0.0 && r <= 1.0) => {
                self.warning(
                    doc,
                    &at.key("required"),
                    "`required: <number>` is deprecated; use `required: true` with `min_score`",
                );
                Required::AtLeast(n.as_f64().expect("checked"))
            }
            Some(other) => {
                self.error(
                    doc,
                    &at.key("required"),
                    format!(
                        "`required` must be true, false or a number in (0, 1], got {}",
                        show(other)
                    ),
                );
                Required::No
            }
        }
    }

    /// An LLM grader's `prompt: file://…`: the file's text in the config
    /// (it must show the judge the answer), and where it came from.
    fn prompt_file(&mut self, doc: &Arc<Doc>, at: &KeyPath, config: &mut Map<String, Value>) {
        if let Some(Value::String(prompt)) = config.get("prompt").cloned()
            && let Some(path) = prompt.strip_prefix("file://")
        {
            match self.roots.find(path, Some(&self.roots.eval_dir.clone())) {
                Ok(file) => {
                    let display = self.display(&file);
                    if let Some(text) = self.read_text(
                        &file,
                        &display,
                        Some((doc, &at.key("prompt"))),
                        MAX_FILE_BYTES,
                    ) {
                        let mut text = text;
                        if !text.contains("{{output}}")
                            && !text.contains("{{ output }}")
                            && !text.contains("{{expected_output}}")
                            && !text.contains("{{ expected_output }}")
                        {
                            if self.agentv5 {
                                // AgentV 5's loader refuses such a grader
                                // and skips its tests; its judge, sent the
                                // file as it is, would never see the
                                // answer. evalhost grades as the author
                                // meant, and says so (docs/dialects.md).
                                self.warning(doc, &at.key("prompt"), format!("judge prompt {} shows the judge neither the conversation nor the answer ({{{{output}}}}): AgentV 5 skips the tests this grader is on; evalhost appends the conversation and the final answer to the prompt, so these tests are graded, and AgentV has no score for them", display.display()))
                                    .hint = Some("put {{input}} and {{output}} where the judge should read them to choose the layout yourself".into());
                                text.push_str(JUDGE_PROMPT_TAIL);
                            } else {
                                self.error(doc, &at.key("prompt"), format!("prompt file {} uses neither {{{{output}}}} nor {{{{expected_output}}}}", display.display()))
                                    .hint = Some("a judge prompt must show the judge the answer: add {{output}}".into());
                            }
                        }
                        config.insert("prompt".into(), Value::String(text));
                        config.insert(
                            "prompt_file".into(),
                            Value::String(display.display().to_string()),
                        );
                    }
                }
                Err(err) => self.path_error(doc, &at.key("prompt"), path, &err),
            }
        }
    }

    /// An LLM grader's `prompt: {command: […]}`: a script that computes
    /// the prompt, taken out of the config.
    fn prompt_script(
        &mut self,
        doc: &Arc<Doc>,
        at: &KeyPath,
        config: &mut Map<String, Value>,
    ) -> Option<Arc<crate::model::PromptScript>> {
        let mut prompt_script = None;
        if let Some(Value::Object(script)) = config.get("prompt").cloned() {
            config.remove("prompt");
            let pat = at.key("prompt");
            for key in script
                .keys()
                .filter(|k| !matches!(k.as_str(), "command" | "script" | "config"))
            {
                self.error(
                    doc,
                    &pat.key(key),
                    format!("unknown key `{key}` in a prompt script (its keys: command, config)"),
                );
            }
            let (key, words) = match (script.get("command"), script.get("script")) {
                (Some(c), _) => ("command", Some(c)),
                (None, Some(s)) => {
                    self.warning(
                        doc,
                        &pat.key("script"),
                        "`prompt.script` is deprecated; use `prompt.command`",
                    );
                    ("script", Some(s))
                }
                (None, None) => ("command", None),
            };
            let argv: Option<Vec<String>> = match words {
                Some(Value::Array(items))
                    if !items.is_empty()
                        && items
                            .iter()
                            .all(|w| w.as_str().is_some_and(|s| !s.is_empty())) =>
                {
                    Some(
                        items
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect(),
                    )
                }
                _ => {
                    self.error(doc, &pat.key(key), "a prompt script needs `command`, a non-empty list of arguments whose last is the script")
                        .hint = Some("for example `prompt: {command: [node, ../prompts/grader.js]}`".into());
                    None
                }
            };
            if let Some(mut argv) = argv {
                let last = argv.last().cloned().unwrap_or_default();
                match self.roots.find(&last, Some(&doc.dir.clone())) {
                    Ok(found) => {
                        *argv.last_mut().expect("non-empty") = found.display().to_string();
                        let script_config = match script.get("config") {
                            None | Some(Value::Null) => None,
                            Some(v @ Value::Object(_)) => Some(v.clone()),
                            Some(other) => {
                                self.error(
                                    doc,
                                    &pat.key("config"),
                                    format!(
                                        "`config` of a prompt script must be a mapping, got {}",
                                        kind(other)
                                    ),
                                );
                                None
                            }
                        };
                        prompt_script = Some(Arc::new(crate::model::PromptScript {
                            argv,
                            config: script_config,
                            loc: doc.loc(&pat),
                        }));
                    }
                    Err(err) => self.path_error(doc, &pat.key(key), &last, &err),
                }
            }
        }
        prompt_script
    }

    /// `wasm:` (and its `wasm_sha256`): the plugin file that grades this
    /// assertion.
    fn wasm_of(
        &mut self,
        doc: &Arc<Doc>,
        entry: &Map<String, Value>,
        at: &KeyPath,
    ) -> Option<(PathBuf, Option<String>)> {
        match entry.get("wasm").cloned() {
            None | Some(Value::Null) => None,
            Some(Value::String(path)) => {
                let sha = match entry.get("wasm_sha256").cloned() {
                    Some(Value::String(s))
                        if s.len() == 64 && s.chars().all(|c| c.is_ascii_hexdigit()) =>
                    {
                        Some(s.to_ascii_lowercase())
                    }
                    Some(_) => {
                        self.error(
                            doc,
                            &at.key("wasm_sha256"),
                            "`wasm_sha256` must be 64 hexadecimal digits",
                        );
                        None
                    }
                    None => None,
                };
                Some((doc.dir.join(path), sha))
            }
            Some(other) => {
                self.error(
                    doc,
                    &at.key("wasm"),
                    format!(
                        "`wasm` must be the path of a .wasm grader, got {}",
                        kind(&other)
                    ),
                );
                None
            }
        }
    }
}

pub(super) fn rubric_assertion(
    config: Map<String, Value>,
    weight: f64,
    loc: Loc,
    from_suite: bool,
) -> Assertion {
    let config_json: Arc<str> = Value::Object(config.clone()).to_string().into();
    Assertion {
        name: "rubrics".into(),
        kind: "rubrics".into(),
        negate: false,
        weight,
        required: Required::No,
        min_score: None,
        limits: LimitOverrides::default(),
        config: Arc::new(config),
        config_json,
        loc,
        key_positions: KeyPositions::default(),
        group: None,
        wasm: None,
        from_suite,
        preprocessors: Arc::from([]),
        prompt_script: None,
        transform: None,
        plugin_type: None,
    }
}

/// AgentV's generated assertion names (§3.2).
pub(super) fn auto_name(kind_name: &str, config: &Map<String, Value>) -> String {
    let value = config.get("value");
    match (kind_name, value) {
        (
            "contains" | "icontains" | "starts-with" | "ends-with" | "equals",
            Some(Value::String(v)),
        ) => [kind_name, "-", v].concat(),
        ("regex", Some(Value::String(v))) => {
            let end = v.char_indices().nth(30).map_or(v.len(), |(i, _)| i);
            ["regex-", &v[..end]].concat()
        }
        (
            "contains-any" | "contains-all" | "icontains-any" | "icontains-all",
            Some(Value::Array(a)),
        ) => {
            format!("{kind_name}-{}", a.len())
        }
        ("skill-trigger", _) => match config.get("skill") {
            Some(Value::String(s)) => format!("skill-trigger-{s}"),
            _ => kind_name.to_owned(),
        },
        _ => kind_name.to_owned(),
    }
}

impl Loader {
    /// A `preprocessors` list (AgentV §5.7): `{type, command}` objects; the
    /// command's last argument is a script found through the search roots.
    pub(super) fn preprocessors(
        &mut self,
        doc: &Arc<Doc>,
        value: &Value,
        at: &KeyPath,
    ) -> Vec<crate::model::Preprocessor> {
        let Value::Array(items) = value else {
            self.error(
                doc,
                at,
                format!("`preprocessors` must be a list, got {}", kind(value)),
            )
            .hint =
                Some("write `preprocessors: [{type: xlsx, command: [node, ./to-csv.js]}]`".into());
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let iat = at.index(i);
            let Value::Object(entry) = item else {
                self.error(
                    doc,
                    &iat,
                    format!(
                        "a preprocessor must be a mapping with `type` and `command`, got {}",
                        kind(item)
                    ),
                );
                continue;
            };
            for key in entry
                .keys()
                .filter(|k| !matches!(k.as_str(), "type" | "command"))
            {
                self.error(
                    doc,
                    &iat.key(key),
                    format!("unknown key `{key}` in a preprocessor (its keys: type, command)"),
                );
            }
            let media_type = match entry.get("type") {
                Some(Value::String(t)) if !t.trim().is_empty() => {
                    crate::model::normalize_media_type(t)
                }
                _ => {
                    self.error(doc, &iat.key("type"), "a preprocessor needs `type`, a media type or a file extension (xlsx, pdf, text/html)");
                    continue;
                }
            };
            let argv: Vec<String> = match entry.get("command") {
                Some(Value::Array(words))
                    if !words.is_empty()
                        && words
                            .iter()
                            .all(|w| w.as_str().is_some_and(|s| !s.is_empty())) =>
                {
                    words
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                }
                _ => {
                    self.error(
                        doc,
                        &iat.key("command"),
                        "a preprocessor needs `command`, a non-empty list of arguments whose last is the script",
                    )
                    .hint = Some("for example `command: [node, ../scripts/xlsx-to-csv.js]`".into());
                    continue;
                }
            };
            let script = argv.last().cloned().unwrap_or_default();
            match self.roots.find(&script, Some(&doc.dir.clone())) {
                Ok(found) => {
                    let mut argv = argv;
                    *argv.last_mut().expect("non-empty") = found.display().to_string();
                    out.push(crate::model::Preprocessor {
                        media_type,
                        argv,
                        loc: doc.loc(&iat),
                    });
                }
                Err(err) => self.path_error(doc, &iat.key("command"), &script, &err),
            }
        }
        out
    }
}

/// What an AgentV 5 judge prompt file that names neither `{{output}}` nor
/// `{{expected_output}}` gets appended: the conversation and the answer.
const JUDGE_PROMPT_TAIL: &str =
    "\n\n[[ ## conversation ## ]]\n{{input}}\n\n[[ ## final answer ## ]]\n{{output}}\n";
