//! `mode: conversation` (AgentV §2.10, `runConversationMode`): the target
//! is called once per turn with the history so far (or the system messages
//! and the last `window_size` exchanges), its actual reply appended; each
//! turn is graded on its own (`turn-<n>`), the test's own assertions grade
//! the whole transcript once (`conversation`), and the scores combine by
//! `aggregation`. A turn whose call fails scores 0 and the loop goes on;
//! `on_turn_failure: stop` scores the rest 0 without calling the target.

use super::*;
use crate::grade::Request as GradeRequest;
use crate::results::{CheckRow, ScoreRow, Verdict};
use crate::suite::model::{Conversation, TurnAggregation};
use crate::suite::{Assertion, Message};

/// What a conversation came to.
pub(super) struct Talk {
    pub(super) score: f64,
    pub(super) status: ExecutionStatus,
    pub(super) failure_class: Option<FailureClass>,
    pub(super) error: Option<String>,
    /// The last reply.
    pub(super) output: String,
    /// The whole history, replies included.
    pub(super) messages: Vec<crate::results::output::OutputMessage>,
    pub(super) scores: Vec<ScoreRow>,
    pub(super) retries: Vec<target::RetryRecord>,
    pub(super) token_usage: Option<target::TokenUsage>,
    pub(super) cost_usd: Option<f64>,
    pub(super) llm_calls: Option<u32>,
}

/// The system messages and the last `window` exchanges (AgentV's
/// `buildWindowedHistory`).
fn windowed(history: &[Message], window: Option<usize>) -> Vec<Message> {
    let Some(window) = window else {
        return history.to_vec();
    };
    let system = history.iter().filter(|m| m.role == "system");
    let rest: Vec<&Message> = history.iter().filter(|m| m.role != "system").collect();
    let from = rest.len().saturating_sub(window * 2);
    system
        .chain(rest[from..].iter().copied())
        .cloned()
        .collect()
}

fn message(role: &str, content: &str) -> Message {
    Message::text(role, content)
}

/// A score entry for a turn or the whole conversation, holding the scores
/// of the assertions that graded it.
fn entry(
    name: &str,
    kind: &str,
    score: f64,
    threshold: f64,
    members: Vec<ScoreRow>,
    note: Option<String>,
) -> ScoreRow {
    let mut checks: Vec<CheckRow> = members.iter().flat_map(|m| m.assertions.clone()).collect();
    if let Some(note) = note {
        checks.insert(
            0,
            CheckRow {
                text: note,
                passed: false,
                evidence: None,
            },
        );
    }
    let failure_class = members
        .iter()
        .filter_map(|m| m.failure_class)
        .filter(|c| c.is_infrastructure())
        .min();
    let passed = score + 1e-9 >= threshold && failure_class.is_none();
    ScoreRow {
        name: name.to_owned(),
        kind: kind.to_owned(),
        score,
        weight: 1.0,
        verdict: if passed { Verdict::Pass } else { Verdict::Fail },
        assertions: checks,
        negate: false,
        required: false,
        failure_class: if passed {
            None
        } else {
            Some(failure_class.unwrap_or(FailureClass::Assertion))
        },
        error: members
            .iter()
            .find_map(|m| m.error.as_ref().map(|e| format!("{}: {e}", m.name))),
        plugin: "evalhost".into(),
        plugin_digest: String::new(),
        plugin_output: None,
        details: None,
        expected: None,
        duration_us: members.iter().map(|m| m.duration_us).sum(),
        judge: None,
        scores: members,
    }
}

/// Grades `assertions` against `output` for `test` (a turn or the whole
/// transcript), as a test would be graded.
fn grade_all<F>(
    test: &TestCase,
    assertions: &[Assertion],
    output: &target::TargetOutput,
    leaf: &F,
    threshold: f64,
    sandbox: Option<&crate::isolate::CaseSandbox>,
) -> (grade::TestScore, Vec<ScoreRow>)
where
    F: Fn(&Assertion, &mut GradeRequest) -> ScoreRow + Sync,
{
    let mut request = grade::base_request(test, output);
    request.sandbox = sandbox.cloned();
    let scores: Vec<ScoreRow> = assertions
        .iter()
        .map(|a| grade::grade_tree(a, &mut request, leaf))
        .collect();
    (
        grade::score_test(assertions, &scores, threshold, test.pass_rule),
        scores,
    )
}

#[allow(clippy::too_many_arguments)]
pub(super) fn run<F>(
    ctx: &Ctx<'_>,
    test: &TestCase,
    conversation: &Conversation,
    run_target: &RunTarget,
    invocation: &target::Invocation<'_>,
    leaf: &F,
    threshold: f64,
) -> Talk
where
    F: Fn(&Assertion, &mut GradeRequest) -> ScoreRow + Sync,
{
    let mut history: Vec<Message> = test.input.clone();
    let mut scores = Vec::new();
    let mut values = Vec::new();
    let mut retries = Vec::new();
    let mut stopped = false;
    let (mut tokens, mut cost, mut calls) = (None::<target::TokenUsage>, None::<f64>, None::<u32>);
    let mut infrastructure: Option<(FailureClass, String)> = None;
    // The target's first failure, and whether it ever answered: a
    // conversation it never answered is the target's failure, not the
    // agent's quality (the turns still score 0, as AgentV scores them).
    let mut target_failure: Option<(FailureClass, String)> = None;
    let mut answered = false;
    for (i, turn) in conversation.turns.iter().enumerate() {
        let name = format!("turn-{}", i + 1);
        if stopped {
            scores.push(entry(
                &name,
                "conversation-turn",
                0.0,
                threshold,
                Vec::new(),
                Some("Skipped due to previous turn failure".into()),
            ));
            values.push(0.0);
            continue;
        }
        history.push(message("user", &turn.input));
        let mut asked = TestCase::synthetic(
            &format!("{}/{name}", test.id),
            windowed(&history, conversation.window_size),
        );
        asked.criteria.clone_from(&test.criteria);
        asked.metadata.clone_from(&test.metadata);
        asked.expected = turn
            .expected
            .iter()
            .map(|e| message("assistant", e))
            .collect();
        let reply = ctx
            .targets
            .invoke(&run_target.target, &asked, invocation, &mut |retry| {
                trial::say_retry(&asked.id, &retry);
                retries.push(retry);
            });
        let output = match reply {
            Ok(output) => output,
            Err(failure) => {
                // AgentV: the turn scores 0 and the conversation goes on.
                scores.push(entry(
                    &name,
                    "conversation-turn",
                    0.0,
                    threshold,
                    Vec::new(),
                    Some(format!("Provider error: {}", failure.message)),
                ));
                values.push(0.0);
                target_failure.get_or_insert((failure.class, failure.message.clone()));
                if failure.class == FailureClass::CaseTimeout {
                    infrastructure.get_or_insert((failure.class, failure.message));
                    stopped = true;
                } else if conversation.stop_on_failure {
                    stopped = true;
                }
                continue;
            }
        };
        answered = true;
        if let Some(t) = output.token_usage {
            let sum = tokens.get_or_insert_with(target::TokenUsage::default);
            sum.input += t.input;
            sum.output += t.output;
            sum.cached += t.cached;
            sum.reasoning += t.reasoning;
        }
        if let Some(c) = output.cost_usd {
            *cost.get_or_insert(0.0) += c;
        }
        if let Some(n) = output.recorded_llm_calls() {
            *calls.get_or_insert(0) += n;
        }
        history.push(message("assistant", &output.text));
        if turn.assertions.is_empty() {
            scores.push(entry(
                &name,
                "conversation-turn",
                1.0,
                threshold,
                Vec::new(),
                None,
            ));
            values.push(1.0);
            continue;
        }
        asked.input = windowed(&history[..history.len() - 1], conversation.window_size);
        let (score, members) = grade_all(
            &asked,
            &turn.assertions,
            &output,
            leaf,
            threshold,
            invocation.sandbox,
        );
        if score.status == ExecutionStatus::ExecutionError {
            let class = score.failure_class.unwrap_or(FailureClass::PluginError);
            let why = members
                .iter()
                .find_map(|m| m.error.clone())
                .unwrap_or_default();
            infrastructure.get_or_insert((class, format!("{name}: {why}")));
        }
        values.push(score.score);
        if conversation.stop_on_failure && score.score < threshold {
            stopped = true;
        }
        scores.push(entry(
            &name,
            "conversation-turn",
            score.score,
            threshold,
            members,
            None,
        ));
    }
    if !test.assertions.is_empty() {
        // The test's own assertions grade the whole transcript, rendered as
        // `role: content` paragraphs.
        let transcript = history
            .iter()
            .map(|m| format!("{}: {}", m.role, m.content))
            .collect::<Vec<_>>()
            .join("\n\n");
        let mut whole = TestCase::synthetic(&format!("{}/conversation", test.id), history.clone());
        whole.criteria.clone_from(&test.criteria);
        whole.metadata.clone_from(&test.metadata);
        let output = target::TargetOutput::text(transcript);
        let (score, members) = grade_all(
            &whole,
            &test.assertions,
            &output,
            leaf,
            threshold,
            invocation.sandbox,
        );
        if score.status == ExecutionStatus::ExecutionError {
            let class = score.failure_class.unwrap_or(FailureClass::PluginError);
            let why = members
                .iter()
                .find_map(|m| m.error.clone())
                .unwrap_or_default();
            infrastructure.get_or_insert((class, format!("conversation: {why}")));
        }
        values.push(score.score);
        scores.push(entry(
            "conversation",
            "conversation",
            score.score,
            threshold,
            members,
            None,
        ));
    }
    let score = if values.is_empty() {
        1.0
    } else {
        match conversation.aggregation {
            TurnAggregation::Mean => values.iter().sum::<f64>() / values.len() as f64,
            TurnAggregation::Min => values.iter().copied().fold(f64::INFINITY, f64::min),
            TurnAggregation::Max => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    };
    if !answered && infrastructure.is_none() {
        infrastructure = target_failure;
    }
    let (status, failure_class, error) = match infrastructure {
        // A grader or judge that could not grade is never a quiet 0 turn.
        Some((class, message)) => (ExecutionStatus::ExecutionError, Some(class), Some(message)),
        None if score + 1e-9 >= threshold => (ExecutionStatus::Ok, None, None),
        None => (
            ExecutionStatus::QualityFailure,
            Some(FailureClass::Assertion),
            None,
        ),
    };
    let output = history
        .iter()
        .rev()
        .find(|m| m.role == "assistant")
        .map(|m| m.content.clone())
        .unwrap_or_default();
    Talk {
        score,
        status,
        failure_class,
        error,
        output,
        messages: history
            .iter()
            .map(|m| crate::results::output::OutputMessage {
                role: m.role.clone(),
                content: m.content.clone(),
                ..Default::default()
            })
            .collect(),
        scores,
        retries,
        token_usage: tokens,
        cost_usd: cost,
        llm_calls: calls,
    }
}
