//! Records that results carry beside the scores: judge usage, and what a
//! hook printed or why it failed.

use serde::{Deserialize, Serialize};

/// Judge calls of one grade, one row or one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeUsage {
    /// Requests answered (by the judge or the cache).
    pub calls: u64,
    /// Of those, answered from the judge cache.
    pub cached: u64,
    /// Prompt tokens of the judge's own answers (cached ones included).
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Cost in US dollars, when the judge reports or prices it.
    pub cost_usd: f64,
}

impl std::ops::AddAssign for JudgeUsage {
    fn add_assign(&mut self, other: Self) {
        self.calls += other.calls;
        self.cached += other.cached;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd += other.cost_usd;
    }
}

/// How a case's processes were confined (`--isolate`), and what the
/// sandbox refused them: one entry per process, in the order started.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SandboxRow {
    /// Each confined process of the case.
    pub processes: Vec<ConfinedRow>,
    /// The memory and process budget all of them shared, when limits
    /// were applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<String>,
    /// The most memory the case's processes used at once, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_memory_bytes: Option<u64>,
    /// What the limits refused the case, in sentences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
}

/// One confined process of a case.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ConfinedRow {
    /// What it is to the case: `target`, `hook`, `code-grader`,
    /// `preprocessor`, `prompt script`, `healthcheck`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub role: String,
    /// The program (its file name; `sh` for a shell line).
    pub program: String,
    /// Its network: `none`, `host`, `proxy: HOST, …` or the judge proxy's
    /// loopback port.
    pub network: String,
    /// The connections it asked the proxy for, allowed or not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connections: Vec<ConnectionRow>,
    /// What the sandbox refused it, in sentences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
}

/// A connection a confined process asked evalhost's proxy for.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ConnectionRow {
    /// The host it named.
    pub host: String,
    /// The port.
    pub port: u16,
    /// Whether the target's allow-list let it through.
    pub allowed: bool,
    /// Why it was refused, or why an allowed one failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A hook's run, as results record it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookRow {
    /// What it printed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output: String,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
