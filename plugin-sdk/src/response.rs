//! What a grader returns: its description, and grades.

use serde_json::Value;

use crate::__private::bindings::evalhost::grader::types as wit;

/// A capability a grader needs from the host; each is denied unless the run
/// grants it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Capability {
    /// Chat completions through the host's judge model ([`complete`](crate::complete)).
    Llm,
    /// Running a command on the host ([`run_command`](crate::run_command)).
    Exec,
    /// Read-only access to the case workspace at `/workspace`.
    WorkspaceRead,
}

/// One assertion type a plugin grades.
#[derive(Debug, Clone, PartialEq)]
pub struct AssertionType {
    pub(crate) name: String,
    description: String,
    schema: Value,
    threshold: f64,
    pub(crate) capabilities: Vec<Capability>,
}

impl AssertionType {
    /// A type named `name` (kebab-case), with a one-line description. Its
    /// config schema accepts any object and its pass threshold is 0.8 until
    /// set.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            schema: serde_json::json!({"type": "object"}),
            threshold: 0.8,
            capabilities: Vec::new(),
        }
    }

    /// Sets the JSON Schema of the config object.
    #[must_use]
    pub fn schema(mut self, schema: Value) -> Self {
        self.schema = schema;
        self
    }

    /// Sets the score at or above which the verdict is `pass`.
    #[must_use]
    pub fn threshold(mut self, threshold: f64) -> Self {
        self.threshold = threshold;
        self
    }

    /// Declares a capability this type needs.
    #[must_use]
    pub fn capability(mut self, capability: Capability) -> Self {
        self.capabilities.push(capability);
        self
    }

    fn into_wit(self) -> wit::AssertionType {
        wit::AssertionType {
            name: self.name,
            description: self.description,
            config_schema: self.schema.to_string(),
            default_threshold: self.threshold,
            capabilities: self
                .capabilities
                .into_iter()
                .map(|c| match c {
                    Capability::Llm => wit::Capability::Llm,
                    Capability::Exec => wit::Capability::Exec,
                    Capability::WorkspaceRead => wit::Capability::WorkspaceRead,
                })
                .collect(),
        }
    }
}

/// A plugin's description of itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Plugin {
    pub(crate) name: String,
    version: String,
    pub(crate) types: Vec<AssertionType>,
    stateless: bool,
}

impl Plugin {
    /// A plugin named `name` at `version`, with no types yet.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            types: Vec::new(),
            stateless: false,
        }
    }

    /// Adds an assertion type.
    #[must_use]
    pub fn assertion_type(mut self, assertion_type: AssertionType) -> Self {
        self.types.push(assertion_type);
        self
    }

    /// Declares that no grade depends on an earlier call, so the host may
    /// reuse one instance for many calls. Caches (compiled patterns) are fine.
    #[must_use]
    pub fn stateless(mut self, stateless: bool) -> Self {
        self.stateless = stateless;
        self
    }

    /// The names of the assertion types, in order.
    pub fn type_names(&self) -> impl Iterator<Item = &str> {
        self.types.iter().map(|t| t.name.as_str())
    }

    pub(crate) fn into_wit(self) -> wit::PluginInfo {
        wit::PluginInfo {
            name: self.name,
            version: self.version,
            types: self
                .types
                .into_iter()
                .map(AssertionType::into_wit)
                .collect(),
            stateless: self.stateless,
        }
    }
}

/// One check a grader made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was checked, in words.
    pub text: String,
    /// Whether it passed.
    pub passed: bool,
    /// What the grader saw, when it helps.
    pub evidence: Option<String>,
}

impl Check {
    /// A check with its outcome.
    pub fn new(passed: bool, text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            passed,
            evidence: None,
        }
    }

    /// A passed check.
    pub fn pass(text: impl Into<String>) -> Self {
        Self::new(true, text)
    }

    /// A failed check.
    pub fn fail(text: impl Into<String>) -> Self {
        Self::new(false, text)
    }

    /// Attaches evidence.
    #[must_use]
    pub fn with_evidence(mut self, evidence: impl Into<String>) -> Self {
        self.evidence = Some(evidence.into());
        self
    }
}

/// A grade: a score in [0, 1] and the checks behind it.
#[derive(Debug, Clone, PartialEq)]
pub struct Grade {
    /// The score, in [0, 1].
    pub score: f64,
    /// The checks, in order.
    pub checks: Vec<Check>,
    /// Free-form details kept with the result (a JSON object).
    pub details: Option<Value>,
}

impl Grade {
    /// A grade with a score and no checks yet.
    pub fn new(score: f64) -> Self {
        Self {
            score,
            checks: Vec::new(),
            details: None,
        }
    }

    /// A pass/fail grade from one check: score 1 when it passed, else 0.
    pub fn from_check(check: Check) -> Self {
        Self {
            score: if check.passed { 1.0 } else { 0.0 },
            checks: vec![check],
            details: None,
        }
    }

    /// A grade whose score is the fraction of checks that passed (1 when
    /// there are none).
    pub fn from_checks(checks: Vec<Check>) -> Self {
        let passed = checks.iter().filter(|c| c.passed).count();
        let score = if checks.is_empty() {
            1.0
        } else {
            passed as f64 / checks.len() as f64
        };
        Self {
            score,
            checks,
            details: None,
        }
    }

    /// A grade that fails its assertion whatever its score: the score is
    /// kept (for means and metrics), and `details.verdict` is `"fail"`,
    /// which the host honours even above the type's threshold. A failed
    /// [`Check`] alone does not fail an assertion — the score decides
    /// against the threshold — so a grader whose partial score must not
    /// pass returns this.
    ///
    /// ```
    /// use evalhost_plugin_sdk::{Check, Grade};
    /// let g = Grade::failing(0.94).with_check(Check::fail("32 words, allowed 0..=30"));
    /// assert!(!g.passes(0.8));
    /// ```
    pub fn failing(score: f64) -> Self {
        Self {
            score,
            checks: Vec::new(),
            details: Some(serde_json::json!({"verdict": "fail"})),
        }
    }

    /// True when the details say the grade fails whatever its score
    /// ([`Grade::failing`]).
    pub fn fails_regardless(&self) -> bool {
        self.details
            .as_ref()
            .is_some_and(|d| d.get("verdict").and_then(Value::as_str) == Some("fail"))
    }

    /// Adds a check.
    #[must_use]
    pub fn with_check(mut self, check: Check) -> Self {
        self.checks.push(check);
        self
    }

    /// Sets the details (a [failing](Grade::failing) grade keeps its
    /// `verdict` unless `details` sets one).
    #[must_use]
    pub fn with_details(mut self, mut details: Value) -> Self {
        if self.fails_regardless()
            && let Value::Object(m) = &mut details
        {
            m.entry("verdict").or_insert_with(|| Value::from("fail"));
        }
        self.details = Some(details);
        self
    }

    /// True when the score reaches `threshold` and the grade is not
    /// [failing](Grade::failing) regardless.
    pub fn passes(&self, threshold: f64) -> bool {
        self.score >= threshold && !self.fails_regardless()
    }

    pub(crate) fn into_wit(self) -> wit::GradeResult {
        wit::GradeResult {
            score: self.score,
            checks: self
                .checks
                .into_iter()
                .map(|c| wit::Check {
                    text: c.text,
                    passed: c.passed,
                    evidence: c.evidence,
                })
                .collect(),
            details_json: self.details.map(|d| d.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_checks_scores_the_passed_fraction() {
        let grade = Grade::from_checks(vec![
            Check::pass("a"),
            Check::fail("b"),
            Check::pass("c"),
            Check::pass("d"),
        ]);
        assert_eq!(grade.score, 0.75);
        assert_eq!(Grade::from_checks(Vec::new()).score, 1.0);
    }
}
