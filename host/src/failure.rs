//! Failure classes: why a result did not pass, typed, so that summaries can
//! group failures and automation can branch on them. Serialized in
//! `snake_case` in `results.jsonl` (`failure_class`).

use serde::{Deserialize, Serialize};

/// Why an assertion or a test did not pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// Graded, and the output did not meet the assertion.
    Assertion,
    /// The plugin returned an error for this case (its `err`).
    PluginError,
    /// The plugin trapped: a panic, an `unreachable`, a stack overflow, an
    /// exit call.
    PluginTrap,
    /// The plugin ran past its deadline.
    PluginTimeout,
    /// The plugin tried to grow its memory past its cap.
    PluginMemory,
    /// The plugin returned something the host refuses: a score that is NaN or
    /// outside [0, 1], too many checks, too much text.
    PluginBadOutput,
    /// The plugin could not be instantiated.
    PluginLoad,
    /// The target failed to produce an output.
    Target,
    /// The case ran past its `timeout_ms`.
    CaseTimeout,
    /// The case's workspace could not be set up, or a `before_*` hook failed.
    Workspace,
    /// The LLM judge failed or its reply was unusable.
    Judge,
    /// The case has `expected_fail: true` but passed.
    UnexpectedPass,
    /// A test it `depends_on` ended in an execution error, so it was not
    /// run (`on_dependency_failure: skip` or `fail`).
    DependencyFailed,
    /// The suite's `budget_usd` was spent before the test started.
    BudgetExceeded,
    /// The test's input could not be made (a prompt that does not render,
    /// a file it names that cannot be read): nothing ran.
    Input,
}

impl FailureClass {
    /// The name used in results and summaries.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Assertion => "assertion",
            Self::PluginError => "plugin_error",
            Self::PluginTrap => "plugin_trap",
            Self::PluginTimeout => "plugin_timeout",
            Self::PluginMemory => "plugin_memory",
            Self::PluginBadOutput => "plugin_bad_output",
            Self::PluginLoad => "plugin_load",
            Self::Target => "target",
            Self::CaseTimeout => "case_timeout",
            Self::Workspace => "workspace",
            Self::Judge => "judge",
            Self::UnexpectedPass => "unexpected_pass",
            Self::DependencyFailed => "dependency_failed",
            Self::BudgetExceeded => "budget_exceeded",
            Self::Input => "input",
        }
    }

    /// True for failures of the machinery rather than of the output under
    /// test: the result is an `execution_error`, not a quality failure.
    pub fn is_infrastructure(self) -> bool {
        // A plugin's error (a grader command that crashed, could not run or
        // printed no verdict; a grant refused) is the grader's failure, not
        // a verdict on the output.
        !matches!(self, Self::Assertion | Self::UnexpectedPass)
    }
}

impl std::fmt::Display for FailureClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
