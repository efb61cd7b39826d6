//! The sandbox a suite's reader runs code in while it reads the suite
//! (promptfoo's `transformVars`, var files, prompt functions, Nunjucks
//! filters; `evalhost_suite::code`): JavaScript in the built-in JavaScript
//! plugin (Boa), Python in the Python runner (CPython), each call a fresh
//! instance under the default deadline and memory cap, with no files,
//! network or environment, and the wall clock only outside `--sandbox
//! strict` — the same sandbox as promptfoo's
//! `javascript` and `python` assertions, so `--sandbox strict` holds: a
//! config's code never runs on the host. Each engine loads on first use.
//!
//! Code that ran out of time or memory once is not run again in the same
//! load: the call after fails at once with the same error. A config's
//! transform or var file is called once per test, and a loop in it cost a
//! whole deadline per test (1,000 tests: hours before the error).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value, json};

use crate::failure::FailureClass;
use crate::plugin::bindings::evalhost::grader::types as wit;
use crate::plugin::{CallLimits, Grants, LoadedPlugin, PluginEngine};
use crate::suite::code::{Code, CodeCall, CodeRunner, Language, Runner};

/// The plugin type that calls a JavaScript function.
const JS_CALL: &str = "promptfoo-call";
/// The plugin type that calls a Python function.
const PY_CALL: &str = "promptfoo-python-call";

/// Runs a suite's code in the plugin sandbox.
pub struct SandboxCode {
    engine: Arc<PluginEngine>,
    javascript: OnceLock<Result<LoadedPlugin, String>>,
    python: OnceLock<Result<LoadedPlugin, String>>,
    /// The deadline or memory failure of each piece of code that had one,
    /// by [`code_key`].
    exhausted: Mutex<HashMap<String, String>>,
    /// The wall clock, given to the code (not under `--sandbox strict`).
    clock: bool,
    /// Set once any code ran.
    used: Arc<std::sync::atomic::AtomicBool>,
}

/// Which code a call runs (not its arguments): its language and text.
fn code_key(call: &CodeCall) -> String {
    let text = match &call.code {
        Code::Inline { text, params } => json!(["inline", text, params]),
        Code::File {
            reference,
            source,
            function,
            esm,
            script,
        } => json!(["file", reference, source, function, esm, script]),
    };
    let language = match call.language {
        Language::JavaScript => "javascript",
        Language::Python => "python",
    };
    crate::digest::sha256_hex(format!("{language}\0{text}").as_bytes())
}

impl SandboxCode {
    /// A runner on `engine`, shared by the reader; `clock`: the code sees
    /// the wall clock (else 1970-01-01).
    /// With it, whether any code ran (set by the first call).
    pub fn runner(
        engine: &Arc<PluginEngine>,
        clock: bool,
    ) -> (Runner, Arc<std::sync::atomic::AtomicBool>) {
        let used = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let runner = Runner(Arc::new(Self {
            engine: Arc::clone(engine),
            javascript: OnceLock::new(),
            python: OnceLock::new(),
            exhausted: Mutex::new(HashMap::new()),
            clock,
            used: Arc::clone(&used),
        }));
        (runner, used)
    }

    fn plugin(&self, language: Language) -> Result<&LoadedPlugin, String> {
        let slot = match language {
            Language::JavaScript => &self.javascript,
            Language::Python => &self.python,
        };
        slot.get_or_init(|| match language {
            Language::JavaScript => {
                let (name, wasm, digest) = crate::builtin::plugins()
                    .iter()
                    .find(|(name, _, _)| *name == "javascript")
                    .ok_or("the JavaScript plugin is not built into this evalhost")?;
                LoadedPlugin::load_with_digest(
                    &self.engine,
                    &format!("builtin:{name}"),
                    wasm,
                    digest,
                )
                .map_err(|e| e.to_string())
            }
            Language::Python => super::python_runner::runner()
                .and_then(|bytes| {
                    let digest = crate::plugin::sha256_hex(&bytes);
                    LoadedPlugin::load_with_digest(
                        &self.engine,
                        "builtin:python-runner",
                        &bytes,
                        &digest,
                    )
                    .map_err(|e| e.to_string())
                })
                .map_err(|e| format!("Python code: {e}")),
        })
        .as_ref()
        .map_err(Clone::clone)
    }
}

impl CodeRunner for SandboxCode {
    fn call(&self, call: &CodeCall) -> Result<Value, String> {
        let key = code_key(call);
        if let Some(error) = self
            .exhausted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
        {
            return Err(error.clone());
        }
        let plugin = self.plugin(call.language)?;
        self.used.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut config = Map::new();
        match &call.code {
            Code::Inline { text, params } => {
                config.insert("value".into(), Value::String(text.clone()));
                config.insert("params".into(), json!(params));
            }
            Code::File {
                reference,
                source,
                function,
                esm,
                script,
            } => {
                config.insert(
                    "__script".into(),
                    json!({"reference": reference, "source": source, "function": function, "esm": esm, "script": script}),
                );
            }
        }
        config.insert("args".into(), Value::Array(call.args.clone()));
        if let Some(i) = call.provider_arg {
            config.insert("provider_arg".into(), json!(i));
        }
        let request = wit::GradeRequest {
            assertion_type: match call.language {
                Language::JavaScript => JS_CALL,
                Language::Python => PY_CALL,
            }
            .into(),
            config_json: Value::Object(config).to_string(),
            test_id: String::new(),
            output: String::new(),
            output_messages: Vec::new(),
            input: Vec::new(),
            expected_output: None,
            expected_messages: Vec::new(),
            criteria: None,
            metadata_json: "{}".into(),
            trace: wit::Trace {
                token_usage: None,
                cost_usd: None,
                duration_ms: None,
                llm_calls: None,
                file_changes: None,
            },
            workspace_path: None,
        };
        let limits = CallLimits {
            timeout: CallLimits::DEFAULT_TIMEOUT,
            memory: CallLimits::DEFAULT_MEMORY,
        };
        let grants = Grants {
            clock: self.clock,
            ..Grants::default()
        };
        let (result, _) = plugin.grade(&request, limits, grants);
        let graded = result.map_err(|f| {
            if matches!(
                f.class,
                FailureClass::PluginTimeout | FailureClass::PluginMemory
            ) {
                self.exhausted
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(key, f.message.clone());
            }
            f.message
        })?;
        let details: Value = serde_json::from_str(graded.details_json.as_deref().unwrap_or("{}"))
            .map_err(|e| format!("the engine's reply is not JSON: {e}"))?;
        Ok(details.get("output").cloned().unwrap_or(Value::Null))
    }
}
