//! Grading one test: each assertion is dispatched to its plugin, negation is
//! applied by the host (the same for every type), and the test score is the
//! weighted mean, with `required` gates.

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

/// What a plugin is asked to grade: the WIT request, and what the target
/// reported beyond it (read through the `response` interface). Derefs to the
/// WIT request.
#[derive(Debug, Clone)]
pub struct Request {
    /// The request as the plugin receives it.
    pub wit: wit::GradeRequest,
    /// The finish reason and log-probabilities the target reported.
    pub response: std::sync::Arc<ResponseInfo>,
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
    request.assertion_type.clone_from(&info.name);
    request.config_json.clear();
    request.config_json.push_str(&assertion.config_json);
    let workspace = request.workspace_path.take().map(std::path::PathBuf::from);
    request.workspace_path = grants::visible_workspace(&info.capabilities, workspace.as_deref());
    let grants = grants::grants(
        (&assertion.name, &assertion.kind),
        &info.capabilities,
        policy,
        workspace.as_deref(),
        judge,
        &plugin.digest,
        crate::judge_proxy::requested_calls(&assertion.kind, &assertion.config),
    );
    let grants = crate::plugin::Grants {
        response: request.response.clone(),
        ..grants
    };
    crate::judge::defer_cache_writes();
    let (graded, usage) = plugin.grade(&request.wit, limits, grants);
    // The judge's answers are cached only when the grader could use them.
    crate::judge::finish_cache_writes(graded.is_ok());
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
    row
}

/// Grades an assertion with `leaf` (which dispatches to its plugin), or, for
/// a `composite` or `assert-set`, grades its members in parallel — each with
/// its own copy of the request — and combines their scores.
pub fn grade_tree<F>(assertion: &Assertion, request: &mut Request, leaf: &F) -> ScoreRow
where
    F: Fn(&Assertion, &mut Request) -> ScoreRow + Sync,
{
    let Some(group) = &assertion.group else {
        return leaf(assertion, request);
    };
    let start = Instant::now();
    let members: Vec<ScoreRow> = match group.members.as_slice() {
        [only] => vec![grade_tree(only, request, leaf)],
        members => std::thread::scope(|scope| {
            let handles: Vec<_> = members
                .iter()
                .map(|m| {
                    let mut own = request.clone();
                    scope.spawn(move || grade_tree(m, &mut own, leaf))
                })
                .collect();
            handles
                .into_iter()
                .zip(members)
                .map(|(h, m)| {
                    h.join().unwrap_or_else(|_| {
                        failed_row(
                            m,
                            "",
                            "",
                            FailureClass::PluginTrap,
                            "grading panicked".into(),
                            None,
                            start,
                        )
                    })
                })
                .collect()
        }),
    };
    if matches!(
        group.aggregate,
        Aggregate::Code { .. } | Aggregate::Llm { .. }
    ) {
        return aggregate_with_plugin(assertion, group, members, request, leaf, start);
    }
    aggregate(assertion, group, members, start)
}

/// AgentV's default prompt of an `llm-grader` aggregator.
pub const DEFAULT_AGGREGATOR_PROMPT: &str = "Review the following evaluation results:
{{EVALUATOR_RESULTS_JSON}}

Decide the final score and verdict based on all grader results.
Return a JSON object with: score (0.0-1.0), verdict (pass/fail), and reasoning.";

/// A member's result as AgentV hands it to an aggregator (its internal
/// `EvaluationScore`, camelCase).
fn member_json(m: &ScoreRow, child: bool) -> serde_json::Value {
    let mut o = serde_json::json!({
        "score": m.score,
        "verdict": m.verdict,
        "assertions": m.assertions.iter().map(|c| {
            let mut a = serde_json::json!({"text": c.text, "passed": c.passed});
            if let Some(e) = &c.evidence {
                a["evidence"] = e.clone().into();
            }
            a
        }).collect::<Vec<_>>(),
    });
    if child {
        o["name"] = m.name.clone().into();
        o["type"] = m.kind.clone().into();
        o["weight"] = m.weight.into();
    } else {
        o["expectedAspectCount"] = m.assertions.len().max(1).into();
    }
    if let Some(d) = &m.details {
        o["details"] = d.clone();
    }
    if !m.scores.is_empty() {
        o["scores"] = m.scores.iter().map(|c| member_json(c, true)).collect();
    }
    o
}

/// A `code-grader` or `llm-grader` aggregator: the members' results go to
/// the built-in code-grader (a command, through `exec`) or LLM judge plugin,
/// whose grade is the group's. Every member counts, skipped or not (as
/// AgentV).
fn aggregate_with_plugin<F>(
    assertion: &Assertion,
    group: &Group,
    members: Vec<ScoreRow>,
    request: &mut Request,
    leaf: &F,
    start: Instant,
) -> ScoreRow
where
    F: Fn(&Assertion, &mut Request) -> ScoreRow + Sync,
{
    let results: serde_json::Map<String, serde_json::Value> = members
        .iter()
        .map(|m| (m.name.clone(), member_json(m, false)))
        .collect();
    let mut config = serde_json::Map::new();
    let kind = match &group.aggregate {
        Aggregate::Code { command, cwd } => {
            config.insert("command".into(), command.clone().into());
            config.insert("cwd".into(), cwd.display().to_string().into());
            config.insert(
                "aggregate_results".into(),
                serde_json::Value::Object(results),
            );
            "code-grader"
        }
        Aggregate::Llm { prompt } => {
            let json = serde_json::to_string_pretty(&results).unwrap_or_default();
            let prompt = prompt
                .as_deref()
                .unwrap_or(DEFAULT_AGGREGATOR_PROMPT)
                .replace("{{EVALUATOR_RESULTS_JSON}}", &json);
            config.insert("prompt".into(), prompt.into());
            config.insert("prompt_is_template".into(), true.into());
            "llm-grader"
        }
        _ => unreachable!("only external aggregators come here"),
    };
    let mut synthetic = assertion.clone();
    synthetic.kind = kind.into();
    synthetic.negate = false;
    synthetic.wasm = None;
    synthetic.group = None;
    synthetic.preprocessors = std::sync::Arc::from([]);
    synthetic.config_json = serde_json::Value::Object(config.clone()).to_string().into();
    synthetic.config = std::sync::Arc::new(config);
    let graded = leaf(&synthetic, request);
    let verdict_said = graded
        .details
        .as_ref()
        .and_then(|d| d.get("verdict"))
        .and_then(serde_json::Value::as_str)
        .map(|v| v == "pass");
    let mut score = graded.score;
    let mut passed = graded.failure_class.is_none_or(|c| !c.is_infrastructure())
        && verdict_said.unwrap_or(graded.verdict == Verdict::Pass);
    let mut checks = graded.assertions;
    if kind == "llm-grader" {
        checks.truncate(8);
    }
    if assertion.negate {
        score = 1.0 - score;
        passed = !passed && graded.failure_class.is_none_or(|c| !c.is_infrastructure());
        for check in &mut checks {
            check.passed = !check.passed;
        }
    }
    let failure_class = match graded.failure_class {
        Some(c) if c.is_infrastructure() => Some(c),
        _ if passed => None,
        _ => Some(FailureClass::Assertion),
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
        failure_class,
        error: graded.error.map(|e| format!("{kind} aggregator: {e}")),
        plugin: graded.plugin,
        plugin_digest: graded.plugin_digest,
        plugin_output: graded.plugin_output,
        details: graded.details,
        expected: None,
        duration_us: start.elapsed().as_micros() as u64,
        judge: graded.judge,
        scores: members,
    }
}

/// Combines a group's member scores (AgentV's composite aggregators,
/// promptfoo's assert-set).
fn aggregate(
    assertion: &Assertion,
    group: &Group,
    mut members: Vec<ScoreRow>,
    start: Instant,
) -> ScoreRow {
    let counted: Vec<&ScoreRow> = members
        .iter()
        .filter(|m| m.verdict != Verdict::Skip)
        .collect();
    let prefixed = |rows: &[&ScoreRow]| -> Vec<CheckRow> {
        rows.iter()
            .flat_map(|m| {
                m.assertions.iter().map(|c| CheckRow {
                    text: format!("[{}] {}", m.name, c.text),
                    passed: c.passed,
                    evidence: c.evidence.clone(),
                })
            })
            .collect()
    };
    let weighted = |weight_of: &dyn Fn(&ScoreRow) -> f64| {
        let (sum, total) = counted.iter().fold((0.0, 0.0), |(s, t), m| {
            (s + m.score * weight_of(m), t + weight_of(m))
        });
        if total > 0.0 { sum / total } else { 0.0 }
    };
    let (score, passed, mut checks) = if counted.is_empty() {
        (
            0.0,
            None,
            vec![CheckRow {
                text: "All evaluators skipped (infrastructure failure)".into(),
                passed: false,
                evidence: None,
            }],
        )
    } else {
        match &group.aggregate {
            Aggregate::WeightedAverage { weights } => {
                let weight_of = |m: &ScoreRow| {
                    weights
                        .iter()
                        .find(|(n, _)| *n == m.name)
                        .map_or(1.0, |(_, w)| *w)
                };
                let score = weighted(&weight_of);
                (score, Some(reaches(score, 0.8)), prefixed(&counted))
            }
            Aggregate::Threshold(threshold) => {
                let passing = counted
                    .iter()
                    .filter(|m| m.verdict == Verdict::Pass)
                    .count();
                let score = passing as f64 / counted.len() as f64;
                let pass = reaches(score, *threshold);
                let mut checks = vec![CheckRow {
                    text: format!(
                        "{passing}/{} evaluators passed (threshold: {threshold})",
                        counted.len()
                    ),
                    passed: pass,
                    evidence: None,
                }];
                checks.extend(prefixed(&counted));
                (score, Some(pass), checks)
            }
            // Graded by a plugin (`aggregate_with_plugin`), never here.
            Aggregate::Code { .. } | Aggregate::Llm { .. } => (0.0, Some(false), Vec::new()),
            Aggregate::AssertSet { threshold } => {
                let score = weighted(&|m: &ScoreRow| m.weight);
                // promptfoo: a member of weight 0 always passes.
                let all = counted
                    .iter()
                    .all(|m| m.verdict == Verdict::Pass || m.weight == 0.0);
                let (pass, summary) = match threshold {
                    Some(t) => {
                        let pass = reaches(score, *t);
                        let op = if pass { "≥" } else { "<" };
                        (
                            pass,
                            format!("Aggregate score {score:.2} {op} {t} threshold"),
                        )
                    }
                    None => {
                        let n = counted
                            .iter()
                            .filter(|m| m.verdict == Verdict::Pass)
                            .count();
                        (
                            all,
                            format!("{n}/{} assertions passed (all must pass)", counted.len()),
                        )
                    }
                };
                let mut checks = vec![CheckRow {
                    text: summary,
                    passed: pass,
                    evidence: None,
                }];
                checks.extend(prefixed(&counted));
                (score, Some(pass), checks)
            }
        }
    };
    if let Aggregate::WeightedAverage { weights } = &group.aggregate {
        for m in &mut members {
            if let Some((_, w)) = weights.iter().find(|(n, _)| *n == m.name) {
                m.weight = *w;
            }
        }
    }
    let mut score = score.clamp(0.0, 1.0);
    let mut passed = passed;
    if assertion.negate {
        score = 1.0 - score;
        passed = passed.map(|p| !p);
        for check in &mut checks {
            check.passed = !check.passed;
        }
    }
    // A member's plugin failure (a trap, a timeout) is the group's failure.
    let infra = members
        .iter()
        .filter_map(|m| m.failure_class.map(|c| (c, m)))
        .find(|(c, _)| c.is_infrastructure());
    let verdict = match passed {
        None => Verdict::Skip,
        Some(true) if infra.is_none() => Verdict::Pass,
        Some(_) => Verdict::Fail,
    };
    let failure_class = match infra {
        Some((class, _)) => Some(class),
        None if verdict == Verdict::Pass => None,
        None => Some(
            members
                .iter()
                .filter_map(|m| m.failure_class)
                .min()
                .unwrap_or(FailureClass::Assertion),
        ),
    };
    ScoreRow {
        name: assertion.name.to_string(),
        kind: assertion.kind.to_string(),
        score,
        weight: assertion.weight,
        verdict,
        assertions: checks,
        negate: assertion.negate,
        required: assertion.required != Required::No,
        failure_class,
        error: infra.and_then(|(_, m)| {
            m.error
                .as_ref()
                .map(|e| format!("member `{}`: {e}", m.name))
        }),
        plugin: "evalhost".into(),
        plugin_digest: String::new(),
        plugin_output: None,
        details: None,
        expected: None,
        duration_us: start.elapsed().as_micros() as u64,
        judge: None,
        scores: members,
    }
}

/// promptfoo's rule without a threshold: score = Σ score·w / Σ w (0 when
/// Σ w = 0; 1 with no assertion), pass = no assertion failed, where an
/// assertion of weight 0 never fails.
fn all_pass(scores: &[ScoreRow]) -> TestScore {
    let infra = scores
        .iter()
        .filter_map(|s| s.failure_class)
        .find(|c| c.is_infrastructure());
    if let Some(class) = infra {
        return TestScore {
            score: 0.0,
            status: ExecutionStatus::ExecutionError,
            failure_class: Some(class),
            gated: None,
        };
    }
    let (sum, total) = scores.iter().fold((0.0, 0.0), |(s, t), r| {
        (s + r.score * r.weight, t + r.weight)
    });
    let score = match (scores.is_empty(), total > 0.0) {
        (true, _) => 1.0,
        (false, true) => sum / total,
        (false, false) => 0.0,
    };
    let failed = scores
        .iter()
        .filter(|s| s.weight != 0.0 && s.verdict == Verdict::Fail)
        .map(|s| s.failure_class.unwrap_or(FailureClass::Assertion))
        .min();
    TestScore {
        score,
        status: if failed.is_some() {
            ExecutionStatus::QualityFailure
        } else {
            ExecutionStatus::Ok
        },
        failure_class: failed,
        gated: None,
    }
}

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

/// What a test's assertion scores add up to.
#[derive(Debug, Clone, PartialEq)]
pub struct TestScore {
    /// The test's score.
    pub score: f64,
    /// Ok, quality failure or execution error.
    pub status: ExecutionStatus,
    /// Why it did not pass.
    pub failure_class: Option<FailureClass>,
    /// The first `required` assertion below its gate, which zeroed the score.
    pub gated: Option<crate::results::Gate>,
}

/// The test's score, status and failure class from its assertion scores.
///
/// Score: the weighted mean over non-skipped scores (0 when the total weight
/// is 0), forced to 0 when a `required` assertion scores below its gate
/// (`min_score`, else a numeric `required`, else the test threshold). A test
/// passes when its score reaches the threshold and no plugin failed.
pub fn score_test(
    assertions: &[Assertion],
    scores: &[ScoreRow],
    threshold: f64,
    rule: crate::suite::PassRule,
) -> TestScore {
    if rule == crate::suite::PassRule::AllPass {
        return all_pass(scores);
    }
    let mut score = crate::results::weighted_mean(scores);
    let mut gated = None;
    for (assertion, s) in assertions.iter().zip(scores) {
        let gate = match assertion.required {
            Required::No => continue,
            Required::Yes => assertion.min_score.unwrap_or(threshold),
            Required::AtLeast(x) => assertion.min_score.unwrap_or(x),
        };
        if !reaches(s.score, gate) {
            score = 0.0;
            gated.get_or_insert_with(|| crate::results::Gate {
                assertion: s.name.clone(),
                score: s.score,
                min_score: gate,
            });
        }
    }
    let infra = scores
        .iter()
        .filter_map(|s| s.failure_class)
        .find(|c| c.is_infrastructure());
    let (score, status, failure_class) = if let Some(class) = infra {
        // As AgentV: an execution error scores 0, whatever graded.
        (0.0, ExecutionStatus::ExecutionError, Some(class))
    } else if reaches(score, threshold) {
        (score, ExecutionStatus::Ok, None)
    } else {
        let class = scores
            .iter()
            .filter_map(|s| s.failure_class)
            .min()
            .unwrap_or(FailureClass::Assertion);
        (score, ExecutionStatus::QualityFailure, Some(class))
    };
    TestScore {
        score,
        status,
        failure_class,
        gated,
    }
}

#[cfg(test)]
mod pass_rule_tests {
    use super::*;
    use crate::suite::PassRule;

    fn row(score: f64, weight: f64, pass: bool) -> ScoreRow {
        ScoreRow {
            name: "a".into(),
            kind: "contains".into(),
            score,
            weight,
            verdict: if pass { Verdict::Pass } else { Verdict::Fail },
            assertions: Vec::new(),
            negate: false,
            required: false,
            failure_class: (!pass).then_some(FailureClass::Assertion),
            error: None,
            plugin: String::new(),
            plugin_digest: String::new(),
            plugin_output: None,
            details: None,
            expected: None,
            duration_us: 0,
            judge: None,
            scores: Vec::new(),
        }
    }

    #[test]
    fn promptfoo_passes_when_every_assertion_passes() {
        let all = |rows: &[ScoreRow]| score_test(&[], rows, 0.8, PassRule::AllPass);
        // 0.9 mean, one failure: fails (AgentV's mean would pass it).
        let rows = [
            row(1.0, 1.0, true),
            row(1.0, 1.0, true),
            row(0.7, 1.0, false),
        ];
        let t = all(&rows);
        assert_eq!(t.status, ExecutionStatus::QualityFailure);
        assert!((t.score - 0.9).abs() < 1e-9);
        assert_eq!(
            score_test(&[], &rows, 0.8, PassRule::WeightedMean).status,
            ExecutionStatus::Ok
        );
        // A failing assertion of weight 0 never fails the test.
        let t = all(&[row(1.0, 1.0, true), row(0.0, 0.0, false)]);
        assert_eq!((t.status, t.score), (ExecutionStatus::Ok, 1.0));
        // No assertion: pass, score 1; only weight 0: score 0, pass.
        assert_eq!(all(&[]).score, 1.0);
        let t = all(&[row(1.0, 0.0, true)]);
        assert_eq!((t.status, t.score), (ExecutionStatus::Ok, 0.0));
    }
}
