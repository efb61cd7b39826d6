//! Groups of assertions: `composite`, `assert-set` and the other
//! aggregates graded over their members' scores (by the host, or by a
//! plugin that aggregates).

use super::*;

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

/// A member's result as AgentV hands it to an aggregator (its internal
/// `EvaluationScore`, camelCase).
pub(super) fn member_json(m: &ScoreRow, child: bool) -> serde_json::Value {
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
pub(super) fn aggregate_with_plugin<F>(
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
pub(super) fn aggregate(
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
