//! One canonical test from a row, its vars and a prompt: the prompt
//! rendered, the assertions built, the targets that run it, the output
//! transform.

use super::*;

impl Reader {
    /// The providers that run `prompt`, when some provider lists the
    /// prompts it runs (promptfoo's `isPromptAllowed`: a label or id equal
    /// to a reference, a `prefix*` pattern, or `ref:` at its start); `None`
    /// when every provider runs it.
    pub(super) fn targets_for(&self, prompt: &Prompt) -> Option<Vec<String>> {
        if self.provider_prompts.iter().all(|(_, l)| l.is_none()) {
            return None;
        }
        let matches = |r: &String| super::rows::prompt_ref_matches(r, prompt);
        Some(
            self.provider_prompts
                .iter()
                .filter(|(_, listed)| listed.as_ref().is_none_or(|refs| refs.iter().any(matches)))
                .map(|(name, _)| name.clone())
                .collect(),
        )
    }

    /// One canonical test: `row` with `vars`, rendered with `prompt`.
    pub(super) fn test(
        &mut self,
        row: &Row,
        vars: &Map<String, Value>,
        prompt: &Prompt,
        id: String,
        renderer: &Renderer,
    ) -> Option<TestCase> {
        if row.provider_output.is_some() {
            self.error(
                &row.at.key("providerOutput"),
                "`providerOutput` is not read by this version of evalhost",
            )
            .hint = Some("use the `echo` provider, or a replay target".into());
            return None;
        }
        // The row shows the vars as written, as promptfoo's results do; the
        // prompt and the assertions see them rendered.
        let written = vars.clone();
        if let Some((name, why)) = written
            .iter()
            .find_map(|(k, v)| renderer.refused_in(v).map(|why| (k, why)))
        {
            self.error(
                &row.at,
                format!("the var `{name}` cannot be rendered as Nunjucks renders it: {why}"),
            )
            .hint = Some("rewrite it without that construct; every other Nunjucks construct renders as in promptfoo".into());
            return None;
        }
        let vars = renderer.render_vars(vars);
        // A prompt that does not render errors the rows that use it, as
        // promptfoo errors them (`Template render error`), said once at
        // load.
        let mut input_error = None;
        let raw = match renderer.render_prompt(&prompt.raw, &vars) {
            Ok(r) => r,
            // A limit (the suite's templates too big or too slow) refuses
            // the config, as before.
            Err(e) if crate::budget::is_limit(&e) || super::render::is_refusal(&e) => {
                let message = format!(
                    "the prompt `{}` does not render: {e}",
                    first_line(&prompt.label)
                );
                // Once per prompt, not once per row (a refusal was said at
                // the prompt's own line already).
                if !self
                    .diags
                    .0
                    .iter()
                    .any(|d| d.message == message || d.message.contains(&e))
                {
                    self.error(&row.at, message);
                }
                return None;
            }
            Err(e) => {
                let message = format!(
                    "the prompt `{}` does not render: {e}",
                    first_line(&prompt.label)
                );
                self.warn_once(
                    &row.at,
                    format!("{message}; every row with this prompt is an error (`failure_class: input`), as promptfoo makes it"),
                );
                input_error = Some(format!("Template render error: {e}"));
                prompt.raw.clone()
            }
        };
        let input = vec![Message {
            role: "user".into(),
            content: raw.clone(),
            content_json: None,
        }];
        let mut assertions = Vec::new();
        let mut comparisons = Vec::new();
        self.row_pos = row.pos;
        for (a, at) in &row.assert {
            if let Some(assertion) = self.assertion(a, at, &vars, renderer, &row.file, &row.grading)
            {
                // `select-best` is graded across the test's outputs, after
                // the rest (promptfoo's comparison pass), and only the first.
                if assertion.plugin_type.as_deref() == Some("promptfoo-select-best") {
                    if comparisons.is_empty() {
                        comparisons.push(assertion);
                    } else {
                        self.error(
                            at,
                            "a second `select-best` in one test: promptfoo grades only the first",
                        );
                    }
                    continue;
                }
                assertions.push(assertion);
            }
        }
        // `context.test` of a javascript assertion: the test as promptfoo
        // hands it over (its vars rendered).
        let test_json = {
            let mut t = Map::new();
            if let Some(d) = &row.description {
                t.insert("description".into(), Value::String(d.clone()));
            }
            t.insert("vars".into(), Value::Object(vars.clone()));
            t.insert(
                "assert".into(),
                Value::Array(row.assert.iter().map(|(a, _)| a.clone()).collect()),
            );
            if let Some(th) = row.threshold {
                t.insert("threshold".into(), json!(th));
            }
            if !row.metadata.is_empty() {
                t.insert("metadata".into(), Value::Object(row.metadata.clone()));
            }
            for (k, v) in &row.extra {
                t.entry(k.clone()).or_insert_with(|| v.clone());
            }
            Value::Object(t)
        };
        for a in &mut assertions {
            with_test_context(a, &test_json);
        }
        let output_transform = match row.transform.as_ref().or(row.postprocess.as_ref()) {
            Some((v, at)) => Some(Box::new(self.transform_step(
                v,
                at,
                &row.file,
                "options.transform",
            )?)),
            None => None,
        };
        let mut metadata = row.metadata.clone();
        metadata.insert("vars".into(), Value::Object(written));
        if let Some(d) = &row.description {
            metadata.insert("description".into(), Value::String(d.clone()));
        }
        Some(TestCase {
            id,
            input,
            expected: Vec::new(),
            criteria: None,
            metadata,
            assertions,
            threshold: row.threshold,
            tags: Vec::new(),
            timeout_ms: None,
            expected_fail: false,
            conversation_id: None,
            targets: self.targets_for(prompt),
            workspace: None,
            loc: Loc {
                file: row.file.clone(),
                // A row of a tests file points into that file (its line, when
                // known), never at the config's line with the file's name.
                pos: if *row.file == *self.file {
                    self.map.locate(&row.at)
                } else {
                    row.pos
                },
                key: row.at.clone(),
            },
            depends_on: None,
            conversation: None,
            pass_rule: if row.threshold.is_some() {
                PassRule::WeightedMean
            } else {
                PassRule::AllPass
            },
            prompt: Some(Box::new(RenderedPrompt {
                raw,
                label: prompt.label.clone(),
                id: prompt.id.clone(),
            })),
            output_transform,
            comparisons,
            compare_group: None,
            input_error,
            target_params: None,
        })
    }

    /// A transform (`options.transform`, an assertion's `transform`): inline
    /// JavaScript — an expression on one line, a function body of
    /// `(output, context, process)` on several — or `file://x.js[:fn]`, run
    /// by the sandboxed JavaScript plugin.
    pub(super) fn transform_step(
        &mut self,
        v: &Value,
        at: &KeyPath,
        file: &Arc<PathBuf>,
        name: &str,
    ) -> Option<Assertion> {
        let mut config = Map::new();
        match v {
            // promptfoo runs a `.py` transform with its Python runner
            // (`get_transform` unless named): so does evalhost, sandboxed.
            Value::String(s)
                if s.starts_with("file://") && file_and_function(s).0.ends_with(".py") =>
            {
                let script = self.python_file(s, at)?;
                config.insert("__script".into(), script);
                return Some(Assertion {
                    weight: 0.0,
                    plugin_type: Some("promptfoo-python-transform".into()),
                    ..self.made(name.into(), "transform", config, at, file)
                });
            }
            Value::String(s) if s.starts_with("file://") => {
                let script = self.javascript_file(s, at)?;
                config.insert("__script".into(), script);
            }
            Value::String(code) => {
                config.insert("value".into(), Value::String(code.clone()));
            }
            other => {
                self.error(
                    at,
                    format!(
                        "a transform must be JavaScript text or a file://, got {}",
                        crate::agentv4::kind(other)
                    ),
                );
                return None;
            }
        }
        Some(Assertion {
            weight: 0.0,
            plugin_type: Some("promptfoo-transform".into()),
            ..self.made(name.into(), "transform", config, at, file)
        })
    }

    /// An assertion written at `at`, as the reader makes them: weight 1,
    /// graded by the plugin of its `kind` unless the caller says otherwise.
    pub(super) fn made(
        &self,
        name: Arc<str>,
        kind: &str,
        config: Map<String, Value>,
        at: &KeyPath,
        file: &Arc<PathBuf>,
    ) -> Assertion {
        Assertion {
            name,
            kind: kind.into(),
            negate: false,
            weight: 1.0,
            required: Required::No,
            min_score: None,
            limits: LimitOverrides::default(),
            config_json: Value::Object(config.clone()).to_string().into(),
            config: Arc::new(config),
            loc: Loc {
                file: file.clone(),
                // An assertion of a tests file's row points at that row's
                // line, never at the config's line with the file's name.
                pos: if **file == *self.file {
                    self.map.locate(at)
                } else {
                    self.row_pos
                },
                key: at.clone(),
            },
            key_positions: KeyPositions::new(self.map.clone(), at.clone()),
            wasm: None,
            from_suite: false,
            group: None,
            preprocessors: Arc::from([]),
            prompt_script: None,
            transform: None,
            plugin_type: None,
        }
    }
}

/// Gives each `javascript` and `python` assertion (in `assert-set`s too)
/// its test as `__test`.
pub(super) fn with_test_context(a: &mut Assertion, test: &Value) {
    if matches!(
        a.plugin_type.as_deref(),
        Some("promptfoo-javascript" | "promptfoo-python")
    ) {
        let mut config = (*a.config).clone();
        config.insert("__test".into(), test.clone());
        a.config_json = Value::Object(config.clone()).to_string().into();
        a.config = Arc::new(config);
    }
    if let Some(group) = &mut a.group {
        for m in &mut group.members {
            with_test_context(m, test);
        }
    }
}
