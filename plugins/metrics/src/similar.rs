//! AgentV 5's `similar` (`SimilarAssertionGrader`): the cosine similarity
//! of the value's and the output's embeddings, rescaled to `(cos + 1) / 2`,
//! passes at the threshold (default 0.75). Embeddings come from the host's
//! `embed` interface (under the `llm` grant), through the embedding target
//! the reader made from the assertion's `config.embedding_provider`.

use evalhost_plugin_sdk::{Check, Config, EmbeddingRequest, Grade, Request, Value, json};

/// The type name.
pub const SIMILAR: &str = "agentv5-similar";

pub fn check(config: &Config) -> Result<(), String> {
    match config.get("value") {
        Some(Value::String(s)) if !s.trim().is_empty() => {}
        _ => return Err(
            "AgentV 5's `similar` compares against one text: `value` must be a non-empty string"
                .into(),
        ),
    }
    config.optional_f64("threshold")?;
    match config.get("__embedder") {
        Some(Value::String(_)) => Ok(()),
        _ => Err("no embedding model: AgentV 5's `similar` needs `config.embedding_provider` with `base_url` and `model`".into()),
    }
}

/// AgentV 5's cosine: over the shorter length; 0 when either is all zeros.
fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (mut dot, mut am, mut bm) = (0.0, 0.0, 0.0);
    for i in 0..n {
        dot += a[i] * b[i];
        am += a[i] * a[i];
        bm += b[i] * b[i];
    }
    if am == 0.0 || bm == 0.0 {
        0.0
    } else {
        dot / (am.sqrt() * bm.sqrt())
    }
}

/// JavaScript's `toFixed(3)` for a score in [0, 1].
fn fixed3(x: f64) -> String {
    format!("{:.3}", (x * 1000.0).round() / 1000.0)
}

pub fn grade(request: &Request) -> Result<Grade, String> {
    let config = &request.config;
    let value = config
        .get("value")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let threshold = config.optional_f64("threshold")?.unwrap_or(0.75);
    let target = config
        .get("__embedder")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let embed = |text: &str| {
        evalhost_plugin_sdk::embed(&EmbeddingRequest {
            text: text.to_owned(),
            target: target.clone(),
        })
        .map(|e| e.vector)
    };
    // AgentV 5 scores a failed embedding call 0, failing the assertion.
    let (expected, actual) = match (embed(value), embed(&request.output)) {
        (Ok(e), Ok(a)) if !e.is_empty() && !a.is_empty() => (e, a),
        (Err(e), _) | (_, Err(e)) => {
            return Ok(
                Grade::from_check(Check::fail(format!("Similar assertion failed: {e}")))
                    .with_details(json!({"verdict": "fail"})),
            );
        }
        _ => {
            return Ok(Grade::from_check(Check::fail(
                "Similar assertion failed: embedding provider returned an invalid embeddings payload",
            ))
            .with_details(json!({"verdict": "fail"})));
        }
    };
    let similarity = ((cosine(&expected, &actual) + 1.0) / 2.0).clamp(0.0, 1.0);
    let pass = similarity >= threshold;
    let mut grade = Grade::new(similarity);
    grade.checks.push(Check::new(
        pass,
        format!(
            "Embedding similarity {} {} {threshold}",
            fixed3(similarity),
            if pass { ">=" } else { "<" }
        ),
    ));
    Ok(grade.with_details(json!({
        "verdict": if pass { "pass" } else { "fail" },
        "threshold": threshold,
        "metric": "cosine",
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalhost_plugin_sdk::Embedding;
    use evalhost_plugin_sdk::testing::Harness;

    fn grade(value: &str, threshold: Option<f64>) -> Grade {
        let harness = Harness::<crate::MetricsGrader>::new().embedder(|req| {
            assert_eq!(req.target.as_deref(), Some("emb"));
            let vector = match req.text.as_str() {
                "out" => vec![1.0, 0.0],
                "orthogonal" => vec![0.0, 1.0],
                "opposite" => vec![-1.0, 0.0],
                _ => vec![],
            };
            Ok(Embedding {
                vector,
                model: "m".into(),
                input_tokens: None,
                cost_usd: None,
                cached: false,
            })
        });
        let mut config = json!({"value": value, "__embedder": "emb"});
        if let Some(t) = threshold {
            config["threshold"] = json!(t);
        }
        harness
            .grade(&Request::new(SIMILAR, "out").with_config(config))
            .unwrap()
    }

    #[test]
    fn similarity_is_rescaled_cosine() {
        // Orthogonal vectors: cosine 0, AgentV 5 scores 0.5.
        let g = grade("orthogonal", None);
        assert_eq!(g.score, 0.5);
        assert_eq!(g.checks[0].text, "Embedding similarity 0.500 < 0.75");
        assert_eq!(
            grade("orthogonal", Some(0.5)).details.unwrap()["verdict"],
            "pass"
        );
        assert_eq!(grade("opposite", None).score, 0.0);
        let g = grade("empty", None);
        assert_eq!(g.score, 0.0);
        assert!(g.checks[0].text.starts_with("Similar assertion failed"));
    }
}
