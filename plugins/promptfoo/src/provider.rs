//! Types that read what the provider reported beyond its output:
//! `finish-reason` (the stop reason) and `perplexity`, `perplexity-score`
//! (the output tokens' log-probabilities), as promptfoo 0.121 grades them
//! (`src/assertions/finishReason.ts`, `perplexity.ts`); and `latency` and
//! `cost` (the trace's duration and cost).
//!
//! The host hands both over through the `response` interface
//! ([`Request::finish_reason`], [`Request::logprobs`]); a target that
//! reported none makes `finish-reason` fail and the perplexity types error,
//! as in promptfoo.

use evalhost_plugin_sdk::{Config, Grade, GradeError, Request};
use serde_json::Value;

use crate::js;
use crate::{js_num, outcome};

/// promptfoo's `normalizeFinishReason` (`src/util/finishReason.ts`): the
/// provider's own words mapped to OpenAI's, anything else lower-cased.
pub fn normalize_finish_reason(raw: &str) -> Option<String> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return None;
    }
    let key = trimmed.to_lowercase();
    let mapped = match key.as_str() {
        "stop" | "end_turn" | "stop_sequence" => "stop",
        "length" | "max_tokens" => "length",
        "content_filter" | "refusal" => "content_filter",
        "tool_calls" | "function_call" | "tool_use" => "tool_calls",
        "pause_turn" => "pause_turn",
        _ => return Some(key),
    };
    Some(mapped.to_owned())
}

/// `finish-reason`: the expected reason equals the reported one, ignoring
/// case. No reported reason fails (passes when inverted).
pub fn finish_reason(
    config: &Config,
    request: &Request,
    inverse: bool,
) -> Result<Grade, GradeError> {
    let Some(Value::String(want)) = config.get("value") else {
        return Err(GradeError::Failed(
            "\"finish-reason\" assertion type must have a string value".into(),
        ));
    };
    let Some(got) = request
        .finish_reason()
        .as_deref()
        .and_then(normalize_finish_reason)
    else {
        return Ok(crate::judged(
            inverse,
            if inverse { 1.0 } else { 0.0 },
            if inverse {
                "Assertion passed".into()
            } else {
                "Provider did not supply stop/finish reason".into()
            },
        ));
    };
    let pass = (want.to_lowercase() == got.to_lowercase()) != inverse;
    Ok(crate::judged(
        pass,
        if pass { 1.0 } else { 0.0 },
        if pass {
            "Assertion passed".into()
        } else {
            format!(
                "Expected finish reason {}\"{want}\" but got \"{got}\"",
                if inverse { "not " } else { "" }
            )
        },
    ))
}

/// The mean log-probability, or promptfoo's error for a provider that
/// returned none.
fn mean_logprob(request: &Request, name: &str) -> Result<f64, GradeError> {
    match request.logprobs() {
        Some(l) if !l.is_empty() => Ok(l.iter().sum::<f64>() / l.len() as f64),
        _ => Err(GradeError::Failed(format!(
            "{name} assertion does not support providers that do not return logProbs"
        ))),
    }
}

/// `perplexity`: exp(−mean log-probability) at or below the threshold; no
/// threshold passes.
pub fn perplexity(config: &Config, request: &Request, inverse: bool) -> Result<Grade, GradeError> {
    let mean = mean_logprob(request, "Perplexity")?;
    let perplexity = (-mean).exp();
    let threshold = config
        .optional_f64("threshold")
        .map_err(GradeError::Failed)?;
    let pass = threshold.is_none_or(|t| (perplexity <= t) != inverse);
    Ok(crate::judged(
        pass,
        if pass { 1.0 } else { 0.0 },
        if pass {
            "Assertion passed".into()
        } else {
            format!(
                "Perplexity {} is {} threshold {}",
                js::to_fixed(perplexity, 2),
                if inverse {
                    "less than or equal to"
                } else {
                    "greater than"
                },
                js::number(threshold.unwrap_or(f64::NAN))
            )
        },
    ))
}

/// `perplexity-score`: the logistic of the mean log-probability, at or above
/// the threshold; the score is that value (1 − it when inverted).
pub fn perplexity_score(
    config: &Config,
    request: &Request,
    inverse: bool,
) -> Result<Grade, GradeError> {
    let mean = mean_logprob(request, "perplexity-score")?;
    let norm = 1.0 / (1.0 + (-mean).exp());
    let threshold = config
        .optional_f64("threshold")
        .map_err(GradeError::Failed)?;
    let pass = threshold.is_none_or(|t| (norm >= t) != inverse);
    Ok(crate::judged(
        pass,
        if inverse { 1.0 - norm } else { norm },
        if pass {
            "Assertion passed".into()
        } else {
            format!(
                "Perplexity score {} is {} threshold {}",
                js::to_fixed(norm, 2),
                if inverse {
                    "greater than or equal to"
                } else {
                    "less than"
                },
                js::number(threshold.unwrap_or(f64::NAN))
            )
        },
    ))
}

/// promptfoo's `latency`: the target answered within `threshold`
/// milliseconds.
pub(crate) fn latency(
    config: &Config,
    request: &Request,
    inverse: bool,
) -> Result<Grade, GradeError> {
    let threshold = config.optional_f64("threshold")?.unwrap_or(f64::NAN);
    let Some(ms) = request.trace.duration_ms else {
        return Err(GradeError::Failed(
            "Latency assertion does not support cached results (the target reported no duration)"
                .into(),
        ));
    };
    Ok(outcome(
        ((ms as f64) <= threshold) != inverse,
        format!(
            "Latency {ms}ms is {} threshold {}ms",
            if inverse {
                "less than or equal to"
            } else {
                "greater than"
            },
            js_num(threshold)
        ),
    ))
}

/// promptfoo's `cost`: the answer cost at most `threshold` dollars.
pub(crate) fn cost(config: &Config, request: &Request, inverse: bool) -> Result<Grade, GradeError> {
    let threshold = config.optional_f64("threshold")?.unwrap_or(f64::NAN);
    let Some(cost) = request.trace.cost_usd else {
        return Err(GradeError::Failed(
            "Cost assertion does not support providers that do not return cost".into(),
        ));
    };
    Ok(outcome(
        (cost <= threshold) != inverse,
        format!(
            "Cost {} is {} threshold {}",
            to_precision_2(cost),
            if inverse {
                "less than or equal to"
            } else {
                "greater than"
            },
            js_num(threshold)
        ),
    ))
}

/// JavaScript's `n.toPrecision(2)` for the costs assertions print.
fn to_precision_2(n: f64) -> String {
    if n == 0.0 {
        return "0.0".into();
    }
    let digits = n.abs().log10().floor() as i32;
    let decimals = (1 - digits).max(0) as usize;
    format!("{n:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(v: Value) -> Config {
        Config::from_value(v).unwrap()
    }

    #[test]
    fn finish_reasons_normalise_as_promptfoo() {
        assert_eq!(normalize_finish_reason("end_turn").as_deref(), Some("stop"));
        assert_eq!(
            normalize_finish_reason(" Tool_Use ").as_deref(),
            Some("tool_calls")
        );
        assert_eq!(normalize_finish_reason("WEIRD").as_deref(), Some("weird"));
        assert_eq!(normalize_finish_reason("  "), None);
    }

    #[test]
    fn finish_reason_compares_the_normalised_reason() {
        let r = Request::new("finish-reason", "x").with_finish_reason("end_turn");
        let g = finish_reason(&config(json!({"value": "STOP"})), &r, false).unwrap();
        assert_eq!(g.score, 1.0);
        let g = finish_reason(&config(json!({"value": "length"})), &r, false).unwrap();
        assert_eq!(g.score, 0.0);
        assert_eq!(
            g.checks[0].text,
            "Expected finish reason \"length\" but got \"stop\""
        );
        // None reported: fail, or pass when inverted.
        let none = Request::new("finish-reason", "x");
        let g = finish_reason(&config(json!({"value": "stop"})), &none, false).unwrap();
        assert_eq!(
            (g.score, g.checks[0].text.as_str()),
            (0.0, "Provider did not supply stop/finish reason")
        );
        let g = finish_reason(&config(json!({"value": "stop"})), &none, true).unwrap();
        assert_eq!(g.score, 1.0);
        assert!(finish_reason(&config(json!({"value": 3})), &r, false).is_err());
    }

    #[test]
    fn perplexity_reads_the_logprobs() {
        let r = Request::new("perplexity", "x").with_logprobs(vec![-0.5, -1.5]);
        // exp(1) = 2.718...
        let g = perplexity(&config(json!({"threshold": 2.5})), &r, false).unwrap();
        assert_eq!(g.score, 0.0);
        assert_eq!(
            g.checks[0].text,
            "Perplexity 2.72 is greater than threshold 2.5"
        );
        let g = perplexity(&config(json!({})), &r, false).unwrap();
        assert_eq!(g.score, 1.0, "no threshold passes");
        let s = perplexity_score(&config(json!({"threshold": 0.3})), &r, false).unwrap();
        let norm = 1.0 / (1.0 + 1f64.exp());
        assert!((s.score - norm).abs() < 1e-12);
        assert_eq!(
            s.checks[0].text,
            "Perplexity score 0.27 is less than threshold 0.3"
        );
        let none = Request::new("perplexity", "x");
        assert!(perplexity(&config(json!({})), &none, false).is_err());
        assert!(perplexity_score(&config(json!({})), &none, false).is_err());
    }
}
