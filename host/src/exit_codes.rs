//! Process exit codes: the one place they are defined. Automation may rely on
//! them; README.md documents them.

/// Every test passed (or failed as expected).
pub const SUCCESS: u8 = 0;
/// At least one test failed.
pub const TEST_FAILED: u8 = 1;
/// `evalhost compare --fail-on-regression`: the candidate run is worse
/// than the base, beyond noise (the same code as a failed test: a CI gate
/// reads both as "not good enough").
pub const REGRESSION: u8 = 1;
/// The suite, the targets file or the command line is wrong; nothing ran.
pub const USAGE: u8 = 2;
/// Every result is an execution error: nothing could be graded (the target
/// failed for every test, or every grader crashed).
pub const EXECUTION_ERROR: u8 = 3;
/// Interrupted by Ctrl-C (SIGINT); what finished was written and can be
/// resumed with `--resume`.
pub const INTERRUPTED: u8 = 130;
/// evalhost itself failed (an I/O error writing results, an internal error).
pub const INTERNAL: u8 = 101;

impl crate::outcome::Tally {
    /// The exit code this tally calls for: the exit-code policy lives here,
    /// with the codes, not in the results stage.
    pub fn exit_code(&self) -> u8 {
        if self.all_passed() {
            SUCCESS
        } else if self.total > 0 && self.errors == self.total {
            EXECUTION_ERROR
        } else {
            TEST_FAILED
        }
    }
}
