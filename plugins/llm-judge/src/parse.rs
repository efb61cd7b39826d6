//! Reading judge replies robustly: code fences and surrounding prose are
//! ignored, the first balanced `{...}` is taken, `"passed": "true"` and bare
//! words are repaired to booleans, and out-of-range scores are clamped and
//! reported.

use evalhost_plugin_sdk::{Check, Value};

/// The first JSON object in `text`.
pub fn extract_json(text: &str) -> Result<Value, String> {
    let start = text
        .find('{')
        .ok_or_else(|| "the reply has no JSON object".to_owned())?;
    let bytes = text.as_bytes();
    let (mut depth, mut in_string, mut escaped) = (0i32, false, false);
    let mut end = None;
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    end = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let end = end.ok_or_else(|| "the reply's JSON object is not closed".to_owned())?;
    let span = &text[start..=end];
    match serde_json::from_str::<Value>(span) {
        Ok(v) => Ok(v),
        Err(first) => serde_json::from_str::<Value>(&repair_booleans(span))
            .map_err(|_| format!("the reply is not valid JSON: {first}")),
    }
}

/// `"satisfied": yes` / `"passed": True` → booleans.
fn repair_booleans(span: &str) -> String {
    let mut out = span.to_owned();
    for key in ["passed", "satisfied"] {
        for (bad, good) in [
            ("True", "true"),
            ("False", "false"),
            ("yes", "true"),
            ("no", "false"),
            ("\"true\"", "true"),
            ("\"false\"", "false"),
        ] {
            out = out.replace(&format!("\"{key}\": {bad}"), &format!("\"{key}\": {good}"));
            out = out.replace(&format!("\"{key}\":{bad}"), &format!("\"{key}\":{good}"));
        }
    }
    out
}

/// A boolean the judge may have written as a string.
pub fn truthy(value: Option<&Value>) -> Option<bool> {
    match value? {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "pass" | "passed" | "satisfied" => Some(true),
            "false" | "no" | "fail" | "failed" | "unsatisfied" => Some(false),
            _ => None,
        },
        Value::Number(n) => Some(n.as_f64() != Some(0.0)),
        _ => None,
    }
}

/// A free-form judge reply.
#[derive(Debug, Clone, PartialEq)]
pub struct FreeForm {
    /// The score, clamped to [0, 1].
    pub score: f64,
    /// The score as the judge wrote it, when it had to be clamped.
    pub clamped_from: Option<f64>,
    /// Its assertions (at most 8).
    pub assertions: Vec<Check>,
    /// Its details object.
    pub details: Option<Value>,
}

/// Reads `{"score", "assertions"?, "details"?}`.
pub fn free_form(reply: &Value) -> Result<FreeForm, String> {
    let raw = reply
        .get("score")
        .and_then(|s| {
            s.as_f64()
                .or_else(|| s.as_str().and_then(|t| t.trim().parse().ok()))
        })
        .ok_or_else(|| "the reply has no numeric `score`".to_owned())?;
    if !raw.is_finite() {
        return Err("the reply's `score` is not a finite number".into());
    }
    let score = raw.clamp(0.0, 1.0);
    let assertions = reply
        .get("assertions")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|a| {
                    let text = a.get("text")?.as_str()?.to_owned();
                    let mut check = Check::new(truthy(a.get("passed")).unwrap_or(false), text);
                    if let Some(e) = a.get("evidence").and_then(Value::as_str) {
                        check = check.with_evidence(e);
                    }
                    Some(check)
                })
                .take(8)
                .collect()
        })
        .unwrap_or_default();
    Ok(FreeForm {
        score,
        clamped_from: (score != raw).then_some(raw),
        assertions,
        details: reply.get("details").filter(|d| d.is_object()).cloned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_json_in_fences_and_prose() {
        let v = extract_json("Sure! ```json\n{\"score\": 0.5, \"note\": \"a } in a string\"}\n``` hope that helps {x}").unwrap();
        assert_eq!(v["score"], 0.5);
        assert_eq!(v["note"], "a } in a string");
        assert!(extract_json("no json here").is_err());
        assert!(extract_json("{\"score\": 1").is_err());
    }

    #[test]
    fn repairs_booleans_and_clamps_scores() {
        let v = extract_json("{\"checks\": [{\"id\": \"a\", \"satisfied\": True}]}").unwrap();
        assert_eq!(v["checks"][0]["satisfied"], true);
        let f = free_form(&serde_json::json!({"score": 1.7})).unwrap();
        assert_eq!((f.score, f.clamped_from), (1.0, Some(1.7)));
        let f = free_form(&serde_json::json!({"score": "0.25"})).unwrap();
        assert_eq!(f.score, 0.25);
        assert!(free_form(&serde_json::json!({"verdict": "pass"})).is_err());
    }
}
