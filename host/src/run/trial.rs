//! One trial of one test: workspace and hooks, the target's output (or the
//! response cache's), every assertion graded in its plugin, and the row.

use super::*;

/// The threshold `test` is held to: none when it passes by promptfoo's
/// rule (every assertion passing), else [`effective_threshold`].
pub fn held_threshold(test: &TestCase, cli: Option<f64>, suite: Option<f64>) -> Option<f64> {
    (test.pass_rule != crate::suite::PassRule::AllPass)
        .then(|| effective_threshold(test.threshold, cli, suite))
}

/// Threshold precedence: the test's `execution.threshold`, then
/// `--threshold`, then the suite's `execution.threshold`, then 0.8.
pub fn effective_threshold(test: Option<f64>, cli: Option<f64>, suite: Option<f64>) -> f64 {
    test.or(cli).or(suite).unwrap_or(DEFAULT_THRESHOLD)
}

pub(super) fn run_trial(
    ctx: &Ctx<'_>,
    test: &TestCase,
    planned: &PlannedTest,
    trial: u32,
) -> ResultRow {
    let started = Instant::now();
    // A deadline past what the clock can hold is no deadline.
    let deadline = test
        .timeout_ms
        .and_then(|ms| started.checked_add(Duration::from_millis(ms)));
    let row = base_row(ctx, test, planned, trial);
    // Under --isolate, the case's sandbox: every process of the case runs
    // in it, shares its budget (its target's limits) and is recorded for
    // its row.
    let sandbox = ctx
        .sandbox
        .as_ref()
        .map(|s| s.case(ctx.run_targets[planned.target].target.isolate.limits));
    let finish = |mut row: ResultRow| {
        row.sandbox = sandbox.as_ref().map(crate::isolate::CaseSandbox::finish);
        row.timestamp = jiff::Timestamp::now().to_string();
        row.wall_ms = started.elapsed().as_millis() as u64;
        row.status = Status::of(row.execution_status, row.expected_fail);
        if row.status == Status::UnexpectedPassed {
            row.failure_class = Some(FailureClass::UnexpectedPass);
        }
        row
    };
    run_trial_into(
        ctx,
        test,
        planned,
        trial,
        (deadline, sandbox.as_ref()),
        row,
        finish,
    )
}

/// The row of a test that was not run because a test it depends on ended
/// in an execution error: AgentV's `Skipped: dependency failed (a, b)` (or
/// `Failed: …` under `on_dependency_failure: fail`), an execution error
/// with `failure_class: dependency_failed`.
pub(super) fn dependency_failed_row(
    ctx: &Ctx<'_>,
    test: &TestCase,
    planned: &PlannedTest,
    trial: u32,
    failed: &[String],
    policy: crate::suite::model::DependencyPolicy,
) -> ResultRow {
    let mut row = base_row(ctx, test, planned, trial);
    let prefix = match policy {
        crate::suite::model::DependencyPolicy::Fail => "Failed",
        _ => "Skipped",
    };
    row.error = Some(format!(
        "{prefix}: dependency failed ({})",
        failed.join(", ")
    ));
    row.failure_class = Some(FailureClass::DependencyFailed);
    row.timestamp = jiff::Timestamp::now().to_string();
    row.status = Status::of(row.execution_status, row.expected_fail);
    row
}

/// The row of a test that was not started (`budget_exceeded`): an
/// execution error with `message`.
pub(super) fn not_started_row(
    ctx: &Ctx<'_>,
    test: &TestCase,
    planned: &PlannedTest,
    trial: u32,
    class: FailureClass,
    message: String,
) -> ResultRow {
    let mut row = base_row(ctx, test, planned, trial);
    row.error = Some(message);
    row.failure_class = Some(class);
    row.timestamp = jiff::Timestamp::now().to_string();
    row.status = Status::of(row.execution_status, row.expected_fail);
    row
}

/// A row before anything ran: an execution error until the trial says
/// otherwise.
fn base_row(ctx: &Ctx<'_>, test: &TestCase, planned: &PlannedTest, trial: u32) -> ResultRow {
    let run_target = &ctx.run_targets[planned.target];
    let threshold = held_threshold(test, ctx.cli_threshold, ctx.suite.threshold);
    ResultRow {
        timestamp: String::new(),
        test_id: test.id.clone(),
        suite: ctx.suite.name.clone(),
        target: run_target.target.name.clone(),
        test_index: planned.index,
        trial: (planned.trials > 1).then_some(trial),
        trials: (planned.trials > 1).then_some(planned.trials),
        strategy: planned.strategy,
        status: Status::Error,
        expected_fail: test.expected_fail,
        tags: test.tags.clone(),
        conversation_id: test.conversation_id.clone(),
        source: Some(SourceRef {
            file: test.loc.file.display().to_string(),
            line: test.loc.pos.map(|p| p.line),
        }),
        score: 0.0,
        threshold,
        execution_status: ExecutionStatus::ExecutionError,
        failure_class: None,
        gated: None,
        error: None,
        duration_ms: None,
        wall_ms: 0,
        token_usage: None,
        cost_usd: None,
        llm_calls: None,
        target_used: None,
        finish_reason: None,
        logprobs: None,
        transcript: None,
        untransformed_output: None,
        retries: Vec::new(),
        cached: false,
        output_messages: Vec::new(),
        file_changes: None,
        workspace_path: None,
        hooks: Default::default(),
        sandbox: None,
        input: test
            .input
            .iter()
            .map(|m| MessageRow {
                role: m.role.clone(),
                content: m.content.clone(),
            })
            .collect(),
        expected_output: test.expected_text().map(str::to_owned),
        criteria: test.criteria.clone(),
        metadata: test.metadata.clone(),
        pass_rule: (test.pass_rule == crate::suite::PassRule::AllPass)
            .then(|| "all-pass".to_owned()),
        prompt: test.prompt.as_ref().map(|p| crate::results::PromptRow {
            label: p.label.clone(),
            id: p.id.clone(),
        }),
        output: String::new(),
        scores: Vec::new(),
    }
}

#[allow(clippy::too_many_arguments)]
/// The response cache's key for this test's call of its target, when the
/// answer may come from the cache (one trial, no workspace, a target whose
/// answers are cached).
fn response_cache_key(
    ctx: &Ctx<'_>,
    test: &TestCase,
    planned: &PlannedTest,
    no_workspace: bool,
) -> Option<String> {
    let run_target = &ctx.run_targets[planned.target];
    let cache = ctx
        .cache
        .as_ref()
        .filter(|_| no_workspace && planned.trials == 1)?;
    let identity = run_target
        .target
        .cache_identity(cache.sampled, &ctx.suite.dir)?;
    // The request this test makes of the target, when it changes it
    // (promptfoo's test options).
    let own = test
        .target_params
        .as_ref()
        .and_then(|t| t.get(&run_target.target.name))
        .map(ToString::to_string)
        .unwrap_or_default();
    Some(crate::response_cache::ResponseCache::key(
        &format!("{identity}\u{0}{own}"),
        &ctx.cache_scope,
        test,
    ))
}

fn run_trial_into(
    ctx: &Ctx<'_>,
    test: &TestCase,
    planned: &PlannedTest,
    trial: u32,
    (deadline, sandbox): (Option<Instant>, Option<&crate::isolate::CaseSandbox>),
    mut row: ResultRow,
    finish: impl Fn(ResultRow) -> ResultRow,
) -> ResultRow {
    let run_target = &ctx.run_targets[planned.target];
    // Only a test passing by promptfoo's rule has none, and its rule
    // reads no threshold.
    let threshold = row.threshold.unwrap_or(1.0);
    if let Some(message) = &test.input_error {
        row.failure_class = Some(FailureClass::Input);
        row.error = Some(message.clone());
        return finish(row);
    }
    let mut case_ws = None;
    if let Some(lifecycle) = &ctx.lifecycle {
        match lifecycle.for_case(test, trial, sandbox) {
            Ok(case) => case_ws = Some(case),
            Err(failed) => {
                let (message, case) = *failed;
                row.failure_class = Some(FailureClass::Workspace);
                row.error = Some(message);
                row.hooks = case.hooks.clone();
                row.workspace_path = case.finish(false).map(|p| p.display().to_string());
                return finish(row);
            }
        }
    }
    let workspace_path = case_ws
        .as_ref()
        .and_then(|c| c.path())
        .map(Path::to_path_buf);
    let hook_context = crate::workspace::HookContext {
        workspace: workspace_path.as_deref(),
        test_id: &test.id,
        run_id: &ctx.run_id,
        case_input: test
            .input
            .iter()
            .rev()
            .find(|m| m.role == "user")
            .map(|m| m.content.as_str()),
        case_metadata: Some(&test.metadata),
        base_dir: &ctx.suite.dir,
        sandbox,
    };
    let mut target_hooks = std::collections::BTreeMap::new();
    if let Some(hook) = &run_target.hooks.before_each {
        let run = crate::workspace::run_hook(hook, &hook_context, crate::workspace::BEFORE_TIMEOUT);
        let error = run.error.clone();
        target_hooks.insert(
            "target_before_each".to_owned(),
            crate::lifecycle::HookRow::from(run),
        );
        if let Some(error) = error {
            row.failure_class = Some(FailureClass::Workspace);
            row.error = Some(format!("target before_each hook: {error}"));
            row.hooks = target_hooks;
            if let Some(case) = case_ws {
                row.hooks.extend(case.hooks.clone());
                row.workspace_path = case.finish(false).map(|p| p.display().to_string());
            }
            return finish(row);
        }
    }
    let invocation = target::Invocation {
        workspace: workspace_path.as_deref(),
        eval_dir: Some(&ctx.suite.dir),
        deadline,
        attempt: 0,
        trial,
        isolate: None,
        sandbox,
    };
    let leaf = |assertion: &crate::suite::Assertion, request: &mut grade::Request| {
        grade_leaf(ctx, test, run_target, deadline, assertion, request)
    };
    if let Some(conversation) = &test.conversation {
        let talk = super::conversation::run(
            ctx,
            test,
            conversation,
            run_target,
            &invocation,
            &leaf,
            threshold,
        );
        row.retries = talk.retries;
        if let Some(hook) = &run_target.hooks.after_each {
            let run =
                crate::workspace::run_hook(hook, &hook_context, crate::workspace::AFTER_TIMEOUT);
            target_hooks.insert(
                "target_after_each".to_owned(),
                crate::lifecycle::HookRow::from(run),
            );
        }
        row.file_changes = case_ws.as_mut().and_then(|c| c.after_agent(test));
        row.score = talk.score;
        row.execution_status = talk.status;
        row.failure_class = talk.failure_class;
        row.error = talk.error;
        row.token_usage = talk.token_usage;
        row.cost_usd = talk.cost_usd;
        row.llm_calls = talk.llm_calls;
        row.output = talk.output;
        row.output_messages = talk.messages;
        row.scores = talk.scores;
        row.hooks = target_hooks;
        if let Some(case) = case_ws {
            row.hooks.extend(case.hooks.clone());
            let passed = Status::of(row.execution_status, row.expected_fail).is_success();
            row.workspace_path = case.finish(passed).map(|p| p.display().to_string());
        }
        return finish(row);
    }
    let cache_key = response_cache_key(ctx, test, planned, workspace_path.is_none());
    let cached = cache_key
        .as_ref()
        .and_then(|key| ctx.cache.as_ref().and_then(|c| c.get(key)));
    row.cached = cached.is_some();
    let invoked = match cached {
        Some(output) => Ok(output),
        None => ctx.targets.invoke(
            &run_target.target,
            test,
            &invocation,
            &mut |retry: target::RetryRecord| {
                say_retry(&test.id, &retry);
                row.retries.push(retry);
            },
        ),
    };
    if let (Ok(output), Some(key), Some(cache), false) =
        (&invoked, &cache_key, &ctx.cache, row.cached)
    {
        cache.put(key, output);
    }
    let output = match invoked {
        Ok(output) => output,
        Err(failure) => {
            row.failure_class = Some(failure.class);
            row.error = Some(failure.message);
            // The hooks that ran before the target failed stay on record.
            row.hooks = std::mem::take(&mut target_hooks);
            if let Some(case) = case_ws {
                row.hooks.extend(case.hooks.clone());
                row.workspace_path = case.finish(false).map(|p| p.display().to_string());
            }
            return finish(row);
        }
    };
    if let Some(hook) = &run_target.hooks.after_each {
        let run = crate::workspace::run_hook(hook, &hook_context, crate::workspace::AFTER_TIMEOUT);
        target_hooks.insert(
            "target_after_each".to_owned(),
            crate::lifecycle::HookRow::from(run),
        );
    }
    // The workspace's diff, then what the agent wrote outside it (Copilot's
    // session files), as AgentV merges them.
    let file_changes = match (
        case_ws.as_mut().and_then(|c| c.after_agent(test)),
        output.file_changes.clone(),
    ) {
        (Some(ws), Some(agent)) => Some(format!("{ws}\n{agent}")),
        (ws, agent) => ws.or(agent),
    };
    // promptfoo's `options.transform`: the output every assertion reads,
    // and the one recorded (the target's kept beside it). A transform that
    // fails makes the row an error, as in promptfoo.
    let mut output = output;
    if let Some(transform) = &test.output_transform {
        match output_transform(ctx, test, run_target, transform, &mut output) {
            // The messages stay the target's own.
            Ok(untransformed) => row.untransformed_output = Some(untransformed),
            Err(message) => {
                row.failure_class = Some(FailureClass::PluginError);
                row.error = Some(message);
                row.output = output.text.clone();
                row.hooks = std::mem::take(&mut target_hooks);
                if let Some(case) = case_ws {
                    row.hooks.extend(case.hooks.clone());
                    row.workspace_path = case.finish(false).map(|p| p.display().to_string());
                }
                return finish(row);
            }
        }
    }
    let mut request = grade::base_request(test, &output);
    request.sandbox = sandbox.cloned();
    request.trace.file_changes = file_changes.clone();
    request.workspace_path = workspace_path.as_ref().map(|p| p.display().to_string());
    let mut scores: Vec<_> = test
        .assertions
        .iter()
        .map(|assertion| grade::grade_tree(assertion, &mut request, &leaf))
        .collect();
    if ctx.suite.dialect == evalhost_suite::dialect::Dialect::Promptfoo {
        grade::keep_raw_scores(&mut scores);
    }
    let grade::TestScore {
        score,
        status,
        failure_class,
        gated,
    } = grade::score_test(&test.assertions, &scores, threshold, test.pass_rule);
    row.gated = gated;
    row.error = (status == ExecutionStatus::ExecutionError)
        .then(|| {
            scores
                .iter()
                .find_map(|s| s.error.as_ref().map(|e| format!("{}: {e}", s.name)))
        })
        .flatten();
    row.score = score;
    row.execution_status = status;
    row.failure_class = failure_class;
    row.duration_ms = output.duration_ms;
    row.token_usage = output.token_usage;
    row.cost_usd = output.cost_usd;
    row.llm_calls = output.recorded_llm_calls();
    row.target_used = output.target_used;
    row.finish_reason = output.finish_reason;
    row.logprobs = output.logprobs;
    // An agent's own stream, kept whole beside the row.
    if let Some(raw) = &output.raw {
        row.transcript = save_transcript(ctx, &row, raw);
    }
    let plain = output.messages.len() == 1
        && output.messages[0].role == "assistant"
        && output.messages[0].tool_calls.is_empty()
        && output.messages[0].content == output.text;
    if !plain {
        row.output_messages = output.messages.clone();
    }
    row.output = output.text;
    row.scores = scores;
    row.file_changes = file_changes;
    row.hooks = target_hooks;
    if let Some(case) = case_ws {
        row.hooks.extend(case.hooks.clone());
        let passed = Status::of(row.execution_status, row.expected_fail).is_success();
        row.workspace_path = case.finish(passed).map(|p| p.display().to_string());
    }
    finish(row)
}

/// promptfoo's `options.transform` run on the target's output: the text
/// and JSON every assertion reads replace the output's; the text it had is
/// returned. A failed transform is its message.
fn output_transform(
    ctx: &Ctx<'_>,
    test: &TestCase,
    run_target: &RunTarget,
    transform: &crate::suite::Assertion,
    output: &mut target::TargetOutput,
) -> Result<String, String> {
    let mut request = grade::base_request(test, output);
    let limits = grade::call_limits(transform, ctx.suite.limits);
    let (text, json) = {
        let _permit = ctx.graders.acquire();
        grade::run_transform(
            ctx.registry,
            transform,
            &mut request,
            limits,
            &ctx.policy,
            &run_target.judge,
        )
    }?;
    output.output_json = json;
    Ok(std::mem::replace(&mut output.text, text))
}

/// Grades one assertion that is not a group, under the case's deadline:
/// preprocessors, a computed prompt and the assertion's own `transform`
/// first (each refusal fails the assertion), the request put back after.
fn grade_leaf(
    ctx: &Ctx<'_>,
    test: &TestCase,
    run_target: &RunTarget,
    deadline: Option<Instant>,
    assertion: &crate::suite::Assertion,
    request: &mut grade::Request,
) -> crate::results::ScoreRow {
    let mut limits = grade::call_limits(assertion, ctx.suite.limits);
    let mut capped_by_case = false;
    // The commands graders and preprocessors run end by the case's
    // deadline too (a command has its own clock: the plugin's is stopped
    // while it waits for one).
    let case_policy;
    let policy = match deadline {
        Some(deadline) => {
            let mut own = ctx.policy.clone();
            own.max_exec = own
                .max_exec
                .min(deadline.saturating_duration_since(Instant::now()));
            case_policy = own;
            &case_policy
        }
        None => &ctx.policy,
    };
    if let Some(deadline) = deadline {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining < limits.timeout {
            limits.timeout = remaining;
            capped_by_case = true;
        }
    }
    // An LLM grader with preprocessors sees the target's files as
    // text (AgentV §5.7); the answer is put back after.
    let mut original_output = None;
    if !assertion.preprocessors.is_empty() {
        let base = request
            .workspace_path
            .as_ref()
            .map(std::path::PathBuf::from)
            .or_else(|| match &run_target.target.provider {
                target::Provider::Cli(c) => c.cwd.clone(),
                target::Provider::Agent(c) => c.cwd.clone(),
                _ => None,
            })
            .unwrap_or_else(|| ctx.suite.dir.clone());
        match crate::preprocess::candidate(
            &request.output_messages,
            &assertion.preprocessors,
            &base,
            policy,
            request.sandbox.as_ref(),
        ) {
            Ok(Some(text)) => {
                original_output = Some(std::mem::replace(&mut request.output, text));
            }
            Ok(None) => {}
            Err(refused) => return grade::refused_row(assertion, refused.0),
        }
    }
    // A prompt computed by a command: the grader runs with it as
    // its whole prompt.
    let scripted;
    let assertion = match &assertion.prompt_script {
        None => assertion,
        Some(script) => {
            match crate::prompt_script::render(script, request, policy, request.sandbox.as_ref()) {
                Ok(prompt) => {
                    let mut config = (*assertion.config).clone();
                    config.insert("prompt".into(), prompt.into());
                    config.insert("prompt_is_template".into(), true.into());
                    let mut own = assertion.clone();
                    own.config_json = serde_json::Value::Object(config.clone()).to_string().into();
                    own.config = std::sync::Arc::new(config);
                    scripted = own;
                    &scripted
                }
                Err(why) => {
                    if let Some(original) = original_output {
                        request.output = original;
                    }
                    return grade::refused_row(assertion, why);
                }
            }
        }
    };
    // An assertion's own `transform`: the output it reads.
    let mut untransformed = None;
    let mut context = None;
    if let Some(transform) = &assertion.transform {
        let done = {
            let _permit = ctx.graders.acquire();
            grade::run_transform(
                ctx.registry,
                transform,
                request,
                grade::call_limits(transform, ctx.suite.limits),
                policy,
                &run_target.judge,
            )
        };
        match done {
            // A `contextTransform`: its result is the context the
            // assertion reads (`vars.context`), the output unchanged.
            Ok(new) if grade::is_context_transform(transform) => {
                match grade::with_context(request, new) {
                    Ok(old) => context = Some(old),
                    Err(why) => {
                        if let Some(original) = original_output {
                            request.output = original;
                        }
                        return grade::refused_row(assertion, why);
                    }
                }
            }
            Ok(new) => untransformed = Some(grade::swap_output(request, new)),
            Err(why) => {
                if let Some(original) = original_output {
                    request.output = original;
                }
                return grade::refused_row(assertion, why);
            }
        }
    }
    let mut score = if limits.timeout.is_zero() {
        grade::case_timeout_row(assertion, test.timeout_ms.unwrap_or_default())
    } else {
        let _permit = ctx.graders.acquire();
        grade::grade_assertion(
            ctx.registry,
            assertion,
            request,
            limits,
            policy,
            &run_target.judge,
        )
    };
    if let Some((text, info)) = untransformed {
        request.output = text;
        request.response = info;
    }
    if let Some(metadata) = context {
        request.metadata_json = metadata;
    }
    if let Some(original) = original_output {
        request.output = original;
    }
    if capped_by_case && score.failure_class == Some(FailureClass::PluginTimeout) {
        score.failure_class = Some(FailureClass::CaseTimeout);
        score.error = Some(format!(
            "the case ran past its timeout_ms of {}",
            test.timeout_ms.unwrap_or_default()
        ));
    }
    score
}

/// Writes an agent's transcript into the run directory; its path there
/// (none when it cannot be written: the row still has the messages).
fn save_transcript(ctx: &Ctx<'_>, row: &ResultRow, raw: &str) -> Option<String> {
    let safe = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    // Ids that had to be changed to make a file name carry a digest of the
    // real ones, so `a b` and `a_b` never share a transcript.
    let (test, target) = (safe(&row.test_id), safe(&row.target));
    let tell = if test != row.test_id || target != row.target {
        let digest = blake3::hash(format!("{}\0{}", row.test_id, row.target).as_bytes());
        format!("-{}", &digest.to_hex()[..8])
    } else {
        String::new()
    };
    let name = format!("{test}__{target}__{}{tell}.log", row.trial.unwrap_or(1));
    // Not through a link: a `transcripts` link in a run directory read
    // back (`--resume`) would send the file anywhere.
    match std::fs::symlink_metadata(&ctx.transcripts) {
        Ok(m) if !m.is_dir() => return None,
        Ok(_) => {}
        Err(_) => std::fs::create_dir(&ctx.transcripts).ok()?,
    }
    crate::safe_fs::write_atomic(&ctx.transcripts.join(&name), raw.as_bytes()).ok()?;
    Some(format!("transcripts/{name}"))
}

/// A retried target call, said as it happens: a slow target retried is no
/// silent wait.
pub(super) fn say_retry(test_id: &str, retry: &target::RetryRecord) {
    let mut err = crate::text::Terminal::new(std::io::stderr().lock());
    let _ = writeln!(
        err,
        "  retry  {} on `{}`: attempt {} failed ({}){}",
        test_id,
        retry.target,
        retry.attempt,
        crate::text::shown(&retry.error),
        if retry.wait_ms > 0 {
            format!("; trying again in {:.1} s", retry.wait_ms as f64 / 1000.0)
        } else {
            String::new()
        }
    );
}
