//! `${{ VAR }}` interpolation (AgentV §1.7) and `.env` files (§1.12).
//!
//! Variables come from the process environment, then from `.env` files in
//! the eval file's directory and each ancestor up to the project root, then
//! the current directory — nearest first, never overriding what is already
//! set. The process environment itself is never modified.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The variables a suite sees.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: HashMap<String, String>,
    /// The `.env` files that were read, nearest first.
    pub files: Vec<PathBuf>,
}

impl Env {
    /// The process environment plus the `.env` files for `eval_dir`.
    pub fn load(eval_dir: &Path, project_root: &Path, cwd: &Path) -> Self {
        let mut env = Self {
            vars: std::env::vars().collect(),
            files: Vec::new(),
        };
        for file in candidates(eval_dir, project_root, cwd) {
            if file.is_file() {
                env.read(file);
            }
        }
        env
    }

    /// The operator's variables: the process environment and the `.env`
    /// of the current directory (a regular file, read only when it is not
    /// inside `untrusted_root`, the project of a suite run under
    /// `--sandbox strict`). What a targets file named with `--targets`
    /// sees under strict: the suite's own `.env` files never fill the
    /// operator's commands, URLs and keys.
    pub fn operator(cwd: &Path, untrusted_root: Option<&Path>) -> Self {
        let mut env = Self {
            vars: std::env::vars().collect(),
            files: Vec::new(),
        };
        let file = cwd.join(".env");
        let trusted = match (file.canonicalize(), untrusted_root) {
            (Ok(real), Some(root)) => {
                !real.starts_with(root.canonicalize().unwrap_or_else(|_| root.to_path_buf()))
                    && real.is_file()
            }
            (Ok(real), None) => real.is_file(),
            (Err(_), _) => false,
        };
        if trusted {
            env.read(file);
        }
        env
    }

    /// Only the `.env` files for `eval_dir`, not the process environment:
    /// what an untrusted suite sees under `--sandbox strict`, so that it
    /// cannot copy the operator's secrets (`${{ OPENAI_API_KEY }}`) into
    /// its inputs, and from there into a target or the results. Only
    /// regular files inside the project root count, after following
    /// symbolic links: a `.env` linked to `/proc/self/environ` or to a
    /// credentials file elsewhere, or one in a current directory outside
    /// the project, is not read.
    pub fn load_files_only(eval_dir: &Path, project_root: &Path, cwd: &Path) -> Self {
        let mut env = Self::default();
        for file in candidates(eval_dir, project_root, cwd) {
            let inside = file
                .canonicalize()
                .is_ok_and(|real| real.starts_with(project_root) && real.is_file());
            if inside {
                env.read(file);
            }
        }
        env
    }

    /// Adds `file`'s variables, never overriding one already set.
    fn read(&mut self, file: PathBuf) {
        if self.files.contains(&file) {
            return;
        }
        if let Ok(iter) = dotenvy::from_path_iter(&file) {
            for (key, value) in iter.flatten() {
                self.vars.entry(key).or_insert(value);
            }
        }
        self.files.push(file);
    }

    /// An environment with exactly these variables (for tests).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            files: Vec::new(),
        }
    }

    /// A variable's value.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// Replaces `${{ VAR }}` in every string of `value` (keys untouched).
    /// A string that is exactly one placeholder is coerced to a boolean or a
    /// plain decimal number when its value looks like one. Missing variables
    /// become empty strings, and their names are returned.
    pub fn interpolate(&self, value: &mut Value) -> Vec<String> {
        let mut missing = Vec::new();
        self.walk(value, &mut missing);
        missing.sort();
        missing.dedup();
        missing
    }

    fn walk(&self, value: &mut Value, missing: &mut Vec<String>) {
        match value {
            Value::String(s) if s.contains("${{") => {
                if let Some(new) = self.substitute(s, missing) {
                    *value = new;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.walk(v, missing)),
            Value::Object(map) => map.values_mut().for_each(|v| self.walk(v, missing)),
            _ => {}
        }
    }

    fn substitute(&self, text: &str, missing: &mut Vec<String>) -> Option<Value> {
        let placeholders = find_placeholders(text);
        if placeholders.is_empty() {
            return None;
        }
        let lookup = |name: &str, missing: &mut Vec<String>| match self.get(name) {
            Some(v) => v.to_owned(),
            None => {
                missing.push(name.to_owned());
                String::new()
            }
        };
        if let [(0, end, name)] = placeholders.as_slice()
            && *end == text.len()
        {
            let resolved = lookup(name, missing);
            return Some(coerce(resolved));
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for (start, end, name) in &placeholders {
            out.push_str(&text[last..*start]);
            out.push_str(&lookup(name, missing));
            last = *end;
        }
        out.push_str(&text[last..]);
        Some(Value::String(out))
    }
}

/// The names of every `${{ NAME }}` in the strings of `value`, sorted,
/// each once.
pub fn references(value: &Value) -> Vec<String> {
    fn walk(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::String(s) if s.contains("${{") => {
                out.extend(find_placeholders(s).into_iter().map(|(_, _, n)| n));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            Value::Object(map) => map.values().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, &mut out);
    out.sort();
    out.dedup();
    out
}

/// `(start, end, name)` of each `${{ NAME }}` in `text`.
fn find_placeholders(text: &str) -> Vec<(usize, usize, String)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(rel) = text[from..].find("${{") {
        let start = from + rel;
        let inner_start = start + 3;
        let Some(close) = text[inner_start..].find("}}") else {
            break;
        };
        let inner = &text[inner_start..inner_start + close];
        let name = inner.trim();
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if valid {
            found.push((start, inner_start + close + 2, name.to_owned()));
            from = inner_start + close + 2;
        } else {
            from = inner_start;
        }
    }
    found
}

/// AgentV's whole-value coercion: `true`/`false`, and plain decimals
/// matching `-?(0|[1-9]\d*)(\.\d+)?`.
fn coerce(text: String) -> Value {
    match text.as_str() {
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        _ => {}
    }
    let body = text.strip_prefix('-').unwrap_or(&text);
    let (int, frac) = match body.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (body, None),
    };
    let int_ok = int == "0"
        || (!int.is_empty() && !int.starts_with('0') && int.chars().all(|c| c.is_ascii_digit()));
    let frac_ok = frac.is_none_or(|f| !f.is_empty() && f.chars().all(|c| c.is_ascii_digit()));
    if int_ok && frac_ok {
        if frac.is_none()
            && let Ok(n) = text.parse::<i64>()
        {
            return Value::from(n);
        }
        if let Ok(f) = text.parse::<f64>()
            && let Some(n) = serde_json::Number::from_f64(f)
        {
            return Value::Number(n);
        }
    }
    Value::String(text)
}

/// The `.env` files to look at, nearest first: the eval file's directory
/// and each ancestor up to the project root, then the current directory.
fn candidates(eval_dir: &Path, project_root: &Path, cwd: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in eval_dir.ancestors() {
        dirs.push(dir.to_path_buf());
        if dir == project_root {
            break;
        }
    }
    dirs.push(project_root.to_path_buf());
    dirs.push(cwd.to_path_buf());
    dirs.dedup();
    dirs.into_iter().map(|d| d.join(".env")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn interpolates_partially_and_coerces_whole_values() {
        let env = Env::from_pairs([
            ("HOME", "/home/u"),
            ("N", "5"),
            ("F", "2.50"),
            ("B", "true"),
            ("Z", "00123"),
            ("E", "1e3"),
        ]);
        let mut v = json!({
            "path": "${{ HOME }}/repos/${{MISSING}}",
            "n": "${{ N }}", "f": "${{F}}", "b": "${{ B }}", "z": "${{ Z }}", "e": "${{ E }}",
            "list": ["${{ N }}x", 3, null],
            "${{ N }}": "keys are not touched",
        });
        let missing = env.interpolate(&mut v);
        assert_eq!(missing, ["MISSING"]);
        assert_eq!(v["path"], "/home/u/repos/");
        assert_eq!(v["n"], 5);
        assert_eq!(v["f"], 2.5);
        assert_eq!(v["b"], true);
        assert_eq!(v["z"], "00123");
        assert_eq!(v["e"], "1e3");
        assert_eq!(v["list"], json!(["5x", 3, null]));
        assert!(v.get("${{ N }}").is_some());
    }

    #[test]
    fn invalid_names_are_left_alone() {
        let env = Env::from_pairs([("A", "x")]);
        let mut v = json!("${{ 1A }} and ${{ A }} and ${{ unclosed");
        env.interpolate(&mut v);
        assert_eq!(v, "${{ 1A }} and x and ${{ unclosed");
    }

    #[test]
    fn dotenv_files_nearest_first_without_override() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("evals");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(
            dir.path().join(".env"),
            "EVALHOST_T_A=far\nEVALHOST_T_B=far\n",
        )
        .unwrap();
        std::fs::write(sub.join(".env"), "EVALHOST_T_A=near\n").unwrap();
        let env = Env::load(&sub, dir.path(), dir.path());
        assert_eq!(env.get("EVALHOST_T_A"), Some("near"));
        assert_eq!(env.get("EVALHOST_T_B"), Some("far"));
        assert_eq!(env.files.len(), 2);
    }
}
