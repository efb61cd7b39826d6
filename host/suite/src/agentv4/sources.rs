//! Where tests come from: inline lists, `file://` references and globs,
//! YAML and JSONL cases files, and case directories (`<id>/case.yaml`).

use super::*;

impl Loader {
    pub(super) fn expand_tests(
        &mut self,
        doc: &Arc<Doc>,
        value: Value,
        at: &KeyPath,
    ) -> Vec<RawCase> {
        match value {
            Value::Array(items) => {
                let mut cases = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let item_at = at.index(i);
                    match item {
                        Value::Object(map) => cases.push(RawCase {
                            map: RawBody::Map(map),
                            doc: doc.clone(),
                            at: item_at,
                            dir_id: None,
                            workspace_dir: None,
                        }),
                        Value::String(s) if s.starts_with("file://") => {
                            cases.extend(self.file_reference(doc, &s["file://".len()..], &item_at));
                        }
                        Value::String(s) => {
                            self.error(doc, &item_at, format!("a test entry that is a string must be a file reference, got {s:?}"))
                                .hint = Some(format!("write `file://{s}` to load cases from that file"));
                        }
                        other => {
                            self.error(
                                doc,
                                &item_at,
                                format!("a test case must be a mapping, got {}", kind(&other)),
                            );
                        }
                    }
                }
                cases
            }
            Value::String(s) => {
                let rel = s.strip_prefix("file://").unwrap_or(&s);
                match self.roots.relative(rel, &doc.dir) {
                    Ok(path) if path.is_dir() => self.discover(doc, &path, at),
                    Ok(path) => self.case_file(doc, &path, at),
                    Err(err) => {
                        self.path_error(doc, at, rel, &err);
                        Vec::new()
                    }
                }
            }
            other => {
                self.error(
                    doc,
                    at,
                    format!(
                        "`tests` must be a list of cases, a file or a directory, got {}",
                        kind(&other)
                    ),
                );
                Vec::new()
            }
        }
    }

    /// A `file://` entry inside a tests list: a file, or a glob (sorted).
    pub(super) fn file_reference(
        &mut self,
        doc: &Arc<Doc>,
        pattern: &str,
        at: &KeyPath,
    ) -> Vec<RawCase> {
        if !pattern.contains(['*', '?', '{', '[']) {
            return match self.roots.relative(pattern, &doc.dir) {
                Ok(path) => self.case_file(doc, &path, at),
                Err(err) => {
                    self.path_error(doc, at, pattern, &err);
                    Vec::new()
                }
            };
        }
        let matches = match self.glob(&doc.dir, pattern) {
            Ok(m) => m,
            Err(GlobError::Invalid(message)) => {
                self.error(doc, at, format!("invalid glob `{pattern}`: {message}"));
                return Vec::new();
            }
            Err(GlobError::Path(err)) => {
                self.path_error(doc, at, pattern, &err);
                return Vec::new();
            }
        };
        if matches.is_empty() {
            self.warning(doc, at, format!("glob `{pattern}` matched no files"));
        }
        let mut cases = Vec::new();
        for path in matches {
            match self.roots.contain(&path) {
                Ok(path) => cases.extend(self.case_file(doc, &path, at)),
                Err(err) => self.path_error(doc, at, &path.display().to_string(), &err),
            }
        }
        cases
    }

    /// Files under `base` matching `pattern`, sorted. The walk starts at
    /// the pattern's literal prefix, which must be inside the project root
    /// (nothing outside it is even listed), and goes only as deep as the
    /// pattern can match (unbounded only below a `**`).
    pub(super) fn glob(&self, base: &Path, pattern: &str) -> Result<Vec<PathBuf>, GlobError> {
        let is_glob = |c: &std::path::Component<'_>| {
            c.as_os_str()
                .to_string_lossy()
                .contains(['*', '?', '{', '['])
        };
        let components: Vec<_> = Path::new(pattern.trim_start_matches("./"))
            .components()
            .collect();
        let split = components
            .iter()
            .position(is_glob)
            .unwrap_or(components.len());
        let literal: PathBuf = components[..split].iter().collect();
        let rest: PathBuf = components[split..].iter().collect();
        let matcher = globset::GlobBuilder::new(&rest.to_string_lossy())
            .literal_separator(true)
            .build()
            .map_err(|e| GlobError::Invalid(e.to_string()))?
            .compile_matcher();
        let start = match self.roots.relative(&literal.to_string_lossy(), base) {
            Ok(start) => start,
            Err(PathError::NotFound { .. }) => return Ok(Vec::new()),
            Err(err) => return Err(GlobError::Path(err)),
        };
        let deep = components[split..]
            .iter()
            .any(|c| c.as_os_str().to_string_lossy().contains("**"));
        let depth = if deep {
            usize::MAX
        } else {
            components.len() - split
        };
        let mut found: Vec<PathBuf> = walkdir::WalkDir::new(&start)
            .follow_links(false)
            .min_depth(1)
            .max_depth(depth)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file() || e.file_type().is_symlink())
            .filter(|e| {
                e.path()
                    .strip_prefix(&start)
                    .is_ok_and(|relative| matcher.is_match(relative))
            })
            .map(walkdir::DirEntry::into_path)
            .collect();
        found.sort();
        Ok(found)
    }

    /// A file of cases: YAML (a list) or JSONL (one per line).
    pub(super) fn case_file(&mut self, from: &Arc<Doc>, path: &Path, at: &KeyPath) -> Vec<RawCase> {
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        match extension.as_str() {
            "yaml" | "yml" => {
                if std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
                    self.warning(
                        from,
                        at,
                        format!("cases file {} is empty", self.display(path).display()),
                    );
                    return Vec::new();
                }
                let Some((value, doc)) = self.read_yaml(path, Some((from, at))) else {
                    return Vec::new();
                };
                match value {
                    Value::Array(items) => items
                        .into_iter()
                        .enumerate()
                        .filter_map(|(i, item)| match item {
                            Value::Object(map) => Some(RawCase {
                                map: RawBody::Map(map),
                                doc: doc.clone(),
                                at: KeyPath::default().index(i),
                                dir_id: None,
                                workspace_dir: None,
                            }),
                            other => {
                                self.error(
                                    &doc,
                                    &KeyPath::default().index(i),
                                    format!("a test case must be a mapping, got {}", kind(&other)),
                                );
                                None
                            }
                        })
                        .collect(),
                    Value::Null => {
                        self.warning(&doc, &KeyPath::default(), "cases file is empty");
                        Vec::new()
                    }
                    other => {
                        self.error(&doc, &KeyPath::default(), format!("a cases file must be a YAML list of test cases, got {}", kind(&other)))
                            .hint = Some("write the cases as a list (`- id: ...`), or use `tests: ./dir/` for a directory of case.yaml".into());
                        Vec::new()
                    }
                }
            }
            "jsonl" => self.read_jsonl(path, Some((from, at))).unwrap_or_default(),
            other => {
                self.error(
                    from,
                    at,
                    format!(
                        "unsupported cases file format `.{other}` ({})",
                        self.display(path).display()
                    ),
                )
                .hint = Some("cases files are .yaml, .yml or .jsonl".into());
                Vec::new()
            }
        }
    }

    /// One case per non-blank line.
    pub(super) fn read_jsonl(
        &mut self,
        path: &Path,
        from: Option<(&Arc<Doc>, &KeyPath)>,
    ) -> Option<Vec<RawCase>> {
        let display = Arc::new(if path == self.eval_display.as_path() {
            path.to_path_buf()
        } else {
            self.display(path)
        });
        let text = self.read_text(path, &display, from.map(|(d, k)| (&**d, k)), MAX_FILE_BYTES)?;
        let mut map = SourceMap::default();
        let mut lines = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let at = KeyPath::default().index(lines.len());
            map.insert(
                at.clone(),
                Pos {
                    line: n + 1,
                    col: 1,
                },
            );
            lines.push((n + 1, at, line));
        }
        let doc = Arc::new(Doc {
            display: display.clone(),
            dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            map: Arc::new(map),
        });
        if lines.is_empty() {
            if let Some((from_doc, at)) = from {
                self.warning(
                    from_doc,
                    at,
                    format!("cases file {} is empty", display.display()),
                );
            }
            return Some(Vec::new());
        }
        // Lines are parsed when their test is built (see `RawBody::Line`).
        let shared: Arc<str> = Arc::from(text.as_str());
        let cases = lines
            .into_iter()
            .map(|(line_no, at, line)| {
                let start = line.as_ptr() as usize - text.as_ptr() as usize;
                RawCase {
                    map: RawBody::Line {
                        text: shared.clone(),
                        range: start..start + line.len(),
                        line_no,
                    },
                    doc: doc.clone(),
                    at,
                    dir_id: None,
                    workspace_dir: None,
                }
            })
            .collect();
        Some(cases)
    }

    /// A directory of cases: each immediate subdirectory with a `case.yaml`
    /// (or `case.yml`) is a case named after it, in sorted order.
    pub(super) fn discover(&mut self, from: &Arc<Doc>, dir: &Path, at: &KeyPath) -> Vec<RawCase> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(err) => {
                self.error(
                    from,
                    at,
                    format!(
                        "cannot read the case directory {}: {err}",
                        self.display(dir).display()
                    ),
                );
                return Vec::new();
            }
        };
        let mut subdirs: Vec<(String, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
            .collect();
        // Plain code-unit order, as AgentV sorts (upper case before lower).
        subdirs.sort_by(|a, b| a.0.cmp(&b.0));
        let mut cases = Vec::new();
        for (name, sub) in subdirs {
            let sub = match self.roots.contain(&sub) {
                Ok(s) => s,
                Err(err) => {
                    self.path_error(
                        from,
                        at,
                        &format!("{}/{name}", self.display(dir).display()),
                        &err,
                    );
                    continue;
                }
            };
            let Some(case_file) = ["case.yaml", "case.yml"]
                .iter()
                .map(|f| sub.join(f))
                .find(|p| p.is_file())
            else {
                self.warning(
                    from,
                    at,
                    format!("skipping directory `{name}`: no case.yaml found"),
                )
                .hint = Some(format!(
                    "add {}/case.yaml to make it a test case",
                    self.display(&sub).display()
                ));
                continue;
            };
            let Some((value, doc)) = self.read_yaml(&case_file, Some((from, at))) else {
                continue;
            };
            let Value::Object(map) = value else {
                self.error(
                    &doc,
                    &KeyPath::default(),
                    format!(
                        "case.yaml must be a mapping (one test case), got {}",
                        kind(&value)
                    ),
                );
                continue;
            };
            let mut workspace_dir = sub.join("workspace");
            if workspace_dir.is_dir() {
                match self.roots.contain(&workspace_dir) {
                    Ok(real) => workspace_dir = real,
                    Err(err) => {
                        let shown = self.display(&workspace_dir).display().to_string();
                        self.path_error(from, at, &shown, &err);
                        continue;
                    }
                }
            }
            cases.push(RawCase {
                map: RawBody::Map(map),
                doc,
                at: KeyPath::default(),
                dir_id: Some(name),
                workspace_dir: workspace_dir.is_dir().then_some(workspace_dir),
            });
        }
        cases
    }
}
