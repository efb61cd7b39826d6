//! `prompts`: inline templates, `{raw, label, id}` objects, `{path: label}`
//! maps and files (`.txt` split on `---`, JSON chats, YAML, JSONL,
//! Markdown, globs), as promptfoo's `processPrompts` reads them; and the
//! config-relative file reading every part of the reader shares.

use super::*;

impl Reader {
    pub(super) fn prompts(
        &mut self,
        value: Option<&Value>,
        at: &KeyPath,
        renderer: &Renderer,
    ) -> Vec<Prompt> {
        let items: Vec<(Value, KeyPath)> = match value {
            None | Some(Value::Null) => {
                return vec![Prompt {
                    raw: "{{prompt}}".into(),
                    label: "{{prompt}}".into(),
                    id: None,
                    config: Map::new(),
                    function: None,
                }];
            }
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (v.clone(), at.index(i)))
                .collect(),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(path, label)| (json!({"id": path, "label": label}), at.key(path)))
                .collect(),
            Some(other) => vec![(other.clone(), at.clone())],
        };
        let mut out: Vec<Prompt> = Vec::new();
        for (item, iat) in items {
            let first = out.len();
            self.prompt_item(item, &iat, &mut out);
            // A template evalhost cannot render as Nunjucks does: refused
            // here, at the prompt's own line (not at each test's).
            for p in &out[first..] {
                if let Some(why) = renderer.refused_in(&Value::String(p.raw.clone())) {
                    self.error(&iat, format!("this prompt cannot be rendered as Nunjucks renders it: {why}"))
                        .hint = Some("rewrite it without that construct; every other Nunjucks construct renders as in promptfoo".into());
                }
            }
        }
        out
    }

    /// One entry of `prompts:`, its prompts appended to `out`.
    fn prompt_item(&mut self, item: Value, at: &KeyPath, out: &mut Vec<Prompt>) {
        let iat = at.clone();
        {
            match item {
                Value::String(s) => out.extend(self.prompt_source(&s, None, &iat)),
                Value::Object(o) => {
                    let label = o.get("label").and_then(Value::as_str).map(str::to_owned);
                    for key in o.keys() {
                        match key.as_str() {
                            "raw" | "id" | "label" => {}
                            "config" if o["config"].is_object() => {}
                            "config" => {
                                self.error(
                                    &iat.key("config"),
                                    "a prompt's `config` must be a mapping of provider settings",
                                );
                            }
                            // promptfoo keeps a prompt object's other keys
                            // and reads none of them (`file:` among them):
                            // ignored, said.
                            other => {
                                self.warning(&iat.key(other), format!("`{other}` of a prompt is not read by promptfoo, nor by evalhost"))
                                    .hint = Some("a prompt takes `raw` or `id`, `label` and `config`".into());
                            }
                        }
                    }
                    // Merged into each provider's config for the calls with
                    // this prompt (`mergeProviderPromptConfig`).
                    let config = o
                        .get("config")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default();
                    match (
                        o.get("raw").and_then(Value::as_str),
                        o.get("id").and_then(Value::as_str),
                    ) {
                        // promptfoo's `normalizeInput` makes an object's
                        // `raw` (else its `id`) the path or text that
                        // `processPrompt` reads: a `raw` that looks like a
                        // path is a file, as a plain string is.
                        (Some(raw), id) if maybe_file_path(raw) => {
                            out.extend(self.prompt_source(raw, label, &iat).into_iter().map(|p| {
                                Prompt {
                                    config: config.clone(),
                                    id: id.map(str::to_owned).or(p.id),
                                    ..p
                                }
                            }))
                        }
                        (Some(raw), id) => out.push(Prompt {
                            raw: raw.to_owned(),
                            label: label.unwrap_or_else(|| raw.to_owned()),
                            id: id.map(str::to_owned),
                            config,
                            function: None,
                        }),
                        (None, Some(id)) => {
                            out.extend(self.prompt_source(id, label, &iat).into_iter().map(|p| {
                                Prompt {
                                    config: config.clone(),
                                    ..p
                                }
                            }))
                        }
                        (None, None) => {
                            self.error(
                                &iat,
                                "a prompt object needs `raw` (the template) or `id` (a file://)",
                            );
                        }
                    }
                }
                Value::Array(_) => {
                    self.error(&iat, "a chat prompt cannot be written as a nested list in promptfoo (\"Invalid prompt\")")
                        .hint = Some("put the messages in a JSON or YAML file and write `file://chat.json`".into());
                }
                other => {
                    self.error(
                        &iat,
                        format!(
                            "a prompt must be text, an object or a file://, got {}",
                            crate::agentv4::kind(&other)
                        ),
                    );
                }
            }
        }
    }

    /// A prompt string: inline text, or (when it looks like a path, as
    /// promptfoo's `maybeFilePath` decides) the prompts of a file or glob.
    pub(super) fn prompt_source(
        &mut self,
        value: &str,
        label: Option<String>,
        at: &KeyPath,
    ) -> Vec<Prompt> {
        if !maybe_file_path(value) {
            return vec![Prompt {
                raw: value.to_owned(),
                label: label.unwrap_or_else(|| value.to_owned()),
                id: None,
                config: Map::new(),
                function: None,
            }];
        }
        let spec = value.strip_prefix("file://").unwrap_or(value);
        let (spec, function) = match spec.rsplit_once(':') {
            Some((p, f))
                if !f.contains('/')
                    && (p.ends_with(".js")
                        || p.ends_with(".py")
                        || p.ends_with(".ts")
                        || p.ends_with(".mjs")
                        || p.ends_with(".cjs")) =>
            {
                (p, Some(f))
            }
            _ => (spec, None),
        };
        let ext = Path::new(spec)
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        if matches!(ext.as_str(), "js" | "ts" | "mjs" | "cjs" | "py") || function.is_some() {
            return self
                .prompt_function(value, spec, function, &ext, label, at)
                .into_iter()
                .collect();
        }
        let files = match self.glob(spec, at) {
            Some(f) => f,
            None => return Vec::new(),
        };
        if files.is_empty() {
            self.error(at, format!("There are no prompts in `{value}`: no file matches"))
                .hint = Some("a one-line prompt with `/` or a file-like ending is read as a path, as in promptfoo; give it as `{raw: ...}`".into());
            return Vec::new();
        }
        let mut out = Vec::new();
        for file in files {
            let Some(text) = self.read_file(&file, at) else {
                continue;
            };
            let shown = file
                .strip_prefix(&self.dir)
                .map_or_else(|_| file.display().to_string(), |p| p.display().to_string());
            let id = format!("file://{shown}");
            let fext = file
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or("")
                .to_ascii_lowercase();
            let parts: Vec<String> = match fext.as_str() {
                // promptfoo's `processJsonFile`: the JSON re-serialised
                // as `JSON.stringify` writes it (compact), else the text.
                "json" => vec![match serde_json::from_str::<Value>(&text) {
                    Ok(v) => crate::nunjucks::json_stringify(&v),
                    Err(_) => text.clone(),
                }],
                "yaml" | "yml" => match crate::yaml::parse(&text) {
                    Ok(v) => vec![match v {
                        Value::String(s) => s,
                        other => other.to_string(),
                    }],
                    Err(e) => {
                        self.error(
                            at,
                            format!("{}: invalid YAML: {}", file.display(), e.message),
                        );
                        continue;
                    }
                },
                "jsonl" => text
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(str::to_owned)
                    .collect(),
                "md" | "j2" => vec![text.clone()],
                _ => split_prompts(&text),
            };
            let many = parts.len() > 1;
            for (i, raw) in parts.into_iter().enumerate() {
                let label = match (&label, many) {
                    (Some(l), _) => l.clone(),
                    (None, true) => format!("{id}: {}", first_line(&raw)),
                    (None, false) => id.clone(),
                };
                let _ = i;
                out.push(Prompt {
                    raw,
                    label,
                    id: Some(id.clone()),
                    config: Map::new(),
                    function: None,
                });
            }
        }
        out
    }

    /// A prompt function (promptfoo's `processJsFile`/`processPythonFile`):
    /// `file://prompt.js[:fn]` (the module's function, or its own `fn`),
    /// `file://prompt.py:fn`, or `file://prompt.py` (the whole script, run
    /// with the context as `sys.argv[1]`, its printed text the prompt). Run
    /// per test and provider in the sandbox by [`Reader::prompt_for`].
    pub(super) fn prompt_function(
        &mut self,
        value: &str,
        spec: &str,
        function: Option<&str>,
        ext: &str,
        label: Option<String>,
        at: &KeyPath,
    ) -> Option<Prompt> {
        let language = match ext {
            "js" | "mjs" | "cjs" => crate::code::Language::JavaScript,
            "py" => crate::code::Language::Python,
            _ => {
                self.error(at, format!("the prompt `{value}` is a TypeScript prompt function, which this version of evalhost does not run"))
                    .hint = Some("compile it to a .js file (`npx esbuild prompt.ts --format=cjs --outfile=prompt.js`) and name that; evalhost runs .js and .py prompt functions in its sandbox".into());
                return None;
            }
        };
        if !self.code_available(at, &format!("the prompt function `{value}`")) {
            return None;
        }
        let path = self.relative(spec, &format!("the prompt `{value}`"), at)?;
        let source = self.read_file(&path, at)?;
        let shown = path
            .strip_prefix(self.abs_dir())
            .or_else(|_| path.strip_prefix(&self.dir))
            .map_or_else(|_| path.display().to_string(), |p| p.display().to_string());
        let id = format!("file://{shown}");
        let label = label.unwrap_or_else(|| match (function, language) {
            (Some(f), _) => format!("{id}:{f}"),
            (None, crate::code::Language::JavaScript) => id.clone(),
            (None, crate::code::Language::Python) => format!("{id}: {source}"),
        });
        let esm = ext == "mjs" || (ext != "cjs" && looks_like_esm(&source));
        Some(Prompt {
            raw: source.clone(),
            label,
            id: Some(id),
            config: Map::new(),
            function: Some(Arc::new(crate::code::CodeCall {
                language,
                code: crate::code::Code::File {
                    reference: value.to_owned(),
                    source,
                    function: function.map(str::to_owned),
                    esm,
                    script: language == crate::code::Language::Python && function.is_none(),
                },
                args: Vec::new(),
                provider_arg: None,
            })),
        })
    }

    /// The files a path or glob names, inside the project root.
    pub(super) fn glob(&mut self, spec: &str, at: &KeyPath) -> Option<Vec<PathBuf>> {
        if !spec.contains(['*', '?', '[', '{']) {
            return match self.options.roots.relative(spec, &self.dir) {
                Ok(p) => Some(vec![p]),
                Err(crate::roots::PathError::NotFound { .. }) => Some(Vec::new()),
                Err(e) => {
                    self.error(at, format!("`{spec}`: {e}"));
                    None
                }
            };
        }
        let matcher = match globset::Glob::new(spec) {
            Ok(g) => g.compile_matcher(),
            Err(e) => {
                self.error(at, format!("`{spec}` is not a valid glob: {e}"));
                return None;
            }
        };
        let base = self.abs_dir();
        let mut found: Vec<PathBuf> = walkdir::WalkDir::new(&base)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .filter(|e| {
                e.path()
                    .strip_prefix(&base)
                    .is_ok_and(|rel| matcher.is_match(rel))
            })
            .filter_map(|e| self.options.roots.contain(e.path()).ok())
            .collect();
        found.sort();
        Some(found)
    }

    /// `path`, relative to the config, inside the project root; an error
    /// naming it as `shown` when it is not.
    pub(super) fn relative(&mut self, path: &str, shown: &str, at: &KeyPath) -> Option<PathBuf> {
        match self.options.roots.relative(path, &self.dir) {
            Ok(p) => Some(p),
            Err(e) => {
                self.error(at, format!("{shown}: {e}"));
                None
            }
        }
    }

    /// A YAML or JSON file the config names, inside the project root,
    /// parsed.
    pub(super) fn structured_file(&mut self, rel: &str, at: &KeyPath) -> Option<Value> {
        let path = self.relative(rel, &format!("`file://{rel}`"), at)?;
        let text = self.read_file(&path, at)?;
        match crate::yaml::parse(&text) {
            Ok(v) => Some(v),
            Err(e) => {
                self.error(at, format!("{}: {e}", path.display()));
                None
            }
        }
    }

    pub(super) fn read_file(&mut self, file: &Path, at: &KeyPath) -> Option<String> {
        match crate::roots::read_regular_text(file, crate::limits::MAX_FILE_BYTES) {
            Ok(t) => Some(t),
            Err(e) => {
                self.error(at, format!("cannot read {}: {e}", file.display()));
                None
            }
        }
    }
}

/// promptfoo's `maybeFilePath`: no newline (nor a prompt-manager URL),
/// and `file://`, a prompt file's extension ending the last or the
/// second-to-last `:`-separated part (`prompt.json`, `p.py:fn`), a dot 3rd
/// or 4th from the end, or a `/`, `\` or `*`.
pub(super) fn maybe_file_path(s: &str) -> bool {
    const EXTENSIONS: &[&str] = &[
        ".cjs", ".cts", ".j2", ".js", ".json", ".jsonl", ".md", ".mjs", ".mts", ".py", ".ts",
        ".txt", ".yml", ".yaml",
    ];
    if ["\n", "portkey://", "langfuse://", "helicone://"]
        .iter()
        .any(|f| s.contains(f))
    {
        return false;
    }
    let tokens: Vec<&str> = s.split(':').collect();
    let last = tokens.last().copied();
    let before = tokens.len().checked_sub(2).map(|i| tokens[i]);
    let extension = EXTENSIONS.iter().any(|ext| {
        last.is_some_and(|t| t.ends_with(ext)) || before.is_some_and(|t| t.ends_with(ext))
    });
    if s.starts_with("file://") || extension || s.contains(['/', '\\', '*']) {
        return true;
    }
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len();
    (n >= 3 && chars[n - 3] == '.') || (n >= 4 && chars[n - 4] == '.')
}

/// A prompt file's prompts: parts between lines that are exactly `---`.
pub(super) fn split_prompts(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = Vec::new();
    for line in text.lines() {
        if line.trim_end() == "---" {
            parts.push(current.join("\n"));
            current.clear();
        } else {
            current.push(line);
        }
    }
    parts.push(current.join("\n"));
    parts
        .into_iter()
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect()
}

pub(super) fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    match line.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}
