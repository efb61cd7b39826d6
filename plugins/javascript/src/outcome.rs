//! What a snippet returned, as promptfoo validates it (a boolean, a
//! number, a grading result) and normalises it into a verdict.

use boa_engine::{Context, JsValue};
use evalhost_plugin_sdk::Value;

/// What a snippet returned, once validated.
pub(crate) enum Outcome {
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

pub(crate) fn validate(v: &JsValue, ctx: &mut Context) -> Result<Outcome, String> {
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

pub(crate) fn with_value(reason: String, rendered: &str) -> String {
    if rendered.is_empty() {
        reason
    } else {
        format!("{reason}\n{rendered}")
    }
}

/// promptfoo's `normalizeJavascriptAssertionResult`: (pass, score, reason,
/// component results).
pub(crate) fn normalize(
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
