//! Process exit codes: the one place they are defined. Automation may rely on
//! them; README.md documents them.

/// Every test passed (or failed as expected).
pub const SUCCESS: u8 = 0;
/// At least one test failed.
pub const TEST_FAILED: u8 = 1;
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
