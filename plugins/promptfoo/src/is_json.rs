//! promptfoo's `is-json` and `contains-json`: the output parsed, or the
//! JSON objects found in it, checked against the value's JSON Schema
//! (ajv, as [`crate::schema`] ports it).

use evalhost_plugin_sdk::{Config, Grade, GradeError, Value};

use crate::{js, outcome, schema};

/// promptfoo's `extractJsonObjects` (JSON only; promptfoo also reads YAML
/// flow mappings there).
pub fn json_objects(text: &str) -> Vec<Value> {
    let bytes: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == '{' {
            let (mut open, mut close) = (1, 0);
            let mut j = i + 1;
            let mut found = false;
            while j < bytes.len().min(i + 100_000) && open > close {
                if bytes[j] == '{' {
                    open += 1;
                }
                if bytes[j] == '}' {
                    close += 1;
                }
                j += 1;
                if open == close || j == bytes.len() {
                    let mut candidate: String = bytes[i..j].iter().collect();
                    if open > close {
                        candidate.push_str(&"}".repeat(open - close));
                    }
                    match js::json_parse(&candidate) {
                        Some(v @ (Value::Object(_) | Value::Array(_))) => {
                            out.push(v);
                            i = j - 1;
                            found = true;
                            break;
                        }
                        _ if open == close => break,
                        _ => {}
                    }
                }
            }
            let _ = found;
        }
        i += 1;
    }
    out
}

/// JavaScript's truthiness of an assertion value.
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0 && !x.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// The schema of an `is-json`/`contains-json` value as promptfoo's handler
/// takes it: an object as it is; a string through `loadYaml` (the suite
/// reader parsed it, `__parsed_value`, or recorded why not,
/// `__parse_error`); anything else throws.
fn schema_of(t: &str, config: &Config, value: &Value) -> Result<Value, GradeError> {
    match value {
        Value::Object(_) | Value::Array(_) => Ok(value.clone()),
        Value::String(s) if s.starts_with("file://") => Err(GradeError::Failed(format!(
            "{t} references a file that does not export a JSON schema"
        ))),
        Value::String(s) => {
            if let Some(e) = config.get("__parse_error").and_then(Value::as_str) {
                return Err(GradeError::Failed(e.to_owned()));
            }
            match config.get("__parsed_value") {
                Some(v) => Ok(v.clone()),
                // Not read by evalhost's suite reader: JSON is YAML.
                None => js::json_parse(s).ok_or_else(|| {
                    GradeError::Failed(format!(
                        "the {t} schema is not JSON, and no YAML parse of it was handed over"
                    ))
                }),
            }
        }
        _ => Err(GradeError::Failed(format!(
            "{t} assertion must have a string or object value"
        ))),
    }
}

/// promptfoo's `handleIsJson`: JSON.parse, then the schema (compiled only
/// when the output parsed).
pub(crate) fn is_json(
    config: &Config,
    output: &str,
    value: &Value,
    inverse: bool,
) -> Result<Grade, GradeError> {
    let parsed = js::json_parse(output);
    let mut pass = parsed.is_some() != inverse;
    if let Some(data) = &parsed
        && truthy(value)
    {
        let schema = schema_of("is-json", config, value)?;
        let validator = schema::compile(&schema).map_err(GradeError::Failed)?;
        let result = validator.validate(data);
        pass = result.is_ok() != inverse;
        if !pass {
            return Ok(outcome(
                false,
                match result {
                    Ok(()) => "Output is JSON that conforms to the provided schema".into(),
                    Err(errors) => format!(
                        "JSON does not conform to the provided schema. Errors: {}",
                        schema::errors_text(&errors)
                    ),
                },
            ));
        }
    }
    Ok(outcome(pass, "Expected output to be valid JSON".into()))
}

/// promptfoo's `handleContainsJson`: the objects `extractJsonObjects`
/// finds, each against the schema until one conforms.
pub(crate) fn contains_json(
    config: &Config,
    output: &str,
    value: &Value,
    inverse: bool,
) -> Result<Grade, GradeError> {
    let objects = json_objects(output);
    let mut pass = if inverse {
        objects.is_empty()
    } else {
        !objects.is_empty()
    };
    let mut message = "Expected output to contain valid JSON".to_owned();
    if truthy(value) {
        for object in &objects {
            let schema = schema_of("contains-json", config, value)?;
            let validator = schema::compile(&schema).map_err(GradeError::Failed)?;
            let result = validator.validate(object);
            pass = result.is_ok() != inverse;
            match result {
                Ok(()) => {
                    if inverse {
                        message = "Output contains JSON conforming to the provided schema".into();
                    }
                    break;
                }
                Err(errors) => {
                    message = format!(
                        "JSON does not conform to the provided schema. Errors: {}",
                        schema::errors_text(&errors)
                    );
                }
            }
        }
    }
    Ok(outcome(pass, message))
}
