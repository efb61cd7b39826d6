//! Host capabilities a grader may call: a judge model (`llm`, with
//! embeddings) and commands (`exec`). Each is denied unless the run grants it to the plugin; a denied
//! call returns an error naming the missing grant.

use crate::__private::bindings::evalhost::grader::{embed as wit_embed, exec, llm};

/// A chat-completion request to the host's judge model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompletionRequest {
    /// `(role, content)` pairs; roles are `system`, `user` or `assistant`.
    pub messages: Vec<(String, String)>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// A cap on the reply's tokens.
    pub max_tokens: Option<u32>,
    /// A JSON Schema the reply must follow.
    pub response_schema: Option<String>,
    /// A seed, where the model supports one.
    pub seed: Option<u64>,
    /// A judge target named by the assertion.
    pub target: Option<String>,
}

/// A judge model's reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The reply text.
    pub text: String,
    /// The model that answered.
    pub model: String,
    /// Prompt tokens.
    pub input_tokens: Option<u64>,
    /// Completion tokens.
    pub output_tokens: Option<u64>,
    /// Cost in US dollars.
    pub cost_usd: Option<f64>,
    /// True when answered from the host's judge cache.
    pub cached: bool,
}

/// Why a completion failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LlmError {
    /// The plugin was not granted `llm`.
    NotGranted(String),
    /// No judge is configured or reachable.
    Unavailable(String),
    /// The judge answered with an error.
    Failed(String),
}

impl std::fmt::Display for LlmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotGranted(m) | Self::Unavailable(m) | Self::Failed(m) => f.write_str(m),
        }
    }
}

/// Asks the host's judge model. Needs [`Capability::Llm`](crate::Capability::Llm).
pub fn complete(request: &CompletionRequest) -> Result<Completion, LlmError> {
    if cfg!(not(target_arch = "wasm32")) {
        return crate::testing::fake_complete(request);
    }
    let wit_request = llm::CompletionRequest {
        messages: request
            .messages
            .iter()
            .map(|(role, content)| llm::ChatMessage {
                role: role.clone(),
                content: content.clone(),
            })
            .collect(),
        temperature: request.temperature,
        max_tokens: request.max_tokens,
        response_schema: request.response_schema.clone(),
        seed: request.seed,
        target: request.target.clone(),
    };
    match llm::complete(&wit_request) {
        Ok(c) => Ok(Completion {
            text: c.text,
            model: c.model,
            input_tokens: c.input_tokens,
            output_tokens: c.output_tokens,
            cost_usd: c.cost_usd,
            cached: c.cached,
        }),
        Err(llm::LlmError::NotGranted(m)) => Err(LlmError::NotGranted(m)),
        Err(llm::LlmError::Unavailable(m)) => Err(LlmError::Unavailable(m)),
        Err(llm::LlmError::Failed(m)) => Err(LlmError::Failed(m)),
    }
}

/// A text to embed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmbeddingRequest {
    /// The text.
    pub text: String,
    /// An embedding target named by the assertion.
    pub target: Option<String>,
}

/// An embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedding {
    /// The vector.
    pub vector: Vec<f64>,
    /// The model that answered.
    pub model: String,
    /// Input tokens.
    pub input_tokens: Option<u64>,
    /// Cost in US dollars.
    pub cost_usd: Option<f64>,
    /// True when answered from the host's cache.
    pub cached: bool,
}

/// Embeds a text through a model the host calls. Needs
/// [`Capability::Llm`](crate::Capability::Llm).
pub fn embed(request: &EmbeddingRequest) -> Result<Embedding, LlmError> {
    if cfg!(not(target_arch = "wasm32")) {
        return crate::testing::fake_embed(request);
    }
    match wit_embed::embed(&wit_embed::EmbeddingRequest {
        text: request.text.clone(),
        target: request.target.clone(),
    }) {
        Ok(e) => Ok(Embedding {
            vector: e.vector,
            model: e.model,
            input_tokens: e.input_tokens,
            cost_usd: e.cost_usd,
            cached: e.cached,
        }),
        Err(llm::LlmError::NotGranted(m)) => Err(LlmError::NotGranted(m)),
        Err(llm::LlmError::Unavailable(m)) => Err(LlmError::Unavailable(m)),
        Err(llm::LlmError::Failed(m)) => Err(LlmError::Failed(m)),
    }
}

/// A command for the host to run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Command {
    /// Program and arguments, run without a shell.
    pub argv: Vec<String>,
    /// A shell command line (`sh -c`), instead of `argv`.
    pub shell: Option<String>,
    /// Working directory, relative to the suite file's directory.
    pub cwd: Option<String>,
    /// Bytes for standard input.
    pub stdin: Vec<u8>,
    /// A deadline in milliseconds.
    pub timeout_ms: Option<u32>,
}

/// What a command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    /// Exit code; `None` when killed by a signal.
    pub exit_code: Option<i32>,
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error.
    pub stderr: Vec<u8>,
    /// Killed at its deadline.
    pub timed_out: bool,
    /// Output cut at the host's cap.
    pub truncated: bool,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
}

/// Why a command did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecError {
    /// The plugin was not granted `exec`.
    NotGranted(String),
    /// The run's policy refuses the command.
    Denied(String),
    /// It could not be started.
    Failed(String),
}

impl std::fmt::Display for ExecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotGranted(m) | Self::Denied(m) | Self::Failed(m) => f.write_str(m),
        }
    }
}

/// Runs a command on the host. Needs [`Capability::Exec`](crate::Capability::Exec).
pub fn run_command(command: &Command) -> Result<ExecOutput, ExecError> {
    if cfg!(not(target_arch = "wasm32")) {
        return crate::testing::fake_run(command);
    }
    let wit_command = exec::Command {
        argv: command.argv.clone(),
        shell: command.shell.clone(),
        cwd: command.cwd.clone(),
        stdin: command.stdin.clone(),
        timeout_ms: command.timeout_ms,
    };
    match exec::run(&wit_command) {
        Ok(o) => Ok(ExecOutput {
            exit_code: o.exit_code,
            stdout: o.stdout,
            stderr: o.stderr,
            timed_out: o.timed_out,
            truncated: o.truncated,
            duration_ms: o.duration_ms,
        }),
        Err(exec::ExecError::NotGranted(m)) => Err(ExecError::NotGranted(m)),
        Err(exec::ExecError::Denied(m)) => Err(ExecError::Denied(m)),
        Err(exec::ExecError::Failed(m)) => Err(ExecError::Failed(m)),
    }
}

/// Writes a file the host removes after this grade call, and returns its
/// path, for a command to read. Needs [`Capability::Exec`](crate::Capability::Exec).
pub fn write_temp_file(name: &str, contents: &[u8]) -> Result<String, ExecError> {
    if cfg!(not(target_arch = "wasm32")) {
        return crate::testing::fake_temp_file(name, contents);
    }
    exec::write_temp_file(name, contents).map_err(|e| match e {
        exec::ExecError::NotGranted(m) => ExecError::NotGranted(m),
        exec::ExecError::Denied(m) => ExecError::Denied(m),
        exec::ExecError::Failed(m) => ExecError::Failed(m),
    })
}
