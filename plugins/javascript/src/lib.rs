//! Built-in `javascript` assertions, run inside the sandbox by the Boa
//! engine compiled into this plugin: promptfoo 0.121's calling convention
//! (`src/assertions/javascript.ts`) with none of its access to the machine.
//!
//! A snippet is the body of `function (output, context, process)`: a
//! one-line snippet is an expression (promptfoo's `buildFunctionBody`:
//! `return …`, or declarations then `return` the last expression), a
//! multi-line one a function body. A `file://path.js[:fn]` assertion's
//! source is read by the host when it loads the suite and handed over in
//! the config (`__script`); the plugin evaluates it as a CommonJS or an ES
//! module and calls its function with `(output, context)`.
//!
//! What a snippet sees: `output` (the candidate text), `context.vars`,
//! `context.prompt`, `context.test`, `context.logProbs`,
//! `context.providerResponse` (`output`, `logProbs`, `finishReason`, `cost`,
//! `tokenUsage`), `context.config`; `process.env` is empty; `require` of
//! anything throws naming the module; `console.*` is captured and shown
//! with the result. The clock reads zero and `Math.random` is seeded by the
//! host: a snippet grades the same way every time. A snippet that runs
//! without end or allocates without bound is stopped by the host's
//! deadline and memory cap (a typed failure); deep recursion throws
//! `RangeError`, which fails the assertion as promptfoo fails a snippet
//! that throws.
//!
//! Results as promptfoo normalises them: a boolean; a number (passes when
//! `> 0`, or `≥ threshold` when the assertion has one); a grading result
//! `{pass, score, reason}` (`componentResults` kept in the details). A
//! snippet that throws or returns anything else fails with promptfoo's
//! reason. `not-javascript` flips the verdict as promptfoo does.

use std::cell::RefCell;
use std::collections::HashMap;

use boa_engine::builtins::promise::PromiseState;
use boa_engine::object::ObjectInitializer;
use boa_engine::object::builtins::JsPromise;
use boa_engine::property::Attribute;
use boa_engine::{
    Context, JsError, JsNativeError, JsObject, JsResult, JsString, JsValue, Module, NativeFunction,
    Source, js_string,
};
use evalhost_plugin_sdk::{
    AssertionType, Check, Config, Grade, GradeError, Grader, Plugin, Request, Value, export_grader,
    json,
};

/// The javascript grader plugin.
pub struct JavascriptGrader;

/// The type promptfoo suites' `javascript` assertions are graded by.
pub const TYPE: &str = "promptfoo-javascript";

/// The type of promptfoo's transforms (`options.transform`, an assertion's
/// `transform`): not a grade, a step that returns the new output in the
/// details (`output`), always scoring 1.
pub const TRANSFORM: &str = "promptfoo-transform";

/// Calls deeper than this throw `RangeError` (well inside the plugin's
/// stack, so unbounded recursion fails the assertion instead of trapping).
const RECURSION_LIMIT: usize = 1000;

/// Most compiled snippets and modules kept per instance.
const CACHE_CAP: usize = 256;

thread_local! {
    /// Leaked, never dropped: Boa's collector lives in thread-locals of its
    /// own, and a context dropped after them (at thread exit) corrupts the
    /// heap. A plugin instance's one thread never exits.
    static ENGINE: &'static RefCell<Option<Engine>> = Box::leak(Box::new(RefCell::new(None)));
    /// What `console.*` printed during the current call.
    static CONSOLE: RefCell<String> = const { RefCell::new(String::new()) };
}

/// One engine per plugin instance. The plugin is not stateless: the host
/// makes a fresh instance (so a fresh realm) for every call, so nothing a
/// snippet does to the realm reaches another test.
struct Engine {
    ctx: Context,
    /// Functions compiled from snippet bodies, by body.
    snippets: HashMap<String, JsObject>,
    /// Module exports (promptfoo's `mod`), by source text.
    modules: HashMap<String, JsValue>,
    /// The `process` shim.
    process: JsValue,
    /// The global object's own keys once the engine started: what a snippet
    /// adds (`globalThis.x = …`, an undeclared assignment) is deleted after
    /// its call, so that no grade depends on which instance ran before.
    baseline: std::collections::HashSet<boa_engine::property::PropertyKey>,
}

impl Engine {
    fn new() -> JsResult<Self> {
        let mut ctx = Context::default();
        ctx.runtime_limits_mut()
            .set_recursion_limit(RECURSION_LIMIT);
        let console = {
            let mut init = ObjectInitializer::new(&mut ctx);
            for name in ["log", "info", "warn", "error", "debug", "trace"] {
                init.function(
                    NativeFunction::from_fn_ptr(console_print),
                    JsString::from(name),
                    0,
                );
            }
            init.build()
        };
        ctx.register_global_property(js_string!("console"), console, Attribute::all())?;
        ctx.register_global_builtin_callable(
            js_string!("require"),
            1,
            NativeFunction::from_fn_ptr(require),
        )?;
        let process = ctx.eval(Source::from_bytes(
            "({ env: Object.freeze({}), argv: [], platform: 'wasi', mainModule: { require: globalThis.require, exports: {} } })",
        ))?;
        let baseline = ctx
            .global_object()
            .own_property_keys(&mut ctx)?
            .into_iter()
            .collect();
        Ok(Self {
            ctx,
            snippets: HashMap::new(),
            modules: HashMap::new(),
            process,
            baseline,
        })
    }

    /// Deletes the globals a call added.
    fn reset_globals(&mut self) {
        let global = self.ctx.global_object();
        let Ok(keys) = global.own_property_keys(&mut self.ctx) else {
            return;
        };
        for key in keys {
            if !self.baseline.contains(&key) {
                let _ = global.delete_property_or_throw(key, &mut self.ctx);
            }
        }
    }

    /// `new Function("output", "context", "process", body)`, cached.
    fn snippet(&mut self, body: &str) -> JsResult<JsObject> {
        if let Some(f) = self.snippets.get(body) {
            return Ok(f.clone());
        }
        // The realm's own `Function`, never `globalThis.Function`: a snippet
        // may replace the global, not what compiles the next one.
        let ctor = self
            .ctx
            .intrinsics()
            .constructors()
            .function()
            .constructor();
        let args = [
            js_string!("output").into(),
            js_string!("context").into(),
            js_string!("process").into(),
            JsString::from(body).into(),
        ];
        let f = ctor.call(&JsValue::undefined(), &args, &mut self.ctx)?;
        let f = f
            .as_object()
            .ok_or_else(|| JsNativeError::typ().with_message("not a function"))?
            .clone();
        if self.snippets.len() >= CACHE_CAP {
            self.snippets.clear();
        }
        self.snippets.insert(body.to_owned(), f.clone());
        Ok(f)
    }

    /// A script file's `mod` as promptfoo's `importModule` computes it:
    /// `default.default || default || the module`.
    fn module(&mut self, script: &Script) -> JsResult<JsValue> {
        if let Some(m) = self.modules.get(&script.source) {
            return Ok(m.clone());
        }
        let ctx = &mut self.ctx;
        let mod_value = if script.esm {
            let module = Module::parse(Source::from_bytes(script.source.as_bytes()), None, ctx)?;
            let promise = module.load_link_evaluate(ctx);
            settle_promise(&promise, ctx)?;
            let ns: JsValue = module.namespace(ctx).into();
            pick_default(&ns, ctx)?
        } else {
            // CommonJS, as Node's `import()` of it sees it: `default` is
            // `module.exports`.
            let wrapper = format!(
                "(function (module, exports, require) {{\n{}\n;return module.exports;\n}})",
                script.source
            );
            let f = ctx.eval(Source::from_bytes(wrapper.as_bytes()))?;
            let module = ctx.eval(Source::from_bytes("({ exports: {} })"))?;
            let exports = module
                .as_object()
                .map(|m| m.get(js_string!("exports"), ctx))
                .transpose()?
                .unwrap_or_default();
            let require = ctx.global_object().get(js_string!("require"), ctx)?;
            let exported = f
                .as_callable()
                .ok_or_else(|| JsNativeError::typ().with_message("module wrapper"))?
                .call(&JsValue::undefined(), &[module, exports, require], ctx)?;
            let ns = ObjectInitializer::new(ctx)
                .property(js_string!("default"), exported, Attribute::all())
                .build();
            pick_default(&ns.into(), ctx)?
        };
        if self.modules.len() >= CACHE_CAP {
            self.modules.clear();
        }
        self.modules
            .insert(script.source.clone(), mod_value.clone());
        Ok(mod_value)
    }
}

/// `x.default.default || x.default || x`.
fn pick_default(ns: &JsValue, ctx: &mut Context) -> JsResult<JsValue> {
    let get = |v: &JsValue, ctx: &mut Context| -> JsResult<JsValue> {
        match v.as_object() {
            Some(o) => o.get(js_string!("default"), ctx),
            None => Ok(JsValue::undefined()),
        }
    };
    let d = get(ns, ctx)?;
    let dd = get(&d, ctx)?;
    Ok(if dd.to_boolean() {
        dd
    } else if d.to_boolean() {
        d
    } else {
        ns.clone()
    })
}

fn console_print(_this: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let mut line = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        match a.as_string() {
            Some(s) => line.push_str(&s.to_std_string_escaped()),
            None => match a.to_json(ctx) {
                Ok(Some(j)) if a.is_object() => line.push_str(&j.to_string()),
                _ => line.push_str(&a.display().to_string()),
            },
        }
    }
    CONSOLE.with(|c| {
        let mut c = c.borrow_mut();
        // Bounded: a snippet that prints in a loop keeps its first 64 KiB.
        if c.len() < 64 << 10 {
            c.push_str(&line);
            c.push('\n');
        }
    });
    Ok(JsValue::undefined())
}

fn require(_this: &JsValue, args: &[JsValue], _ctx: &mut Context) -> JsResult<JsValue> {
    let name = args
        .first()
        .map(|a| match a.as_string() {
            Some(s) => s.to_std_string_escaped(),
            None => a.display().to_string(),
        })
        .unwrap_or_default();
    Err(JsNativeError::error()
        .with_message(format!(
            "Cannot find module '{name}': the evalhost sandbox provides no modules (no files, network or environment)"
        ))
        .into())
}

/// Runs the job queue until `promise` settles.
fn settle_promise(promise: &JsPromise, ctx: &mut Context) -> JsResult<JsValue> {
    ctx.run_jobs()?;
    match promise.state() {
        PromiseState::Fulfilled(v) => Ok(v),
        PromiseState::Rejected(e) => Err(JsError::from_opaque(e)),
        PromiseState::Pending => Err(JsNativeError::error()
            .with_message("the returned promise never settled")
            .into()),
    }
}

/// A value, awaited when it is a promise (promptfoo's `validateResult`
/// awaits it).
fn settle(value: JsValue, ctx: &mut Context) -> JsResult<JsValue> {
    match value
        .as_object()
        .and_then(|o| JsPromise::from_object(o.clone()).ok())
    {
        Some(p) => settle_promise(&p, ctx),
        None => Ok(value),
    }
}

/// A thrown value as promptfoo shows it: its message, and V8's stack's
/// first line (`Name: message`; Boa keeps no stack).
fn thrown(err: &JsError, ctx: &mut Context) -> (String, String) {
    // Boa's runtime limits are engine errors (JavaScript cannot catch
    // them); V8 throws `RangeError` where Boa hits its recursion limit.
    if err.to_string().starts_with("RuntimeLimitError") {
        let message = "Maximum call stack size exceeded".to_owned();
        return (message.clone(), format!("RangeError: {message}"));
    }
    if let Ok(native) = err.try_native(ctx) {
        let message = native.message().to_owned();
        let name = match native.kind() {
            boa_engine::JsNativeErrorKind::Type => "TypeError",
            boa_engine::JsNativeErrorKind::Range => "RangeError",
            boa_engine::JsNativeErrorKind::Reference => "ReferenceError",
            boa_engine::JsNativeErrorKind::Syntax => "SyntaxError",
            boa_engine::JsNativeErrorKind::Eval => "EvalError",
            boa_engine::JsNativeErrorKind::Uri => "URIError",
            _ => "Error",
        };
        let stack = format!("{name}: {message}");
        return (message, stack);
    }
    let value = err.clone().into_opaque(ctx).unwrap_or_default();
    let message = value
        .as_object()
        .and_then(|o| o.get(js_string!("message"), ctx).ok())
        .filter(|m| !m.is_undefined())
        .unwrap_or_else(|| value.clone());
    let message = message
        .to_string(ctx)
        .map(|s| s.to_std_string_escaped())
        .unwrap_or_default();
    (message.clone(), message)
}

/// A `file://` script as the host hands it over.
struct Script {
    /// `file://…` as written (appended to failure reasons, as promptfoo
    /// appends its rendered value).
    reference: String,
    source: String,
    function: Option<String>,
    esm: bool,
}

fn script(config: &Config) -> Result<Option<Script>, String> {
    let Some(s) = config.get("__script") else {
        return Ok(None);
    };
    let text = |k: &str| s.get(k).and_then(Value::as_str).map(str::to_owned);
    Ok(Some(Script {
        reference: text("reference").unwrap_or_default(),
        source: text("source").ok_or("`__script` needs its `source`")?,
        function: text("function"),
        esm: s.get("esm").and_then(Value::as_bool).unwrap_or(false),
    }))
}

/// promptfoo's `buildFunctionBody` for a one-line snippet.
pub fn build_function_body(code: &str) -> String {
    // `code.trim().replace(/;+\s*$/, "")`: trimmed, there is no space
    // left after the semicolons.
    let trimmed = code.trim().trim_end_matches(';');
    let declares = ["const", "let", "var"].iter().any(|k| {
        trimmed
            .strip_prefix(k)
            .is_some_and(|r| r.starts_with(char::is_whitespace))
    });
    if declares {
        if let Some(i) = last_statement_semicolon(trimmed) {
            let statements = &trimmed[..=i];
            let expression = trimmed[i + 1..].trim();
            if !expression.is_empty() {
                return format!("{statements} return {expression}");
            }
        }
        return trimmed.to_owned();
    }
    format!("return {trimmed}")
}

/// promptfoo's `findLastStatementSemicolon`: the last `;` outside strings,
/// template literals, comments and brackets.
fn last_statement_semicolon(code: &str) -> Option<usize> {
    let bytes = code.as_bytes();
    let mut last = None;
    let mut depth = 0i32;
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let c = bytes[i];
        if let Some(q) = quote {
            if c == b'\\' {
                i += 2;
                continue;
            }
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            b'\'' | b'"' | b'`' => quote = Some(c),
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b';' if depth == 0 => last = Some(i),
            _ => {}
        }
        i += 1;
    }
    last
}

/// What a snippet returned, once validated.
enum Outcome {
    Bool(bool),
    Number(f64),
    Result(serde_json::Map<String, Value>),
}

/// promptfoo's `isGradingResult`.
fn is_grading_result(v: &Value) -> bool {
    let Value::Object(o) = v else { return false };
    let opt = |k: &str, ok: fn(&Value) -> bool| o.get(k).is_none_or(ok);
    o.get("pass").is_some_and(Value::is_boolean)
        && o.get("score").is_some_and(Value::is_number)
        && o.get("reason").is_some_and(Value::is_string)
        && opt("namedScores", |v| v.is_object() || v.is_null())
        && opt("componentResults", Value::is_array)
        && opt("comment", Value::is_string)
}

/// `typeof v` and `JSON.stringify(v)`, for promptfoo's message.
fn describe(v: &JsValue, ctx: &mut Context) -> String {
    let ty = v.type_of().to_string();
    let json = match v.to_json(ctx) {
        Ok(Some(j)) => j.to_string(),
        _ => "undefined".to_owned(),
    };
    format!("Got type {ty}: {json}")
}

fn validate(v: &JsValue, ctx: &mut Context) -> Result<Outcome, String> {
    if let Some(b) = v.as_boolean() {
        return Ok(Outcome::Bool(b));
    }
    if let Some(n) = v.as_number() {
        return Ok(Outcome::Number(n));
    }
    if v.is_object()
        && !v.is_callable()
        && let Ok(Some(j)) = v.to_json(ctx)
        && is_grading_result(&j)
        && let Value::Object(o) = j
    {
        return Ok(Outcome::Result(o));
    }
    Err(format!(
        "Custom function must return a boolean, number, or GradingResult object. {}",
        describe(v, ctx)
    ))
}

fn with_value(reason: String, rendered: &str) -> String {
    if rendered.is_empty() {
        reason
    } else {
        format!("{reason}\n{rendered}")
    }
}

/// promptfoo's `normalizeJavascriptAssertionResult`: (pass, score, reason,
/// component results).
fn normalize(
    outcome: Outcome,
    threshold: Option<f64>,
    inverse: bool,
    rendered: &str,
) -> (bool, f64, String, Option<Value>) {
    let failure = |raw: bool| with_value(format!("Custom function returned {raw}"), rendered);
    match outcome {
        Outcome::Bool(b) => {
            let pass = b != inverse;
            let reason = if pass {
                "Assertion passed".to_owned()
            } else {
                failure(b)
            };
            (pass, if pass { 1.0 } else { 0.0 }, reason, None)
        }
        Outcome::Number(n) => {
            let raw = match threshold {
                None => n > 0.0,
                Some(t) => n >= t,
            };
            let pass = raw != inverse;
            let reason = if pass {
                "Assertion passed".to_owned()
            } else {
                failure(raw)
            };
            (pass, n, reason, None)
        }
        Outcome::Result(o) => {
            let raw = o.get("pass").and_then(Value::as_bool).unwrap_or(false);
            let pass = raw != inverse;
            let own = o
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let reason = if pass == raw {
                own
            } else if pass {
                "Assertion passed".to_owned()
            } else {
                format!("Custom function returned {raw}")
            };
            let score = o.get("score").and_then(Value::as_f64).unwrap_or(0.0);
            (pass, score, reason, o.get("componentResults").cloned())
        }
    }
}

/// The test's vars (the reader keeps them in the metadata) and the rendered
/// prompt (the one input message).
fn vars_and_prompt(request: &Request) -> (Value, String) {
    let vars = request
        .metadata
        .get("vars")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let prompt = request
        .input
        .first()
        .map(|m| m.content.clone())
        .unwrap_or_default();
    (vars, prompt)
}

/// The `context` promptfoo hands a snippet, from the request and what the
/// host reader put in the config.
fn context_json(request: &Request) -> Value {
    let (vars, prompt) = vars_and_prompt(request);
    let logprobs = request.logprobs();
    let mut provider_response = json!({"output": request.output});
    if let Some(l) = &logprobs {
        provider_response["logProbs"] = json!(l);
    }
    if let Some(r) = request.finish_reason() {
        provider_response["finishReason"] = json!(r);
    }
    if let Some(c) = request.trace.cost_usd {
        provider_response["cost"] = json!(c);
    }
    if let Some(t) = &request.trace.token_usage {
        provider_response["tokenUsage"] = json!({
            "prompt": t.input, "completion": t.output, "total": t.input + t.output, "cached": t.cached,
        });
    }
    let mut context = json!({
        "prompt": prompt,
        "vars": vars,
        "test": request.config.get("__test").cloned().unwrap_or_else(|| json!({"vars": vars})),
        "providerResponse": provider_response,
    });
    if let Some(l) = logprobs {
        context["logProbs"] = json!(l);
    }
    if let Some(c) = request.config.get("config") {
        context["config"] = c.clone();
    }
    context
}

/// What grading a case produced, before it becomes a [`Grade`].
struct Graded {
    pass: bool,
    score: f64,
    reason: String,
    components: Option<Value>,
}

fn run(engine: &mut Engine, request: &Request) -> Result<Graded, GradeError> {
    let config = &request.config;
    let threshold = config
        .optional_f64("threshold")
        .map_err(GradeError::Failed)?;
    let inverse = config
        .optional_bool("inverse")
        .map_err(GradeError::Failed)?
        .unwrap_or(false);
    let script = script(config).map_err(GradeError::Failed)?;
    let context = JsValue::from_json(&context_json(request), &mut engine.ctx)
        .map_err(|e| GradeError::Failed(format!("the context: {e}")))?;
    let output = output_value(request, &mut engine.ctx)?;
    let fail = |message: String, stack: String, rendered: &str| Graded {
        pass: false,
        score: 0.0,
        reason: with_value(
            format!("Custom function threw error: {message}\nStack Trace: {stack}"),
            rendered,
        ),
        components: None,
    };
    match script {
        None => {
            let Some(Value::String(code)) = config.get("value") else {
                return Err(GradeError::Failed(
                    "javascript assertion must have a string value".into(),
                ));
            };
            let code = code.trim_end();
            let body = if code.contains('\n') {
                code.to_owned()
            } else {
                build_function_body(code)
            };
            let process = engine.process.clone();
            let result = engine.snippet(&body).and_then(|f| {
                let v = f.call(
                    &JsValue::undefined(),
                    &[output, context, process],
                    &mut engine.ctx,
                )?;
                settle(v, &mut engine.ctx)
            });
            let outcome = result
                .map_err(|e| thrown(&e, &mut engine.ctx))
                .and_then(|v| {
                    validate(&v, &mut engine.ctx).map_err(|m| (m.clone(), format!("Error: {m}")))
                });
            Ok(match outcome {
                Ok(o) => {
                    let (pass, score, reason, components) = normalize(o, threshold, inverse, code);
                    Graded {
                        pass,
                        score,
                        reason,
                        components,
                    }
                }
                Err((message, stack)) => fail(message, stack, code),
            })
        }
        Some(script) => {
            // Loading and calling the file are outside promptfoo's `try`:
            // what they throw makes the row an error.
            let mod_value = engine.module(&script).map_err(|e| {
                let (message, _) = thrown(&e, &mut engine.ctx);
                GradeError::Failed(format!("{}: {message}", script.reference))
            })?;
            let ctx = &mut engine.ctx;
            let target = match &script.function {
                Some(name) => mod_value
                    .as_object()
                    .map(|o| o.get(JsString::from(name.as_str()), ctx))
                    .transpose()
                    .map_err(|e| GradeError::Failed(thrown(&e, ctx).0))?
                    .unwrap_or_default(),
                None => mod_value.clone(),
            };
            let callable = if target.is_callable() {
                Some(target.clone())
            } else {
                target
                    .as_object()
                    .and_then(|o| o.get(js_string!("default"), ctx).ok())
                    .filter(JsValue::is_callable)
            };
            let Some(callable) = callable else {
                return Err(GradeError::Failed(format!(
                    "Assertion malformed: {} must export a function or have a default export as a function",
                    script.reference.trim_start_matches("file://")
                )));
            };
            let value = callable
                .as_callable()
                .expect("checked callable")
                .call(&JsValue::undefined(), &[output, context], ctx)
                .and_then(|v| settle(v, ctx))
                .map_err(|e| {
                    let (message, _) = thrown(&e, ctx);
                    GradeError::Failed(format!("{}: {message}", script.reference))
                })?;
            let is_ok_type = value.is_boolean() || value.is_number() || value.is_object();
            let outcome = if is_ok_type {
                validate(&value, ctx).map_err(|m| (m.clone(), format!("Error: {m}")))
            } else {
                let m = format!(
                    "Javascript assertion script must return a boolean, number, or object ({})",
                    script.reference
                );
                Err((m.clone(), format!("Error: {m}")))
            };
            Ok(match outcome {
                Ok(o) => {
                    let (pass, score, reason, components) =
                        normalize(o, threshold, inverse, &script.reference);
                    Graded {
                        pass,
                        score,
                        reason,
                        components,
                    }
                }
                Err((message, stack)) => fail(message, stack, &script.reference),
            })
        }
    }
}

/// The output as promptfoo hands it to code: the structured value when the
/// target or a transform produced one (an object stays an object), else
/// the text.
fn output_value(request: &Request, ctx: &mut Context) -> Result<JsValue, GradeError> {
    match request.output_json() {
        Some(v) => JsValue::from_json(&v, ctx)
            .map_err(|e| GradeError::Failed(format!("the structured output: {e}"))),
        None => Ok(JsString::from(request.output.as_str()).into()),
    }
}

/// promptfoo's `getTransformLabel` for an inline transform.
fn transform_label(code: &str) -> String {
    let single = code.split_whitespace().collect::<Vec<_>>().join(" ");
    let single = if single.chars().count() > 80 {
        format!("{}…", single.chars().take(79).collect::<String>())
    } else {
        single
    };
    format!("[inline transform]: {single}")
}

/// promptfoo's `transform`: the function called with `(output, context,
/// process)`, its result awaited; nothing returned, or a throw, fails.
fn run_transform(engine: &mut Engine, request: &Request) -> Result<Value, GradeError> {
    let config = &request.config;
    let (vars, prompt) = vars_and_prompt(request);
    let context = json!({"vars": vars, "prompt": {"raw": prompt}});
    let context = JsValue::from_json(&context, &mut engine.ctx)
        .map_err(|e| GradeError::Failed(format!("the context: {e}")))?;
    let output = output_value(request, &mut engine.ctx)?;
    let process = engine.process.clone();
    let (function, label) = match script(config).map_err(GradeError::Failed)? {
        None => {
            let Some(Value::String(code)) = config.get("value") else {
                return Err(GradeError::Failed(
                    "a transform must be JavaScript text".into(),
                ));
            };
            let body = if code.contains('\n') {
                code.clone()
            } else {
                format!("return {code}")
            };
            let f = engine.snippet(&body).map_err(|e| {
                let (message, _) = thrown(&e, &mut engine.ctx);
                GradeError::Failed(format!(
                    "Transform failed ({}): {message}",
                    transform_label(code)
                ))
            })?;
            (JsValue::from(f), transform_label(code))
        }
        Some(script) => {
            let label = "[file transform]".to_owned();
            let m = engine.module(&script).map_err(|e| {
                let (message, _) = thrown(&e, &mut engine.ctx);
                GradeError::Failed(format!("{}: {message}", script.reference))
            })?;
            let ctx = &mut engine.ctx;
            let own = |name: &str, ctx: &mut Context| -> JsValue {
                m.as_object()
                    .filter(|o| {
                        o.has_own_property(JsString::from(name), ctx)
                            .unwrap_or(false)
                    })
                    .and_then(|o| o.get(JsString::from(name), ctx).ok())
                    .unwrap_or_default()
            };
            let named = script
                .function
                .as_deref()
                .map(|f| own(f, ctx))
                .filter(JsValue::is_callable);
            let default = m
                .as_object()
                .and_then(|o| o.get(js_string!("default"), ctx).ok())
                .filter(JsValue::is_callable);
            let f = named
                .or_else(|| m.is_callable().then(|| m.clone()))
                .or(default)
                .ok_or_else(|| {
                    GradeError::Failed(format!(
                        "Transform {} must export a function, have a default export as a function, or export the specified function \"{}\"",
                        script.reference.trim_start_matches("file://").split(':').next().unwrap_or_default(),
                        script.function.as_deref().unwrap_or("undefined")
                    ))
                })?;
            (f, label)
        }
    };
    let ctx = &mut engine.ctx;
    let result = function
        .as_callable()
        .expect("a function")
        .call(&JsValue::undefined(), &[output, context, process], ctx)
        .and_then(|v| settle(v, ctx))
        .map_err(|e| {
            let (message, _) = thrown(&e, ctx);
            GradeError::Failed(format!("Transform failed ({label}): {message}"))
        })?;
    if result.is_null_or_undefined() {
        return Err(GradeError::Failed(format!(
            "Transform function did not return a value\n\n{label}"
        )));
    }
    match result.as_string() {
        Some(s) => Ok(Value::String(s.to_std_string_escaped())),
        None => match result.to_json(ctx) {
            Ok(Some(v)) => Ok(v),
            // A function or a symbol: what `String(x)` makes of it.
            _ => Ok(Value::String(result.display().to_string())),
        },
    }
}

impl Grader for JavascriptGrader {
    fn describe() -> Plugin {
        // Not stateless: a snippet can change any intrinsic (a prototype,
        // `JSON`, `String`), so every call gets a fresh instance, and no
        // grade depends on what another test's code did or which instance
        // graded it.
        Plugin::new("evalhost-javascript", env!("CARGO_PKG_VERSION"))
            .stateless(false)
            .assertion_type(
                AssertionType::new(
                    TYPE,
                    "promptfoo's javascript assertion: a snippet or a file's function, run by the Boa engine in the sandbox",
                )
                .threshold(0.0)
                .schema(json!({"type": "object", "properties": {
                    "value": {"type": "string"}, "threshold": {"type": "number"}, "inverse": {"type": "boolean"},
                    "__script": {"type": "object"}, "__test": {"type": "object"}, "config": {},
                }})),
            )
            .assertion_type(
                AssertionType::new(
                    TRANSFORM,
                    "promptfoo's transform: the output rewritten by JavaScript before it is graded (details.output)",
                )
                .threshold(0.0)
                .schema(json!({"type": "object", "properties": {
                    "value": {"type": "string"}, "__script": {"type": "object"},
                }})),
            )
    }

    fn check_config(assertion_type: &str, config: &Config) -> Result<(), String> {
        if assertion_type != TYPE && assertion_type != TRANSFORM {
            return Err(format!("unknown assertion type `{assertion_type}`"));
        }
        config.optional_f64("threshold")?;
        config.optional_bool("inverse")?;
        if script(config)?.is_some() {
            return Ok(());
        }
        match config.get("value") {
            Some(Value::String(_)) => Ok(()),
            _ => Err("javascript assertion must have a string value".into()),
        }
    }

    fn grade(request: &Request) -> Result<Grade, GradeError> {
        CONSOLE.with(|c| c.borrow_mut().clear());
        if request.assertion_type == TRANSFORM {
            let output = with_engine(|engine| run_transform(engine, request))?;
            let printed = CONSOLE.with(|c| std::mem::take(&mut *c.borrow_mut()));
            let mut details = json!({"output": output});
            if !printed.is_empty() {
                details["console"] = json!(printed);
            }
            return Ok(Grade::new(1.0)
                .with_check(Check::pass("Transformed the output"))
                .with_details(details));
        }
        let graded = with_engine(|engine| run(engine, request))?;
        let printed = CONSOLE.with(|c| std::mem::take(&mut *c.borrow_mut()));
        let mut check = Check::new(graded.pass, graded.reason);
        if !printed.is_empty() {
            check = check.with_evidence(format!("console:\n{}", printed.trim_end()));
        }
        let mut details = json!({"verdict": if graded.pass { "pass" } else { "fail" }});
        if graded.score.is_finite() && !(0.0..=1.0).contains(&graded.score) {
            details["raw_score"] = json!(graded.score);
        }
        if let Some(c) = graded.components {
            details["componentResults"] = c;
        }
        if !printed.is_empty() {
            details["console"] = json!(printed);
        }
        let score = if graded.score.is_nan() {
            0.0
        } else {
            graded.score.clamp(0.0, 1.0)
        };
        Ok(Grade::new(score).with_check(check).with_details(details))
    }
}

/// Runs `f` on this instance's engine, starting it on first use.
fn with_engine<T>(f: impl FnOnce(&mut Engine) -> Result<T, GradeError>) -> Result<T, GradeError> {
    ENGINE.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            *slot = Some(Engine::new().map_err(|e| {
                GradeError::Failed(format!("the JavaScript engine did not start: {e}"))
            })?);
        }
        let engine = slot.as_mut().expect("set above");
        let result = f(engine);
        engine.reset_globals();
        result
    })
}

export_grader!(JavascriptGrader);

#[cfg(test)]
mod tests;
