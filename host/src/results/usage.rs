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
