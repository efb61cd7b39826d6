//! The suite level: an EVAL.yaml suite (name, metadata, suite-level input,
//! files, assertions, execution, workspace, `tests:`), a standalone JSONL
//! suite with its sidecar, and the finished [`Suite`].

use super::*;

impl Loader {
    pub(super) fn yaml_suite(&mut self, path: &Path) -> Option<Suite> {
        let (root, doc) = self.read_yaml(path, None)?;
        let root = self.replace_root.take().unwrap_or(root);
        let top = KeyPath::default();
        let Value::Object(mut root) = root else {
            self.error(
                &doc,
                &top,
                "the eval file must be a mapping with a `tests` key",
            )
            .hint = Some("start the file with `tests:` followed by a list of test cases".into());
            return None;
        };
        self.check_keys(&doc, &root, fields::SUITE, &top, "the suite");

        let name = self.suite_name(&root, &doc, path);
        let execution = self.object(&doc, &root, "execution", &top);
        let exec_path = top.key("execution");
        if let Some(exec) = &execution {
            self.check_keys(&doc, exec, fields::EXECUTION, &exec_path, "`execution`");
        }
        let target = match execution.as_ref().and_then(|e| e.get("target")) {
            Some(v) => self
                .string(&doc, v, &exec_path.key("target"))
                .map(|t| (t, doc.loc(&exec_path.key("target")))),
            None => root.get("target").and_then(|v| {
                self.string(&doc, v, &top.key("target"))
                    .map(|t| (t, doc.loc(&top.key("target"))))
            }),
        };
        let threshold = execution
            .as_ref()
            .and_then(|e| e.get("threshold"))
            .and_then(|v| self.unit_number(&doc, v, &exec_path.key("threshold")));
        let limits = execution
            .as_ref()
            .and_then(|e| e.get("limits"))
            .map(|v| self.limits(&doc, v, &exec_path.key("limits")))
            .unwrap_or_default();

        if let Some(list) = root.get("preprocessors") {
            self.preprocessors = self.preprocessors(&doc, list, &top.key("preprocessors"));
        }
        let mut defaults = Defaults::default();
        let suite_list = first_present(
            &[
                (&root, "assertions"),
                (&root, "assert"),
                (&root, "evaluators"),
            ],
            execution
                .as_ref()
                .map(|e| [(e, "assertions"), (e, "assert"), (e, "evaluators")]),
        );
        if let Some((key, list, in_execution)) = suite_list {
            let at = if in_execution {
                exec_path.key(key)
            } else {
                top.key(key)
            };
            defaults.assertions =
                self.assertion_list(&doc, list, &at, true, "the suite", &mut Vec::new());
        }
        defaults.input = root
            .get("input")
            .map(|v| (v.clone(), doc.clone(), top.key("input")));
        defaults.input_files = root
            .get("input_files")
            .map(|v| (v.clone(), doc.clone(), top.key("input_files")));
        defaults.metadata = self.suite_metadata(&doc, &root, &top);
        defaults.workspace = root
            .get("workspace")
            .and_then(|w| self.workspace(&doc, w, &top.key("workspace")));
        defaults.tags = match root.get("tags") {
            Some(v) => self.string_list(&doc, v, &top.key("tags")),
            None => Vec::new(),
        };
        let trials = execution
            .as_ref()
            .and_then(|e| e.get("trials"))
            .and_then(|v| self.trials(&doc, v, &exec_path.key("trials")));
        let plugins = root
            .get("plugins")
            .map(|v| self.plugins(&doc, v, &top.key("plugins")))
            .unwrap_or_default();

        // Taken out of the document (its place kept, as `null`): the cases
        // are moved into the tests, not copied.
        let tests_key = ["tests", "eval_cases"]
            .into_iter()
            .find(|k| root.contains_key(*k));
        let tests_value = tests_key.map(|k| {
            let value = root.get_mut(k).map(std::mem::take).unwrap_or_default();
            (value, top.key(k))
        });
        let Some((tests_value, tests_path)) = tests_value else {
            self.error(&doc, &top, "the suite has no `tests`").hint = Some(
                "add `tests:` with a list of test cases, a cases file (`tests: ./cases.yaml`) or a directory \
                 of case directories (`tests: ./cases/`)"
                    .into(),
            );
            return None;
        };
        let raw = self.expand_tests(&doc, tests_value, &tests_path);
        let tests = self.build_tests(raw, &defaults);
        let exec_allow = execution
            .as_ref()
            .and_then(|e| e.get("allow_commands"))
            .map(|v| self.string_list(&doc, v, &exec_path.key("allow_commands")));
        let matrix = match execution.as_ref().and_then(|e| e.get("targets")) {
            Some(list) => self.matrix(&doc, list, &exec_path.key("targets")),
            None => Vec::new(),
        };
        let budget_usd = match execution.as_ref().and_then(|e| e.get("budget_usd")) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_f64().is_some_and(|x| x > 0.0 && x.is_finite()) => {
                n.as_f64()
            }
            Some(other) => {
                self.error(
                    &doc,
                    &exec_path.key("budget_usd"),
                    format!(
                        "`budget_usd` must be a positive number of US dollars, got {}",
                        show(other)
                    ),
                );
                None
            }
        };
        let workers = execution
            .as_ref()
            .and_then(|e| self.positive_int(&doc, e.get("workers"), &exec_path, "workers"))
            .map(|n| n as usize);
        let mut suite = self.finish(
            doc,
            name,
            tests,
            target,
            threshold,
            limits,
            plugins,
            &tests_path,
        )?;
        suite.trials = trials;
        suite.exec_allow = exec_allow;
        suite.workspace = defaults.workspace.clone();
        suite.matrix = matrix;
        suite.workers = workers;
        suite.budget_usd = budget_usd;
        suite.cache = matches!(
            execution.as_ref().and_then(|e| e.get("cache")),
            Some(Value::Bool(true))
        );
        suite.cache_path = execution
            .as_ref()
            .and_then(|e| e.get("cache_path"))
            .and_then(Value::as_str)
            .map(|p| self.roots.eval_dir.join(p));
        Some(suite)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish(
        &mut self,
        doc: Arc<Doc>,
        name: String,
        tests: Vec<TestCase>,
        target: Option<(String, Loc)>,
        threshold: Option<f64>,
        limits: LimitOverrides,
        plugins: Vec<PluginRef>,
        tests_path: &KeyPath,
    ) -> Option<Suite> {
        if tests.is_empty() && !self.diags.has_errors() {
            self.error(&doc, tests_path, "the suite has no test cases")
                .hint = Some("add at least one test case".into());
        }
        self.check_dependencies(&tests);
        let mut tests = tests;
        self.apply_preprocessors(&mut tests);
        Some(Suite {
            file: self.eval_display.clone(),
            dir: self.roots.eval_dir.clone(),
            name,
            tests,
            target_loc: target.as_ref().map(|(_, loc)| loc.clone()),
            target: target.map(|(t, _)| t),
            threshold,
            limits,
            plugins,
            trials: None,
            exec_allow: None,
            workspace: None,
            matrix: Vec::new(),
            cache: false,
            workers: None,
            budget_usd: None,
            extensions: std::mem::take(&mut self.extensions),
            dialect: crate::dialect::Dialect::AgentV4,
            inline_targets: Vec::new(),
            derived_metrics: Vec::new(),
            named_metrics: Vec::new(),
            output_path: None,
            cache_path: None,
        })
    }

    pub(super) fn suite_name(
        &mut self,
        root: &Map<String, Value>,
        doc: &Doc,
        path: &Path,
    ) -> String {
        match root.get("name") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
            Some(Value::String(_) | Value::Null) | None => suite_name_from_file(path),
            Some(other) => {
                self.error(
                    doc,
                    &KeyPath::default().key("name"),
                    format!("`name` must be a string, got {}", kind(other)),
                );
                suite_name_from_file(path)
            }
        }
    }

    /// Suite `metadata` with `governance` copied into `metadata.governance`.
    pub(super) fn suite_metadata(
        &mut self,
        doc: &Doc,
        root: &Map<String, Value>,
        top: &KeyPath,
    ) -> Map<String, Value> {
        let mut metadata = self.object(doc, root, "metadata", top).unwrap_or_default();
        if let Some(governance) = self.object(doc, root, "governance", top) {
            metadata.insert("governance".into(), Value::Object(governance));
        }
        metadata
    }

    /// A standalone JSONL suite: one case per line, with an optional sidecar
    /// `<base>.yaml` (name, description, execution).
    pub(super) fn jsonl_suite(&mut self, path: &Path) -> Option<Suite> {
        let cases = self.read_jsonl(path, None)?;
        let doc = cases.first().map(|c| c.doc.clone()).unwrap_or_else(|| {
            Arc::new(Doc {
                display: self.eval_display.clone(),
                dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
                map: Arc::default(),
            })
        });
        let sidecar = path.with_extension("yaml");
        let top = KeyPath::default();
        let mut defaults = Defaults::default();
        let mut name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "eval".into());
        let (mut target, mut threshold, mut limits) = (None, None, LimitOverrides::default());
        if sidecar.is_file()
            && let Err(err @ PathError::Outside { .. }) = self.roots.contain(&sidecar)
        {
            let display = self.display(&sidecar);
            self.diags.push(
                Diagnostic::error(&display, format!("the JSONL sidecar: {err}"))
                    .hint("a suite may read only files inside its project root"),
            );
            return None;
        }
        if sidecar.is_file()
            && let Some((Value::Object(side), side_doc)) = self.read_yaml(&sidecar, None)
        {
            self.check_keys(&side_doc, &side, fields::SUITE, &top, "the JSONL sidecar");
            if let Some(Value::String(n)) = side.get("name") {
                name = n.trim().to_owned();
            }
            let exec_path = top.key("execution");
            if let Some(exec) = self.object(&side_doc, &side, "execution", &top) {
                self.check_keys(
                    &side_doc,
                    &exec,
                    fields::EXECUTION,
                    &exec_path,
                    "`execution`",
                );
                target = exec.get("target").and_then(|v| {
                    self.string(&side_doc, v, &exec_path.key("target"))
                        .map(|t| (t, side_doc.loc(&exec_path.key("target"))))
                });
                threshold = exec
                    .get("threshold")
                    .and_then(|v| self.unit_number(&side_doc, v, &exec_path.key("threshold")));
                limits = exec
                    .get("limits")
                    .map(|v| self.limits(&side_doc, v, &exec_path.key("limits")))
                    .unwrap_or_default();
                for key in ["assertions", "assert", "evaluators"] {
                    if let Some(list) = exec.get(key) {
                        let list = list.clone();
                        defaults.assertions.extend(self.assertion_list(
                            &side_doc,
                            &list,
                            &exec_path.key(key),
                            true,
                            "the suite",
                            &mut Vec::new(),
                        ));
                        break;
                    }
                }
            }
            if side.contains_key("preprocessors") {
                self.warning(
                    &side_doc,
                    &top.key("preprocessors"),
                    "AgentV ignores `preprocessors` in a JSONL sidecar; evalhost applies them",
                )
                .hint = Some("AgentV reads `preprocessors` only in a YAML suite".into());
                let list = side["preprocessors"].clone();
                self.preprocessors =
                    self.preprocessors(&side_doc, &list, &top.key("preprocessors"));
            }
            if let Some(list) = side.get("assertions") {
                self.warning(&side_doc, &top.key("assertions"), "AgentV ignores top-level `assertions` in a JSONL sidecar; evalhost applies them")
                    .hint = Some("move them under `execution.assertions` to behave the same under both".into());
                let list = list.clone();
                defaults.assertions.extend(self.assertion_list(
                    &side_doc,
                    &list,
                    &top.key("assertions"),
                    true,
                    "the suite",
                    &mut Vec::new(),
                ));
            }
        }
        let tests = self.build_tests(cases, &defaults);
        self.finish(
            doc,
            name,
            tests,
            target,
            threshold,
            limits,
            Vec::new(),
            &top,
        )
    }
}

/// The first `(key, list, in_execution)` present among the top-level keys,
/// then among `execution`'s (legacy location).
pub(super) fn first_present<'a>(
    top: &[(&'a Map<String, Value>, &'static str)],
    execution: Option<[(&'a Map<String, Value>, &'static str); 3]>,
) -> Option<(&'static str, &'a Value, bool)> {
    for (map, key) in top {
        if let Some(v) = map.get(*key) {
            return Some((key, v, false));
        }
    }
    for (map, key) in execution.into_iter().flatten() {
        if let Some(v) = map.get(key) {
            return Some((key, v, true));
        }
    }
    None
}

/// AgentV's suite name: the file name without `.eval.yaml`/`.yaml`.
pub(super) fn suite_name_from_file(file: &Path) -> String {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lower = name.to_lowercase();
    for suffix in [".eval.yaml", ".eval.yml", ".yaml", ".yml", ".jsonl"] {
        if lower.ends_with(suffix) {
            return name[..name.len() - suffix.len()].to_owned();
        }
    }
    if name.is_empty() { "eval".into() } else { name }
}

impl Loader {
    /// `depends_on` names tests of this suite, not the test itself, and
    /// makes no cycle (AgentV checks this when a run starts; here it is a
    /// load error at the `depends_on` that closes the cycle, naming the
    /// other places).
    /// Gives every LLM grader the suite's preprocessors, under its own (by
    /// media type), as AgentV merges them.
    fn apply_preprocessors(&self, tests: &mut [TestCase]) {
        let suite = &self.preprocessors;
        let mut apply = |a: &mut crate::model::Assertion| {
            if !matches!(&*a.kind, "llm-grader" | "rubrics")
                || (suite.is_empty() && a.preprocessors.is_empty())
            {
                return;
            }
            let mut merged: Vec<crate::model::Preprocessor> = suite
                .iter()
                .filter(|p| !a.preprocessors.iter().any(|o| o.media_type == p.media_type))
                .cloned()
                .collect();
            merged.extend(a.preprocessors.iter().cloned());
            a.preprocessors = merged.into();
        };
        for test in tests {
            for a in &mut test.assertions {
                a.walk_mut(&mut apply);
            }
            if let Some(c) = &mut test.conversation {
                for turn in &mut c.turns {
                    for a in &mut turn.assertions {
                        a.walk_mut(&mut apply);
                    }
                }
            }
        }
    }

    fn check_dependencies(&mut self, tests: &[TestCase]) {
        let index: HashMap<&str, usize> = tests
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.as_str(), i))
            .collect();
        let at = |loc: &Loc| {
            format!(
                "{}{}",
                loc.file.display(),
                loc.pos.map_or(String::new(), |p| format!(":{}", p.line))
            )
        };
        let mut edges: Vec<Vec<usize>> = vec![Vec::new(); tests.len()];
        for (i, test) in tests.iter().enumerate() {
            let Some(deps) = &test.depends_on else {
                continue;
            };
            for id in &deps.ids {
                let d = Diagnostic::error(&deps.loc.file, String::new())
                    .at(deps.loc.pos)
                    .key(deps.loc.key.clone());
                if *id == test.id {
                    self.diags.push(Diagnostic {
                        message: format!("test `{}` depends on itself", test.id),
                        ..d
                    });
                } else if let Some(&j) = index.get(id.as_str()) {
                    edges[i].push(j);
                } else {
                    let hint = nearest(id, tests.iter().map(|t| t.id.as_str()))
                        .map(|n| format!("did you mean `{n}`?"));
                    let mut d = Diagnostic {
                        message: format!(
                            "test `{}` depends on `{id}`, but no test of this suite has that id",
                            test.id
                        ),
                        ..d
                    };
                    d.hint = hint;
                    self.diags.push(d);
                }
            }
        }
        // Depth-first, in suite order: each cycle is reported once.
        let mut state = vec![0u8; tests.len()]; // 0 new, 1 on the path, 2 done
        let mut path: Vec<usize> = Vec::new();
        fn visit(
            i: usize,
            edges: &[Vec<usize>],
            state: &mut [u8],
            path: &mut Vec<usize>,
            cycles: &mut Vec<Vec<usize>>,
        ) {
            state[i] = 1;
            path.push(i);
            for &j in &edges[i] {
                match state[j] {
                    0 => visit(j, edges, state, path, cycles),
                    1 => {
                        let from = path.iter().position(|&p| p == j).unwrap_or(0);
                        let mut cycle = path[from..].to_vec();
                        cycle.push(j);
                        cycles.push(cycle);
                    }
                    _ => {}
                }
            }
            path.pop();
            state[i] = 2;
        }
        let mut cycles = Vec::new();
        for i in 0..tests.len() {
            if state[i] == 0 {
                visit(i, &edges, &mut state, &mut path, &mut cycles);
            }
        }
        for cycle in cycles {
            let names: Vec<&str> = cycle.iter().map(|&i| tests[i].id.as_str()).collect();
            let first = &tests[cycle[0]];
            let Some(deps) = &first.depends_on else {
                continue;
            };
            let others: Vec<String> = cycle[1..cycle.len() - 1]
                .iter()
                .filter_map(|&i| tests[i].depends_on.as_ref().map(|d| (i, d)))
                .map(|(i, d)| format!("`{}` at {}", tests[i].id, at(&d.loc)))
                .collect();
            let mut d = Diagnostic::error(
                &deps.loc.file,
                format!("circular dependency: {}", names.join(" → ")),
            )
            .at(deps.loc.pos)
            .key(deps.loc.key.clone());
            d.hint = Some(format!(
                "the other `depends_on` in the cycle: {}; remove one of them",
                others.join(", ")
            ));
            self.diags.push(d);
        }
    }
}
