//! Test rows: `tests` (inline and `file://` YAML, JSON, JSONL, CSV),
//! `scenarios`, one row's keys, `defaultTest` merged in, vars loaded from
//! files and expanded into their cartesian product.

use super::*;

impl Reader {
    /// `tests`: inline rows, or files of rows.
    pub(super) fn tests(&mut self, value: Option<&Value>, at: &KeyPath) -> Vec<Row> {
        let mut rows = Vec::new();
        let items: Vec<(Value, KeyPath)> = match value {
            None | Some(Value::Null) => return rows,
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (v.clone(), at.index(i)))
                .collect(),
            Some(other) => vec![(other.clone(), at.clone())],
        };
        for (item, iat) in items {
            match item {
                Value::Object(t) => rows.push(self.row(&t, &iat, false)),
                Value::String(spec) => rows.extend(self.test_file(&spec, &iat)),
                other => {
                    self.error(
                        &iat,
                        format!(
                            "a test must be a mapping or a file://, got {}",
                            crate::agentv4::kind(&other)
                        ),
                    );
                }
            }
        }
        rows
    }

    /// `scenarios`: each `config` row with each of its `tests` (or one empty
    /// test), merged as promptfoo merges them: vars and metadata shallow
    /// (the test's win), the config row's assertions first.
    pub(super) fn scenarios(&mut self, value: Option<&Value>, at: &KeyPath) -> Vec<Row> {
        let Some(value) = value else {
            return Vec::new();
        };
        let Value::Array(scenarios) = value else {
            self.error(at, "`scenarios` must be a list of `{config, tests}`");
            return Vec::new();
        };
        // `file://` entries (globs allowed): each file holds one scenario
        // or a list of them.
        let mut expanded: Vec<(Value, KeyPath)> = Vec::new();
        for (i, scenario) in scenarios.iter().enumerate() {
            let sat = at.index(i);
            match scenario {
                Value::String(spec) if spec.starts_with("file://") => {
                    let Some(files) = self.glob(&spec["file://".len()..], &sat) else {
                        continue;
                    };
                    if files.is_empty() {
                        self.error(&sat, format!("`{spec}` matches no file"));
                    }
                    for file in files {
                        let shown = file.display().to_string();
                        match self.structured_file(&shown, &sat) {
                            Some(Value::Array(list)) => {
                                expanded.extend(list.into_iter().map(|v| (v, sat.clone())));
                            }
                            Some(v) => expanded.push((v, sat.clone())),
                            None => {}
                        }
                    }
                }
                other => expanded.push((other.clone(), sat)),
            }
        }
        let mut rows = Vec::new();
        for (scenario, sat) in &expanded {
            let sat = sat.clone();
            let Value::Object(sc) = scenario else {
                self.error(&sat, "a scenario must be a mapping with `config` and `tests` (a `file://` scenario is not read by this version of evalhost)");
                continue;
            };
            let configs: Vec<(Map<String, Value>, KeyPath)> = match sc.get("config") {
                Some(Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .filter_map(|(j, v)| {
                        v.as_object()
                            .map(|o| (o.clone(), sat.key("config").index(j)))
                    })
                    .collect(),
                _ => {
                    self.error(
                        &sat.key("config"),
                        "a scenario needs `config`, a list of partial tests",
                    );
                    continue;
                }
            };
            let tests: Vec<(Map<String, Value>, KeyPath)> = match sc.get("tests") {
                None => vec![(Map::new(), sat.clone())],
                Some(Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .filter_map(|(j, v)| {
                        v.as_object()
                            .map(|o| (o.clone(), sat.key("tests").index(j)))
                    })
                    .collect(),
                Some(_) => {
                    self.error(&sat.key("tests"), "a scenario's `tests` must be a list");
                    continue;
                }
            };
            for (data, dat) in &configs {
                let base = self.row(data, dat, true);
                for (test, tat) in &tests {
                    let own = self.row(test, tat, true);
                    let mut merged = own.clone();
                    merged.description = own.description.clone().or(base.description.clone());
                    let mut vars = base.vars.clone();
                    vars.extend(own.vars.clone());
                    merged.vars = vars;
                    let mut metadata = base.metadata.clone();
                    metadata.extend(own.metadata.clone());
                    merged.metadata = metadata;
                    let mut assert = base.assert.clone();
                    assert.extend(own.assert.clone());
                    merged.assert = assert;
                    merged.threshold = own.threshold.or(base.threshold);
                    rows.push(merged);
                }
            }
        }
        rows
    }

    /// Rows from `file://tests.yaml|json|jsonl|csv` (globs allowed).
    pub(super) fn test_file(&mut self, spec: &str, at: &KeyPath) -> Vec<Row> {
        let path = spec.strip_prefix("file://").unwrap_or(spec);
        let Some(files) = self.glob(path, at) else {
            return Vec::new();
        };
        if files.is_empty() {
            self.error(at, format!("`{spec}`: no file matches"));
            return Vec::new();
        }
        let mut rows = Vec::new();
        for file in files {
            let Some(text) = self.read_file(&file, at) else {
                continue;
            };
            let ext = file
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or("")
                .to_ascii_lowercase();
            // Each value with its line in the file, when known.
            let mut lines: Vec<usize> = Vec::new();
            let values: Vec<Value> = match ext.as_str() {
                "csv" => match csv_rows(&text) {
                    Ok(v) => v
                        .into_iter()
                        .map(|(line, value)| {
                            lines.push(line);
                            value
                        })
                        .collect(),
                    Err(e) => {
                        self.error(at, format!("{}: {e}", file.display()))
                            .hint = Some("quote a field that holds a comma (\"a, b\"), and give every row the header's number of fields; promptfoo refuses such a file too".into());
                        continue;
                    }
                },
                "jsonl" => {
                    let mut v = Vec::new();
                    for (i, line) in text
                        .lines()
                        .enumerate()
                        .filter(|(_, l)| !l.trim().is_empty())
                    {
                        match serde_json::from_str(line) {
                            Ok(x) => {
                                lines.push(i + 1);
                                v.push(x)
                            }
                            Err(e) => {
                                self.error(
                                    at,
                                    format!("{}:{}: not JSON: {e}", file.display(), i + 1),
                                );
                            }
                        }
                    }
                    v
                }
                "json" | "yaml" | "yml" => match crate::yaml::parse(&text) {
                    Ok(Value::Array(v)) => v,
                    Ok(v @ Value::Object(_)) => vec![v],
                    Ok(other) => {
                        self.error(
                            at,
                            format!(
                                "{}: a tests file holds a test or a list of tests, got {}",
                                file.display(),
                                crate::agentv4::kind(&other)
                            ),
                        );
                        continue;
                    }
                    Err(e) => {
                        self.error(
                            at,
                            format!(
                                "{}: invalid {}: {}",
                                file.display(),
                                ext.to_uppercase(),
                                e.message
                            ),
                        );
                        continue;
                    }
                },
                other => {
                    self.error(at, format!("{}: tests from `.{other}` files are not read (yaml, json, jsonl, csv are)", file.display()));
                    continue;
                }
            };
            let shown = Arc::new(file.clone());
            for (i, v) in values.into_iter().enumerate() {
                let Value::Object(t) = v else {
                    self.error(
                        at,
                        format!(
                            "{} item {}: a test must be a mapping",
                            file.display(),
                            i + 1
                        ),
                    );
                    continue;
                };
                let mut row = self.row(&t, at, false);
                row.file = shown.clone();
                row.pos = lines
                    .get(i)
                    .map(|&line| crate::source_map::Pos { line, col: 1 });
                // promptfoo names a CSV's and a JSONL file's tests
                // `Row #N` (`csvRowsToTestCases`, `parseJsonlTestCases`).
                if row.description.is_none() && (ext == "csv" || ext == "jsonl") {
                    row.description = Some(format!("Row #{}", i + 1));
                }
                rows.push(row);
            }
        }
        rows
    }

    /// One test mapping (or `defaultTest`).
    pub(super) fn row(&mut self, t: &Map<String, Value>, at: &KeyPath, default: bool) -> Row {
        // A key promptfoo does not read for itself is kept in the test, and
        // so in `context.test` of its assertions (`expected:` beside
        // `vars:`, read by a javascript assertion): said only when it looks
        // like a typo of one it reads.
        let mut extra = Map::new();
        for (key, v) in t {
            if !TEST_KEYS.contains(&key.as_str()) {
                extra.insert(key.clone(), v.clone());
                let near = crate::diag::typo_of(key, TEST_KEYS.iter().copied());
                if default {
                    // A default's own are dropped: not even in `context.test`.
                    self.warning(
                        &at.key(key),
                        format!("unknown key `{key}`: promptfoo ignores it here (it reaches no test, not even `context.test`), and so does evalhost"),
                    )
                    .hint = near.map(|n| format!("did you mean `{n}`?"));
                } else if let Some(near) = near {
                    self.warning(
                        &at.key(key),
                        format!("unknown test key `{key}`: promptfoo does not read it (it is only in `context.test` of the assertions), and neither does evalhost"),
                    )
                    .hint = Some(format!("did you mean `{near}`?"));
                }
            }
        }
        if !default
            && ![
                "assert",
                "vars",
                "options",
                "metadata",
                "provider",
                "providerOutput",
                "threshold",
            ]
            .iter()
            .any(|k| t.contains_key(*k))
        {
            self.error(at, "a test needs at least one of assert, vars, options, metadata, provider, providerOutput, threshold (promptfoo refuses it too)");
        }
        // promptfoo's `prompts` of a test: a list of prompt references.
        let prompts = match t.get("prompts") {
            None | Some(Value::Null) => None,
            Some(Value::Array(refs)) if refs.iter().all(Value::is_string) => Some((
                refs.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                at.key("prompts"),
            )),
            Some(other) => {
                self.error(
                    &at.key("prompts"),
                    format!(
                        "a test's `prompts` must be a list of prompt labels or ids, got {}",
                        crate::agentv4::kind(other)
                    ),
                );
                None
            }
        };
        for key in ["provider", "providers", "assertScoringFunction"] {
            if t.contains_key(key) {
                self.error(
                    &at.key(key),
                    format!("a test's `{key}` is not read by this version of evalhost"),
                );
            }
        }
        let (mut transform, mut postprocess, mut transform_vars) = (None, None, None);
        let mut grading = Grading::default();
        let mut provider_options = Map::new();
        if let Some(Value::Object(options)) = t.get("options") {
            for (key, v) in options {
                let oat = at.key("options").key(key);
                match key.as_str() {
                    "transform" => transform = Some((v.clone(), oat)),
                    "postprocess" => postprocess = Some((v.clone(), oat)),
                    "provider" if default => self.grading_provider = Some((v.clone(), oat)),
                    "provider" => grading.provider = Some((v.clone(), oat)),
                    "rubricPrompt" => grading.rubric_prompt = Some((v.clone(), oat)),
                    "factuality" => grading.factuality = self.factuality_scores(v, &oat),
                    // Not a provider setting (`mergeProviderPromptConfig`
                    // drops it).
                    "transformVars" => transform_vars = Some((v.clone(), oat)),
                    "storeOutputAs" => {
                        self.error(&oat, format!("test option `{key}` is not read by this version of evalhost: it needs each test's vars made as the run goes, which evalhost does before it"))
                            .hint = Some("give the later tests their vars as written".into());
                    }
                    // `_conversation` is never filled (see the warning at
                    // the prompt): nothing to disable.
                    "disableConversationVar" => {}
                    "repeat" => {
                        self.error(
                            &oat,
                            "test option `repeat` is not read by this version of evalhost",
                        )
                        .hint = Some("give `--repeat N` on the command line".into());
                    }
                    // Anything else goes into each provider's config for
                    // this test's calls, as promptfoo merges it.
                    _ => {
                        provider_options.insert(key.clone(), v.clone());
                    }
                }
            }
        }
        let vars = match t.get("vars") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(v)) => v.clone(),
            Some(_) => {
                self.error(&at.key("vars"), "`vars` as a file list is not read by this version of evalhost; write the vars inline");
                Map::new()
            }
        };
        let assert = match t.get("assert") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (v.clone(), at.key("assert").index(i)))
                .collect(),
            Some(other) => {
                self.error(
                    &at.key("assert"),
                    format!(
                        "`assert` must be a list, got {}",
                        crate::agentv4::kind(other)
                    ),
                );
                Vec::new()
            }
        };
        let threshold = match t.get("threshold") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() && (0.0..=1.0).contains(&x) => Some(x),
                _ => {
                    self.error(
                        &at.key("threshold"),
                        format!("`threshold` must be a number, got {v}"),
                    );
                    None
                }
            },
        };
        Row {
            description: t
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            vars,
            assert,
            threshold,
            metadata: t
                .get("metadata")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            provider_output: t.get("providerOutput").cloned(),
            transform,
            postprocess,
            transform_vars,
            grading,
            provider_options,
            prompts,
            extra,
            at: at.clone(),
            file: self.file.clone(),
            pos: None,
        }
    }

    /// promptfoo's `renderPrompt` for vars that name files (`file://…`,
    /// relative to the config): text trimmed, YAML as its JSON, an image
    /// as a `data:` URI; code, PDFs, audio and video are refused.
    /// The `file://` vars read (a JSON/YAML/text file's contents); what
    /// could not be read, for the row's error (promptfoo errors only the
    /// rows that use a missing file: so does evalhost, warning once).
    pub(super) fn load_file_vars(
        &mut self,
        vars: &mut Map<String, Value>,
        at: &KeyPath,
        cache: &mut std::collections::HashMap<PathBuf, Result<Value, String>>,
    ) -> Option<String> {
        let mut failed = None;
        let names: Vec<String> = vars
            .iter()
            .filter(|(_, v)| v.as_str().is_some_and(|s| s.starts_with("file://")))
            .map(|(k, _)| k.clone())
            .collect();
        for name in names {
            let spec = vars[&name].as_str().unwrap_or_default().to_owned();
            let rel = &spec["file://".len()..];
            // Code that computes the var runs per prompt and provider
            // (`Reader::computed`).
            if code_var(&spec).is_some() {
                continue;
            }
            // A file that is not there errors the rows (below); one outside
            // the project is refused.
            let path = match self.options.roots.relative(rel, &self.dir) {
                Ok(path) => path,
                Err(e @ crate::roots::PathError::NotFound { .. }) => {
                    let message = format!("var `{name}`: `{spec}`: {e}");
                    self.warn_once(
                        &at.key(&name),
                        format!("{message}; the rows that use it are errors (`failure_class: input`), as promptfoo makes them"),
                    );
                    failed.get_or_insert(message);
                    continue;
                }
                Err(e) => {
                    self.error(&at.key(&name), format!("var `{name}`: `{spec}`: {e}"));
                    continue;
                }
            };
            // A file that is there but that evalhost cannot read as promptfoo
            // does (code that computes the var, an unsupported kind) is
            // refused: promptfoo would read it.
            match cache
                .entry(path.clone())
                .or_insert_with(|| load_var_file(&path))
                .clone()
            {
                Ok(v) => {
                    vars.insert(name, v);
                }
                Err(e) => {
                    self.error(&at.key(&name), format!("var `{name}`: `{spec}`: {e}"));
                }
            }
        }
        failed
    }
}

/// promptfoo's `doesPromptRefMatch`: a prompt's label or id equal to the
/// reference, starting with it before a `*`, or with `ref:`.
pub(super) fn prompt_ref_matches(r: &str, prompt: &Prompt) -> bool {
    let id = prompt.id.as_deref();
    prompt.label == r
        || id == Some(r)
        || r.strip_suffix('*')
            .is_some_and(|p| prompt.label.starts_with(p) || id.is_some_and(|i| i.starts_with(p)))
        || prompt.label.starts_with(&format!("{r}:"))
        || id.is_some_and(|i| i.starts_with(&format!("{r}:")))
}

/// `defaultTest` merged into a test, as promptfoo does: vars, metadata
/// shallow (the test's win), the default's assertions first, its threshold
/// when the test has none.
pub(super) fn merge_default(d: &Row, mut row: Row) -> Row {
    let mut vars = d.vars.clone();
    vars.extend(std::mem::take(&mut row.vars));
    row.vars = vars;
    let mut metadata = d.metadata.clone();
    metadata.extend(std::mem::take(&mut row.metadata));
    row.metadata = metadata;
    let mut assert = d.assert.clone();
    assert.append(&mut row.assert);
    row.assert = assert;
    row.threshold = row.threshold.or(d.threshold);
    // `options` merged shallowly, key by key, the test's winning.
    if row.transform.is_none() {
        row.transform = d.transform.clone();
    }
    let mut provider_options = d.provider_options.clone();
    provider_options.extend(std::mem::take(&mut row.provider_options));
    row.provider_options = provider_options;
    if row.transform_vars.is_none() {
        row.transform_vars = d.transform_vars.clone();
    }
    if row.postprocess.is_none() {
        row.postprocess = d.postprocess.clone();
    }
    if row.grading.rubric_prompt.is_none() {
        row.grading.rubric_prompt = d.grading.rubric_prompt.clone();
    }
    if row.grading.factuality.is_none() {
        row.grading.factuality = d.grading.factuality.clone();
    }
    if row.prompts.is_none() {
        row.prompts = d.prompts.clone();
    }
    // A default's own unread keys do not reach the test (promptfoo
    // merges the keys it knows).
    row
}

/// One `file://` var's value, as promptfoo loads it.
pub(super) fn load_var_file(path: &Path) -> Result<Value, String> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    const IMAGES: &[(&str, &str)] = &[
        ("jpg", "image/jpeg"),
        ("jpeg", "image/jpeg"),
        ("png", "image/png"),
        ("gif", "image/gif"),
        ("bmp", "image/bmp"),
        ("webp", "image/webp"),
        ("svg", "image/svg+xml"),
        ("tif", "image/tiff"),
        ("tiff", "image/tiff"),
        ("ico", "image/x-icon"),
        ("avif", "image/avif"),
        ("heic", "image/heic"),
        ("heif", "image/heif"),
    ];
    match ext.as_str() {
        "ts" | "mts" | "cts" => {
            return Err("a var computed by TypeScript is not run by this version of evalhost; compile it to a .js file, which evalhost runs in its sandbox".into());
        }
        "pdf" => {
            return Err(
                "promptfoo extracts a PDF's text; this version of evalhost does not".into(),
            );
        }
        "mp3" | "wav" | "ogg" | "flac" | "m4a" | "aac" | "mp4" | "webm" | "mov" | "avi" | "mkv" => {
            return Err("audio and video vars are not read by this version of evalhost".into());
        }
        _ => {}
    }
    if let Some((_, mime)) = IMAGES.iter().find(|(e, _)| *e == ext) {
        let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
        if !meta.is_file() {
            return Err("not a regular file".into());
        }
        if meta.len() > crate::limits::MAX_FILE_BYTES {
            return Err(format!(
                "larger than {} MiB",
                crate::limits::MAX_FILE_BYTES >> 20
            ));
        }
        let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
        use base64::Engine as _;
        let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
        // The file's magic number wins over its extension, as in promptfoo.
        let detected = [
            ("/9j/", "image/jpeg"),
            ("iVBORw0KGgo", "image/png"),
            ("R0lGODlh", "image/gif"),
            ("R0lGODdh", "image/gif"),
            ("UklGR", "image/webp"),
            ("Qk0", "image/bmp"),
            ("Qk1", "image/bmp"),
            ("SUkq", "image/tiff"),
            ("TU0A", "image/tiff"),
            ("AAABAA", "image/x-icon"),
        ]
        .iter()
        .find(|(magic, _)| data.starts_with(magic))
        .map_or(*mime, |(_, m)| *m);
        return Ok(Value::String(format!("data:{detected};base64,{data}")));
    }
    let text = crate::roots::read_regular_text(path, crate::limits::MAX_FILE_BYTES)?;
    if ext == "yaml" || ext == "yml" {
        let v = crate::yaml::parse(&text).map_err(|e| e.to_string())?;
        return Ok(Value::String(v.to_string()));
    }
    Ok(Value::String(text.trim().to_owned()))
}

impl Reader {
    /// Each row (with `defaultTest` merged, its `transformVars` run, its
    /// var lists expanded and its `file://` vars read) rendered with each
    /// prompt into tests, as promptfoo prepares them.
    pub(super) fn expand(
        &mut self,
        rows: Vec<Row>,
        default_test: Option<&Row>,
        prompts: &[Prompt],
        renderer: &Renderer,
    ) -> Vec<TestCase> {
        let mut tests = Vec::new();
        let mut ids = std::collections::HashSet::new();
        let mut var_files: std::collections::HashMap<PathBuf, Result<Value, String>> =
            std::collections::HashMap::new();
        let mut overlays = std::collections::HashMap::new();
        let mut failed_transforms = std::collections::HashSet::new();
        // Every reference must name a prompt, or promptfoo refuses the
        // config (`validateTestPromptReferences`).
        let mut checked = std::collections::HashSet::new();
        for row in rows.iter().chain(default_test) {
            let Some((refs, at)) = &row.prompts else {
                continue;
            };
            if !checked.insert(at.clone()) {
                continue;
            }
            for r in refs {
                if !prompts.iter().any(|p| prompt_ref_matches(r, p)) {
                    let mut available: Vec<&str> = prompts
                        .iter()
                        .flat_map(|p| [Some(p.label.as_str()), p.id.as_deref()])
                        .flatten()
                        .filter(|s| !s.is_empty())
                        .collect();
                    available.sort_unstable();
                    available.dedup();
                    self.error(
                        at,
                        format!(
                            "references prompt \"{r}\" which does not exist (promptfoo refuses it too). Available prompts: [{}]",
                            available.join(", ")
                        ),
                    )
                    .hint = Some("a test's `prompts` names prompts by label or id, `name*` for a prefix, or `group` for labels starting `group:`".into());
                }
            }
        }
        for (n, row) in rows.into_iter().enumerate() {
            let mut row = match &default_test {
                Some(d) => merge_default(d, row),
                None => row,
            };
            // `transformVars` rewrites the test's vars before they expand.
            // One that fails stops promptfoo's whole eval, and the config
            // is refused at the option: a transform that failed once (the
            // same code: `defaultTest`'s is every test's) is not called
            // again for the next test (a loop cost a deadline per test).
            if let Some((transform, tat)) = row.transform_vars.clone() {
                let code = transform.to_string();
                if failed_transforms.contains(&code) {
                    continue;
                }
                match self.transform_vars(&transform, &tat, &row.vars, n) {
                    Some(v) => row.vars = v,
                    None => {
                        failed_transforms.insert(code);
                        continue;
                    }
                }
            }
            let Some(combos) =
                crate::vars::cartesian(&row.vars, crate::vars::EmptyList::Keep, MAX_ROWS)
                    .filter(|c| c.len() * prompts.len() <= MAX_ROWS)
            else {
                self.error(&row.at.key("vars"), format!("these vars expand into more tests than evalhost reads from one config ({MAX_ROWS})"));
                continue;
            };
            for (k, written) in combos.iter().enumerate() {
                let mut vars = written.clone();
                let unread = self.load_file_vars(&mut vars, &row.at.key("vars"), &mut var_files);
                let vars = &vars;
                for (p, prompt) in prompts.iter().enumerate() {
                    // promptfoo's `isAllowedPrompt` of the test's `prompts`.
                    if let Some((refs, _)) = &row.prompts
                        && !refs.iter().any(|r| prompt_ref_matches(r, prompt))
                    {
                        continue;
                    }
                    let base = row
                        .description
                        .clone()
                        .unwrap_or_else(|| format!("test-{}", n + 1));
                    let mut id = base.clone();
                    if combos.len() > 1 {
                        id.push_str(&format!(" #{}", k + 1));
                    }
                    if prompts.len() > 1 {
                        // A prompt's own label when it was given one.
                        if prompt.label != prompt.raw && !prompt.label.starts_with("file://") {
                            id.push_str(&format!(" @{}", prompt.label));
                        } else {
                            id.push_str(&format!(" @prompt-{}", p + 1));
                        }
                    }
                    let mut unique = id.clone();
                    let mut i = 2;
                    while !ids.insert(unique.clone()) {
                        unique = format!("{id} ~{i}");
                        i += 1;
                    }
                    // Vars and a prompt computed by code: per provider,
                    // the test split where providers got different ones.
                    let computed = self.computed(vars, prompt, &row.at.key("vars"));
                    let variants: Vec<(&Map<String, Value>, &Prompt, Option<&Computed>)> =
                        match &computed {
                            None => vec![(vars, prompt, None)],
                            Some(list) => {
                                list.iter().map(|c| (&c.vars, &c.prompt, Some(c))).collect()
                            }
                        };
                    for (vars, prompt, variant) in variants {
                        let Some(mut test) =
                            self.test(&row, vars, prompt, unique.clone(), renderer)
                        else {
                            continue;
                        };
                        if let Some(e) = variant.and_then(|v| v.error.clone()) {
                            test.input_error = Some(e);
                        }
                        if test.input_error.is_none() {
                            test.input_error = unread.clone();
                        }
                        if let Some(t) = variant.and_then(|v| v.targets.clone()) {
                            test.targets = Some(t);
                        }
                        // promptfoo's `mergeProviderPromptConfig`: the
                        // prompt's config, then the test's options, over
                        // each provider's config for these calls.
                        if !prompt.config.is_empty() || !row.provider_options.is_empty() {
                            let mut overlay = prompt.config.clone();
                            overlay.extend(row.provider_options.clone());
                            test.target_params = self.target_params(
                                &overlay,
                                &row.at.key("options"),
                                renderer,
                                &mut overlays,
                            );
                        }
                        if !test.comparisons.is_empty() {
                            test.compare_group = Some(format!("{n}/{k}"));
                        }
                        // Rows show the vars as written (`file://…`), as
                        // promptfoo's results do; templates saw the contents.
                        if written != vars {
                            test.metadata
                                .insert("vars".into(), Value::Object(written.clone()));
                        }
                        tests.extend(self.with_providers(test, vars, renderer));
                    }
                }
            }
        }
        tests
    }
}
