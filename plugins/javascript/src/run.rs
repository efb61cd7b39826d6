//! Grading a case and running a transform: the context and output handed
//! to the code, the call, and what it returned made a verdict or the new
//! output.

use boa_engine::object::FunctionObjectBuilder;
use boa_engine::{Context, JsString, JsValue, NativeFunction, js_string};
use evalhost_plugin_sdk::{GradeError, Request, Value, json};

use crate::engine::{Engine, settle, thrown};
use crate::outcome::{normalize, validate, with_value};
use crate::snippet::{build_function_body, script};

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
pub(crate) struct Graded {
    pub(crate) pass: bool,
    pub(crate) score: f64,
    pub(crate) reason: String,
    pub(crate) components: Option<Value>,
}

pub(crate) fn run(engine: &mut Engine, request: &Request) -> Result<Graded, GradeError> {
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
pub(crate) fn run_transform(engine: &mut Engine, request: &Request) -> Result<Value, GradeError> {
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

/// A function the host calls while it reads a suite (promptfoo's
/// `transformVars`, a var computed by a file, a prompt function, a
/// Nunjucks filter): `config.args` handed over, the result awaited and
/// returned as JSON (`undefined` as `null`). An inline snippet is a
/// function of `config.params` (`process` appended when it is the last
/// name); a file's function is its own export named `function`, else the
/// module when it is a function, else its default export.
pub(crate) fn run_call(engine: &mut Engine, request: &Request) -> Result<Value, GradeError> {
    let config = &request.config;
    let args: Vec<Value> = match config.get("args") {
        Some(Value::Array(a)) => a.clone(),
        None => Vec::new(),
        Some(_) => return Err(GradeError::Failed("`args` must be a list".into())),
    };
    let mut js_args = Vec::with_capacity(args.len() + 1);
    for a in &args {
        js_args.push(
            JsValue::from_json(a, &mut engine.ctx)
                .map_err(|e| GradeError::Failed(format!("an argument: {e}")))?,
        );
    }
    // promptfoo hands a var file its provider object, whose `id` is a
    // method: the argument at `provider_arg` gets one.
    if let Some(i) = config.get("provider_arg").and_then(Value::as_u64)
        && let (Some(Value::Object(p)), Some(obj)) = (
            args.get(i as usize),
            js_args.get(i as usize).and_then(JsValue::as_object),
        )
    {
        let id = JsString::from(p.get("id").and_then(Value::as_str).unwrap_or_default());
        let realm = engine.ctx.realm().clone();
        let f = FunctionObjectBuilder::new(
            &realm,
            NativeFunction::from_copy_closure_with_captures(
                |_, _, id: &JsString, _| Ok(id.clone().into()),
                id,
            ),
        )
        .name(js_string!("id"))
        .build();
        obj.set(js_string!("id"), f, false, &mut engine.ctx)
            .map_err(|e| GradeError::Failed(format!("the provider: {e}")))?;
    }
    let function = match script(config).map_err(GradeError::Failed)? {
        None => {
            let Some(Value::String(code)) = config.get("value") else {
                return Err(GradeError::Failed(
                    "a call needs `value` or `__script`".into(),
                ));
            };
            let params: Vec<String> = match config.get("params") {
                Some(Value::Array(p)) => p
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                _ => vec!["output".into(), "context".into(), "process".into()],
            };
            if params.last().map(String::as_str) == Some("process") {
                while js_args.len() + 1 < params.len() {
                    js_args.push(JsValue::undefined());
                }
                js_args.push(engine.process.clone());
            }
            let body = if code.contains('\n') {
                code.clone()
            } else {
                format!("return {code}")
            };
            let names: Vec<&str> = params.iter().map(String::as_str).collect();
            let f = engine.snippet_of(&names, &body).map_err(|e| {
                let (message, _) = thrown(&e, &mut engine.ctx);
                GradeError::Failed(message)
            })?;
            JsValue::from(f)
        }
        Some(script) => {
            let m = engine.module(&script).map_err(|e| {
                let (message, _) = thrown(&e, &mut engine.ctx);
                GradeError::Failed(format!("{}: {message}", script.reference))
            })?;
            let ctx = &mut engine.ctx;
            let named = script.function.as_deref().map(|name| {
                m.as_object()
                    .filter(|o| {
                        o.has_own_property(JsString::from(name), ctx)
                            .unwrap_or(false)
                    })
                    .and_then(|o| o.get(JsString::from(name), ctx).ok())
                    .filter(JsValue::is_callable)
            });
            let found = match named {
                Some(named) => named,
                None => m.is_callable().then(|| m.clone()).or_else(|| {
                    m.as_object()
                        .and_then(|o| o.get(js_string!("default"), ctx).ok())
                        .filter(JsValue::is_callable)
                }),
            };
            found.ok_or_else(|| {
                GradeError::Failed(match &script.function {
                    Some(f) => format!("{} has no function `{f}`", script.reference),
                    None => format!(
                        "{} must export a function or have a default export that is a function",
                        script.reference
                    ),
                })
            })?
        }
    };
    let ctx = &mut engine.ctx;
    let result = function
        .as_callable()
        .expect("a function")
        .call(&JsValue::undefined(), &js_args, ctx)
        .and_then(|v| settle(v, ctx))
        .map_err(|e| {
            let (message, _) = thrown(&e, ctx);
            GradeError::Failed(message)
        })?;
    if result.is_undefined() {
        return Ok(Value::Null);
    }
    match result.as_string() {
        Some(s) => Ok(Value::String(s.to_std_string_escaped())),
        None => match result.to_json(ctx) {
            Ok(Some(v)) => Ok(v),
            _ => Ok(Value::String(result.display().to_string())),
        },
    }
}
