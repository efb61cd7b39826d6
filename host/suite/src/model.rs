//! The suite as evalhost runs it: tests with their merged assertion lists,
//! resolved from the raw YAML by [`super::load`].

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::source_map::{KeyPath, Pos, SourceMap};

/// Where something was written: file, position, key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loc {
    /// The file.
    pub file: Arc<PathBuf>,
    /// Line and column, when known.
    pub pos: Option<Pos>,
    /// The key path in the file.
    pub key: KeyPath,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The content as text (blocks flattened, objects as pretty JSON).
    pub content: String,
    /// The content as written, when it was not a plain string.
    pub content_json: Option<Value>,
}

impl Message {
    /// A message with plain text content.
    pub fn text(role: &str, content: impl Into<String>) -> Self {
        Self {
            role: role.to_owned(),
            content: content.into(),
            content_json: None,
        }
    }
}

/// Per-assertion overrides of the plugin call limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitOverrides {
    /// Deadline of one grade call, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Memory cap of one grade call, in MiB.
    pub memory_mb: Option<u64>,
}

impl LimitOverrides {
    /// The deadline of a grade call when nothing sets one.
    pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
    /// The memory cap of a grade call when nothing sets one.
    pub const DEFAULT_MEMORY_MB: u64 = 256;
    /// The most a suite may raise the deadline to (10 minutes).
    pub const MAX_TIMEOUT_MS: u64 = 600_000;
    /// The most a suite may raise the memory cap to (4 GiB).
    pub const MAX_MEMORY_MB: u64 = 4096;

    /// `self` where set, else `fallback`.
    pub fn or(self, fallback: Self) -> Self {
        Self {
            timeout_ms: self.timeout_ms.or(fallback.timeout_ms),
            memory_mb: self.memory_mb.or(fallback.memory_mb),
        }
    }
}

/// A `required` gate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Required {
    /// Not a gate.
    No,
    /// Gate at `min_score`, else the test's threshold.
    Yes,
    /// Gate at this score (AgentV's deprecated `required: 0.7`).
    AtLeast(f64),
}

/// One assertion of a test, ready to dispatch to its plugin.
#[derive(Debug, Clone, PartialEq)]
pub struct Assertion {
    /// Display name (given, or generated as AgentV does); shared between
    /// assertions of the same name.
    pub name: Arc<str>,
    /// Type name, kebab-case, without a `not-` prefix; shared.
    pub kind: Arc<str>,
    /// True for `not-<type>` or `negate: true`.
    pub negate: bool,
    /// Weight in the test score.
    pub weight: f64,
    /// Gate.
    pub required: Required,
    /// Gate score for `required`.
    pub min_score: Option<f64>,
    /// Plugin call limits for this assertion.
    pub limits: LimitOverrides,
    /// Config passed to the plugin (every non-host key).
    pub config: Arc<Map<String, Value>>,
    /// The config as JSON text, computed once.
    pub config_json: Arc<str>,
    /// Where the assertion was written.
    pub loc: Loc,
    /// Where each key of its config was written, by path relative to the
    /// assertion (`value`, `fields[1].match`), so that a plugin's message
    /// naming a key points at that key's line.
    pub key_positions: KeyPositions,
    /// A `.wasm` plugin that grades this assertion instead of the type's
    /// registered plugin (`wasm:`), with its pinned sha256.
    pub wasm: Option<Box<(PathBuf, Option<String>)>>,
    /// True when it comes from the suite-level `assertions`.
    pub from_suite: bool,
    /// The members of a `composite` or `assert-set`, graded by their own
    /// plugins and combined by the host.
    pub group: Option<Box<Group>>,
    /// A step that rewrites the output this assertion reads (promptfoo's
    /// assertion `transform`), as [`TestCase::output_transform`].
    pub transform: Option<Arc<Assertion>>,
    /// For an LLM grader: the commands that turn file-typed output into
    /// text before the judge sees it (AgentV §5.7; the suite's list merged
    /// under the grader's own, by type).
    pub preprocessors: Arc<[Preprocessor]>,
    /// For an LLM grader: `prompt: {command, config}`, a script whose output
    /// is the judge prompt (AgentV §4.4).
    pub prompt_script: Option<Arc<PromptScript>>,
    /// The plugin type that grades it, when not `kind` (a dialect's own
    /// meaning of a shared name: promptfoo's `equals` is graded by
    /// `promptfoo-equals`); results still show `kind`.
    pub plugin_type: Option<Arc<str>>,
}

/// An LLM grader's prompt computed by a command (AgentV §4.4): it reads the
/// case as snake_case JSON on stdin, runs in its script's directory, and
/// prints the whole judge prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptScript {
    /// The command; its last argument, the script, resolved to an absolute
    /// path through the search roots.
    pub argv: Vec<String>,
    /// `config`, passed in the payload.
    pub config: Option<Value>,
    /// Where it was written.
    pub loc: Loc,
}

/// A content preprocessor (AgentV §5.7): a command that converts one type
/// of file the target produced into text for an LLM grader. It reads
/// `{"path", "original_path", "media_type"}` on stdin and prints the text.
#[derive(Debug, Clone, PartialEq)]
pub struct Preprocessor {
    /// The media type it converts, normalised (`xlsx` is
    /// `application/vnd.openxmlformats-officedocument.spreadsheetml.sheet`).
    pub media_type: String,
    /// The command; its last argument, a script, resolved to an absolute
    /// path through the search roots.
    pub argv: Vec<String>,
    /// Where it was written.
    pub loc: Loc,
}

/// A preprocessor `type` as AgentV normalises it: trimmed, lower-case, and
/// a file extension replaced by its media type.
pub fn normalize_media_type(value: &str) -> String {
    let v = value.trim().to_ascii_lowercase();
    let mime = match v.as_str() {
        "csv" => "text/csv",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "htm" | "html" => "text/html",
        "json" => "application/json",
        "markdown" | "md" => "text/markdown",
        "pdf" => "application/pdf",
        "sql" => "application/sql",
        "txt" => "text/plain",
        "xhtml" => "application/xhtml+xml",
        "xls" => "application/vnd.ms-excel",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "xml" => "application/xml",
        "yaml" | "yml" => "application/yaml",
        _ => return v,
    };
    mime.to_owned()
}

/// The members of a `composite` (AgentV) or `assert-set` (promptfoo) and
/// how their scores combine.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The members, in order.
    pub members: Vec<Assertion>,
    /// How their scores combine.
    pub aggregate: Aggregate,
}

/// How a group's member scores combine.
#[derive(Debug, Clone, PartialEq)]
pub enum Aggregate {
    /// `composite` with `aggregator: {type: weighted_average, weights}`: the
    /// weighted mean of the member scores (weights by member name, default
    /// 1); passes at 0.8.
    WeightedAverage {
        /// Weights by member name.
        weights: Vec<(String, f64)>,
    },
    /// `composite` with `aggregator: {type: threshold, threshold}`: the
    /// fraction of members whose verdict is pass; passes at `threshold`.
    Threshold(f64),
    /// `composite` with `aggregator: {type: code-grader, path}`: a command
    /// line reads `{"results": {<member>: <result>}}` on stdin and prints
    /// `{score, verdict?, assertions?}`.
    Code {
        /// The command line (run with `sh -c`).
        command: String,
        /// Where it runs (the eval file's directory).
        cwd: PathBuf,
    },
    /// `composite` with `aggregator: {type: llm-grader, prompt}`: the judge
    /// reads the members' results (`{{EVALUATOR_RESULTS_JSON}}`) and
    /// answers `{score, assertions}`.
    Llm {
        /// The prompt template (AgentV's default when absent).
        prompt: Option<String>,
    },
    /// `assert-set`: the weighted mean of the member scores (their own
    /// weights); passes when every member passes, or, with a `threshold`,
    /// when the score reaches it.
    AssertSet {
        /// The score at which the set passes.
        threshold: Option<f64>,
    },
}

impl Assertion {
    /// Calls `f` on this assertion and, for a group, its members, depth
    /// first.
    pub fn walk_mut(&mut self, f: &mut dyn FnMut(&mut Assertion)) {
        f(self);
        if let Some(group) = &mut self.group {
            for m in &mut group.members {
                m.walk_mut(f);
            }
        }
    }

    /// This assertion and, for a group, its members, depth first.
    pub fn walk(&self) -> Vec<&Assertion> {
        let mut out = vec![self];
        if let Some(group) = &self.group {
            for m in &group.members {
                out.extend(m.walk());
            }
        }
        out
    }
}

/// Where the keys of an assertion's config were written: looked up in the
/// file's positions when a diagnostic needs one, not computed for every
/// assertion.
#[derive(Debug, Clone, Default)]
pub struct KeyPositions {
    map: Option<Arc<SourceMap>>,
    at: KeyPath,
}

impl KeyPositions {
    /// The positions of the keys under `at` in `map`.
    pub fn new(map: Arc<SourceMap>, at: KeyPath) -> Self {
        Self { map: Some(map), at }
    }

    /// Where `rel` (`value`, `fields[1].match`), a key of `config`, was
    /// written.
    pub fn find(&self, config: &Map<String, Value>, rel: &str) -> Option<Pos> {
        let first = rel.split(['.', '[']).next().unwrap_or(rel);
        if !config.contains_key(first) {
            return None;
        }
        self.map.as_ref()?.exact(&self.at.join(rel))
    }
}

impl PartialEq for KeyPositions {
    /// Two assertions written at the same place have the same positions.
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}

/// One test case.
#[derive(Debug, Clone, PartialEq)]
pub struct TestCase {
    /// Unique id within the suite.
    pub id: String,
    /// Input messages (suite input first).
    pub input: Vec<Message>,
    /// Expected output messages.
    pub expected: Vec<Message>,
    /// `criteria`.
    pub criteria: Option<String>,
    /// Metadata (suite metadata merged).
    pub metadata: Map<String, Value>,
    /// Assertions: the test's own first, then the suite's.
    pub assertions: Vec<Assertion>,
    /// Per-test pass threshold.
    pub threshold: Option<f64>,
    /// Tags, for `--tag` filters (the suite's tags included).
    pub tags: Vec<String>,
    /// Deadline of the whole case, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// The case is expected to fail.
    pub expected_fail: bool,
    /// `conversation_id`: carried into the result row.
    pub conversation_id: Option<String>,
    /// `execution.targets` of the test: it runs only on these of the
    /// suite's targets.
    pub targets: Option<Vec<String>>,
    /// The test's own workspace (or `{template: <dir>}` for a discovered
    /// case's `workspace/`), to be laid over the suite's (boxed: most
    /// tests have none).
    pub workspace: Option<Box<crate::workspace::Spec>>,
    /// Where the test was written.
    pub loc: Loc,
    /// `depends_on`: ids of tests that must finish first, on the same
    /// target (boxed: most tests have none).
    pub depends_on: Option<Box<Dependencies>>,
    /// `mode: conversation`: the turns (the test's own `assertions` grade
    /// the whole transcript once at the end).
    pub conversation: Option<Box<Conversation>>,
    /// How the test's verdict follows from its assertions.
    pub pass_rule: PassRule,
    /// For a test made from a prompt template (promptfoo, AgentV 5): the
    /// prompt as rendered, and which one it was.
    pub prompt: Option<Box<RenderedPrompt>>,
    /// A step that rewrites the target's output before any assertion reads
    /// it and before it is recorded (promptfoo's `options.transform`): an
    /// assertion-shaped call whose plugin returns the new output in its
    /// details (`output`).
    pub output_transform: Option<Box<Assertion>>,
    /// Assertions graded across the outputs of this test's `compare_group`
    /// once every one of them exists (promptfoo's `select-best`): not part
    /// of the test's own score, they can only fail it.
    pub comparisons: Vec<Assertion>,
    /// The tests whose outputs a comparison sees together (promptfoo: one
    /// test row and vars, over every prompt and provider).
    pub compare_group: Option<String>,
    /// Why the test's input could not be made (promptfoo: a prompt that
    /// does not render with its vars, a var file that cannot be read): the
    /// row is an execution error saying so (`failure_class: input`), its
    /// target and graders never run — as promptfoo errors that row alone.
    pub input_error: Option<String>,
    /// For a target whose request this test changes (promptfoo: a test's
    /// `options` and a prompt's `config`, merged into the provider's
    /// config for its calls): target name → the targets-file entry its
    /// calls for this test use instead of the target's own.
    pub target_params: Option<Arc<Map<String, Value>>>,
}

/// A prompt template of a promptfoo-style suite, rendered for one test.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedPrompt {
    /// The rendered text (a chat prompt: its JSON).
    pub raw: String,
    /// Its label (the template itself for an inline prompt).
    pub label: String,
    /// Its id (a file path for a prompt from a file).
    pub id: Option<String>,
}

/// How a test's verdict follows from its assertions' scores: a dialect's
/// rule, carried in the model so that nothing downstream asks the dialect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PassRule {
    /// AgentV: the weighted mean of the scores reaches the threshold
    /// (0.8 unless set); `required` gates can zero it.
    #[default]
    WeightedMean,
    /// promptfoo without a `threshold`: every assertion passes (one of
    /// weight 0 always counts as passing); no assertion at all passes with
    /// score 1.
    AllPass,
}

/// A conversation test (AgentV §2.10): the target is called once per turn
/// with the history so far, each turn graded on its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// The turns, in order.
    pub turns: Vec<Turn>,
    /// How the turn scores (and the conversation's) combine.
    pub aggregation: TurnAggregation,
    /// `on_turn_failure: stop`: once a turn scores below the threshold, the
    /// rest score 0 without calling the target.
    pub stop_on_failure: bool,
    /// `window_size`: the target sees the system messages and the last N
    /// exchanges.
    pub window_size: Option<usize>,
}

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The user's message.
    pub input: String,
    /// `expected_output`, for graders.
    pub expected: Option<String>,
    /// What grades this turn (string criteria as one `turn-rubrics`).
    pub assertions: Vec<Assertion>,
}

/// `aggregation` of a conversation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TurnAggregation {
    /// The mean (AgentV's default).
    #[default]
    Mean,
    /// The weakest turn.
    Min,
    /// The best turn.
    Max,
}

/// A test's `depends_on` and what to do when one of them fails.
#[derive(Debug, Clone, PartialEq)]
pub struct Dependencies {
    /// The ids, in order.
    pub ids: Vec<String>,
    /// Where `depends_on` was written.
    pub loc: Loc,
    /// `on_dependency_failure`.
    pub on_failure: DependencyPolicy,
}

/// `on_dependency_failure`: what a test does when a dependency ended in an
/// execution error (a low score is not a failure, as in AgentV).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DependencyPolicy {
    /// An execution-error row "Skipped: dependency failed (…)", not run.
    #[default]
    Skip,
    /// The same row, "Failed: dependency failed (…)".
    Fail,
    /// Run anyway.
    Run,
}

impl TestCase {
    /// Every assertion the test grades with: its own, then each turn's of a
    /// conversation (for checks that look at all of them).
    pub fn every_assertion(&self) -> impl Iterator<Item = &Assertion> {
        self.assertions
            .iter()
            .chain(
                self.conversation
                    .iter()
                    .flat_map(|c| c.turns.iter().flat_map(|t| t.assertions.iter())),
            )
            .chain(self.comparisons.iter())
    }

    /// A test with only an id and input messages (for judge calls through a
    /// target).
    pub fn synthetic(id: &str, input: Vec<Message>) -> Self {
        Self {
            id: id.to_owned(),
            input,
            expected: Vec::new(),
            criteria: None,
            metadata: Map::new(),
            assertions: Vec::new(),
            threshold: None,
            tags: Vec::new(),
            timeout_ms: None,
            expected_fail: false,
            conversation_id: None,
            targets: None,
            workspace: None,
            loc: Loc {
                file: Arc::new(PathBuf::new()),
                pos: None,
                key: KeyPath::default(),
            },
            depends_on: None,
            conversation: None,
            pass_rule: PassRule::WeightedMean,
            prompt: None,
            output_transform: None,
            comparisons: Vec::new(),
            compare_group: None,
            input_error: None,
            target_params: None,
        }
    }

    /// The expected output as text: the content of the last expected message.
    pub fn expected_text(&self) -> Option<&str> {
        self.expected.last().map(|m| m.content.as_str())
    }
}

/// A loaded, validated suite.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The eval file.
    pub file: Arc<PathBuf>,
    /// Its directory.
    pub dir: PathBuf,
    /// Suite name (`name`, else from the file name).
    pub name: String,
    /// Tests in order.
    pub tests: Vec<TestCase>,
    /// Default target (`execution.target`, else top-level `target`).
    pub target: Option<String>,
    /// Where that default target was named.
    pub target_loc: Option<Loc>,
    /// Suite pass threshold (`execution.threshold`).
    pub threshold: Option<f64>,
    /// Suite-wide plugin limits (`execution.limits`).
    pub limits: LimitOverrides,
    /// Third-party plugins named in `plugins:`.
    pub plugins: Vec<PluginRef>,
    /// `execution.trials`.
    pub trials: Option<Trials>,
    /// `execution.allow_commands`: the only programs graders may run.
    pub exec_allow: Option<Vec<String>>,
    /// The suite's workspace.
    pub workspace: Option<crate::workspace::Spec>,
    /// `execution.targets`: every test runs against each of these.
    pub matrix: Vec<MatrixTarget>,
    /// `execution.cache`: use the response cache.
    pub cache: bool,
    /// `execution.workers`: tests run at once (the command line overrides).
    pub workers: Option<usize>,
    /// `execution.budget_usd`: no test starts once the targets' reported
    /// cost reaches it.
    pub budget_usd: Option<f64>,
    /// evalhost features the suite uses that AgentV 4.42 reads differently
    /// (`evalhost validate --agentv` lists them), once per place.
    pub extensions: Vec<Extension>,
    /// `execution.cache_path`: where.
    pub cache_path: Option<PathBuf>,
    /// The dialect it was written in.
    pub dialect: crate::dialect::Dialect,
    /// Targets the suite defines itself (promptfoo's `providers`), as
    /// targets-file entries (`name`, `provider`, settings); they come
    /// before a targets file's of the same name.
    pub inline_targets: Vec<InlineTarget>,
    /// promptfoo's `derivedMetrics`, in order: each computed from the named
    /// metrics summed over a prompt's rows (and the ones before it).
    pub derived_metrics: Vec<DerivedMetric>,
    /// The metric names the suite's assertions declare (`metric:`), whose
    /// weighted scores are summed per prompt and target.
    pub named_metrics: Vec<String>,
    /// promptfoo's `outputPath`: where the run writes promptfoo's JSON
    /// results (relative to the working directory, as promptfoo writes
    /// it), unless `--export promptfoo-json` says otherwise.
    pub output_path: Option<PathBuf>,
}

/// A metric computed from others (promptfoo's `derivedMetrics`).
#[derive(Debug, Clone, PartialEq)]
pub struct DerivedMetric {
    /// Its name.
    pub name: String,
    /// The expression as written.
    pub source: String,
    /// The expression.
    pub expr: crate::mathexpr::Expr,
}

/// A target a suite defines itself.
#[derive(Debug, Clone, PartialEq)]
pub struct InlineTarget {
    /// The entry, as a targets file would write it.
    pub entry: Map<String, Value>,
    /// Where it was written.
    pub loc: Loc,
    /// Values written as `{{ env.NAME }}` whose variable is not set:
    /// `(key, NAME)`. The tool reads them only when it calls the target, so
    /// a check without them is a warning, a run an error naming them.
    pub unset_env: Vec<(String, String)>,
}

/// A use of a feature AgentV 4.42 does not have, so that AgentV would score
/// the suite differently: where, and what AgentV does instead.
#[derive(Debug, Clone, PartialEq)]
pub struct Extension {
    /// Where it was written.
    pub loc: Loc,
    /// What it is and what AgentV does with it.
    pub what: String,
}

/// One entry of `execution.targets`.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixTarget {
    /// The name results carry.
    pub name: String,
    /// The targets-file entry it runs (`use_target`), else `name`.
    pub use_target: String,
    /// Hooks of this target, run after the workspace's on setup and before
    /// them on teardown.
    pub hooks: crate::workspace::Hooks,
    /// Where it was written (none for a target named on the command line).
    pub loc: Option<Loc>,
}

/// `execution.trials`: run each test `count` times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trials {
    /// How many times.
    pub count: u32,
    /// How they combine.
    pub strategy: Strategy,
    /// `cost_limit_usd`: no further trial of a test starts once its trials'
    /// reported cost reaches it.
    pub cost_limit_usd: Option<f64>,
}

/// A third-party plugin named by the suite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginRef {
    /// Path to the `.wasm`, resolved against the suite's directory.
    pub path: PathBuf,
    /// Expected sha256, hex, when pinned.
    pub sha256: Option<String>,
    /// A registry reference (`oci://HOST/NAME:TAG`) instead of a path:
    /// resolved through `evalhost.lock` when the suite runs.
    pub oci: Option<String>,
    /// The assertion type this entry maps to the plugin (the map form,
    /// `plugins: {TYPE: ...}`); `None` registers every type the plugin has.
    pub type_name: Option<String>,
    /// Where it was written.
    pub loc: Loc,
}

/// How the trials of a test combine (AgentV §3.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Passes when any trial passes; the score is the best trial's. Stops
    /// after the first passing trial.
    PassAtK,
    /// The mean score, held to the threshold.
    Mean,
    /// The lower bound of the 95% t-interval of the scores, held to the
    /// threshold.
    ConfidenceInterval,
    /// Passes only when every trial passes by the test's own rule; the
    /// score is the mean. The rule of tests whose dialect judges each run on
    /// its own (promptfoo: every repetition is a row of its own, and one
    /// failing row fails the eval). Never read from a suite.
    AllPass,
}
