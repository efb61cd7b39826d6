//! The host side of the `llm` capability: the judge model. A plugin sends a
//! chat-completion request; the host picks the judge target (the
//! assertion's `target`, else `--grader-target`, else the run target's
//! `grader_target`, else the run target itself when it is a model), answers
//! from the content-addressed judge cache when it can, otherwise calls the
//! judge with its retry policy under a separate concurrency limit, and
//! accounts tokens and cost. The plugin never sees a key or the network.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::digest::sha256_hex;
use crate::target::{Invocation, Provider, Target, TargetFailure, Targets, openai};

pub use crate::results::usage::JudgeUsage;

pub use crate::semaphore::{Permit, Semaphore};

/// What a plugin asks, the answer, an embedding, and why none came: the
/// vocabulary of the plugin layer's `Llm` service, which the judge
/// implements (through `crate::grants`).
pub use crate::plugin::services::{Answer, Embedding, LlmError as JudgeError, Request};

impl CachedCompletion {
    /// A model target's answer, as the judge keeps it.
    fn of(out: crate::target::TargetOutput, model: &str) -> Self {
        Self {
            text: out.text,
            model: model.to_owned(),
            input_tokens: out.token_usage.map(|t| t.input),
            output_tokens: out.token_usage.map(|t| t.output),
            cost_usd: out.cost_usd,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct CachedCompletion {
    text: String,
    model: String,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cost_usd: Option<f64>,
}

/// A model on OpenAI's own API without a key cannot answer: said at once,
/// not after the retries of a refused request.
fn no_key(target: &Target) -> Result<(), JudgeError> {
    match &target.provider {
        Provider::OpenAi(c) if c.api_key.is_none() && c.base_url.contains("api.openai.com") => {
            Err(JudgeError::Unavailable(format!(
                "`{}` ({} on {}) has no API key: set OPENAI_API_KEY (or the variable its `apiKeyEnvar`/`api_key` names)",
                target.name, c.model, c.base_url
            )))
        }
        _ => Ok(()),
    }
}

thread_local! {
    /// Judge answers waiting for their grader's verdict before they are
    /// cached (see [`defer_cache_writes`]); `None` when not deferring.
    static DEFERRED: std::cell::RefCell<Option<Vec<(PathBuf, String)>>> =
        const { std::cell::RefCell::new(None) };
}

/// From now on this thread's judge answers are held back from the cache
/// until [`finish_cache_writes`] says whether the grader could use them: a
/// reply the grader could not parse (it failed the assertion as a judge
/// error) is never stored, so a later run asks the judge again instead of
/// replaying the unusable answer forever.
pub fn defer_cache_writes() {
    DEFERRED.with(|d| *d.borrow_mut() = Some(Vec::new()));
}

/// Writes the answers held back since [`defer_cache_writes`] when `usable`
/// (the grader graded with them), else drops them.
pub fn finish_cache_writes(usable: bool) {
    let pending = DEFERRED.with(|d| d.borrow_mut().take()).unwrap_or_default();
    if usable {
        for (path, text) in pending {
            write_cache(&path, &text);
        }
    }
}

/// Stores one cached answer; a cache that cannot be written only costs a
/// call.
fn write_cache(path: &std::path::Path, text: &str) {
    if let Some(dir) = path.parent()
        && std::fs::create_dir_all(dir).is_ok()
    {
        let _ = crate::safe_fs::write_atomic(path, text.as_bytes());
    }
}

/// The judge of a run.
#[derive(Debug)]
pub struct Judge {
    targets: Targets,
    cache_dir: Option<PathBuf>,
    permits: Semaphore,
    timeout: Duration,
    scope: String,
    strict: bool,
    /// `--no-judge-cache`: cached answers are not read, fresh ones are
    /// still written (so the next run sees them, not stale ones).
    refresh: bool,
}

/// A target that only answers a prompt with text: a model API (or the
/// offline `mock`/`echo`), never a command, an agent or an HTTP API the
/// targets file wires up.
pub fn is_model(target: &Target) -> bool {
    matches!(
        target.provider,
        Provider::OpenAi(_)
            | Provider::Anthropic(_)
            | Provider::Gemini(_)
            | Provider::Responses(_)
            | Provider::Mock { .. }
            | Provider::Echo
    )
}

impl Judge {
    /// A judge over `targets`, caching in `cache_dir`, with at most
    /// `workers` judge calls at once.
    pub fn new(targets: Targets, cache_dir: Option<PathBuf>, workers: usize) -> Self {
        Self {
            targets,
            cache_dir,
            permits: Semaphore::new(workers),
            timeout: Duration::from_secs(300),
            scope: String::new(),
            strict: false,
            refresh: false,
        }
    }

    /// `--no-judge-cache`: every answer comes from the judge, and replaces
    /// the cached one.
    pub fn refreshing(mut self, refresh: bool) -> Self {
        self.refresh = refresh;
        self
    }

    /// `--sandbox strict`: a judge the suite names (an assertion's
    /// `target`, a plugin's `completion-request.target`) must be a model
    /// API or the run's designated judge (`--grader-target`, the selected
    /// target's `grader_target`); a command or an agent target is refused,
    /// so a suite cannot hand its prompt to a program on the host.
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Keys every cached answer by `scope` too: runs under
    /// `--sandbox strict` never share answers with trusted runs.
    pub fn with_scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = scope.into();
        self
    }

    /// `$EVALHOST_CACHE_DIR/judge`, else the user's cache directory.
    pub fn default_cache_dir() -> Option<PathBuf> {
        crate::safe_fs::cache_root().map(|d| d.join("judge"))
    }

    /// The judge for a run target: `--grader-target`, else its
    /// `grader_target`, else itself when it is a model (`openai`, `mock`).
    pub fn resolve_default(
        &self,
        cli: Option<&str>,
        run_target: &Target,
    ) -> Result<Target, String> {
        if let Some(name) = cli.or(run_target.grader_target.as_deref()) {
            return self.targets.select(name).cloned();
        }
        match run_target.provider {
            Provider::OpenAi(_)
            | Provider::Anthropic(_)
            | Provider::Gemini(_)
            | Provider::Mock { .. } => Ok(run_target.clone()),
            _ => Err(format!(
                "target `{}` is not a model that can judge; give it a `grader_target`, or pass --grader-target",
                run_target.name
            )),
        }
    }

    fn identity(target: &Target) -> String {
        match &target.provider {
            Provider::OpenAi(c) => format!("openai\u{0}{}\u{0}{}", c.base_url, c.model),
            Provider::Anthropic(c) => format!("anthropic\u{0}{}\u{0}{}", c.base_url, c.model),
            Provider::Gemini(c) => format!("gemini\u{0}{}\u{0}{}", c.base_url, c.model),
            Provider::Responses(c) => format!("responses\u{0}{}\u{0}{}", c.base_url, c.model),
            Provider::Mock { response, .. } => format!("mock\u{0}{response}"),
            Provider::Cli(c) => format!(
                "cli\u{0}{}\u{0}{}",
                c.command,
                c.cwd.as_deref().unwrap_or(&target.base_dir).display()
            ),
            _ => target.name.clone(),
        }
    }

    /// Answers one request for a plugin with `digest`, with `default` as the
    /// judge unless the request names one.
    pub fn complete(
        &self,
        default: &Result<Target, String>,
        digest: &str,
        request: &Request,
        usage: &mut JudgeUsage,
    ) -> Result<Answer, JudgeError> {
        let target = match &request.target {
            Some(name) => {
                let named = self
                    .targets
                    .select(name)
                    .map_err(|e| JudgeError::Unavailable(format!("judge target: {e}")))?
                    .clone();
                let designated = default.as_ref().is_ok_and(|d| d.name == named.name);
                if self.strict && !designated && !is_model(&named) {
                    return Err(JudgeError::Unavailable(format!(
                        "judge target `{name}` is refused under `--sandbox strict`: it is a `{}` target, not a model API, and not the run's judge (a suite may name only model targets as judges)",
                        crate::doctor::kind(&named)
                    )));
                }
                named
            }
            None => default.clone().map_err(JudgeError::Unavailable)?,
        };
        no_key(&target)?;
        let messages = &request.messages;
        let key = sha256_hex(
            serde_json::json!({
                "plugin": digest,
                "scope": self.scope,
                "judge": Self::identity(&target),
                "temperature": request.temperature,
                "max_tokens": request.max_tokens,
                "schema": request.response_schema,
                "seed": request.seed,
                "messages": messages,
            })
            .to_string()
            .as_bytes(),
        );
        let record = |c: &CachedCompletion, cached: bool, usage: &mut JudgeUsage| {
            usage.calls += 1;
            usage.cached += u64::from(cached);
            usage.input_tokens += c.input_tokens.unwrap_or(0);
            usage.output_tokens += c.output_tokens.unwrap_or(0);
            usage.cost_usd += c.cost_usd.unwrap_or(0.0);
            Answer {
                text: c.text.clone(),
                model: c.model.clone(),
                input_tokens: c.input_tokens,
                output_tokens: c.output_tokens,
                cost_usd: c.cost_usd,
                cached,
            }
        };
        let path = self
            .cache_dir
            .as_ref()
            .map(|d| d.join(format!("{key}.json")));
        if let Some(path) = path.as_ref().filter(|_| !self.refresh)
            && let Ok(text) = crate::safe_fs::read_text_capped(path, 64 << 20)
            && let Ok(hit) = serde_json::from_str::<CachedCompletion>(&text)
        {
            return Ok(record(&hit, true, usage));
        }
        // An error is never cached: it is returned here.
        let answer = {
            let _permit = self.permits.acquire();
            self.call(&target, messages, request)
        }
        .map_err(|e| JudgeError::Failed(format!("judge `{}`: {}", target.name, e.message)))?;
        if let Some(path) = path
            && let Ok(text) = serde_json::to_string(&answer)
        {
            let held = DEFERRED.with(|d| match d.borrow_mut().as_mut() {
                Some(pending) => {
                    pending.push((path.clone(), text.clone()));
                    true
                }
                None => false,
            });
            if !held {
                write_cache(&path, &text);
            }
        }
        Ok(record(&answer, false, usage))
    }

    /// Embeds `text` for a plugin with `digest` through the target named
    /// `target` (there is no default embedding model), from the cache when
    /// it can.
    pub fn embed(
        &self,
        target: Option<&str>,
        digest: &str,
        text: &str,
        usage: &mut JudgeUsage,
    ) -> Result<Embedding, JudgeError> {
        let Some(name) = target else {
            return Err(JudgeError::Unavailable(
                "no embedding model is configured for this assertion: name one (promptfoo: the assertion's or the test's `provider`; AgentV 5: `config.embedding_provider`)".into(),
            ));
        };
        let target = self
            .targets
            .select(name)
            .map_err(|e| JudgeError::Unavailable(format!("embedding target: {e}")))?
            .clone();
        let Provider::OpenAi(config) = &target.provider else {
            return Err(JudgeError::Unavailable(format!(
                "target `{}` cannot embed: evalhost asks OpenAI-compatible endpoints (`/embeddings`) for embeddings",
                target.name
            )));
        };
        no_key(&target)?;
        let key = sha256_hex(
            serde_json::json!({
                "plugin": digest,
                "scope": self.scope,
                "embed": Self::identity(&target),
                "text": text,
            })
            .to_string()
            .as_bytes(),
        );
        let record = |e: Embedding, cached: bool, usage: &mut JudgeUsage| {
            usage.calls += 1;
            usage.cached += u64::from(cached);
            usage.input_tokens += e.input_tokens.unwrap_or(0);
            usage.cost_usd += e.cost_usd.unwrap_or(0.0);
            Embedding { cached, ..e }
        };
        let path = self
            .cache_dir
            .as_ref()
            .map(|d| d.join(format!("{key}.json")));
        if let Some(path) = &path
            && let Ok(text) = crate::safe_fs::read_text_capped(path, 64 << 20)
            && let Ok(hit) = serde_json::from_str::<Embedding>(&text)
        {
            return Ok(record(hit, true, usage));
        }
        let mut attempt = 0;
        let answer = loop {
            let result = {
                let _permit = self.permits.acquire();
                openai::embed(config, text, Some(self.timeout))
            };
            match result {
                Ok(e) => break e,
                Err(e) if e.retryable && attempt < target.retry.max_retries => {
                    std::thread::sleep(
                        e.retry_after.unwrap_or_else(|| target.retry.delay(attempt)),
                    );
                    attempt += 1;
                }
                Err(e) => {
                    return Err(JudgeError::Failed(format!(
                        "embedding target `{}`: {}",
                        target.name, e.message
                    )));
                }
            }
        };
        let answer = Embedding {
            vector: answer.vector,
            model: config.model.clone(),
            input_tokens: answer.input_tokens,
            cost_usd: answer.cost_usd,
            cached: false,
        };
        if let Some(path) = &path
            && let Some(dir) = path.parent()
            && std::fs::create_dir_all(dir).is_ok()
            && let Ok(text) = serde_json::to_string(&answer)
        {
            // A cache that cannot be written only costs a call.
            let _ = crate::safe_fs::write_atomic(path, text.as_bytes());
        }
        Ok(record(answer, false, usage))
    }

    fn call(
        &self,
        target: &Target,
        messages: &[(String, String)],
        request: &Request,
    ) -> Result<CachedCompletion, TargetFailure> {
        let (temperature, max_tokens) = (request.temperature, request.max_tokens.map(u64::from));
        let timeout = Some(self.timeout);
        let mut attempt = 0;
        loop {
            let result = match &target.provider {
                Provider::OpenAi(config) => {
                    let params = openai::ChatParams {
                        temperature,
                        max_tokens,
                        response_schema: request
                            .response_schema
                            .as_ref()
                            .and_then(|s| serde_json::from_str(s).ok()),
                        seed: request.seed,
                    };
                    openai::chat(config, messages, &params, timeout)
                        .map(|out| CachedCompletion::of(out, &config.model))
                }
                // A promptfoo config's Anthropic grader: the grading prompt
                // (the messages as the JSON chat promptfoo renders) sent as
                // its Messages provider sends any prompt — one request,
                // `stream: false`, its `max_tokens` and `temperature`.
                Provider::Anthropic(config) if config.promptfoo.is_some() => {
                    let chat: Vec<serde_json::Value> = messages
                        .iter()
                        .map(
                            |(role, content)| serde_json::json!({"role": role, "content": content}),
                        )
                        .collect();
                    crate::target::anthropic_promptfoo::call(
                        config,
                        &serde_json::Value::Array(chat).to_string(),
                        config.promptfoo.unwrap_or(true),
                        timeout.map_or(config.timeout, |t| t.min(config.timeout)),
                    )
                    .map(|out| CachedCompletion::of(out, &config.model))
                }
                Provider::Anthropic(config) => {
                    use crate::target::anthropic::chat;
                    chat(config, messages, temperature, max_tokens, timeout)
                        .map(|out| CachedCompletion::of(out, &config.model))
                }
                Provider::Gemini(config) => {
                    use crate::target::gemini::chat;
                    chat(config, messages, temperature, max_tokens, timeout)
                        .map(|out| CachedCompletion::of(out, &config.model))
                }
                Provider::Responses(config) => {
                    use crate::target::responses::chat;
                    chat(config, messages, temperature, max_tokens, timeout)
                        .map(|out| CachedCompletion::of(out, &config.model))
                }
                _ => {
                    // Mock and command judges: the user turns are the prompt.
                    let test = crate::suite::TestCase::synthetic(
                        "judge",
                        messages
                            .iter()
                            .filter(|(role, _)| role != "system")
                            .map(|(role, content)| {
                                crate::suite::Message::text(role, content.clone())
                            })
                            .collect(),
                    );
                    let inv = Invocation {
                        attempt,
                        trial: 1,
                        ..Invocation::default()
                    };
                    target.invoke_once(&test, &inv).map(|out| CachedCompletion {
                        text: out.text,
                        model: target.name.clone(),
                        input_tokens: out.token_usage.map(|t| t.input),
                        output_tokens: out.token_usage.map(|t| t.output),
                        cost_usd: out.cost_usd,
                    })
                }
            };
            match result {
                Ok(answer) => return Ok(answer),
                Err(e) if e.retryable && attempt < target.retry.max_retries => {
                    std::thread::sleep(
                        e.retry_after.unwrap_or_else(|| target.retry.delay(attempt)),
                    );
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}
