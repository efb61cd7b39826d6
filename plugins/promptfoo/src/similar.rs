//! promptfoo's embedding types: `similar` (`handleSimilar`,
//! `matchesSimilarity`) and `answer-relevance` (`matchesAnswerRelevance`).
//! Embeddings come from the host's `embed` interface (under the `llm`
//! capability): the model the reader names (`__embedder`), called with the
//! host's keys and cached like the judge.

use evalhost_plugin_sdk::{EmbeddingRequest, Grade, GradeError, Request, Value};

use crate::grading::{self, try_parse};
use crate::prompts;

/// The embedding of `text` from the assertion's embedding model.
fn embedding(request: &Request, text: &str) -> Result<Vec<f64>, GradeError> {
    evalhost_plugin_sdk::embed(&EmbeddingRequest {
        text: text.to_owned(),
        target: request
            .config
            .get("__embedder")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
    .map(|e| e.vector)
    .map_err(grading::judge_error)
}

fn same_length(a: &[f64], b: &[f64]) -> Result<(), GradeError> {
    if a.len() == b.len() {
        Ok(())
    } else {
        Err(GradeError::Failed("Vectors must be of equal length".into()))
    }
}

/// promptfoo's `cosineSimilarity` (0 when either vector is all zeros).
pub fn cosine(a: &[f64], b: &[f64]) -> Result<f64, GradeError> {
    same_length(a, b)?;
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    Ok(if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    })
}

/// The metric of a `similar` type: `similar` and `similar:cosine`,
/// `similar:dot`, `similar:euclidean`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Metric {
    Cosine,
    Dot,
    Euclidean,
}

impl Metric {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "" | "cosine" => Some(Self::Cosine),
            "dot" => Some(Self::Dot),
            "euclidean" => Some(Self::Euclidean),
            _ => None,
        }
    }
}

/// One `matchesSimilarity`: the verdict, score and reason for one value.
fn one(
    request: &Request,
    expected: &str,
    threshold: f64,
    inverse: bool,
    metric: Metric,
) -> Result<(bool, f64, String), GradeError> {
    let e = embedding(request, expected)?;
    let o = embedding(request, &request.output)?;
    let eps = f64::EPSILON;
    let t = crate::js::number(threshold);
    if metric == Metric::Euclidean {
        same_length(&e, &o)?;
        let d = e
            .iter()
            .zip(&o)
            .map(|(x, y)| (x - y) * (x - y))
            .sum::<f64>()
            .sqrt();
        let pass = if inverse {
            d >= threshold - eps
        } else {
            d <= threshold + eps
        };
        let normalized = 1.0 / (1.0 + d);
        let below = format!(
            "Distance {} is less than or equal to threshold {t}",
            crate::js::to_fixed(d, 2)
        );
        let above = format!(
            "Distance {} is greater than threshold {t}",
            crate::js::to_fixed(d, 2)
        );
        // promptfoo: a pass reads "above" when inverted, "below" otherwise.
        let reason = if pass == inverse { above } else { below };
        return Ok((
            pass,
            if inverse {
                1.0 - normalized
            } else {
                normalized
            },
            reason,
        ));
    }
    let s = match metric {
        Metric::Dot => {
            same_length(&e, &o)?;
            e.iter().zip(&o).map(|(x, y)| x * y).sum()
        }
        _ => cosine(&e, &o)?,
    };
    let pass = if inverse {
        s <= threshold + eps
    } else {
        s >= threshold - eps
    };
    let at_least = format!(
        "Similarity {} is greater than or equal to threshold {t}",
        crate::js::to_fixed(s, 2)
    );
    let less = format!(
        "Similarity {} is less than threshold {t}",
        crate::js::to_fixed(s, 2)
    );
    let reason = match (pass, inverse) {
        (true, false) | (false, true) => at_least,
        (true, true) | (false, false) => less,
    };
    Ok((pass, if inverse { 1.0 - s } else { s }, reason))
}

/// `similar` (and `similar:cosine|dot|euclidean`): the output's embedding
/// against the value's (default threshold 0.75). A list of values passes
/// when one does (scoring the best); `not-similar` with a list needs every
/// one to fail (scoring the closest).
pub fn similar(request: &Request, inverse: bool) -> Result<Grade, GradeError> {
    let metric = request
        .config
        .get("__metric")
        .and_then(Value::as_str)
        .and_then(Metric::parse)
        .unwrap_or(Metric::Cosine);
    let threshold = request
        .config
        .optional_f64("threshold")
        .map_err(GradeError::Failed)?
        .unwrap_or(0.75);
    let values: Vec<String> = match request.config.get("value") {
        Some(Value::String(s)) => {
            let (pass, score, reason) = one(request, s, threshold, inverse, metric)?;
            return Ok(crate::judged(pass, score, reason));
        }
        Some(Value::Array(items)) if !items.is_empty() => {
            items.iter().map(crate::js::string).collect()
        }
        _ => {
            return Err(GradeError::Failed(
                "Similarity assertion type must have a string or array of strings value".into(),
            ));
        }
    };
    if inverse {
        let mut closest: Option<(bool, f64, String)> = None;
        for v in &values {
            let r = one(request, v, threshold, inverse, metric)?;
            if !r.0 {
                return Ok(crate::judged(r.0, r.1, r.2));
            }
            if closest.as_ref().is_none_or(|c| r.1 < c.1) {
                closest = Some(r);
            }
        }
        let (pass, score, reason) = closest.unwrap_or((false, 0.0, String::new()));
        return Ok(crate::judged(pass, score, reason));
    }
    let mut best = f64::NEG_INFINITY;
    for v in &values {
        let r = one(request, v, threshold, inverse, metric)?;
        if r.0 {
            return Ok(crate::judged(r.0, r.1, r.2));
        }
        best = best.max(r.1);
    }
    Ok(crate::judged(
        false,
        best,
        "None of the provided values met the similarity threshold".into(),
    ))
}

/// How many questions the grader writes for `answer-relevance`.
const QUESTIONS: usize = 3;

/// `answer-relevance`: the text grader writes the question the output
/// answers, three times; the score is the mean cosine similarity of each
/// question's embedding to the test's `query` var (else the prompt).
pub fn answer_relevance(request: &Request) -> Result<Grade, GradeError> {
    let prompt = grading::prompt(request);
    if prompt.is_empty() {
        return Err(GradeError::Failed(
            "answer-relevance assertion type must have a prompt".into(),
        ));
    }
    let input = match grading::vars(request).get("query") {
        Some(Value::String(q)) => q.clone(),
        _ => prompt,
    };
    let threshold = request
        .config
        .optional_f64("threshold")
        .map_err(GradeError::Failed)?
        .unwrap_or(0.0);
    let answer = try_parse(&request.output);
    let messages = grading::messages_own(
        grading::custom_prompt(request).as_deref(),
        prompts::ANSWER_RELEVANCE,
        &[("answer", answer)],
    )?;
    let mut questions = Vec::with_capacity(QUESTIONS);
    for _ in 0..QUESTIONS {
        let q = grading::ask(request, messages.clone())?;
        if q.is_empty() {
            return Ok(crate::judged(false, 0.0, "No output".into()));
        }
        questions.push(q);
    }
    let target = embedding(request, &input)?;
    let mut total = 0.0;
    for q in &questions {
        total += cosine(&target, &embedding(request, q)?)?;
    }
    let similarity = total / QUESTIONS as f64;
    let pass = similarity >= threshold - f64::EPSILON;
    let reason = format!(
        "Relevance {} is {} than threshold {}",
        crate::js::to_fixed(similarity, 2),
        if pass { "greater" } else { "less" },
        crate::js::number(threshold)
    );
    Ok(crate::judged(pass, similarity, reason))
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalhost_plugin_sdk::testing::Harness;
    use evalhost_plugin_sdk::{Embedding, json};

    fn harness() -> Harness<crate::PromptfooGrader> {
        Harness::new().embedder(|req| {
            let vector = match req.text.as_str() {
                "out" => vec![1.0, 0.0],
                "near" => vec![0.9, 0.1],
                "far" => vec![0.0, 1.0],
                _ => vec![0.0, 0.0],
            };
            Ok(Embedding {
                vector,
                model: "e".into(),
                input_tokens: None,
                cost_usd: None,
                cached: false,
            })
        })
    }

    fn grade(config: Value) -> Grade {
        harness()
            .grade(&Request::new("promptfoo-similar", "out").with_config(config))
            .unwrap()
    }

    fn pass(g: &Grade) -> bool {
        g.details.as_ref().unwrap()["verdict"] == "pass"
    }

    #[test]
    fn similarity_is_promptfoos() {
        let near = 0.9 / (0.81f64 + 0.01).sqrt();
        let g = grade(json!({"value": "near"}));
        assert!(pass(&g) && (g.score - near).abs() < 1e-12);
        let g = grade(json!({"value": "far"}));
        assert!(!pass(&g) && g.score == 0.0);
        // A list: one passing value passes.
        assert!(pass(&grade(json!({"value": ["far", "near"]}))));
        let g = grade(json!({"value": ["far", "zero"]}));
        assert_eq!(
            g.checks[0].text,
            "None of the provided values met the similarity threshold"
        );
        // Inverted: every value must fail.
        let g = grade(json!({"value": ["far", "near"], "inverse": true}));
        assert!(!pass(&g) && (g.score - (1.0 - near)).abs() < 1e-12);
        // Euclidean: a distance, scored 1/(1+d).
        let g = grade(json!({"value": "far", "__metric": "euclidean", "threshold": 1.5}));
        assert!(pass(&g) && (g.score - 1.0 / (1.0 + 2f64.sqrt())).abs() < 1e-12);
        let g = grade(json!({"value": "far", "__metric": "dot"}));
        assert!(!pass(&g) && g.score == 0.0);
    }
}
