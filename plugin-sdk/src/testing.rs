//! Unit-test a grader natively, the way the host will call it.
//!
//! [`Harness`] checks what the host checks — the assertion type is one the
//! plugin describes, the config passes [`Grader::check_config`], the grade is
//! a score in `[0, 1]` within the host's caps, and a capability is used only
//! when the type declares it — and stands in for the host's capabilities:
//! give it a fake judge with [`Harness::llm`] and fake commands with
//! [`Harness::exec`]. Nothing here needs WebAssembly.
//!
//! ```
//! use evalhost_plugin_sdk::testing::Harness;
//! use evalhost_plugin_sdk::{json, AssertionType, Check, Grade, GradeError, Grader, Plugin, Request};
//!
//! struct Mentions;
//! impl Grader for Mentions {
//!     fn describe() -> Plugin {
//!         Plugin::new("mentions", "0.1.0").assertion_type(AssertionType::new("mentions", "Output mentions `value`"))
//!     }
//!     fn grade(request: &Request) -> Result<Grade, GradeError> {
//!         let value = request.config.required_str("value")?;
//!         Ok(Grade::from_check(Check::new(request.output.contains(value), format!("mentions {value}"))))
//!     }
//! }
//!
//! let harness = Harness::<Mentions>::new();
//! assert_eq!(harness.score("mentions", "Hello, world", json!({"value": "world"})), 1.0);
//! assert_eq!(harness.score("mentions", "Hello", json!({"value": "world"})), 0.0);
//! ```

use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;

use serde_json::Value;

use crate::{
    Capability, Command, Completion, CompletionRequest, Embedding, EmbeddingRequest, ExecError,
    ExecOutput, Grade, GradeError, Grader, LlmError, Plugin, Request,
};

/// The host's cap on the checks of one grade.
pub const MAX_CHECKS: usize = 10_000;
/// The host's cap on the text of one grade (checks, evidence, details).
pub const MAX_RESULT_TEXT: usize = 4 << 20;

type LlmFake = Rc<dyn Fn(&CompletionRequest) -> Result<Completion, LlmError>>;
type ExecFake = Rc<dyn Fn(&Command) -> Result<ExecOutput, ExecError>>;
type EmbedFake = Rc<dyn Fn(&EmbeddingRequest) -> Result<Embedding, LlmError>>;

#[derive(Clone, Default)]
struct Fakes {
    llm: Option<LlmFake>,
    embed: Option<EmbedFake>,
    exec: Option<ExecFake>,
    granted: Vec<Capability>,
    llm_calls: Vec<CompletionRequest>,
    exec_calls: Vec<Command>,
}

thread_local! {
    static FAKES: RefCell<Option<Fakes>> = const { RefCell::new(None) };
}

/// Runs a [`Grader`] natively with the host's checks and fake capabilities.
pub struct Harness<G: Grader> {
    plugin: Plugin,
    llm: Option<LlmFake>,
    embed: Option<EmbedFake>,
    exec: Option<ExecFake>,
    llm_calls: RefCell<Vec<CompletionRequest>>,
    exec_calls: RefCell<Vec<Command>>,
    grader: PhantomData<G>,
}

impl<G: Grader> Default for Harness<G> {
    fn default() -> Self {
        Self::new()
    }
}

impl<G: Grader> Harness<G> {
    /// A harness for `G`, with no capabilities.
    pub fn new() -> Self {
        Self {
            plugin: G::describe(),
            llm: None,
            embed: None,
            exec: None,
            llm_calls: RefCell::new(Vec::new()),
            exec_calls: RefCell::new(Vec::new()),
            grader: PhantomData,
        }
    }

    /// Answers [`complete`](crate::complete) calls with `fake`, for types
    /// that declare [`Capability::Llm`].
    #[must_use]
    pub fn llm(
        mut self,
        fake: impl Fn(&CompletionRequest) -> Result<Completion, LlmError> + 'static,
    ) -> Self {
        self.llm = Some(Rc::new(fake));
        self
    }

    /// Answers [`embed`](crate::embed) calls with `fake`, for types that
    /// declare [`Capability::Llm`].
    #[must_use]
    pub fn embedder(
        mut self,
        fake: impl Fn(&EmbeddingRequest) -> Result<Embedding, LlmError> + 'static,
    ) -> Self {
        self.embed = Some(Rc::new(fake));
        self
    }

    /// Answers [`run_command`](crate::run_command) calls with `fake`, for
    /// types that declare [`Capability::Exec`].
    #[must_use]
    pub fn exec(
        mut self,
        fake: impl Fn(&Command) -> Result<ExecOutput, ExecError> + 'static,
    ) -> Self {
        self.exec = Some(Rc::new(fake));
        self
    }

    /// The plugin's description.
    pub fn plugin(&self) -> &Plugin {
        &self.plugin
    }

    /// Checks a config the way the host does when it loads a suite.
    pub fn check_config(&self, assertion_type: &str, config: Value) -> Result<(), String> {
        self.capabilities(assertion_type)?;
        let config = crate::Config::from_value(config)?;
        G::check_config(assertion_type, &config)
    }

    /// Grades `request` the way the host does: its type must be described,
    /// its config must pass `check_config`, and the grade must be one the
    /// host accepts (otherwise this panics, naming the problem).
    pub fn grade(&self, request: &Request) -> Result<Grade, GradeError> {
        let granted = self
            .capabilities(&request.assertion_type)
            .unwrap_or_else(|e| panic!("{e}"));
        if let Err(e) = G::check_config(&request.assertion_type, &request.config) {
            panic!(
                "the host would refuse this config for `{}` when loading the suite: {e}",
                request.assertion_type
            );
        }
        let fakes = Fakes {
            llm: self.llm.clone(),
            embed: self.embed.clone(),
            exec: self.exec.clone(),
            granted,
            ..Fakes::default()
        };
        let previous = FAKES.with(|f| f.replace(Some(fakes)));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| G::grade(request)));
        let fakes = FAKES.with(|f| f.replace(previous)).unwrap_or_default();
        self.llm_calls.borrow_mut().extend(fakes.llm_calls);
        self.exec_calls.borrow_mut().extend(fakes.exec_calls);
        let result = result.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        if let Ok(grade) = &result
            && let Err(e) = validate(grade)
        {
            panic!("the host would refuse this grade as bad output: {e}");
        }
        result
    }

    /// Grades `output` for `assertion_type` with `config`, and returns the
    /// score; panics when the grader returns an error.
    pub fn score(&self, assertion_type: &str, output: &str, config: Value) -> f64 {
        let request = Request::new(assertion_type, output).with_config(config);
        match self.grade(&request) {
            Ok(grade) => grade.score,
            Err(e) => panic!("`{assertion_type}` could not grade: {e}"),
        }
    }

    /// The judge requests made so far.
    pub fn llm_calls(&self) -> Vec<CompletionRequest> {
        self.llm_calls.borrow().clone()
    }

    /// The commands run so far.
    pub fn exec_calls(&self) -> Vec<Command> {
        self.exec_calls.borrow().clone()
    }

    fn capabilities(&self, assertion_type: &str) -> Result<Vec<Capability>, String> {
        self.plugin
            .types
            .iter()
            .find(|t| t.name == assertion_type)
            .map(|t| t.capabilities.clone())
            .ok_or_else(|| {
                let names: Vec<&str> = self.plugin.type_names().collect();
                format!(
                    "plugin `{}` does not describe the type `{assertion_type}` (its types: {})",
                    self.plugin.name,
                    names.join(", ")
                )
            })
    }
}

/// The host's checks on a grade, as an error message.
pub fn validate(grade: &Grade) -> Result<(), String> {
    if !grade.score.is_finite() || !(0.0..=1.0).contains(&grade.score) {
        return Err(format!("score {} is outside [0, 1]", grade.score));
    }
    if grade.checks.len() > MAX_CHECKS {
        return Err(format!(
            "{} checks, more than the cap of {MAX_CHECKS}",
            grade.checks.len()
        ));
    }
    let text: usize = grade
        .checks
        .iter()
        .map(|c| c.text.len() + c.evidence.as_ref().map_or(0, String::len))
        .sum::<usize>()
        + grade.details.as_ref().map_or(0, |d| d.to_string().len());
    if text > MAX_RESULT_TEXT {
        return Err(format!(
            "{} KiB of text, more than the cap of {} KiB",
            text >> 10,
            MAX_RESULT_TEXT >> 10
        ));
    }
    if let Some(details) = &grade.details
        && !details.is_object()
    {
        return Err("details are not a JSON object".into());
    }
    Ok(())
}

/// Runs `call` on the harness's fakes if the type declares `llm`.
fn with_llm<T>(call: impl FnOnce(&mut Fakes) -> Result<T, LlmError>) -> Result<T, LlmError> {
    FAKES.with(|f| {
        let mut fakes = f.borrow_mut();
        let Some(fakes) = fakes.as_mut() else {
            return Err(LlmError::Unavailable(
                "no host: natively, grade through evalhost_plugin_sdk::testing::Harness".into(),
            ));
        };
        if !fakes.granted.contains(&Capability::Llm) {
            return Err(LlmError::NotGranted(
                "was not granted the `llm` capability: its assertion type does not declare it"
                    .into(),
            ));
        }
        call(fakes)
    })
}

/// A native `complete`: the harness's fake, if the type declares `llm`.
pub(crate) fn fake_complete(request: &CompletionRequest) -> Result<Completion, LlmError> {
    with_llm(|fakes| {
        fakes.llm_calls.push(request.clone());
        match &fakes.llm {
            Some(fake) => fake(request),
            None => Err(LlmError::Unavailable(
                "no judge in this test: give the harness one with Harness::llm".into(),
            )),
        }
    })
}

/// A native `embed`: the harness's fake, if the type declares `llm`.
pub(crate) fn fake_embed(request: &EmbeddingRequest) -> Result<Embedding, LlmError> {
    with_llm(|fakes| match &fakes.embed {
        Some(fake) => fake(request),
        None => Err(LlmError::Unavailable(
            "no embedding model in this test: give the harness one with Harness::embedder".into(),
        )),
    })
}

/// A native `run_command`: the harness's fake, if the type declares `exec`.
pub(crate) fn fake_run(command: &Command) -> Result<ExecOutput, ExecError> {
    FAKES.with(|f| {
        let mut fakes = f.borrow_mut();
        let Some(fakes) = fakes.as_mut() else {
            return Err(ExecError::Failed(
                "no host: natively, grade through evalhost_plugin_sdk::testing::Harness".into(),
            ));
        };
        if !fakes.granted.contains(&Capability::Exec) {
            return Err(ExecError::NotGranted(
                "was not granted the `exec` capability: its assertion type does not declare it"
                    .into(),
            ));
        }
        fakes.exec_calls.push(command.clone());
        match &fakes.exec {
            Some(fake) => fake(command),
            None => Err(ExecError::Failed(
                "no commands in this test: give the harness a fake with Harness::exec".into(),
            )),
        }
    })
}

/// A native `write_temp_file`: a file in the system's temporary directory,
/// if the type declares `exec`.
pub(crate) fn fake_temp_file(name: &str, contents: &[u8]) -> Result<String, ExecError> {
    let granted = FAKES.with(|f| {
        f.borrow()
            .as_ref()
            .map(|fakes| fakes.granted.contains(&Capability::Exec))
    });
    match granted {
        None => Err(ExecError::Failed(
            "no host: natively, grade through evalhost_plugin_sdk::testing::Harness".into(),
        )),
        Some(false) => Err(ExecError::NotGranted(
            "was not granted the `exec` capability: its assertion type does not declare it".into(),
        )),
        Some(true) => {
            let dir = std::env::temp_dir().join(format!("evalhost-sdk-{}", std::process::id()));
            std::fs::create_dir_all(&dir).map_err(|e| ExecError::Failed(e.to_string()))?;
            let file_name = std::path::Path::new(name)
                .file_name()
                .ok_or_else(|| ExecError::Failed(format!("`{name}` is not a file name")))?;
            let path = dir.join(file_name);
            std::fs::write(&path, contents).map_err(|e| ExecError::Failed(e.to_string()))?;
            Ok(path.display().to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AssertionType, Check, json};

    struct Judged;

    impl Grader for Judged {
        fn describe() -> Plugin {
            Plugin::new("judged", "0.1.0")
                .assertion_type(
                    AssertionType::new("asks-judge", "Asks the judge").capability(Capability::Llm),
                )
                .assertion_type(AssertionType::new(
                    "sneaky",
                    "Asks the judge without declaring it",
                ))
                .assertion_type(AssertionType::new("overscores", "Returns 2"))
        }

        fn check_config(_type: &str, config: &crate::Config) -> Result<(), String> {
            config.optional_str("mode").map(|_| ())
        }

        fn grade(request: &Request) -> Result<Grade, GradeError> {
            if request.assertion_type == "overscores" {
                return Ok(Grade::new(2.0));
            }
            let reply = crate::complete(&CompletionRequest {
                messages: vec![("user".into(), request.output.clone())],
                ..CompletionRequest::default()
            })
            .map_err(|e| GradeError::Judge(e.to_string()))?;
            Ok(Grade::from_check(Check::new(
                reply.text == "yes",
                "judge said yes",
            )))
        }
    }

    fn completion(text: &str) -> Completion {
        Completion {
            text: text.into(),
            model: "fake".into(),
            input_tokens: Some(1),
            output_tokens: Some(1),
            cost_usd: None,
            cached: false,
        }
    }

    #[test]
    fn a_fake_judge_answers_declared_types_and_records_calls() {
        let harness = Harness::<Judged>::new().llm(|r| {
            Ok(completion(if r.messages[0].1.contains("good") {
                "yes"
            } else {
                "no"
            }))
        });
        assert_eq!(harness.score("asks-judge", "a good answer", json!({})), 1.0);
        assert_eq!(harness.score("asks-judge", "a bad answer", json!({})), 0.0);
        let calls = harness.llm_calls();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].messages[0].1, "a bad answer");
    }

    #[test]
    fn an_undeclared_capability_is_refused_as_the_host_would() {
        let harness = Harness::<Judged>::new().llm(|_| Ok(completion("yes")));
        let err = harness.grade(&Request::new("sneaky", "x")).unwrap_err();
        assert!(
            err.message()
                .contains("was not granted the `llm` capability"),
            "{err}"
        );
        assert!(harness.llm_calls().is_empty());
    }

    #[test]
    fn without_a_fake_the_judge_is_unavailable() {
        let err = Harness::<Judged>::new()
            .grade(&Request::new("asks-judge", "x"))
            .unwrap_err();
        assert!(err.message().contains("Harness::llm"), "{err}");
    }

    #[test]
    fn config_is_checked_like_the_host() {
        let harness = Harness::<Judged>::new();
        assert!(
            harness
                .check_config("asks-judge", json!({"mode": "x"}))
                .is_ok()
        );
        let err = harness
            .check_config("asks-judge", json!({"mode": 3}))
            .unwrap_err();
        assert!(err.contains("mode"), "{err}");
        let err = harness.check_config("nope", json!({})).unwrap_err();
        assert!(err.contains("does not describe the type `nope`"), "{err}");
    }

    #[test]
    #[should_panic(
        expected = "the host would refuse this grade as bad output: score 2 is outside [0, 1]"
    )]
    fn a_grade_the_host_would_refuse_panics() {
        let _ = Harness::<Judged>::new().grade(&Request::new("overscores", "x"));
    }

    #[test]
    #[should_panic(expected = "does not describe the type `unknown`")]
    fn an_unknown_type_panics() {
        let _ = Harness::<Judged>::new().grade(&Request::new("unknown", "x"));
    }

    #[test]
    fn outside_a_harness_capabilities_say_so() {
        let err = crate::complete(&CompletionRequest::default()).unwrap_err();
        assert!(err.to_string().contains("Harness"), "{err}");
        let err = crate::run_command(&Command::default()).unwrap_err();
        assert!(err.to_string().contains("Harness"), "{err}");
    }
}
