//! Grading one test: each assertion is dispatched to its plugin, negation is
//! applied by the host (the same for every type), and the test score is the
//! weighted mean, with `required` gates. Groups of assertions are graded
//! in `groups.rs`, the test's score and verdict made in `score.rs`.

use std::time::{Duration, Instant};

use crate::failure::FailureClass;
use crate::grants::{self, Policy};
use crate::plugin::bindings::evalhost::grader::types as wit;
use crate::plugin::state::ResponseInfo;
use crate::plugin::{CallLimits, Registry};
use crate::results::{CheckRow, ExecutionStatus, ScoreRow, Verdict};
use crate::suite::{Aggregate, Assertion, Group, LimitOverrides, Required, TestCase};
use crate::target::TargetOutput;

/// The default pass threshold of a test.
pub const DEFAULT_THRESHOLD: f64 = 0.8;

pub use crate::results::reaches;

mod groups;
mod score;

pub use groups::grade_tree;
pub use score::{TestScore, keep_raw_scores, score_test};

/// What a plugin is asked to grade: the WIT request, and what the target
/// reported beyond it (read through the `response` interface). Derefs to the
/// WIT request.
#[derive(Debug, Clone)]
pub struct Request {
    /// The request as the plugin receives it.
    pub wit: wit::GradeRequest,
    /// The finish reason and log-probabilities the target reported.
    pub response: std::sync::Arc<ResponseInfo>,
    /// Under `--isolate`, the case's sandbox: every command a grader runs
    /// for it (on any thread of a group) runs there, shares its budget and
    /// is recorded in its row.
    pub sandbox: Option<crate::isolate::CaseSandbox>,
}

impl std::ops::Deref for Request {
    type Target = wit::GradeRequest;
    fn deref(&self) -> &wit::GradeRequest {
        &self.wit
    }
}

impl std::ops::DerefMut for Request {
    fn deref_mut(&mut self) -> &mut wit::GradeRequest {
        &mut self.wit
    }
}

/// The request a plugin sees for `test` and `output`, without an assertion
/// yet: [`grade_assertion`] fills the type and config in.
pub fn base_request(test: &TestCase, output: &TargetOutput) -> Request {
    Request {
        wit: wit_request(test, output),
        response: std::sync::Arc::new(ResponseInfo {
            finish_reason: output.finish_reason.clone(),
            logprobs: output.logprobs.clone(),
            output_json: output.output_json.as_ref().map(ToString::to_string),
        }),
        sandbox: None,
    }
}

fn wit_request(test: &TestCase, output: &TargetOutput) -> wit::GradeRequest {
    let message = |role: &str, content: &str, json: Option<&serde_json::Value>| wit::Message {
        role: role.to_owned(),
        content: content.to_owned(),
        content_json: json.map(ToString::to_string),
        tool_calls: Vec::new(),
        name: None,
    };
    let output_messages = output
        .messages
        .iter()
        .map(|m| wit::Message {
            role: m.role.clone(),
            content: m.content.clone(),
            content_json: m.content_json.as_ref().map(ToString::to_string),
            tool_calls: m
                .tool_calls
                .iter()
                .map(|c| wit::ToolCall {
                    id: c.id.clone(),
                    tool: c.tool.clone(),
                    input_json: c.input.as_ref().map(ToString::to_string),
                    output_json: c.output.as_ref().map(ToString::to_string),
                    status: c.status.clone(),
                    duration_ms: c.duration_ms,
                })
                .collect(),
            name: m.name.clone(),
        })
        .collect();
    wit::GradeRequest {
        assertion_type: String::new(),
        config_json: String::new(),
        test_id: test.id.clone(),
        output: output.text.clone(),
        output_messages,
        input: test
            .input
            .iter()
            .map(|m| message(&m.role, &m.content, m.content_json.as_ref()))
            .collect(),
        expected_output: test.expected_text().map(str::to_owned),
        expected_messages: test
            .expected
            .iter()
            .map(|m| message(&m.role, &m.content, m.content_json.as_ref()))
            .collect(),
        criteria: test.criteria.clone(),
        metadata_json: serde_json::Value::Object(test.metadata.clone()).to_string(),
        trace: wit::Trace {
            token_usage: output.token_usage.map(|t| wit::TokenUsage {
                input: t.input,
                output: t.output,
                cached: t.cached,
                reasoning: t.reasoning,
            }),
            cost_usd: output.cost_usd,
            duration_ms: output.duration_ms,
            llm_calls: output.llm_call_count(),
            file_changes: None,
        },
        workspace_path: None,
    }
}

/// Runs a transform step (`promptfoo-transform`) on `request`'s output:
/// the new output as text (a value that is not a string as its JSON, as
/// promptfoo's string assertions read it), or why there is none.
pub fn run_transform(
    registry: &Registry,
    transform: &Assertion,
    request: &mut Request,
    limits: CallLimits,
    policy: &Policy,
    judge: &Result<crate::target::Target, String>,
) -> Result<(String, Option<serde_json::Value>), String> {
    let row = grade_assertion(registry, transform, request, limits, policy, judge);
    if let Some(error) = row.error {
        return Err(format!("{}: {error}", transform.name));
    }
    match row.details.as_ref().and_then(|d| d.get("output")) {
        Some(serde_json::Value::String(s)) => Ok((s.clone(), None)),
        Some(other) => Ok((other.to_string(), Some(other.clone()))),
        None => Err(format!(
            "{}: the transform returned no output",
            transform.name
        )),
    }
}

/// Whether a transform step computes the context an assertion reads
/// (promptfoo's `contextTransform`) rather than its output.
pub fn is_context_transform(transform: &Assertion) -> bool {
    transform
        .config
        .get("__into")
        .and_then(serde_json::Value::as_str)
        == Some("context")
}

/// `request` with the transform's result as its test's `context` var
/// (text, or a list of texts, as promptfoo requires); the metadata it had,
/// to put back.
pub fn with_context(
    request: &mut Request,
    (text, json): (String, Option<serde_json::Value>),
) -> Result<String, String> {
    let context = match json {
        None => serde_json::Value::String(text),
        Some(v @ serde_json::Value::Array(_))
            if v.as_array()
                .is_some_and(|a| a.iter().all(serde_json::Value::is_string)) =>
        {
            v
        }
        Some(other) => {
            return Err(format!(
                "contextTransform must return a string or array of strings. Got {}",
                match other {
                    serde_json::Value::Array(_)
                    | serde_json::Value::Object(_)
                    | serde_json::Value::Null => "object",
                    serde_json::Value::Bool(_) => "boolean",
                    serde_json::Value::Number(_) => "number",
                    serde_json::Value::String(_) => "string",
                }
            ));
        }
    };
    let mut metadata: serde_json::Value =
        serde_json::from_str(&request.metadata_json).unwrap_or_else(|_| serde_json::json!({}));
    if !metadata
        .get("vars")
        .is_some_and(serde_json::Value::is_object)
    {
        metadata["vars"] = serde_json::json!({});
    }
    metadata["vars"]["context"] = context;
    Ok(std::mem::replace(
        &mut request.metadata_json,
        metadata.to_string(),
    ))
}

/// `request` with `output` (and its structured value) in place of its own;
/// what it had, to put back.
pub fn swap_output(
    request: &mut Request,
    (text, json): (String, Option<serde_json::Value>),
) -> (String, std::sync::Arc<ResponseInfo>) {
    let mut info = (*request.response).clone();
    info.output_json = json.as_ref().map(ToString::to_string);
    let old_info = std::mem::replace(&mut request.response, std::sync::Arc::new(info));
    (std::mem::replace(&mut request.output, text), old_info)
}

/// Limits for one assertion: the assertion's, else the suite's, else the
/// defaults.
pub fn call_limits(assertion: &Assertion, suite: LimitOverrides) -> CallLimits {
    let merged = assertion.limits.or(suite);
    CallLimits {
        timeout: merged
            .timeout_ms
            .map_or(CallLimits::DEFAULT_TIMEOUT, Duration::from_millis),
        memory: merged.memory_mb.map_or(CallLimits::DEFAULT_MEMORY, |mb| {
            usize::try_from(mb << 20).unwrap_or(usize::MAX)
        }),
    }
}

/// The built-in engines of a suite's own code (JavaScript, Python): their
/// users write for Node and CPython, which have a clock, so they are given
/// the wall clock (not under `--sandbox strict`).
pub const CLOCKED: &[&str] = &["builtin:javascript", "builtin:python-runner"];

/// Grades one assertion. Never fails: a plugin failure is a failed score with
/// its class.
pub fn grade_assertion(
    registry: &Registry,
    assertion: &Assertion,
    request: &mut Request,
    limits: CallLimits,
    policy: &Policy,
    judge: &Result<crate::target::Target, String>,
) -> ScoreRow {
    let start = Instant::now();
    let Some((plugin, info)) = registry.resolve_for(assertion) else {
        // Checked when the suite was loaded; kept total for safety.
        return failed_row(
            assertion,
            "",
            "",
            FailureClass::PluginLoad,
            "no plugin provides this type".into(),
            None,
            start,
        );
    };
    if let Some(message) = registry.invalid(assertion) {
        return failed_row(
            assertion,
            &plugin.name,
            &plugin.digest,
            FailureClass::PluginError,
            message.to_owned(),
            None,
            start,
        );
    }
    request.assertion_type.clone_from(&info.name);
    request.config_json.clear();
    request.config_json.push_str(&assertion.config_json);
    let workspace = request.workspace_path.take().map(std::path::PathBuf::from);
    request.workspace_path = grants::visible_workspace(&info.capabilities, workspace.as_deref());
    let grants = grants::grants(
        (&assertion.name, &assertion.kind),
        &info.capabilities,
        policy,
        (workspace.as_deref(), request.sandbox.as_ref()),
        judge,
        &plugin.digest,
        crate::judge_proxy::requested_calls(&assertion.kind, &assertion.config),
    );
    let clocked = CLOCKED.contains(&plugin.label.as_str());
    let grants = crate::plugin::Grants {
        response: request.response.clone(),
        clock: clocked && !policy.strict,
        ..grants
    };
    crate::judge::defer_cache_writes();
    let (graded, usage) = plugin.grade(&request.wit, limits, grants);
    // The judge's answers are cached only when the grader could use them:
    // not when it failed, nor when it failed the assertion because the
    // reply was unreadable (promptfoo's graders fail so, the details say
    // `judge_reply_unusable`).
    crate::judge::finish_cache_writes(graded.as_ref().is_ok_and(|g| {
        !g.details_json
            .as_deref()
            .is_some_and(|d| d.contains("\"judge_reply_unusable\":true"))
    }));
    request.workspace_path = workspace.map(|p| p.display().to_string());
    let judge_usage = (usage.calls > 0).then_some(usage);
    let mut row = match graded {
        Ok(grade) => {
            let mut score = grade.score;
            let mut checks: Vec<CheckRow> = grade
                .checks
                .into_iter()
                .map(|c| CheckRow {
                    text: c.text,
                    passed: c.passed,
                    evidence: c.evidence,
                })
                .collect();
            if assertion.negate {
                score = (1.0 - score).clamp(0.0, 1.0);
                for check in &mut checks {
                    check.passed = !check.passed;
                    if let Some(e) = check.evidence.as_mut().filter(|e| !e.is_empty()) {
                        e.insert_str(0, "[Negated] ");
                    }
                }
            }
            let details: Option<serde_json::Value> = grade
                .details_json
                .and_then(|d| serde_json::from_str(&d).ok());
            // `details.verdict: "fail"`: the plugin fails the assertion
            // whatever its score (AgentV's failed required rubric item,
            // which keeps its weighted score). Negation does not make it
            // a pass.
            // `details.verdict: "pass"`: the plugin's own rule passed it
            // below the type's threshold (an AgentV 5 script's `pass`,
            // promptfoo's BLEU over its threshold).
            let said = details
                .as_ref()
                .and_then(|d| d.get("verdict"))
                .and_then(serde_json::Value::as_str);
            let passed = match said {
                Some("fail") => false,
                Some("pass") if !assertion.negate => true,
                _ => reaches(score, info.default_threshold),
            };
            ScoreRow {
                name: assertion.name.to_string(),
                kind: assertion.kind.to_string(),
                score,
                weight: assertion.weight,
                verdict: if passed { Verdict::Pass } else { Verdict::Fail },
                assertions: checks,
                negate: assertion.negate,
                required: assertion.required != Required::No,
                failure_class: (!passed).then_some(FailureClass::Assertion),
                error: None,
                plugin: plugin.name.clone(),
                plugin_digest: plugin.digest.clone(),
                plugin_output: None,
                details,
                // An `equals` that failed: what it wanted, for a diff.
                expected: (!passed && !assertion.negate && &*assertion.kind == "equals")
                    .then(|| assertion.config.get("value").and_then(|v| v.as_str()))
                    .flatten()
                    .map(str::to_owned),
                duration_us: start.elapsed().as_micros() as u64,
                judge: None,
                scores: Vec::new(),
            }
            .with_components()
        }
        Err(failure) => failed_row(
            assertion,
            &plugin.name,
            &plugin.digest,
            failure.class,
            failure.message,
            (!failure.output.is_empty()).then_some(failure.output),
            start,
        ),
    };
    row.judge = judge_usage;
    // Said in the row whose code ran without the clock (`--sandbox strict`).
    if clocked && policy.strict {
        let note = serde_json::Value::String(FROZEN_CLOCK.into());
        match &mut row.details {
            Some(serde_json::Value::Object(d)) => {
                d.insert("clock".into(), note);
            }
            None => row.details = Some(serde_json::json!({"clock": note})),
            Some(_) => {}
        }
    }
    row
}

/// What a row graded by code under `--sandbox strict` says of its clock.
pub const FROZEN_CLOCK: &str =
    "frozen under --sandbox strict: the code read 1970-01-01T00:00:00Z as the time";

impl ScoreRow {
    /// The results a grader nested in its own (`details.componentResults`:
    /// a promptfoo JavaScript or Python assertion's `componentResults`),
    /// listed under it as promptfoo lists them after it: each its pass,
    /// score (one outside [0, 1] kept as `raw_score`) and reason. They are
    /// shown, not counted: the assertion's own score is its score.
    fn with_components(mut self) -> Self {
        let Some(items) = self
            .details
            .as_ref()
            .and_then(|d| d.get("componentResults"))
            .and_then(serde_json::Value::as_array)
        else {
            return self;
        };
        self.scores = items
            .iter()
            .take(crate::plugin::instance::MAX_CHECKS)
            .enumerate()
            .map(|(i, c)| {
                let pass = c.get("pass").and_then(serde_json::Value::as_bool) == Some(true);
                let raw = c
                    .get("score")
                    .and_then(serde_json::Value::as_f64)
                    .filter(|x| x.is_finite())
                    .unwrap_or(if pass { 1.0 } else { 0.0 });
                let reason = c
                    .get("reason")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                ScoreRow {
                    name: format!("{}/{}", self.name, i + 1),
                    kind: self.kind.clone(),
                    score: raw.clamp(0.0, 1.0),
                    weight: 0.0,
                    verdict: if pass { Verdict::Pass } else { Verdict::Fail },
                    assertions: vec![CheckRow {
                        text: reason,
                        passed: pass,
                        evidence: None,
                    }],
                    negate: false,
                    required: false,
                    failure_class: (!pass).then_some(FailureClass::Assertion),
                    error: None,
                    plugin: self.plugin.clone(),
                    plugin_digest: self.plugin_digest.clone(),
                    plugin_output: None,
                    details: (!(0.0..=1.0).contains(&raw))
                        .then(|| serde_json::json!({"raw_score": raw})),
                    expected: None,
                    duration_us: 0,
                    judge: None,
                    scores: Vec::new(),
                }
            })
            .collect();
        self
    }
}

/// AgentV's default prompt of an `llm-grader` aggregator.
pub const DEFAULT_AGGREGATOR_PROMPT: &str = "Review the following evaluation results:
{{EVALUATOR_RESULTS_JSON}}

Decide the final score and verdict based on all grader results.
Return a JSON object with: score (0.0-1.0), verdict (pass/fail), and reasoning.";

/// The score of an assertion that never ran because the case's deadline had
/// passed.
pub fn case_timeout_row(assertion: &Assertion, timeout_ms: u64) -> ScoreRow {
    failed_row(
        assertion,
        "",
        "",
        FailureClass::CaseTimeout,
        format!("the case ran past its timeout_ms of {timeout_ms} before this assertion"),
        None,
        Instant::now(),
    )
}

/// The score of an assertion the run's policy refused to grade (a
/// preprocessor command under `--sandbox strict`).
pub fn refused_row(assertion: &Assertion, message: String) -> ScoreRow {
    failed_row(
        assertion,
        "",
        "",
        FailureClass::PluginError,
        message,
        None,
        Instant::now(),
    )
}

fn failed_row(
    assertion: &Assertion,
    plugin: &str,
    digest: &str,
    class: FailureClass,
    message: String,
    output: Option<String>,
    start: Instant,
) -> ScoreRow {
    // A failure is never negated into a pass.
    ScoreRow {
        name: assertion.name.to_string(),
        kind: assertion.kind.to_string(),
        score: 0.0,
        weight: assertion.weight,
        verdict: Verdict::Fail,
        assertions: vec![CheckRow {
            text: format!("Grader '{}' failed: {message}", assertion.name),
            passed: false,
            evidence: None,
        }],
        negate: assertion.negate,
        required: assertion.required != Required::No,
        failure_class: Some(class),
        error: Some(message),
        plugin: plugin.to_owned(),
        plugin_digest: digest.to_owned(),
        plugin_output: output,
        details: None,
        expected: None,
        duration_us: start.elapsed().as_micros() as u64,
        judge: None,
        scores: Vec::new(),
    }
}

#[cfg(test)]
mod tests;
