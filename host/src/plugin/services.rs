//! What a plugin may ask of the host beyond computing, as the wasmtime
//! layer sees it: completions and embeddings (the `llm` and `embed`
//! imports) and, for a command run through `exec`, a judge endpoint the
//! command may call. The layer knows only these traits and their plain
//! types (the WIT ones are converted in `state.rs`); the grading stage
//! implements them (`crate::grants`: the run's judge and its loopback
//! proxy).

use std::fmt::Debug;

use serde::{Deserialize, Serialize};

use crate::results::usage::JudgeUsage;

/// A completion a plugin asks for (the `llm` capability's request).
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `(role, content)` pairs.
    pub messages: Vec<(String, String)>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Reply length cap.
    pub max_tokens: Option<u32>,
    /// A JSON Schema the reply must follow.
    pub response_schema: Option<String>,
    /// Sampling seed.
    pub seed: Option<u64>,
    /// A judge target named by the assertion.
    pub target: Option<String>,
}

/// The answer to a [`Request`].
#[derive(Debug, Clone)]
pub struct Answer {
    /// The reply.
    pub text: String,
    /// The model that answered.
    pub model: String,
    /// Prompt tokens.
    pub input_tokens: Option<u64>,
    /// Reply tokens.
    pub output_tokens: Option<u64>,
    /// Cost in USD.
    pub cost_usd: Option<f64>,
    /// Answered from the judge cache.
    pub cached: bool,
}

/// An embedding of a text.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Embedding {
    /// The vector.
    pub vector: Vec<f64>,
    /// The model that answered.
    pub model: String,
    /// Input tokens.
    pub input_tokens: Option<u64>,
    /// Cost in USD.
    pub cost_usd: Option<f64>,
    /// Answered from the cache.
    #[serde(skip)]
    pub cached: bool,
}

/// Why no answer came.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    /// No judge is configured, or it could not be reached.
    #[error("{0}")]
    Unavailable(String),
    /// The judge answered with an error.
    #[error("{0}")]
    Failed(String),
}

/// Completions and embeddings for one plugin call (the `llm` grant): the
/// implementation knows the case's default judge and the plugin's digest.
pub trait Llm: Send + Sync + Debug {
    /// Answers `request`, adding what it cost to `usage`.
    fn complete(&self, request: &Request, usage: &mut JudgeUsage) -> Result<Answer, LlmError>;
    /// Embeds `text` with the model named `target`, adding what it cost to
    /// `usage`.
    fn embed(
        &self,
        target: Option<&str>,
        text: &str,
        usage: &mut JudgeUsage,
    ) -> Result<Embedding, LlmError>;
}

/// A judge endpoint for each command a plugin runs (a code grader's
/// `target:`): started before the command, finished after it.
pub trait CommandJudge: Send + Sync + Debug {
    /// Starts an endpoint for one command.
    fn start(&self) -> std::io::Result<Box<dyn JudgeEndpoint>>;
}

/// A running judge endpoint.
pub trait JudgeEndpoint {
    /// The variables the command gets to reach it.
    fn env(&self) -> Vec<(String, String)>;
    /// The port of the host's loopback it listens on, when it does (an
    /// isolated command gets that port and no other network).
    fn port(&self) -> Option<u16>;
    /// Stops it; what the command's calls cost.
    fn finish(self: Box<Self>) -> JudgeUsage;
}
