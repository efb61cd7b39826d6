//! One test case: id, vars, its execution, input and `input_files`,
//! expected output and criteria, assertions (with the suite's merged in),
//! tags, timeout, targets and workspace.

use super::*;

/// From how many cases the tests are built on two threads.
const PARALLEL_FROM: usize = 256;

impl Loader {
    pub(super) fn build_tests(&mut self, raw: Vec<RawCase>, defaults: &Defaults) -> Vec<TestCase> {
        // Sized once: growing a vector of 100,000 tests by doubling would
        // briefly hold both copies.
        let mut tests: Vec<TestCase> = Vec::with_capacity(raw.len());
        if raw.len() < PARALLEL_FROM {
            tests.extend(raw.into_iter().filter_map(|case| self.test(case, defaults)));
        } else {
            // The second half on another core, with a loader of its own;
            // its tests and diagnostics follow the first half's, so the
            // result is the one a single pass gives.
            let mut raw = raw;
            let second = raw.split_off(raw.len() / 2);
            let mut other = self.fork();
            let (built, other) = std::thread::scope(|scope| {
                let half = std::thread::Builder::new()
                    .name("evalhost-tests".into())
                    .spawn_scoped(scope, move || {
                        let built: Vec<TestCase> = second
                            .into_iter()
                            .filter_map(|case| other.test(case, defaults))
                            .collect();
                        (built, other)
                    });
                tests.extend(raw.into_iter().filter_map(|case| self.test(case, defaults)));
                match half {
                    Ok(handle) => handle
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                    // No thread to be had: the moved half is lost with
                    // the closure, so this cannot be reached with cases
                    // unbuilt; fail loudly rather than drop tests.
                    Err(err) => panic!("cannot start a thread to build tests: {err}"),
                }
            });
            tests.extend(built);
            self.diags.0.extend(other.diags.0);
        }
        self.check_unique_ids(&tests);
        tests
    }

    /// Every test id once: a second use is an error naming the first.
    fn check_unique_ids(&mut self, tests: &[TestCase]) {
        let mut seen: HashMap<&str, usize> = HashMap::with_capacity(tests.len());
        for (i, test) in tests.iter().enumerate() {
            let Some(&first) = seen.get(test.id.as_str()) else {
                seen.insert(&test.id, i);
                continue;
            };
            let first = &tests[first];
            let first_place = match first.loc.pos {
                Some(p) => format!("{}:{}", first.loc.file.display(), p.line),
                None => first.loc.file.display().to_string(),
            };
            let message = format!(
                "duplicate test id `{}`: also used at {first_place}",
                test.id
            );
            self.diags.push(
                Diagnostic::error(&test.loc.file, message)
                    .at(test.loc.pos)
                    .key(test.loc.key.clone())
                    .hint("every test id must be unique within a suite"),
            );
        }
    }

    pub(super) fn test(&mut self, case: RawCase, defaults: &Defaults) -> Option<TestCase> {
        let RawCase {
            map: body,
            doc,
            at,
            dir_id,
            workspace_dir,
        } = case;
        let doc = &doc;
        let at = &at;
        let test = self.case_map(body, doc, at)?;
        self.check_keys(doc, &test, fields::CASE, at, "a test case");
        let id = self.case_id(doc, at, &test, dir_id.as_ref())?;
        let vars = self.case_vars(doc, at, &test);
        let subst = |v: &Value| match &vars {
            Some(vars) => substitute_vars(v, vars),
            None => v.clone(),
        };
        let (execution, skip_defaults, threshold) = self.case_execution(doc, at, &test);
        let input = self.case_input(doc, at, &test, defaults, skip_defaults, &subst, &id);
        let expected = test
            .get("expected_output")
            .map(|v| self.messages(doc, &subst(v), &at.key("expected_output"), "assistant"))
            .unwrap_or_default();
        let criteria = match (test.get("criteria"), test.get("expected_outcome")) {
            (Some(v), _) => self.string(doc, &subst(v), &at.key("criteria")),
            (None, Some(v)) => self.string(doc, &subst(v), &at.key("expected_outcome")),
            (None, None) => None,
        };
        let mut metadata = self.object(doc, &test, "metadata", at).unwrap_or_default();
        merge_metadata(&mut metadata, &defaults.metadata);

        let conversation = self.conversation(doc, &test, at, &id);
        let assertions = self.case_assertions(
            doc,
            at,
            &test,
            defaults,
            skip_defaults,
            (&execution, conversation.is_some(), criteria.as_deref()),
            &id,
        );
        let tags = self.case_tags(doc, at, &test, defaults);
        let timeout_ms = self.positive_int(doc, test.get("timeout_ms"), at, "timeout_ms");
        let test_targets = execution
            .as_ref()
            .and_then(|e| e.get("targets"))
            .map(|v| self.string_list(doc, v, &at.key("execution").key("targets")));
        let expected_fail = self.expected_fail(doc, at, &test);
        let conversation_id = self.conversation_id(doc, at, &test);
        let depends_on = self.depends_on(doc, at, &test);
        let workspace = self.case_workspace(doc, at, &test, workspace_dir);
        // Exact sizes: a suite of 100,000 tests keeps these for the run.
        let (mut input, mut expected, mut assertions) = (input, expected, assertions);
        input.shrink_to_fit();
        expected.shrink_to_fit();
        assertions.shrink_to_fit();
        Some(TestCase {
            id,
            input,
            expected,
            criteria,
            metadata,
            assertions,
            threshold,
            tags,
            timeout_ms,
            expected_fail,
            conversation_id,
            targets: test_targets,
            workspace: workspace.map(Box::new),
            loc: doc.loc(at),
            depends_on,
            conversation,
            pass_rule: crate::model::PassRule::WeightedMean,
            prompt: None,
            output_transform: None,
            comparisons: Vec::new(),
            compare_group: None,
            input_error: None,
            target_params: None,
        })
    }

    /// A test's mapping: a YAML test's own, or a JSONL line parsed (its
    /// `${{ VAR }}`s interpolated).
    fn case_map(
        &mut self,
        body: RawBody,
        doc: &Arc<Doc>,
        at: &KeyPath,
    ) -> Option<Map<String, Value>> {
        Some(match body {
            RawBody::Map(map) => map,
            RawBody::Line {
                text,
                range,
                line_no,
            } => match serde_json::from_str::<Value>(text[range].trim()) {
                Ok(mut value) => {
                    self.interpolate(&mut value, doc);
                    match value {
                        Value::Object(m) => m,
                        other => {
                            self.error(
                                doc,
                                at,
                                format!(
                                    "line {line_no} must be a JSON object (a test case), got {}",
                                    kind(&other)
                                ),
                            );
                            return None;
                        }
                    }
                }
                Err(err) => {
                    self.diags.push(
                        Diagnostic::error(
                            &doc.display,
                            format!("line {line_no} is not valid JSON: {err}"),
                        )
                        .at(Some(Pos {
                            line: line_no,
                            col: err.column(),
                        }))
                        .hint("a .jsonl file has one JSON object per line"),
                    );
                    return None;
                }
            },
        })
    }

    /// The test's `id` (a case directory's name when it has none).
    fn case_id(
        &mut self,
        doc: &Arc<Doc>,
        at: &KeyPath,
        test: &Map<String, Value>,
        dir_id: Option<&String>,
    ) -> Option<String> {
        let id = match (test.get("id"), dir_id) {
            (Some(Value::String(s)), _) if !s.is_empty() => s.clone(),
            (None | Some(Value::Null), Some(dir)) => dir.clone(),
            (Some(Value::Number(n)), _) => {
                self.error(
                    doc,
                    &at.key("id"),
                    format!("test `id` must be a string, got number {n}"),
                )
                .hint = Some(format!("quote it: id: \"{n}\""));
                n.to_string()
            }
            (Some(other), _) => {
                self.error(
                    doc,
                    &at.key("id"),
                    format!("test `id` must be a non-empty string, got {}", kind(other)),
                );
                return None;
            }
            (None, None) => {
                self.error(doc, at, "the test case has no `id`").hint =
                    Some("add `id: some-name`, unique in the suite".into());
                return None;
            }
        };
        Some(id)
    }

    /// The test's `vars`, substituted into its input, expected output,
    /// criteria and `input_files`.
    fn case_vars(
        &mut self,
        doc: &Arc<Doc>,
        at: &KeyPath,
        test: &Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        match test.get("vars") {
            None | Some(Value::Null) => None,
            Some(Value::Object(v)) => Some(v.clone()),
            Some(other) => {
                self.error(
                    doc,
                    &at.key("vars"),
                    format!("`vars` must be a mapping, got {}", kind(other)),
                );
                None
            }
        }
    }

    /// The test's `execution` (suite-only keys warned about and left out
    /// of the key check), its `skip_defaults` and `threshold`.
    fn case_execution(
        &mut self,
        doc: &Arc<Doc>,
        at: &KeyPath,
        test: &Map<String, Value>,
    ) -> (Option<Map<String, Value>>, bool, Option<f64>) {
        let execution = self.object(doc, test, "execution", at);
        if let Some(exec) = &execution {
            let mut own = Map::new();
            for (key, value) in exec {
                if fields::get(fields::CASE_EXECUTION, key).is_none()
                    && fields::get(fields::EXECUTION, key).is_some()
                {
                    self.warning(
                        doc,
                        &at.key("execution").key(key),
                        format!("`{key}` applies to the whole suite, not to one test; it is ignored here (as AgentV 4.42 ignores it)"),
                    )
                    .hint = Some("set it in the suite's `execution`".into());
                } else {
                    own.insert(key.clone(), value.clone());
                }
            }
            self.check_keys(
                doc,
                &own,
                fields::CASE_EXECUTION,
                &at.key("execution"),
                "a test's `execution`",
            );
        }
        let skip_defaults = match execution.as_ref().and_then(|e| e.get("skip_defaults")) {
            None | Some(Value::Null | Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(other) => {
                self.error(
                    doc,
                    &at.key("execution").key("skip_defaults"),
                    format!("`skip_defaults` must be true or false, got {}", kind(other)),
                );
                false
            }
        };
        let threshold = execution
            .as_ref()
            .and_then(|e| e.get("threshold"))
            .and_then(|v| self.unit_number(doc, v, &at.key("execution").key("threshold")));
        (execution, skip_defaults, threshold)
    }

    /// The input: the suite's first (unless `skip_defaults`), then the
    /// test's; `input_files` turn a string input into file blocks followed
    /// by the text.
    #[allow(clippy::too_many_arguments)]
    fn case_input(
        &mut self,
        doc: &Arc<Doc>,
        at: &KeyPath,
        test: &Map<String, Value>,
        defaults: &Defaults,
        skip_defaults: bool,
        subst: &dyn Fn(&Value) -> Value,
        id: &str,
    ) -> Vec<Message> {
        // Input: suite input first, then the test's; input_files turn a
        // string input into file blocks followed by the text.
        let input_mark = self.diags.error_count();
        let mut input = Vec::new();
        if !skip_defaults && let Some((value, sdoc, sat)) = &defaults.input {
            input.extend(self.messages(sdoc, &subst(value), sat, "user"));
        }
        let files = match test.get("input_files") {
            Some(v) => Some((subst(v), doc.clone(), at.key("input_files"))),
            None if !skip_defaults => defaults
                .input_files
                .as_ref()
                .map(|(v, d, k)| (subst(v), d.clone(), k.clone())),
            None => None,
        };
        match test.get("input") {
            Some(value) => {
                let value = subst(value);
                match (&files, &value) {
                    (Some((list, fdoc, fat)), Value::String(text)) => {
                        let mut blocks = self.input_file_blocks(fdoc, fat, list);
                        blocks.push(serde_json::json!({"type": "text", "value": text}));
                        let content = Value::Array(blocks);
                        let message = serde_json::json!({"role": "user", "content": content});
                        input.extend(self.messages(doc, &message, &at.key("input"), "user"));
                    }
                    (Some((_, fdoc, fat)), other) => {
                        self.error(
                            fdoc,
                            fat,
                            format!(
                                "`input_files` needs a string `input`, but test `{id}` has {}",
                                kind(other)
                            ),
                        )
                        .hint = Some(
                            "AgentV skips such a test silently; put the files in the messages as \
                             `{type: file, value: path}` blocks instead"
                                .into(),
                        );
                    }
                    (None, _) => input.extend(self.messages(doc, &value, &at.key("input"), "user")),
                }
            }
            None => {
                self.error(doc, at, format!("test `{id}` has no `input`"))
                    .hint =
                    Some("add `input:` with the prompt (a string or a list of messages)".into());
            }
        }
        // Only when reading this test's input found nothing wrong: another
        // test's error must not hide this one.
        if test.get("input").is_some() && input.is_empty() && self.diags.error_count() == input_mark
        {
            self.error(
                doc,
                &at.key("input"),
                format!("test `{id}` has an empty input"),
            );
        }
        input
    }

    /// The `{type: file}` blocks of `input_files`: each path checked here,
    /// so that an error names `input_files[i]`; only files that pass become
    /// blocks.
    fn input_file_blocks(&mut self, fdoc: &Arc<Doc>, fat: &KeyPath, list: &Value) -> Vec<Value> {
        let paths = self.string_list(fdoc, list, fat);
        if paths.is_empty() {
            self.error(
                fdoc,
                fat,
                "`input_files` has no file; the input would be empty",
            )
            .hint = Some("list at least one file, or remove `input_files`".into());
        }
        // Checked here, so that an error names `input_files[i]`;
        // only files that pass become blocks.
        let mut blocks: Vec<Value> = Vec::new();
        for (i, p) in paths.into_iter().enumerate() {
            let file_at = fat.index(i);
            match self.roots.find(&p, Some(&self.roots.eval_dir.clone())) {
                Err(err) => self.path_error(fdoc, &file_at, &p, &err),
                Ok(path) => match std::fs::metadata(&path) {
                    Ok(m) if !m.is_file() => {
                        let display = self.display(&path);
                        self.error(
                            fdoc,
                            &file_at,
                            format!("{} is not a regular file", display.display()),
                        );
                    }
                    Ok(m) if m.len() > MAX_INPUT_FILE_BYTES => {
                        let display = self.display(&path);
                        self.error(
                            fdoc,
                            &file_at,
                            format!(
                                "{} is {} MiB, more than the {} MiB a suite file may be",
                                display.display(),
                                m.len() >> 20,
                                MAX_INPUT_FILE_BYTES >> 20
                            ),
                        );
                    }
                    _ => blocks.push(serde_json::json!({"type": "file", "value": p})),
                },
            }
        }
        blocks
    }

    /// The test's assertions: `rubrics`, its list, the suite's (unless
    /// `skip_defaults`), else AgentV's implicit LLM judge of the criteria.
    /// `(execution, has a conversation, criteria)` say which apply.
    #[allow(clippy::too_many_arguments)]
    fn case_assertions(
        &mut self,
        doc: &Arc<Doc>,
        at: &KeyPath,
        test: &Map<String, Value>,
        defaults: &Defaults,
        skip_defaults: bool,
        (execution, has_conversation, criteria): (&Option<Map<String, Value>>, bool, Option<&str>),
        id: &str,
    ) -> Vec<Assertion> {
        let what = format!("test `{id}`");
        let mut assertions = Vec::new();
        if let Some(rubrics) = test.get("rubrics") {
            let mut config = Map::new();
            config.insert("criteria".into(), rubrics.clone());
            assertions.push(rubric_assertion(
                config,
                1.0,
                doc.loc(&at.key("rubrics")),
                false,
            ));
        }
        match (test.get("assertions"), test.get("assert")) {
            (Some(list), _) => {
                assertions.extend(self.assertion_list(
                    doc,
                    list,
                    &at.key("assertions"),
                    false,
                    &what,
                    &mut Vec::new(),
                ));
            }
            (None, Some(list)) => {
                assertions.extend(self.assertion_list(
                    doc,
                    list,
                    &at.key("assert"),
                    false,
                    &what,
                    &mut Vec::new(),
                ));
            }
            (None, None) => {
                if test
                    .get("evaluators")
                    .or(execution.as_ref().and_then(|e| e.get("evaluators")))
                    .is_some()
                {
                    self.error(doc, at, format!("test `{id}` lists its graders under `evaluators`"))
                        .hint = Some("rename `evaluators` to `assertions` (AgentV skips such a test as incomplete)".into());
                }
            }
        }
        if !skip_defaults {
            assertions.extend(defaults.assertions.iter().cloned());
        }
        let listed = test.get("assertions").or(test.get("assert")).is_some();
        if assertions.is_empty()
            && !listed
            && !has_conversation
            && criteria.is_some_and(|c| !c.trim().is_empty())
        {
            // AgentV's implicit default grader: an LLM judge of the criteria.
            // (A conversation's turns grade it; its own `assertions`, if any,
            // grade the transcript.)
            assertions.push(implicit_llm_grader(doc.loc(at)));
        }
        if assertions.is_empty() && !has_conversation {
            let message = if listed {
                format!("test `{id}` has an empty assertion list, so nothing would grade it")
            } else {
                format!(
                    "test `{id}` has no assertions and no `criteria`, so nothing would grade it"
                )
            };
            self.error(doc, at, message).hint = Some(
                "add `assertions:`, or `criteria:` for the default LLM judge (AgentV would run a judge without \
                 criteria; evalhost does not guess)"
                    .into(),
            );
        }
        assertions
    }

    /// The test's `tags`, then the suite's.
    fn case_tags(
        &mut self,
        doc: &Arc<Doc>,
        at: &KeyPath,
        test: &Map<String, Value>,
        defaults: &Defaults,
    ) -> Vec<String> {
        let mut tags = match test.get("tags") {
            Some(v) => self.string_list(doc, v, &at.key("tags")),
            None => Vec::new(),
        };
        for tag in &defaults.tags {
            if !tags.contains(tag) {
                tags.push(tag.clone());
            }
        }
        tags
    }

    /// `expected_fail` (an evalhost extension AgentV 4.42 ignores).
    fn expected_fail(&mut self, doc: &Arc<Doc>, at: &KeyPath, test: &Map<String, Value>) -> bool {
        match test.get("expected_fail") {
            None | Some(Value::Null | Value::Bool(false)) => false,
            Some(Value::Bool(true)) => {
                self.extension(
                    doc,
                    &at.key("expected_fail"),
                    "`expected_fail`: AgentV 4.42 ignores it, so the test counts as failed and lowers the pass rate",
                );
                true
            }
            Some(other) => {
                self.error(
                    doc,
                    &at.key("expected_fail"),
                    format!("`expected_fail` must be true or false, got {}", show(other)),
                );
                false
            }
        }
    }

    /// `conversation_id`.
    fn conversation_id(
        &mut self,
        doc: &Arc<Doc>,
        at: &KeyPath,
        test: &Map<String, Value>,
    ) -> Option<String> {
        match test.get("conversation_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(c.clone()),
            Some(other) => {
                self.error(
                    doc,
                    &at.key("conversation_id"),
                    format!("`conversation_id` must be a string, got {}", kind(other)),
                );
                None
            }
        }
    }

    /// `depends_on` and `on_dependency_failure`.
    fn depends_on(
        &mut self,
        doc: &Arc<Doc>,
        at: &KeyPath,
        test: &Map<String, Value>,
    ) -> Option<Box<crate::model::Dependencies>> {
        let depends_on = match test.get("depends_on") {
            None | Some(Value::Null) => None,
            Some(v) => {
                let ids = self.string_list(doc, v, &at.key("depends_on"));
                let on_failure = match test.get("on_dependency_failure") {
                    None | Some(Value::Null) => crate::model::DependencyPolicy::Skip,
                    Some(Value::String(p)) if p == "skip" => crate::model::DependencyPolicy::Skip,
                    Some(Value::String(p)) if p == "fail" => crate::model::DependencyPolicy::Fail,
                    Some(Value::String(p)) if p == "run" => crate::model::DependencyPolicy::Run,
                    Some(other) => {
                        self.error(
                            doc,
                            &at.key("on_dependency_failure"),
                            format!(
                                "`on_dependency_failure` must be skip, fail or run, got {}",
                                show(other)
                            ),
                        );
                        crate::model::DependencyPolicy::Skip
                    }
                };
                (!ids.is_empty()).then(|| {
                    Box::new(crate::model::Dependencies {
                        ids,
                        loc: doc.loc(&at.key("depends_on")),
                        on_failure,
                    })
                })
            }
        };
        if depends_on.is_none() && test.contains_key("on_dependency_failure") {
            self.warning(
                doc,
                &at.key("on_dependency_failure"),
                "`on_dependency_failure` without `depends_on` does nothing",
            );
        }
        depends_on
    }

    /// The test's `workspace` (suite-only keys warned about and dropped),
    /// else its case directory's `workspace/` template.
    fn case_workspace(
        &mut self,
        doc: &Arc<Doc>,
        at: &KeyPath,
        test: &Map<String, Value>,
        workspace_dir: Option<PathBuf>,
    ) -> Option<crate::workspace::Spec> {
        match test.get("workspace") {
            Some(w) => self.workspace(doc, w, &at.key("workspace")).map(|mut spec| {
                if spec.preflight.take().is_some() {
                    self.warning(doc, &at.key("workspace").key("env"), "preflight checks (`env`) are the whole suite's: set them in the suite's `workspace`; they are ignored on one test")
                        .hint = Some("AgentV, too, checks only the suite's workspace".into());
                }
                if spec.static_path.take().is_some() {
                    self.warning(doc, &at.key("workspace").key("path"), "a static workspace is the whole suite's: set `path` in the suite's `workspace`; it is ignored on one test")
                        .hint = Some("AgentV, too, takes the static path from the suite's workspace".into());
                }
                spec
            }),
            None => workspace_dir.map(|d| crate::workspace::Spec {
                template: Some(d),
                ..crate::workspace::Spec::default()
            }),
        }
    }
}

/// AgentV's metadata merge (§2.8): the test's keys win for scalars; nested
/// mappings merge recursively; lists concatenate suite-first without
/// duplicates; missing keys come from the suite.
pub fn merge_metadata(test: &mut Map<String, Value>, suite: &Map<String, Value>) {
    for (key, suite_value) in suite {
        match (test.get_mut(key), suite_value) {
            (None, v) => {
                test.insert(key.clone(), v.clone());
            }
            (Some(Value::Object(t)), Value::Object(s)) => merge_metadata(t, s),
            (Some(Value::Array(t)), Value::Array(s)) => {
                let mut merged: Vec<Value> = Vec::new();
                for v in s.iter().chain(t.iter()) {
                    if !merged.contains(v) {
                        merged.push(v.clone());
                    }
                }
                *t = merged;
            }
            (Some(_), _) => {}
        }
    }
}
