//! CSV test files as AgentV 5's `parseCsvCases` reads them: columns, nested
//! vars, `__expectedN` assertions in the mini-syntax, metadata and config
//! columns.

use super::*;

impl Rewriter {
    /// AgentV 5's CSV test file (`parseCsvCases`).
    pub(super) fn csv_tests(&mut self, text: &str, path: &Path, at: &KeyPath) -> Vec<Value> {
        let records = match crate::csv::parse_csv(text) {
            Ok(r) => r,
            Err(e) => {
                self.error(at, format!("{}: {e}", path.display()));
                return Vec::new();
            }
        };
        let Some((header, body)) = records.split_first() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (row_index, record) in body.iter().enumerate() {
            let mut vars = Map::new();
            let mut metadata = Map::new();
            let mut asserts: Vec<Map<String, Value>> = Vec::new();
            let mut configs: Vec<(usize, f64)> = Vec::new();
            let (mut id, mut input, mut prefix, mut suffix) =
                (None, None, String::new(), String::new());
            let (mut criteria, mut metric, mut threshold) = (None, None, None);
            for (name, cell) in header
                .iter()
                .zip(record.iter().chain(std::iter::repeat(&String::new())))
            {
                let key = name.trim();
                if key.is_empty() {
                    continue;
                }
                match key {
                    "id" => id = Some(cell.clone()),
                    "input" => input = Some(cell.clone()),
                    "__prefix" => prefix = cell.clone(),
                    "__suffix" => suffix = cell.clone(),
                    "__description" => criteria = Some(cell.clone()),
                    "__metric" => metric = Some(cell.clone()).filter(|m| !m.is_empty()),
                    "__threshold" => {
                        threshold = cell.trim().parse::<f64>().ok().filter(|t| t.is_finite())
                    }
                    "__provider_output" | "__providerOutput" => {
                        self.error(at, format!("{key} has been removed from CSV imports. Use an explicit deterministic target such as provider: cli for fixed outputs, or use a replay/fixture target for captured provider responses."));
                    }
                    k if k.starts_with("__expected") => {
                        if !cell.trim().is_empty() {
                            match csv_assertion(cell.trim(), path) {
                                Ok(a) => asserts.push(a),
                                Err(e) => {
                                    self.error(
                                        at,
                                        format!("{}: row {}: {e}", path.display(), row_index + 2),
                                    );
                                }
                            }
                        }
                    }
                    k if k.starts_with("__metadata:") => {
                        let mk = &k["__metadata:".len()..];
                        if !cell.trim().is_empty() {
                            match mk.strip_suffix("[]") {
                                Some(list_key) => {
                                    let items: Vec<Value> = split_unescaped_commas(cell)
                                        .into_iter()
                                        .filter(|s| !s.is_empty())
                                        .map(Value::String)
                                        .collect();
                                    metadata.insert(list_key.to_owned(), Value::Array(items));
                                }
                                None => {
                                    metadata.insert(mk.to_owned(), Value::String(cell.clone()));
                                }
                            }
                        }
                    }
                    k if k.starts_with("__config:") => {
                        let rest = &k["__config:".len()..];
                        let (expected_key, config_key) = rest.split_once(':').unwrap_or((rest, ""));
                        if config_key != "threshold" {
                            self.error(
                                at,
                                format!(
                                    "Invalid config key \"{config_key}\" in __config column: {}",
                                    path.display()
                                ),
                            );
                            continue;
                        }
                        let index = if expected_key == "__expected" {
                            Some(0)
                        } else {
                            expected_key
                                .strip_prefix("__expected")
                                .and_then(|n| n.parse::<usize>().ok())
                                .and_then(|n| n.checked_sub(1))
                        };
                        let Some(index) = index else {
                            self.error(at, format!("Invalid expected key \"{expected_key}\" in __config column: {}", path.display()));
                            continue;
                        };
                        match cell.trim().parse::<f64>() {
                            Ok(t) if t.is_finite() => configs.push((index, t)),
                            _ => {
                                self.error(at, format!("Invalid numeric value for threshold in __config column: {}", path.display()));
                            }
                        }
                    }
                    k => assign_csv_var(&mut vars, k, cell),
                }
            }
            let n = asserts.len();
            for (i, a) in asserts.iter_mut().enumerate() {
                if let Some(m) = &metric {
                    let name = if n == 1 {
                        m.clone()
                    } else {
                        format!("{m}-{}", i + 1)
                    };
                    a.insert("metric".into(), Value::String(name));
                }
                if let Some((_, t)) = configs.iter().rev().find(|(ix, _)| *ix == i) {
                    a.insert("min_score".into(), json!(t));
                    metadata.insert("threshold".into(), json!(t));
                }
            }
            let mut test = Map::new();
            test.insert(
                "id".into(),
                Value::String(
                    id.filter(|s| !s.trim().is_empty())
                        .unwrap_or_else(|| format!("row-{}", row_index + 1)),
                ),
            );
            if let Some(i) = input {
                test.insert(
                    "input".into(),
                    Value::String(format!("{prefix}{i}{suffix}")),
                );
            }
            if let Some(c) = criteria.filter(|c| !c.is_empty()) {
                test.insert("criteria".into(), Value::String(c));
            }
            if !asserts.is_empty() {
                test.insert(
                    "assert".into(),
                    Value::Array(asserts.into_iter().map(Value::Object).collect()),
                );
            }
            if let Some(t) = threshold {
                test.insert("run".into(), json!({ "threshold": t }));
            }
            if !vars.is_empty() {
                test.insert("vars".into(), Value::Object(vars));
            }
            if !metadata.is_empty() {
                test.insert("metadata".into(), Value::Object(metadata));
            }
            out.push(Value::Object(test));
        }
        out
    }
}

/// Splits on commas not preceded by a backslash; `\,` becomes `,`.
pub(super) fn split_unescaped_commas(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek() == Some(&',') {
            cur.push(',');
            chars.next();
        } else if c == ',' {
            out.push(cur.trim().to_owned());
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    out.push(cur.trim().to_owned());
    out
}

/// A CSV column that is a var: `vars.a.b` nests, anything else is flat.
pub(super) fn assign_csv_var(vars: &mut Map<String, Value>, key: &str, value: &str) {
    let Some(path) = key.strip_prefix("vars.") else {
        vars.insert(key.to_owned(), Value::String(value.to_owned()));
        return;
    };
    let segments: Vec<&str> = path
        .split('.')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let Some((last, parents)) = segments.split_last() else {
        vars.insert(key.to_owned(), Value::String(value.to_owned()));
        return;
    };
    let mut current = vars;
    for seg in parents {
        let entry = current
            .entry((*seg).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        current = entry.as_object_mut().expect("just made an object");
    }
    current.insert((*last).to_owned(), Value::String(value.to_owned()));
}

/// The assertion types AgentV 5's CSV `__expected` mini-syntax knows.
pub(super) const CSV_TYPES: &[&str] = &[
    "contains",
    "contains-any",
    "contains-all",
    "icontains",
    "icontains-any",
    "icontains-all",
    "starts-with",
    "ends-with",
    "regex",
    "is-json",
    "equals",
    "latency",
    "cost",
];

/// One `__expected` cell as AgentV 5 reads it (`parseAssertionFromString`).
pub(super) fn csv_assertion(expected: &str, path: &Path) -> Result<Map<String, Value>, String> {
    let obj = |v: Value| match v {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    for prefix in ["grade:", "llm-rubric:"] {
        if let Some(rest) = expected.strip_prefix(prefix) {
            return Ok(obj(json!({
                "type": "llm-rubric",
                "value": [rest.trim()],
            })));
        }
    }
    for prefix in ["javascript:", "fn:", "eval:"] {
        if expected.starts_with(prefix) {
            return Err(format!(
                "`{expected}`: inline JavaScript assertions are not run by this version of evalhost"
            ));
        }
    }
    if let Some(rest) = expected.strip_prefix("python:") {
        return Ok(obj(
            json!({"type": "script", "command": ["uv", "run", "python", rest.trim()]}),
        ));
    }
    if let Some(file) = expected.strip_prefix("file://") {
        let file = file.trim();
        if !file.ends_with(".py") {
            return Err(format!(
                "Unsupported promptfoo __expected file assertion \"{expected}\". Only file://*.py script graders are supported."
            ));
        }
        let command_path = if Path::new(file).is_absolute() {
            PathBuf::from(file)
        } else {
            path.parent().unwrap_or(Path::new(".")).join(file)
        };
        return Ok(obj(
            json!({"type": "script", "command": ["uv", "run", "python", command_path.display().to_string()]}),
        ));
    }
    // `[not-]type[(threshold)][:value]`
    let (head, value) = match expected.split_once(':') {
        Some((h, v)) => (h, Some(v)),
        None => (expected, None),
    };
    let (raw_type, threshold_text) = match head.strip_suffix(')').and_then(|h| h.split_once('(')) {
        Some((t, th)) => (t, Some(th)),
        None => (head, None),
    };
    let well_formed = raw_type
        .strip_prefix("not-")
        .unwrap_or(raw_type)
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase())
        && raw_type
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && threshold_text.is_none_or(|t| {
            !t.is_empty()
                && t.chars().all(|c| c.is_ascii_digit() || c == '.')
                && t.parse::<f64>().is_ok()
        });
    if !well_formed {
        return Ok(obj(json!({"type": "equals", "value": expected})));
    }
    let negate = raw_type.starts_with("not-");
    let kind = raw_type.strip_prefix("not-").unwrap_or(raw_type);
    let value = value.map(str::trim);
    let threshold = threshold_text
        .and_then(|t| t.parse::<f64>().ok())
        .or((kind == "starts-with").then_some(0.75));
    if !CSV_TYPES.contains(&kind) {
        if value.is_some() || threshold_text.is_some() {
            return Err(format!(
                "Unsupported promptfoo __expected assertion \"{kind}\". Supported assertion types: {}",
                CSV_TYPES.join(", ")
            ));
        }
        return Ok(obj(json!({"type": "equals", "value": expected})));
    }
    if matches!(kind, "latency" | "cost") && threshold.is_none() {
        return Err(format!(
            "promptfoo __expected {kind} assertion requires a numeric limit, e.g. {kind}(1)"
        ));
    }
    let mut a = Map::new();
    a.insert("type".into(), Value::String(kind.to_owned()));
    if negate {
        a.insert("negate".into(), Value::Bool(true));
    }
    if matches!(
        kind,
        "contains-any" | "contains-all" | "icontains-any" | "icontains-all"
    ) {
        let items: Vec<Value> = value
            .filter(|v| !v.is_empty())
            .map(|v| {
                v.split(',')
                    .map(|i| Value::String(i.trim().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        a.insert("value".into(), Value::Array(items));
    } else if let Some(v) = value {
        a.insert("value".into(), Value::String(v.to_owned()));
    }
    match (kind, threshold) {
        ("latency", Some(t)) => {
            a.insert("threshold".into(), json!(t));
        }
        ("cost", Some(t)) => {
            a.insert("budget".into(), json!(t));
        }
        (_, Some(t)) => {
            a.insert("min_score".into(), json!(t));
        }
        _ => {}
    }
    Ok(a)
}
