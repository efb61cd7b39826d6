//! Built-in `javascript` assertions, run inside the sandbox by the Boa
//! engine compiled into this plugin: promptfoo 0.121's calling convention
//! (`src/assertions/javascript.ts`) with none of its access to the machine.
//!
//! A snippet is the body of `function (output, context, process)`: a
//! one-line snippet is an expression (promptfoo's `buildFunctionBody`:
//! `return …`, or declarations then `return` the last expression), a
//! multi-line one a function body. A `file://path.js[:fn]` assertion's
//! source is read by the host when it loads the suite and handed over in
//! the config (`__script`); the plugin evaluates it as a CommonJS or an ES
//! module and calls its function with `(output, context)`.
//!
//! What a snippet sees: `output` (the candidate text), `context.vars`,
//! `context.prompt`, `context.test`, `context.logProbs`,
//! `context.providerResponse` (`output`, `logProbs`, `finishReason`, `cost`,
//! `tokenUsage`), `context.config`; `process.env` is empty; `require` of
//! anything throws naming the module; `console.*` is captured and shown
//! with the result. The clock reads zero and `Math.random` is seeded by the
//! host: a snippet grades the same way every time. A snippet that runs
//! without end or allocates without bound is stopped by the host's
//! deadline and memory cap (a typed failure); deep recursion throws
//! `RangeError`, which fails the assertion as promptfoo fails a snippet
//! that throws.
//!
//! Results as promptfoo normalises them: a boolean; a number (passes when
//! `> 0`, or `≥ threshold` when the assertion has one); a grading result
//! `{pass, score, reason}` (`componentResults` kept in the details). A
//! snippet that throws or returns anything else fails with promptfoo's
//! reason. `not-javascript` flips the verdict as promptfoo does.

mod engine;
mod outcome;
mod run;
mod snippet;

use evalhost_plugin_sdk::{
    AssertionType, Check, Config, Grade, GradeError, Grader, Plugin, Request, Value, export_grader,
    json,
};

use engine::{CONSOLE, with_engine};
use run::{run, run_call, run_transform};
pub use snippet::build_function_body;
use snippet::script;

/// The javascript grader plugin.
pub struct JavascriptGrader;

/// The type promptfoo suites' `javascript` assertions are graded by.
pub const TYPE: &str = "promptfoo-javascript";

/// Not an assertion: a function the host calls while it reads a suite
/// (`transformVars`, var files, prompt functions, Nunjucks filters), its
/// result in the details (`output`).
pub const CALL: &str = "promptfoo-call";

/// The type of promptfoo's transforms (`options.transform`, an assertion's
/// `transform`): not a grade, a step that returns the new output in the
/// details (`output`), always scoring 1.
pub const TRANSFORM: &str = "promptfoo-transform";

impl Grader for JavascriptGrader {
    fn describe() -> Plugin {
        // Not stateless: a snippet can change any intrinsic (a prototype,
        // `JSON`, `String`), so every call gets a fresh instance, and no
        // grade depends on what another test's code did or which instance
        // graded it.
        Plugin::new("evalhost-javascript", env!("CARGO_PKG_VERSION"))
            .stateless(false)
            .assertion_type(
                AssertionType::new(
                    TYPE,
                    "promptfoo's javascript assertion: a snippet or a file's function, run by the Boa engine in the sandbox",
                )
                .threshold(0.0)
                .schema(json!({"type": "object", "properties": {
                    "value": {"type": "string"}, "threshold": {"type": "number"}, "inverse": {"type": "boolean"},
                    "__script": {"type": "object"}, "__test": {"type": "object"}, "config": {},
                }})),
            )
            .assertion_type(
                AssertionType::new(
                    TRANSFORM,
                    "promptfoo's transform: the output rewritten by JavaScript before it is graded (details.output)",
                )
                .threshold(0.0)
                .schema(json!({"type": "object", "properties": {
                    "value": {"type": "string"}, "__script": {"type": "object"},
                }})),
            )
            .assertion_type(
                AssertionType::new(
                    CALL,
                    "a suite's code called while the suite is read (promptfoo's transformVars, var files, prompt functions, Nunjucks filters): the result in details.output",
                )
                .threshold(0.0)
                .schema(json!({"type": "object", "properties": {
                    "value": {"type": "string"}, "__script": {"type": "object"},
                    "params": {"type": "array"}, "args": {"type": "array"},
                }})),
            )
    }

    fn check_config(assertion_type: &str, config: &Config) -> Result<(), String> {
        if assertion_type == CALL {
            return Ok(());
        }
        if assertion_type != TYPE && assertion_type != TRANSFORM {
            return Err(format!("unknown assertion type `{assertion_type}`"));
        }
        config.optional_f64("threshold")?;
        config.optional_bool("inverse")?;
        if script(config)?.is_some() {
            return Ok(());
        }
        match config.get("value") {
            Some(Value::String(_)) => Ok(()),
            _ => Err("javascript assertion must have a string value".into()),
        }
    }

    fn grade(request: &Request) -> Result<Grade, GradeError> {
        CONSOLE.with(|c| c.borrow_mut().clear());
        if request.assertion_type == CALL {
            let output = with_engine(|engine| run_call(engine, request))?;
            let printed = CONSOLE.with(|c| std::mem::take(&mut *c.borrow_mut()));
            let mut details = json!({"output": output});
            if !printed.is_empty() {
                details["console"] = json!(printed);
            }
            return Ok(Grade::new(1.0)
                .with_check(Check::pass("Called"))
                .with_details(details));
        }
        if request.assertion_type == TRANSFORM {
            let output = with_engine(|engine| run_transform(engine, request))?;
            let printed = CONSOLE.with(|c| std::mem::take(&mut *c.borrow_mut()));
            let mut details = json!({"output": output});
            if !printed.is_empty() {
                details["console"] = json!(printed);
            }
            return Ok(Grade::new(1.0)
                .with_check(Check::pass("Transformed the output"))
                .with_details(details));
        }
        let graded = with_engine(|engine| run(engine, request))?;
        let printed = CONSOLE.with(|c| std::mem::take(&mut *c.borrow_mut()));
        let mut check = Check::new(graded.pass, graded.reason);
        if !printed.is_empty() {
            check = check.with_evidence(format!("console:\n{}", printed.trim_end()));
        }
        let mut details = json!({"verdict": if graded.pass { "pass" } else { "fail" }});
        if graded.score.is_finite() && !(0.0..=1.0).contains(&graded.score) {
            details["raw_score"] = json!(graded.score);
        }
        if let Some(c) = graded.components {
            details["componentResults"] = c;
        }
        if !printed.is_empty() {
            details["console"] = json!(printed);
        }
        let score = if graded.score.is_nan() {
            0.0
        } else {
            graded.score.clamp(0.0, 1.0)
        };
        Ok(Grade::new(score).with_check(check).with_details(details))
    }
}

export_grader!(JavascriptGrader);

#[cfg(test)]
mod tests;
