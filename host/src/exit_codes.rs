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

/// The one exit code of a command that ran several suites, from each
/// suite's own: interrupted, else evalhost's own failure, else a suite that
/// could not run (usage), else every suite an execution error, else any
/// suite not passing (a failed test), else success.
pub fn combine(codes: &[u8]) -> u8 {
    if codes.contains(&INTERRUPTED) {
        INTERRUPTED
    } else if codes.contains(&INTERNAL) {
        INTERNAL
    } else if codes.contains(&USAGE) {
        USAGE
    } else if !codes.is_empty() && codes.iter().all(|&c| c == EXECUTION_ERROR) {
        EXECUTION_ERROR
    } else if codes.iter().any(|&c| c != SUCCESS) {
        TEST_FAILED
    } else {
        SUCCESS
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_suites_end_with_the_worst_code() {
        assert_eq!(combine(&[SUCCESS, SUCCESS]), SUCCESS);
        assert_eq!(combine(&[SUCCESS, TEST_FAILED]), TEST_FAILED);
        assert_eq!(combine(&[SUCCESS, EXECUTION_ERROR]), TEST_FAILED);
        assert_eq!(
            combine(&[EXECUTION_ERROR, EXECUTION_ERROR]),
            EXECUTION_ERROR
        );
        assert_eq!(combine(&[TEST_FAILED, USAGE, SUCCESS]), USAGE);
        assert_eq!(combine(&[USAGE, INTERNAL]), INTERNAL);
        assert_eq!(combine(&[INTERNAL, INTERRUPTED]), INTERRUPTED);
    }
}
