//! One promptfoo assertion as evalhost's: its type mapped to a plugin,
//! its value rendered or read from a file, its provider's tools.

use super::*;

impl Reader {
    /// One assertion, with promptfoo's meaning.
    pub(super) fn assertion(
        &mut self,
        a: &Value,
        at: &KeyPath,
        vars: &Map<String, Value>,
        renderer: &Renderer,
        file: &Arc<PathBuf>,
        grading: &Grading,
    ) -> Option<Assertion> {
        let Value::Object(a) = a else {
            self.error(at, format!("Expected an object, but got {} (promptfoo assertions are mappings with `type`)", crate::agentv4::kind(a)))
                .hint = Some("write `- type: contains\n  value: ...`".into());
            return None;
        };
        let Some(Value::String(raw_type)) = a.get("type") else {
            self.error(at, "an assertion needs a `type`");
            return None;
        };
        let (base, negate) = match raw_type.strip_prefix("not-") {
            Some(b) => (b.to_owned(), true),
            None => (raw_type.clone(), false),
        };
        let weight = match a.get("weight") {
            None | Some(Value::Null) => 1.0,
            Some(v) => match v.as_f64() {
                Some(w) if w.is_finite() && w >= 0.0 => w,
                _ => {
                    self.error(
                        &at.key("weight"),
                        format!("`weight` must be a number ≥ 0, got {v}"),
                    );
                    1.0
                }
            },
        };
        let threshold = a.get("threshold").and_then(Value::as_f64);
        for key in ["value", "metric"] {
            if let Some(why) = a.get(key).and_then(|v| renderer.refused_in(v)) {
                self.error(&at.key(key), format!("this template cannot be rendered as Nunjucks renders it: {why}"))
                    .hint = Some("rewrite it without that construct; every other Nunjucks construct renders as in promptfoo".into());
                return None;
            }
        }
        let metric = a.get("metric").and_then(Value::as_str).map(|m| {
            renderer
                .render_text(m, vars)
                .unwrap_or_else(|_| m.to_owned())
        });
        if let Some(m) = &metric
            && !self.metrics.contains(m)
        {
            self.metrics.push(m.clone());
        }
        if base == "select-best" && negate {
            self.error(
                &at.key("type"),
                "`not-select-best` is not a type: promptfoo compares only `select-best`",
            );
            return None;
        }
        if base == "assert-set" {
            let context = (vars, renderer, file, grading);
            return self.assert_set(a, at, negate, (weight, threshold, metric), context);
        }
        let trace_type = trace_plugin_type(&base);
        let code_type = match base.as_str() {
            "javascript" => Some("promptfoo-javascript".to_owned()),
            "python" => Some("promptfoo-python".to_owned()),
            "llm-rubric"
            | "model-graded-closedqa"
            | "factuality"
            | "g-eval"
            | "context-recall"
            | "context-relevance"
            | "context-faithfulness"
            | "answer-relevance"
            | "search-rubric"
            | "select-best" => Some(format!("promptfoo-{base}")),
            "similar" | "similar:cosine" | "similar:dot" | "similar:euclidean" => {
                Some("promptfoo-similar".to_owned())
            }
            "model-graded-factuality" => Some("promptfoo-factuality".to_owned()),
            _ => None,
        };
        if !DETERMINISTIC.contains(&base.as_str()) && trace_type.is_none() && code_type.is_none() {
            self.refuse_type(at, raw_type, &base);
            return None;
        }
        let mut transform = None;
        let mut context_transform = None;
        let mut config = Map::new();
        let mut grading = grading.clone();
        for (k, v) in a {
            match k.as_str() {
                "type" | "weight" | "metric" => {}
                "provider"
                    if MODEL_GRADED.contains(&base.as_str()) || base.starts_with("similar") =>
                {
                    grading.provider = Some((v.clone(), at.key(k)));
                }
                "rubricPrompt" if MODEL_GRADED.contains(&base.as_str()) => {
                    grading.rubric_prompt = Some((v.clone(), at.key(k)));
                }
                "value" => {
                    self.assertion_value(
                        v,
                        &at.key("value"),
                        &base,
                        (vars, renderer),
                        &mut config,
                    )?;
                }
                "transform" => {
                    transform = Some(Arc::new(self.transform_step(
                        v,
                        &at.key("transform"),
                        file,
                        "transform",
                    )?));
                }
                "judge_samples" => {
                    self.warning(
                        &at.key(k),
                        "`judge_samples` is evalhost's own key (promptfoo ignores it): the judge answers that many times and the score is their mean, so it can differ from promptfoo's single answer",
                    );
                    config.insert(k.clone(), v.clone());
                }
                "contextTransform" if base.starts_with("context-") => {
                    let mut step = self.transform_step(v, &at.key(k), file, "contextTransform")?;
                    // Its result is the context the assertion reads, not
                    // the output (see `Assertion::transform`).
                    let mut c = (*step.config).clone();
                    c.insert("__into".into(), Value::String("context".into()));
                    step.config_json = Value::Object(c.clone()).to_string().into();
                    step.config = Arc::new(c);
                    context_transform = Some(Arc::new(step));
                }
                "provider" | "rubricPrompt" | "contextTransform" => {
                    self.error(
                        &at.key(k),
                        format!("assertion key `{k}` is not read by this version of evalhost"),
                    );
                }
                _ => {
                    config.insert(k.clone(), v.clone());
                }
            }
        }
        if base == "meteor" {
            self.warning(
                &at.key("type"),
                "promptfoo 0.121.20 itself makes every `meteor` row an error (`PorterStemmer should be loaded`: its import of the `natural` package sees none of its exports); evalhost grades it as promptfoo's METEOR code computes it once `natural` loads, so this row has a score where promptfoo has an error (docs/dialects.md)",
            );
        }
        if base == "answer-relevance" || base.starts_with("similar") {
            let embedder = self.embedder(grading.provider.clone())?;
            config.insert("__embedder".into(), Value::String(embedder));
        }
        if let Some(metric) = base.strip_prefix("similar:") {
            config.insert("__metric".into(), Value::String(metric.to_owned()));
        }
        if MODEL_GRADED.contains(&base.as_str()) {
            let judge = if base == "search-rubric" {
                self.search_judge(grading.provider.clone(), at)?
            } else {
                self.judge(base == "llm-rubric", grading.provider.clone())
            };
            config.insert("__judge".into(), Value::String(judge));
            if let Some(scores) = &grading.factuality {
                config.insert("__factuality".into(), Value::Object(scores.clone()));
            }
            if let Some((prompt, pat)) = &grading.rubric_prompt {
                let prompt = self.rubric_prompt(prompt, pat)?;
                config.insert("__rubric_prompt".into(), prompt);
            }
        }
        // promptfoo's handlers apply `not-` themselves, each its own way.
        if negate {
            if PROVIDER_TYPES.contains(&base.as_str())
                || matches!(
                    base.as_str(),
                    "model-graded-closedqa"
                        | "factuality"
                        | "model-graded-factuality"
                        | "context-recall"
                        | "context-relevance"
                        | "context-faithfulness"
                        | "answer-relevance"
                )
            {
                self.warning(
                    &at.key("type"),
                    format!("`{raw_type}`: promptfoo ignores `not-` on `{base}` (its handler never reads it), and so does evalhost"),
                );
            }
            config.insert("inverse".into(), Value::Bool(true));
        }
        // What promptfoo's handlers require of the test, said before
        // anything runs (promptfoo makes the row an error).
        if matches!(base.as_str(), "context-relevance" | "context-faithfulness") {
            if !vars.get("query").is_some_and(Value::is_string) {
                self.error(
                    &at.key("type"),
                    format!("`{base}` needs a `query` var holding the user's question (promptfoo makes the row an error without it)"),
                )
                .hint = Some("add `query: ...` to the test's vars".into());
                return None;
            }
            let has_context = match vars.get("context") {
                Some(Value::String(c)) => !c.is_empty(),
                Some(Value::Array(c)) => !c.is_empty(),
                _ => false,
            };
            if !has_context && context_transform.is_none() {
                self.error(
                    &at.key("type"),
                    format!("`{base}` needs the retrieved context: a `context` var (text, or a list of texts) or a `contextTransform` that computes it from the output"),
                )
                .hint = Some("add `context: ...` to the test's vars".into());
                return None;
            }
        }
        if let Some(step) = context_transform {
            if transform.is_some() {
                self.error(
                    &at.key("contextTransform"),
                    "an assertion with both `transform` and `contextTransform` is not read by this version of evalhost; keep one",
                );
                return None;
            }
            transform = Some(step);
        }
        if trace_type.is_some() && base.starts_with("trajectory:") {
            config.insert("require_trace".into(), Value::Bool(true));
        }
        let name = metric.unwrap_or_else(|| raw_type.clone());
        Some(Assertion {
            weight,
            transform,
            plugin_type: Some(
                trace_type
                    .or(code_type)
                    .unwrap_or_else(|| format!("promptfoo-{base}"))
                    .into(),
            ),
            ..self.made(name.into(), &base, config, at, file)
        })
    }

    /// An `assert-set`: its members read as assertions of the same test,
    /// graded together (`(weight, threshold, metric)` are the set's own).
    fn assert_set(
        &mut self,
        a: &Map<String, Value>,
        at: &KeyPath,
        negate: bool,
        (weight, threshold, metric): (f64, Option<f64>, Option<String>),
        (vars, renderer, file, grading): (&Map<String, Value>, &Renderer, &Arc<PathBuf>, &Grading),
    ) -> Option<Assertion> {
        if negate {
            self.error(&at.key("type"), "`not-assert-set` is not a type");
            return None;
        }
        let Some(Value::Array(children)) = a
            .get("assert")
            .filter(|c| c.as_array().is_some_and(|c| !c.is_empty()))
        else {
            self.error(at, "an `assert-set` needs `assert`, a non-empty list of assertions (an empty set would pass vacuously)");
            return None;
        };
        let members: Vec<Assertion> = children
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                self.assertion(c, &at.key("assert").index(i), vars, renderer, file, grading)
            })
            .collect();
        let name: Arc<str> = metric.unwrap_or_else(|| "assert-set".into()).into();
        Some(Assertion {
            weight,
            key_positions: KeyPositions::default(),
            group: Some(Box::new(Group {
                members,
                aggregate: Aggregate::AssertSet { threshold },
            })),
            ..self.made(name, "assert-set", Map::new(), at, file)
        })
    }

    /// Refuses an assertion type evalhost does not grade, saying why (a
    /// type promptfoo has), or the nearest one it grades (a likely typo).
    fn refuse_type(&mut self, at: &KeyPath, raw_type: &str, base: &str) {
        let why = match base {
            "ruby" => "evalhost runs no Ruby (promptfoo runs it with the machine's ruby)",
            "moderation" => {
                "it needs a moderation model (promptfoo asks OpenAI's moderation API, or Azure Content Safety, LlamaGuard or a Hugging Face classifier), and evalhost has no such provider: nothing here could say whether the output is flagged"
            }
            "classifier" => {
                "it needs a classification model (promptfoo asks a Hugging Face text-classification pipeline through `huggingface:text-classification:<model>`), and evalhost has no such provider: nothing here could classify the output"
            }
            "max-score" => {
                "it aggregates the scores of every prompt and provider for the test after all of them are graded, which this version of evalhost does not do (`select-best` it does)"
            }
            "trace-span-count" | "trace-span-duration" | "trace-error-spans" => {
                "it reads OpenTelemetry trace spans, which evalhost does not collect"
            }
            "is-sql" | "contains-sql" => {
                "promptfoo decides it with node-sql-parser's grammars, which evalhost has no port of (a different parser would give different verdicts)"
            }
            "trajectory:goal-success" => {
                "it needs an LLM judge of the trajectory, which a later version of evalhost adds"
            }
            _ => {
                "not a type this version of evalhost grades (promptfoo makes an unknown type an error row at run time)"
            }
        };
        // A type promptfoo has is named with its reason; a near miss of
        // one evalhost grades is likely a typo.
        let hint = why
            .starts_with("not a type")
            .then(|| {
                crate::diag::nearest(
                    base,
                    DETERMINISTIC
                        .iter()
                        .copied()
                        .chain(["javascript", "python", "assert-set"]),
                )
            })
            .flatten()
            .map(|n| format!("did you mean `{n}`?"));
        self.error(
            &at.key("type"),
            format!("assertion type `{raw_type}`: {why}"),
        )
        .hint = hint;
    }

    /// An assertion's `value`: a script's source for `javascript` and
    /// `python` files, a file's content, or the value rendered with the
    /// test's vars; a JSON Schema written as a string parsed as promptfoo
    /// parses it. Into `config`.
    fn assertion_value(
        &mut self,
        v: &Value,
        vat: &KeyPath,
        base: &str,
        (vars, renderer): (&Map<String, Value>, &Renderer),
        config: &mut Map<String, Value>,
    ) -> Option<()> {
        let value = match v {
            Value::String(sv) if sv.starts_with("package:") => {
                self.error(
                    vat,
                    format!("`value: {sv}`: promptfoo runs that package's function for the expected value, which needs the sandboxed JavaScript runner this version of evalhost does not have yet; write the value inline"),
                );
                return None;
            }
            // A script's function runs in the sandbox, with its
            // source read here (the plugin has no files).
            Value::String(sv) if sv.starts_with("file://") && base == "javascript" => {
                let script = self.javascript_file(sv, vat)?;
                self.note_env_reads(&script.to_string(), vat);
                self.note_refused_runtime(&script.to_string(), vat);
                config.insert("__script".into(), script);
                return Some(());
            }
            Value::String(sv) if sv.starts_with("file://") && base == "python" => {
                let script = self.python_file(sv, vat)?;
                config.insert("__script".into(), script);
                return Some(());
            }
            // promptfoo reads the file as it is: never rendered.
            Value::String(sv) if sv.starts_with("file://") => self.assertion_file(sv, vat, true)?,
            Value::Array(items)
                if items
                    .iter()
                    .any(|i| i.as_str().is_some_and(|s| s.starts_with("file://"))) =>
            {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    out.push(match item {
                        Value::String(s) if s.starts_with("file://") => {
                            self.assertion_file(s, &vat.index(i), false)?
                        }
                        Value::String(_) => renderer.render_value(item, vars),
                        other => other.clone(),
                    });
                }
                Value::Array(out)
            }
            other => renderer.render_value(other, vars),
        };
        // A JSON Schema written as a string: promptfoo's handler
        // reads it with `loadYaml` (lazily: a bad one is an
        // error only when the output holds JSON).
        if (base == "is-json" || base == "contains-json")
            && let Value::String(text) = &value
            && !text.is_empty()
            && !text.starts_with("file://")
        {
            match crate::yaml::parse(text) {
                Ok(parsed) => {
                    config.insert("__parsed_value".into(), parsed);
                }
                Err(e) => {
                    config.insert(
                        "__parse_error".into(),
                        Value::String(format!("the schema is not YAML: {e}")),
                    );
                }
            }
        }
        if base == "javascript"
            && let Value::String(code) = &value
        {
            self.note_env_reads(code, vat);
            self.note_refused_runtime(code, vat);
        }
        config.insert("value".into(), value);
        Some(())
    }

    /// An assertion `value: file://…`, as promptfoo's `runAssertion` loads
    /// it (`processFileReference`, relative to the config's directory):
    /// `.json`, `.yaml`, `.yml` parsed, `.txt` as its trimmed text, never
    /// rendered. A code file (`.js`, `.ts`, `.py`, `.rb`, optionally
    /// `:function`) runs in promptfoo; `code` says whether that is checked
    /// (a list's items go straight to `processFileReference`).
    pub(super) fn assertion_file(&mut self, spec: &str, at: &KeyPath, code: bool) -> Option<Value> {
        let rest = &spec["file://".len()..];
        if code {
            let file = rest.split(':').next().unwrap_or(rest);
            let lower = file.to_ascii_lowercase();
            let language = if [".js", ".cjs", ".mjs", ".ts", ".cts", ".mts"]
                .iter()
                .any(|e| lower.ends_with(e))
            {
                Some("JavaScript")
            } else if file.ends_with(".py") {
                Some("Python")
            } else if file.ends_with(".rb") {
                Some("Ruby")
            } else {
                None
            };
            if let Some(language) = language {
                self.error(
                    at,
                    format!("`{spec}`: promptfoo runs this {language} file for the expected value, which needs the sandboxed {language} runner this version of evalhost does not have yet"),
                )
                .hint = Some("write the value inline, or in a .json, .yaml or .txt file".into());
                return None;
            }
        }
        // `path.extname` of the whole reference, case-sensitive.
        let name = rest.rsplit('/').next().unwrap_or(rest);
        let ext = match name.rfind('.') {
            Some(i) if i > 0 => &name[i..],
            _ => "",
        };
        if ![".json", ".yaml", ".yml", ".txt"].contains(&ext) {
            self.error(
                at,
                format!("`{spec}`: promptfoo reads only .json, .yaml, .yml and .txt files for an assertion value (any other makes the row an error: \"Unsupported file type\")"),
            );
            return None;
        }
        let path = self.relative(rest, &format!("`{spec}`"), at)?;
        let loaded = match self.value_files.get(&path) {
            Some(r) => r.clone(),
            None => {
                let r = crate::roots::read_regular_text(&path, crate::limits::MAX_FILE_BYTES)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))
                    .and_then(|text| {
                        if ext == ".txt" {
                            Ok(Value::String(js_trim(&text).to_owned()))
                        } else {
                            crate::yaml::parse(&text)
                                .map_err(|e| format!("{}: {e}", path.display()))
                        }
                    });
                self.value_files.insert(path.clone(), r.clone());
                r
            }
        };
        match loaded {
            Ok(v) => Some(v),
            Err(e) => {
                self.error(at, e);
                None
            }
        }
    }

    /// `test` with the provider each tool-call assertion reads (`__provider`:
    /// its kind, and its `tools` and `functions` rendered with the test's
    /// vars and read from their files). Where the providers differ, one
    /// test per provider, each run on that provider only.
    pub(super) fn with_providers(
        &mut self,
        test: TestCase,
        vars: &Map<String, Value>,
        renderer: &Renderer,
    ) -> Vec<TestCase> {
        fn needs(assertions: &[Assertion]) -> bool {
            assertions.iter().any(|a| {
                a.plugin_type
                    .as_deref()
                    .and_then(|t| t.strip_prefix("promptfoo-"))
                    .is_some_and(|t| PROVIDER_TYPES.contains(&t))
                    || a.group.as_ref().is_some_and(|g| needs(&g.members))
            })
        }
        fn inject(assertions: &mut [Assertion], info: &Value) {
            for a in assertions {
                if let Some(g) = a.group.as_mut() {
                    inject(&mut g.members, info);
                }
                let wants = a
                    .plugin_type
                    .as_deref()
                    .and_then(|t| t.strip_prefix("promptfoo-"))
                    .is_some_and(|t| PROVIDER_TYPES.contains(&t));
                if wants {
                    let mut config = (*a.config).clone();
                    config.insert("__provider".into(), info.clone());
                    a.config_json = Value::Object(config.clone()).to_string().into();
                    a.config = Arc::new(config);
                }
            }
        }
        if !needs(&test.assertions) || self.provider_infos.is_empty() {
            return vec![test];
        }
        // Only the providers that run the test.
        let providers: Vec<ProviderInfo> = self
            .provider_infos
            .iter()
            .filter(|p| test.targets.as_ref().is_none_or(|t| t.contains(&p.name)))
            .cloned()
            .collect();
        if providers.is_empty() {
            return vec![test];
        }
        let infos: Vec<(String, Value)> = providers
            .iter()
            .map(|p| {
                let mut info = Map::new();
                info.insert("kind".into(), p.kind.into());
                for (key, v) in [("tools", &p.tools), ("functions", &p.functions)] {
                    if let Some(v) = v
                        && let Some(loaded) = self.provider_tools(v, &p.at.key(key), vars, renderer)
                    {
                        info.insert(key.into(), loaded);
                    }
                }
                (p.name.clone(), Value::Object(info))
            })
            .collect();
        if infos.iter().all(|(_, i)| *i == infos[0].1) {
            let mut test = test;
            inject(&mut test.assertions, &infos[0].1);
            return vec![test];
        }
        infos
            .into_iter()
            .map(|(name, info)| {
                let mut t = test.clone();
                inject(&mut t.assertions, &info);
                t.targets = Some(vec![name]);
                t
            })
            .collect()
    }

    /// A provider's `tools` or `functions` as promptfoo's
    /// `maybeLoadToolsFromExternalFile` makes them for an assertion: the
    /// test's vars rendered in, `file://` JSON or YAML read (a list's
    /// files flattened); tools computed by code are refused.
    pub(super) fn provider_tools(
        &mut self,
        v: &Value,
        at: &KeyPath,
        vars: &Map<String, Value>,
        renderer: &Renderer,
    ) -> Option<Value> {
        fn render(v: &Value, vars: &Map<String, Value>, renderer: &Renderer) -> Value {
            match v {
                Value::String(s) => {
                    Value::String(renderer.render_text(s, vars).unwrap_or_else(|_| s.clone()))
                }
                Value::Array(items) => {
                    Value::Array(items.iter().map(|i| render(i, vars, renderer)).collect())
                }
                Value::Object(m) => Value::Object(
                    m.iter()
                        .map(|(k, v)| (k.clone(), render(v, vars, renderer)))
                        .collect(),
                ),
                other => other.clone(),
            }
        }
        let rendered = render(v, vars, renderer);
        self.load_tools(rendered, at)
    }

    /// Tools after rendering: `file://` references read.
    pub(super) fn load_tools(&mut self, rendered: Value, at: &KeyPath) -> Option<Value> {
        match &rendered {
            Value::String(s) if s.starts_with("file://") => {
                let file = s["file://".len()..].split(':').next().unwrap_or_default();
                let lower = file.to_ascii_lowercase();
                if lower.ends_with(".py")
                    || [".js", ".cjs", ".mjs", ".ts", ".cts", ".mts"]
                        .iter()
                        .any(|e| lower.ends_with(e))
                {
                    self.error(at, format!("`{s}`: tools computed by code are not read by this version of evalhost (they need the sandboxed code runner); list them in a .json or .yaml file"));
                    return None;
                }
                let loaded = self.assertion_file(s, at, false)?;
                if loaded.is_string() {
                    self.error(at, format!("`{s}`: promptfoo expects an array or object of tool definitions here, not text"));
                    return None;
                }
                Some(loaded)
            }
            Value::Array(items)
                if items
                    .iter()
                    .any(|i| i.as_str().is_some_and(|s| s.starts_with("file://"))) =>
            {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    out.push(self.load_tools(item.clone(), &at.index(i))?);
                }
                if out.iter().all(Value::is_array) {
                    Some(Value::Array(
                        out.into_iter()
                            .flat_map(|v| match v {
                                Value::Array(a) => a,
                                _ => Vec::new(),
                            })
                            .collect(),
                    ))
                } else {
                    Some(Value::Array(out))
                }
            }
            _ => Some(rendered),
        }
    }
}

/// promptfoo's trace types, graded by evalhost-metrics (AgentV 5 took them
/// from promptfoo with the same rules): the tools and skills come from the
/// tool calls the target reports.
pub(super) fn trace_plugin_type(base: &str) -> Option<String> {
    match base {
        "skill-used" => Some("agentv5-skill-used".into()),
        "trajectory:tool-used"
        | "trajectory:tool-sequence"
        | "trajectory:tool-args-match"
        | "trajectory:step-count" => Some(format!(
            "agentv5-trajectory-{}",
            &base["trajectory:".len()..]
        )),
        _ => None,
    }
}
