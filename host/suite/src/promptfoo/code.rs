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
    /// Warns when JavaScript `code` calls what evalhost's engine refuses
    /// because Boa would format it differently from Node (dates, and
    /// numbers as currency, percent or unit): the assertion fails with the
    /// reason where promptfoo formats it, so it is said at load, at its
    /// line.
    pub(super) fn note_refused_runtime(&mut self, code: &str, at: &KeyPath) {
        let dates = ["DateTimeFormat", "toLocaleDateString", "toLocaleTimeString"]
            .iter()
            .find(|n| code.contains(*n));
        let styles = code.contains("style")
            && ["currency", "percent", "unit"]
                .iter()
                .any(|s| code.contains(&format!("'{s}'")) || code.contains(&format!("\"{s}\"")));
        let what = match (dates, styles) {
            (Some(n), _) => format!("`{n}`"),
            (None, true) => "`Intl.NumberFormat` with a currency, percent or unit style".to_owned(),
            (None, false) => return,
        };
        self.warn_once(
            at,
            format!("this assertion calls {what}, which evalhost's JavaScript engine (Boa) formats differently from Node: the call throws a RangeError saying so, and the assertion fails where promptfoo formats it"),
        );
    }

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
        let esm = lower.ends_with(".mjs") || (!lower.ends_with(".cjs") && looks_like_esm(&source));
        Some(json!({
            "reference": spec,
            "source": source,
            "function": function,
            "esm": esm,
        }))
    }
}

/// A JavaScript file with `import` or `export` statements: an ES module.
pub(super) fn looks_like_esm(source: &str) -> bool {
    source.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("export ") || l.starts_with("export{") || l.starts_with("import ")
    })
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

/// The language of a `file://` var computed by code (promptfoo's
/// `renderPrompt`: a JavaScript module's function, or a Python file's
/// `get_var`), by its ending.
pub(super) fn code_var(spec: &str) -> Option<crate::code::Language> {
    let path = spec.strip_prefix("file://")?;
    let lower = path.to_ascii_lowercase();
    if [".js", ".cjs", ".mjs"].iter().any(|e| lower.ends_with(e)) {
        Some(crate::code::Language::JavaScript)
    } else if lower.ends_with(".py") {
        Some(crate::code::Language::Python)
    } else {
        None
    }
}

/// One test's vars and prompt as code made them for some providers: the
/// vars, the prompt, the providers (`None`: all that run the prompt) and
/// the row's error when the code failed (promptfoo errors the row).
pub(super) struct Computed {
    pub(super) vars: Map<String, Value>,
    pub(super) prompt: Prompt,
    pub(super) targets: Option<Vec<String>>,
    pub(super) error: Option<String>,
}

impl Reader {
    /// Whether this reader can run code; if not, an error at `at` naming
    /// `what`.
    pub(super) fn code_available(&mut self, at: &KeyPath, what: &str) -> bool {
        if self.options.code.is_some() {
            return true;
        }
        self.error(at, format!("{what} is code that runs while the config is read, and this command reads configs without running code"))
            .hint = Some("`evalhost run` and `evalhost validate` run it in the sandbox".into());
        false
    }

    /// Runs `call` in the host's sandbox.
    fn run_code(&self, call: &crate::code::CodeCall) -> Result<Value, String> {
        match &self.options.code {
            Some(runner) => runner.call(call),
            None => Err("no code runner".into()),
        }
    }

    /// A `file://` spec's function as a call: the file read (inside the
    /// project), `function` after its last `:` (after the first for
    /// promptfoo's assertion-style specs it does not matter: a path has no
    /// `:`).
    fn file_call(
        &mut self,
        spec: &str,
        language: crate::code::Language,
        default_function: Option<&str>,
        at: &KeyPath,
    ) -> Option<crate::code::CodeCall> {
        let rest = spec.strip_prefix("file://").unwrap_or(spec);
        let (file, function) = match rest.rsplit_once(':') {
            Some((f, func)) if !func.contains('/') && !f.is_empty() => (f, Some(func.to_owned())),
            _ => (rest, None),
        };
        let function = function.or_else(|| default_function.map(str::to_owned));
        self.file_code(spec, file, function, language, at)
    }

    /// `file` (relative to the config, inside the project) read, and its
    /// `function` as a call with no arguments yet.
    fn file_code(
        &mut self,
        spec: &str,
        file: &str,
        function: Option<String>,
        language: crate::code::Language,
        at: &KeyPath,
    ) -> Option<crate::code::CodeCall> {
        let path = self.relative(file, &format!("`{spec}`"), at)?;
        let source = self.read_file(&path, at)?;
        let lower = file.to_ascii_lowercase();
        let esm = lower.ends_with(".mjs") || (!lower.ends_with(".cjs") && looks_like_esm(&source));
        Some(crate::code::CodeCall {
            language,
            code: crate::code::Code::File {
                reference: spec.to_owned(),
                source,
                function,
                esm,
                script: false,
            },
            args: Vec::new(),
            provider_arg: None,
        })
    }

    /// `options.transformVars` (promptfoo's `applyInputTransform`): inline
    /// JavaScript, a function body of `(vars, context, process)` (an
    /// expression on one line), or `file://x.js[:fn]` / `file://x.py[:fn]`
    /// (`get_transform` by default), called with the test's vars and
    /// `{prompt: {}, uuid}`; the object it returns is merged over the vars.
    /// It runs once per test, before the vars expand. What throws stops
    /// promptfoo's whole eval; evalhost refuses the config at the option.
    pub(super) fn transform_vars(
        &mut self,
        transform: &Value,
        at: &KeyPath,
        vars: &Map<String, Value>,
        n: usize,
    ) -> Option<Map<String, Value>> {
        let Value::String(code) = transform else {
            self.error(at, "`transformVars` must be JavaScript text or a file://");
            return None;
        };
        if !self.code_available(at, "`transformVars`") {
            return None;
        }
        let mut call = if code.starts_with("file://") {
            let language = match code_var(
                code.split(':')
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(":")
                    .as_str(),
            ) {
                Some(l) => l,
                None => {
                    self.error(at, format!("Unsupported transform file format: {code}"))
                        .hint = Some("a transform is a .js, .cjs, .mjs or .py file".into());
                    return None;
                }
            };
            let default = (language == crate::code::Language::Python).then_some("get_transform");
            self.file_call(code, language, default, at)?
        } else {
            crate::code::CodeCall {
                language: crate::code::Language::JavaScript,
                code: crate::code::Code::Inline {
                    text: code.clone(),
                    params: vec!["vars".into(), "context".into(), "process".into()],
                },
                args: Vec::new(),
                provider_arg: None,
            }
        };
        // A stable id in place of promptfoo's random one: the same config
        // computes the same vars every run.
        let uuid = format!("00000000-0000-4000-8000-{:012x}", n + 1);
        call.args = vec![
            Value::Object(vars.clone()),
            json!({"prompt": {}, "uuid": uuid}),
        ];
        match self.run_code(&call) {
            Ok(Value::Object(new)) => {
                let mut out = vars.clone();
                out.extend(new);
                Some(out)
            }
            Ok(Value::Null) => Some(vars.clone()),
            Ok(Value::Array(items)) => {
                // `{...vars, ...array}`: its indices as keys.
                let mut out = vars.clone();
                out.extend(
                    items
                        .into_iter()
                        .enumerate()
                        .map(|(i, v)| (i.to_string(), v)),
                );
                Some(out)
            }
            Ok(other) => {
                self.error(
                    at,
                    format!(
                        "Transform function did not return a valid object (it returned {})",
                        crate::agentv4::kind(&other)
                    ),
                );
                None
            }
            Err(e) => {
                self.error(at, format!("`transformVars` failed: {e}")).hint =
                    Some("promptfoo stops the whole eval here; fix the transform".into());
                None
            }
        }
    }

    /// The providers that run `prompt`, in the config's order.
    fn providers_of(&self, prompt: &Prompt) -> Vec<ProviderInfo> {
        let names = self.targets_for(prompt);
        self.provider_infos
            .iter()
            .filter(|p| names.as_ref().is_none_or(|n| n.contains(&p.name)))
            .cloned()
            .collect()
    }

    /// promptfoo's `renderPrompt` before it renders: each var computed by a
    /// `.js`/`.py` file (in the vars' order; the JavaScript function gets
    /// `(varName, prompt, vars, provider)` and returns `{output}` or
    /// `{error}`, Python's `get_var(var_name, prompt, other_vars)` the same),
    /// then a prompt function (`{vars, provider: {id, label}, config}`; a
    /// string is the template, `{prompt, config}` the template and settings
    /// merged into the prompt's, anything else its JSON). promptfoo calls
    /// them per provider: so does evalhost, and when providers get
    /// different results the test is split, one per group of providers.
    /// `None` when neither is there.
    pub(super) fn computed(
        &mut self,
        vars: &Map<String, Value>,
        prompt: &Prompt,
        at: &KeyPath,
    ) -> Option<Vec<Computed>> {
        let code_vars: Vec<(String, String, crate::code::Language)> = vars
            .iter()
            .filter_map(|(k, v)| {
                let s = v.as_str()?;
                code_var(s).map(|l| (k.clone(), s.to_owned(), l))
            })
            .collect();
        if code_vars.is_empty() && prompt.function.is_none() {
            return None;
        }
        let mut calls = Vec::new();
        for (name, spec, language) in &code_vars {
            if !self.code_available(&at.key(name), &format!("var `{name}` (`{spec}`)")) {
                return Some(Vec::new());
            }
            // A file that is not there errors the rows that use it, as
            // promptfoo errors them (said once); one outside the project is
            // refused.
            let rel = spec.strip_prefix("file://").unwrap_or(spec);
            if let Err(e @ crate::roots::PathError::NotFound { .. }) =
                self.options.roots.relative(rel, &self.dir)
            {
                let message = format!("Error running {spec}: {e}");
                self.warn_once(
                    &at.key(name),
                    format!("var `{name}`: {message}; the rows that use it are errors (`failure_class: input`), as promptfoo makes them"),
                );
                return Some(vec![Computed {
                    vars: vars.clone(),
                    prompt: Prompt {
                        function: None,
                        ..prompt.clone()
                    },
                    targets: None,
                    error: Some(message),
                }]);
            }
            let default = (*language == crate::code::Language::Python).then_some("get_var");
            match self.var_call(spec, *language, default, &at.key(name)) {
                Some(c) => calls.push((name.clone(), spec.clone(), c)),
                None => return Some(Vec::new()),
            }
        }
        let mut out: Vec<Computed> = Vec::new();
        let providers = self.providers_of(prompt);
        // With no provider (already an error), once.
        let each: Vec<Option<ProviderInfo>> = if providers.is_empty() {
            vec![None]
        } else {
            providers.into_iter().map(Some).collect()
        };
        for provider in each {
            let (id, label) = match &provider {
                Some(p) => (p.id.clone(), (p.name != p.id).then(|| p.name.clone())),
                None => (String::new(), None),
            };
            let mut vars = vars.clone();
            let mut prompt = prompt.clone();
            let mut error = None;
            for (name, spec, call) in &calls {
                let mut call = call.clone();
                call.args = match call.language {
                    crate::code::Language::JavaScript => vec![
                        Value::String(name.clone()),
                        Value::String(prompt.raw.clone()),
                        Value::Object(vars.clone()),
                        provider_json(&id, label.as_deref(), provider.as_ref().map(|p| &p.config)),
                    ],
                    crate::code::Language::Python => vec![
                        Value::String(name.clone()),
                        Value::String(prompt.raw.clone()),
                        Value::Object(vars.clone()),
                    ],
                };
                if call.language == crate::code::Language::JavaScript {
                    call.provider_arg = Some(3);
                }
                match self
                    .run_code(&call)
                    .and_then(|r| var_output(&r, call.language))
                {
                    Ok(v) => {
                        vars.insert(name.clone(), v);
                    }
                    Err(e) => {
                        let message = format!("Error running {spec}: {e}");
                        self.warn_once(
                            &at.key(name),
                            format!("var `{name}`: {message}; the rows that use it are errors (`failure_class: input`), as promptfoo makes them"),
                        );
                        error = Some(message);
                        break;
                    }
                }
            }
            if error.is_none()
                && let Some(function) = prompt.function.clone()
            {
                let mut call = (*function).clone();
                call.args = vec![json!({
                    "vars": vars,
                    "provider": provider_json(&id, label.as_deref(), None),
                    "config": prompt.config,
                })];
                match self.run_code(&call) {
                    Ok(Value::String(s)) => prompt.raw = s,
                    Ok(Value::Object(o)) if o.contains_key("prompt") => {
                        prompt.raw = match &o["prompt"] {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        if let Some(Value::Object(c)) = o.get("config") {
                            prompt.config.extend(c.clone());
                        }
                    }
                    Ok(Value::Null) => {
                        error = Some(format!(
                            "Prompt function must return a string or object, got undefined ({})",
                            prompt.label
                        ));
                    }
                    Ok(other) => prompt.raw = other.to_string(),
                    Err(e) => {
                        error = Some(format!("Prompt function `{}` failed: {e}", prompt.label))
                    }
                }
                if let Some(e) = &error {
                    self.warn_once(at, format!("{e}; the rows that use it are errors (`failure_class: input`), as promptfoo makes them"));
                }
                prompt.function = None;
            }
            let name = provider.as_ref().map(|p| p.name.clone());
            match out.iter_mut().find(|c| {
                c.vars == vars
                    && c.prompt.raw == prompt.raw
                    && c.prompt.config == prompt.config
                    && c.error == error
            }) {
                Some(same) => {
                    if let (Some(t), Some(n)) = (same.targets.as_mut(), name) {
                        t.push(n);
                    }
                }
                None => out.push(Computed {
                    vars,
                    prompt,
                    targets: name.map(|n| vec![n]),
                    error,
                }),
            }
        }
        // One group: the providers that run the prompt, as without code.
        if out.len() == 1 {
            out[0].targets = None;
        }
        Some(out)
    }

    /// `nunjucksFilters: {name: path.js}`: each filter a JavaScript module's
    /// function, called in the sandbox with the value and the filter's
    /// arguments wherever a template uses it (promptfoo's
    /// `getNunjucksEngine`).
    pub(super) fn nunjucks_filters(
        &mut self,
        value: Option<&Value>,
        at: &KeyPath,
        renderer: &mut Renderer,
    ) {
        let Some(value) = value else {
            return;
        };
        let Value::Object(filters) = value else {
            self.error(
                at,
                "`nunjucksFilters` must map each filter's name to a .js file",
            );
            return;
        };
        for (name, path) in filters {
            let fat = at.key(name);
            let Some(path) = path.as_str() else {
                self.error(&fat, format!("filter `{name}` must name a .js file"));
                continue;
            };
            let spec = if path.starts_with("file://") {
                path.to_owned()
            } else {
                format!("file://{path}")
            };
            if code_var(&spec) != Some(crate::code::Language::JavaScript) {
                self.error(
                    &fat,
                    format!("filter `{name}`: `{path}` is not a JavaScript file (.js, .cjs, .mjs)"),
                );
                continue;
            }
            if !self.code_available(&fat, &format!("the Nunjucks filter `{name}`")) {
                continue;
            }
            // promptfoo requires the module: the function is the module.
            let Some(call) = self.var_call(&spec, crate::code::Language::JavaScript, None, &fat)
            else {
                continue;
            };
            let runner = self.options.code.clone().expect("checked above");
            renderer.add_code_filter(name, runner, call);
        }
    }

    /// A var file's function as a call; JavaScript's is the module's own
    /// function (or its default export), Python's `get_var`.
    fn var_call(
        &mut self,
        spec: &str,
        language: crate::code::Language,
        default: Option<&str>,
        at: &KeyPath,
    ) -> Option<crate::code::CodeCall> {
        // promptfoo splits no function name off a var's path.
        let path = spec.strip_prefix("file://").unwrap_or(spec);
        self.file_code(spec, path, default.map(str::to_owned), language, at)
    }
}

/// A provider as promptfoo hands it to code: its id, its label when it
/// has one, its config.
fn provider_json(id: &str, label: Option<&str>, config: Option<&Map<String, Value>>) -> Value {
    let mut p = Map::new();
    p.insert("id".into(), Value::String(id.to_owned()));
    if let Some(l) = label {
        p.insert("label".into(), Value::String(l.to_owned()));
    }
    if let Some(c) = config {
        p.insert("config".into(), Value::Object(c.clone()));
    }
    Value::Object(p)
}

/// What a var file's function returned, as promptfoo takes it: `{error}`
/// fails, a falsy `output` fails, Python's output must be text (trimmed).
fn var_output(result: &Value, language: crate::code::Language) -> Result<Value, String> {
    if let Some(e) = result.get("error").filter(|e| {
        !e.is_null() && *e != &Value::Bool(false) && *e != &Value::String(String::new())
    }) {
        return Err(match e {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    }
    let output = result.get("output").cloned().unwrap_or(Value::Null);
    let falsy = is_js_falsy(&output);
    if falsy {
        return Err(match language {
            crate::code::Language::JavaScript => {
                "Expected the function to return { output: string } but got [object Object]".into()
            }
            crate::code::Language::Python => "the Python script did not return any output".into(),
        });
    }
    match (language, output) {
        (crate::code::Language::Python, Value::String(s)) => Ok(Value::String(s.trim().to_owned())),
        (crate::code::Language::Python, other) => Err(format!(
            "pythonScriptOutput.output must be a string. Received: {}",
            crate::agentv4::kind(&other)
        )),
        (_, v) => Ok(v),
    }
}

/// JavaScript's falsiness of a JSON value.
pub(super) fn is_js_falsy(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}
