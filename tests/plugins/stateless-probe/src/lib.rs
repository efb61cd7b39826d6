//! A test-only plugin that declares itself stateless and counts the calls
//! its instance has served: with instance reuse the count grows from case
//! to case; after a trap the host must start a fresh instance (count 1).
//! Every call also prints its count, so a test can check that a failed
//! call shows only its own output.

use std::sync::atomic::{AtomicU32, Ordering};

use evalhost_plugin_sdk::{
    AssertionType, Check, Grade, GradeError, Grader, Plugin, Request, export_grader,
};

static CALLS: AtomicU32 = AtomicU32::new(0);

/// The plugin.
pub struct StatelessProbe;

impl Grader for StatelessProbe {
    fn describe() -> Plugin {
        Plugin::new("stateless-probe", "0.1.0")
            .stateless(true)
            .assertion_type(AssertionType::new(
                "count-calls",
                "Reports how many calls this instance served",
            ))
            .assertion_type(AssertionType::new("panic-now", "Panics"))
    }

    fn grade(request: &Request) -> Result<Grade, GradeError> {
        let n = CALLS.fetch_add(1, Ordering::SeqCst) + 1;
        eprintln!("probe call {n}");
        if request.assertion_type == "panic-now" {
            panic!("probe panics on call {n}");
        }
        Ok(Grade::from_check(Check::pass(format!("call {n}"))))
    }
}

export_grader!(StatelessProbe);
