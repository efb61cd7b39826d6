//! Code in a config: `javascript` and `python` assertion files read for
//! the sandbox, and the `process.env` reads warned about.

use super::*;

impl Reader {
    /// A `python` assertion's `file://check.py[:function]` (`get_assert` by
    /// default): the source, read now, for the sandboxed Python runner.
    pub(super) fn python_file(&mut self, spec: &str, at: &KeyPath) -> Option<Value> {
        let (file, function) = file_and_function(spec);
        if !file.ends_with(".py") {
            self.error(
                at,
                format!("`{spec}`: a `python` assertion runs a .py file"),
            );
            return None;
        }
        let path = self.relative(file, &format!("`{spec}`"), at)?;
        let source = self.read_file(&path, at)?;
        Some(json!({"reference": spec, "source": source, "function": function}))
    }

    /// A `javascript` assertion's `file://path.js[:function]`: the source,
    /// read now (relative to the config, inside the project), for the
    /// sandboxed engine to evaluate as an ES module (`.mjs`, or `import` /
    /// `export` statements) or CommonJS.
    /// Notes the `process.env` names JavaScript `code` reads.
    pub(super) fn note_env_reads(&mut self, code: &str, at: &KeyPath) {
        let mut rest = code;
        while let Some(i) = rest.find("process.env") {
            rest = &rest[i + "process.env".len()..];
            let name: String = if let Some(r) = rest.strip_prefix('.') {
                r.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
                    .collect()
            } else if let Some(r) = rest.strip_prefix('[') {
                r.trim_start_matches(['\'', '"', '`'])
                    .chars()
                    .take_while(|c| !matches!(c, '\'' | '"' | '`' | ']'))
                    .collect()
            } else {
                String::new()
            };
            let name = if name.is_empty() {
                "process.env".to_owned()
            } else {
                name
            };
            if !self.env_reads.0.contains(&name) {
                self.env_reads.0.push(name);
            }
            self.env_reads.1.get_or_insert_with(|| at.clone());
        }
    }

    /// One warning for every `process.env` read of the config's
    /// `javascript` assertions: promptfoo gives them the machine's
    /// environment, the sandbox none, so their verdicts may differ.
    pub(super) fn warn_env_reads(&mut self) {
        let (names, at) = std::mem::take(&mut self.env_reads);
        if let Some(at) = at {
            self.warning(
                &at,
                format!(
                    "`javascript` assertions read `process.env` ({}): promptfoo gives them this machine's environment, evalhost's sandbox gives code none, so they read `undefined` and their verdicts may differ from promptfoo's",
                    names.join(", ")
                ),
            )
            .hint = Some("pass the value as a var (`vars:`, read as `context.vars.NAME`) or in the assertion's `config:` (read as `context.config.NAME`)".into());
        }
    }

    pub(super) fn javascript_file(&mut self, spec: &str, at: &KeyPath) -> Option<Value> {
        let (file, function) = file_and_function(spec);
        let lower = file.to_ascii_lowercase();
        if [".ts", ".cts", ".mts", ".tsx"]
            .iter()
            .any(|e| lower.ends_with(e))
        {
            // Bundled before the run (esbuild, confined to the project) and
            // run by the sandboxed JavaScript plugin; promptfoo compiles it
            // with tsx and runs it on the host.
            let path = self.relative(file, &format!("`{spec}`"), at)?;
            return Some(json!({
                "reference": spec,
                "source": "",
                "function": function,
                "esm": true,
                "bundle": path.display().to_string(),
            }));
        }
        if ![".js", ".cjs", ".mjs"].iter().any(|e| lower.ends_with(e)) {
            // promptfoo's `isJavascriptFile` fails; Python and Ruby files
            // go to their runners.
            let (language, why) = if file.ends_with(".py") {
                (
                    "Python",
                    "which evalhost has only for `python` assertions so far",
                )
            } else if file.ends_with(".rb") {
                ("Ruby", "which evalhost does not run")
            } else {
                ("", "")
            };
            if !language.is_empty() {
                self.error(at, format!("`{spec}`: a {language} file here is run by promptfoo's {language} runner, {why}"));
            } else {
                self.error(at, format!("`{spec}`: promptfoo reads only .json, .yaml, .yml and .txt files for an assertion value, and runs .js, .cjs and .mjs files for a `javascript` assertion"));
            }
            return None;
        }
        let path = self.relative(file, &format!("`{spec}`"), at)?;
        let source = self.read_file(&path, at)?;
        let esm = lower.ends_with(".mjs")
            || (!lower.ends_with(".cjs")
                && source.lines().any(|l| {
                    let l = l.trim_start();
                    l.starts_with("export ") || l.starts_with("export{") || l.starts_with("import ")
                }));
        Some(json!({
            "reference": spec,
            "source": source,
            "function": function,
            "esm": esm,
        }))
    }
}

/// `file://path[:function]` as promptfoo's `runAssertion` splits it: at the
/// first `:`.
pub(super) fn file_and_function(spec: &str) -> (&str, Option<String>) {
    let rest = spec.strip_prefix("file://").unwrap_or(spec);
    match rest.split_once(':') {
        Some((f, func)) => (f, Some(func.to_owned())),
        None => (rest, None),
    }
}

/// JavaScript's `trim()`: U+FEFF is space, U+0085 is not.
pub(super) fn js_trim(s: &str) -> &str {
    s.trim_matches(|c: char| {
        matches!(
            c,
            '\t' | '\n'
                | '\u{000B}'
                | '\u{000C}'
                | '\r'
                | ' '
                | '\u{00A0}'
                | '\u{1680}'
                | '\u{2000}'
                ..='\u{200A}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202F}'
                    | '\u{205F}'
                    | '\u{3000}'
                    | '\u{FEFF}'
        )
    })
}
