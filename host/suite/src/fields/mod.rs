//! The keys of the suite format, in one table per level. The loader checks
//! keys against these tables (unknown keys are warnings naming the nearest
//! known key), and `evalhost schema` generates the JSON Schema from the same
//! tables, so the two cannot drift apart.

use serde_json::{Map, Value, json};

mod schema;

pub use schema::{TypeSchema, case_schema, suite_schema};

/// How evalhost treats a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Read and used.
    Supported,
    /// Read, with a warning naming the replacement.
    Deprecated(&'static str),
    /// Accepted for AgentV compatibility but not run by this version: a
    /// warning says it is ignored.
    Unsupported(&'static str),
}

/// One key.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// The key.
    pub name: &'static str,
    /// What it means (the schema's `description`).
    pub doc: &'static str,
    /// Its JSON Schema.
    pub schema: fn() -> Value,
    /// How evalhost treats it.
    pub status: Status,
}

const fn field(name: &'static str, doc: &'static str, schema: fn() -> Value) -> Field {
    Field {
        name,
        doc,
        schema,
        status: Status::Supported,
    }
}

const fn deprecated(
    name: &'static str,
    doc: &'static str,
    schema: fn() -> Value,
    instead: &'static str,
) -> Field {
    Field {
        name,
        doc,
        schema,
        status: Status::Deprecated(instead),
    }
}

const fn unsupported(
    name: &'static str,
    doc: &'static str,
    schema: fn() -> Value,
    why: &'static str,
) -> Field {
    Field {
        name,
        doc,
        schema,
        status: Status::Unsupported(why),
    }
}

fn preprocessors_schema() -> Value {
    json!({"type": "array", "items": {"type": "object", "required": ["type", "command"], "additionalProperties": false,
        "properties": {"type": {"type": "string", "minLength": 1}, "command": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}}}})
}

fn any() -> Value {
    json!({})
}
fn string() -> Value {
    json!({"type": "string"})
}
fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}
fn object() -> Value {
    json!({"type": "object"})
}
fn boolean() -> Value {
    json!({"type": "boolean"})
}
fn unit() -> Value {
    json!({"type": "number", "minimum": 0, "maximum": 1})
}
fn positive_int() -> Value {
    json!({"type": "integer", "minimum": 1})
}
fn message_schema() -> Value {
    json!({
        "type": "object",
        "required": ["role"],
        "properties": {
            "role": {"enum": ["system", "user", "assistant", "tool"]},
            "content": {"anyOf": [{"type": "string"}, {"type": "array"}, {"type": "object"}]},
            "name": {"type": "string"},
            "tool_calls": {"type": "array"},
        },
    })
}
fn positive_number() -> Value {
    json!({"type": "number", "exclusiveMinimum": 0})
}
fn conversation_mode() -> Value {
    json!({"enum": ["conversation"]})
}
fn turns_schema() -> Value {
    json!({"type": "array", "minItems": 1, "items": {"type": "object", "required": ["input"], "properties": {
        "input": {"anyOf": [{"type": "string"}, {"type": "array"}, {"type": "object"}]},
        "expected_output": {},
        "assertions": {"type": "array"},
    }, "additionalProperties": false}})
}
fn aggregation_schema() -> Value {
    json!({"enum": ["mean", "min", "max"]})
}
fn turn_failure_schema() -> Value {
    json!({"enum": ["continue", "stop"]})
}
fn dependency_policy() -> Value {
    json!({"enum": ["skip", "fail", "run"]})
}
fn input_schema() -> Value {
    json!({"anyOf": [
        {"type": "string"},
        {"$ref": "#/$defs/message"},
        {"type": "array", "items": {"anyOf": [{"$ref": "#/$defs/message"}, {"type": "string"}, {"type": "object"}]}},
        {"type": "object"},
    ]})
}
fn assertions_schema() -> Value {
    json!({"type": "array", "items": {"$ref": "#/$defs/assertion"}})
}
fn tests_schema() -> Value {
    json!({"anyOf": [
        {"type": "array", "items": {"anyOf": [
            {"$ref": "#/$defs/case"},
            {"type": "string", "pattern": "^file://", "description": "Cases loaded from a file or glob"},
        ]}},
        {"type": "string", "description": "A .yaml/.jsonl file of cases, or a directory of <id>/case.yaml"},
    ]})
}
fn execution_schema() -> Value {
    json!({"$ref": "#/$defs/execution"})
}
fn limits_schema() -> Value {
    json!({"$ref": "#/$defs/limits"})
}
fn trials_schema() -> Value {
    json!({
        "type": "object",
        "required": ["count"],
        "properties": {
            "count": {"type": "integer", "minimum": 1},
            "strategy": {"enum": ["pass_at_k", "mean", "confidence_interval"]},
            "cost_limit_usd": {"type": "number", "exclusiveMinimum": 0},
        },
        "additionalProperties": false,
    })
}
fn plugins_schema() -> Value {
    let entry = json!({"anyOf": [
        {"type": "string", "description": "Path to the .wasm component, or a registry reference oci://HOST/NAME:TAG"},
        {"type": "object", "required": ["path"], "additionalProperties": false, "properties": {
            "path": {"type": "string", "description": "Path to the .wasm component"},
            "sha256": {"type": "string", "pattern": "^[0-9a-fA-F]{64}$"},
        }},
        {"type": "object", "required": ["oci"], "additionalProperties": false, "properties": {
            "oci": {"type": "string", "pattern": "^oci://[^/]+/.+", "description": "A registry reference, pinned in evalhost.lock"},
            "sha256": {"type": "string", "pattern": "^[0-9a-fA-F]{64}$"},
        }},
    ]});
    json!({"anyOf": [
        {"type": "object", "description": "Assertion type → plugin", "additionalProperties": entry},
        {"type": "array", "description": "Plugins, each registering all its types", "items": entry},
    ]})
}

/// Top-level keys of a suite.
pub const SUITE: &[Field] = &[
    field("$schema", "JSON Schema of the file, for editors", string),
    field("name", "Suite name (default: the file name)", string),
    field("description", "What the suite checks", string),
    field("category", "Category shown in results", string),
    field("version", "Suite version (a string)", string),
    field("author", "Author", string),
    field("tags", "Suite tags", strings),
    field("license", "License", string),
    field("requires", "Version requirements", object),
    field(
        "input",
        "Input prepended to every test's input",
        input_schema,
    ),
    field(
        "input_files",
        "Files attached to every test with a string input",
        strings,
    ),
    field(
        "tests",
        "Test cases: a list, a file of cases, or a directory of case directories",
        tests_schema,
    ),
    deprecated("eval_cases", "Old name of `tests`", tests_schema, "tests"),
    deprecated(
        "target",
        "Default target (legacy location)",
        string,
        "execution.target",
    ),
    field("execution", "How the suite runs", execution_schema),
    field(
        "assertions",
        "Assertions appended to every test's own",
        assertions_schema,
    ),
    deprecated(
        "assert",
        "Old name of `assertions`",
        assertions_schema,
        "assertions",
    ),
    deprecated(
        "evaluators",
        "Old name of `assertions`",
        assertions_schema,
        "assertions",
    ),
    unsupported(
        "evaluator",
        "Default grader kind (legacy)",
        string,
        "give assertions explicitly",
    ),
    field(
        "preprocessors",
        "Commands that turn file-typed output into text for LLM graders: [{type, command}]",
        preprocessors_schema,
    ),
    field(
        "workspace",
        "Workspace of every test: {template, repos, hooks, isolation}, or a path to a YAML file holding one",
        any,
    ),
    field("metadata", "Metadata merged into every test's", object),
    field(
        "governance",
        "Governance metadata, copied into every test's metadata.governance",
        object,
    ),
    field(
        "plugins",
        "Third-party grader plugins (.wasm), pinned by sha256",
        plugins_schema,
    ),
];

/// Keys of a test case (inline, in a cases file, or a `case.yaml`).
pub const CASE: &[Field] = &[
    field(
        "id",
        "Unique id (default for a case directory: its name)",
        string,
    ),
    field(
        "input",
        "The prompt: a string, a message, or a list of messages",
        input_schema,
    ),
    field(
        "criteria",
        "What a good answer does, for judges and code graders",
        string,
    ),
    deprecated(
        "expected_outcome",
        "Old name of `criteria`",
        string,
        "criteria",
    ),
    field("expected_output", "The reference answer", any),
    field(
        "assertions",
        "Assertions: the test's own, before the suite's",
        assertions_schema,
    ),
    deprecated(
        "assert",
        "Old name of `assertions`",
        assertions_schema,
        "assertions",
    ),
    deprecated(
        "rubrics",
        "Rubric criteria, prepended as a `rubrics` assertion",
        any,
        "assertions",
    ),
    field("input_files", "Files attached to a string input", strings),
    field(
        "vars",
        "Values for `{{ var }}` placeholders in input, criteria and expected_output",
        object,
    ),
    field("execution", "Per-test execution settings", execution_schema),
    field(
        "workspace",
        "Workspace of this test; its fields replace the suite's, hooks merge one by one",
        any,
    ),
    field(
        "metadata",
        "Free-form metadata, passed to graders and results",
        object,
    ),
    field("conversation_id", "Carried into results", string),
    field("tags", "Tags for --tag filters", strings),
    field(
        "timeout_ms",
        "Deadline of the whole case (target and grading), in milliseconds",
        positive_int,
    ),
    field(
        "expected_fail",
        "The case is expected to fail: failing counts as passing, passing fails the run",
        boolean,
    ),
    unsupported(
        "evaluator",
        "Default grader kind (legacy)",
        string,
        "give assertions explicitly",
    ),
    field(
        "depends_on",
        "Ids of tests of this suite that must finish first (on the same target)",
        strings,
    ),
    field(
        "on_dependency_failure",
        "When a dependency ends in an execution error: skip (default) or fail (an error row without running), or run anyway",
        dependency_policy,
    ),
    field(
        "mode",
        "`conversation`: the target is called once per turn of `turns`",
        conversation_mode,
    ),
    field(
        "turns",
        "Conversation turns: each {input, expected_output?, assertions?}",
        turns_schema,
    ),
    field(
        "aggregation",
        "How turn scores combine: mean (default), min or max",
        aggregation_schema,
    ),
    field(
        "on_turn_failure",
        "continue (default), or stop: later turns score 0 once a turn is below the threshold",
        turn_failure_schema,
    ),
    field(
        "window_size",
        "Conversation window: the target sees the system messages and the last N exchanges",
        positive_int,
    ),
    unsupported(
        "suite",
        "Suite name (ignored by AgentV too)",
        string,
        "it has no effect",
    ),
];

/// Keys of `execution` (suite or test).
pub const EXECUTION: &[Field] = &[
    field("target", "Default target name", string),
    field(
        "targets",
        "Run every test against each target: names, or {name, use_target, hooks}; on a test, the subset it runs on",
        any,
    ),
    field(
        "workers",
        "Tests run at once (-j/--workers overrides it)",
        positive_int,
    ),
    field("threshold", "Pass threshold in [0, 1]", unit),
    field(
        "trials",
        "Run each test several times: {count, strategy: pass_at_k | mean | confidence_interval}",
        trials_schema,
    ),
    field(
        "budget_usd",
        "Suite cost cap in USD: once the targets' reported cost reaches it, no more tests start (budget_exceeded)",
        positive_number,
    ),
    unsupported(
        "fail_on_error",
        "Stop after the first execution error",
        boolean,
        "not applied by this version",
    ),
    field(
        "allow_commands",
        "The only programs code graders may run (the exec capability's allow-list)",
        strings,
    ),
    field("cache", "Use the response cache (as --cache)", boolean),
    field("cache_path", "Directory of the response cache", string),
    field(
        "skip_defaults",
        "(test only) skip the suite's assertions, input and input_files",
        boolean,
    ),
    deprecated(
        "assertions",
        "Suite assertions (legacy location)",
        assertions_schema,
        "top-level assertions",
    ),
    deprecated(
        "assert",
        "Suite assertions (legacy location)",
        assertions_schema,
        "top-level assertions",
    ),
    deprecated(
        "evaluators",
        "Suite assertions (legacy location)",
        assertions_schema,
        "top-level assertions",
    ),
    field(
        "limits",
        "Plugin call limits for every assertion",
        limits_schema,
    ),
];

/// Keys of a test's own `execution`: the few settings one test can change.
/// The suite-wide ones (`trials`, `target`, `cache`, `limits`, …) are
/// refused there with a warning naming the suite's `execution`.
pub const CASE_EXECUTION: &[Field] = &[
    field(
        "targets",
        "The subset of the suite's matrix targets this test runs on",
        any,
    ),
    field("threshold", "Pass threshold in [0, 1]", unit),
    field(
        "skip_defaults",
        "Skip the suite's assertions, input and input_files",
        boolean,
    ),
    deprecated(
        "evaluators",
        "Test assertions (legacy location)",
        assertions_schema,
        "the test's `assertions`",
    ),
];

/// Keys of a workspace's `hooks`.
pub const HOOKS: &[Field] = &[
    field("before_all", "Runs once before the first case", any),
    field("before_each", "Runs before each case", any),
    field("after_each", "Runs after each case", any),
    field("after_all", "Runs once after the last case", any),
    field("enabled", "false turns every hook off", boolean),
];

/// Keys of a `workspace.repos` entry.
pub const REPO: &[Field] = &[
    field("path", "Where in the workspace it is checked out", string),
    field(
        "source",
        "{type: git, url} or {type: local, path}, or a URL or path",
        any,
    ),
    field("repo", "A URL or path (instead of `source`)", string),
    field("checkout", "{ref}: the ref to check out", object),
    field(
        "commit",
        "The commit to check out (instead of checkout.ref)",
        string,
    ),
    field(
        "base_commit",
        "The commit to check out (AgentV 4.42's name; it must equal `commit` when both are given)",
        string,
    ),
    field(
        "ancestor",
        "Check out the N-th ancestor of the commit (AgentV: `<commit>~N`)",
        any,
    ),
    field("clone", "{depth}: a shallow clone", object),
];

/// Keys of an `execution.targets` entry given as a mapping.
pub const MATRIX_TARGET: &[Field] = &[
    field("name", "The target's name in results", string),
    field(
        "use_target",
        "The targets-file entry it runs (default: name)",
        string,
    ),
    field(
        "hooks",
        "before_all, before_each, after_each, after_all",
        object,
    ),
];

/// Keys of an assertion that the host reads; every other key is the plugin's
/// config.
pub const ASSERTION_HOST: &[Field] = &[
    field(
        "type",
        "Assertion type; `not-` prefix negates; `_` and `-` are the same",
        string,
    ),
    field(
        "name",
        "Name in results (default: generated from type and value)",
        string,
    ),
    field(
        "weight",
        "Weight in the test score (default 1)",
        || json!({"type": "number", "minimum": 0}),
    ),
    field(
        "required",
        "A gate: failing it zeroes the test (true, or a deprecated minimum score)",
        || json!({"anyOf": [{"type": "boolean"}, {"type": "number", "exclusiveMinimum": 0, "maximum": 1}]}),
    ),
    field("min_score", "Gate score for `required`", unit),
    field("negate", "Invert the score and every check", boolean),
    field(
        "limits",
        "Plugin call limits for this assertion",
        limits_schema,
    ),
    field(
        "wasm",
        "A .wasm grader plugin for this assertion (relative to this file), run fully sandboxed",
        string,
    ),
    field(
        "preprocessors",
        "LLM graders: commands that turn file-typed output into text (over the suite's, by type)",
        preprocessors_schema,
    ),
    field(
        "wasm_sha256",
        "Expected sha256 of the `wasm` file, hex",
        || json!({"type": "string", "pattern": "^[0-9a-fA-F]{64}$"}),
    ),
];

/// Keys of a message.
pub const MESSAGE: &[Field] = &[
    field("role", "system, user, assistant or tool", string),
    field("content", "A string, content blocks, or an object", any),
    field("name", "Participant or tool name", string),
    field("tool_calls", "Tool calls of an assistant message", any),
];

/// Keys of a `plugins` entry.
pub const PLUGIN: &[Field] = &[
    field("path", "Path to the .wasm component", string),
    field("sha256", "Expected sha256 of the file, hex", string),
    field(
        "oci",
        "A registry reference, oci://HOST/NAME:TAG, pinned in evalhost.lock (instead of `path`)",
        string,
    ),
];

/// Keys of a `workspace`.
pub const WORKSPACE: &[Field] = &[
    field(
        "template",
        "Directory copied into the workspace (relative to the file naming it)",
        string,
    ),
    field(
        "repos",
        "Git repositories: [{path, source: {type: git, url} | {type: local, path}, checkout: {ref}, clone: {depth}}]",
        any,
    ),
    field(
        "hooks",
        "before_all, before_each, after_each, after_all",
        any,
    ),
    field(
        "isolation",
        "per_test (default: each case its own copy) or shared",
        string,
    ),
    field(
        "mode",
        "pooled (the default) or temp: a fresh workspace each run; static: the directory `path`",
        || json!({"enum": ["pooled", "temp", "static"]}),
    ),
    field(
        "path",
        "The directory of a static workspace (implies mode: static): shared by every case, never removed; built from the template and repos when missing or empty",
        string,
    ),
    field(
        "docker",
        "Run the cases in a container ({image, timeout, memory, cpus}): a run needs a working docker or podman and refuses the suite otherwise",
        any,
    ),
    field(
        "env",
        "Preflight checks before anything runs: {required_commands: [...], required_python_modules: [...]}",
        any,
    ),
];

/// Keys of a hook.
pub const HOOK: &[Field] = &[
    field(
        "command",
        "argv list (no shell) or a shell command line",
        any,
    ),
    deprecated("script", "Old name of `command`", any, "command"),
    field(
        "timeout_ms",
        "Deadline (default 60000 before, 30000 after)",
        positive_int,
    ),
    field(
        "timeoutMs",
        "camelCase spelling of `timeout_ms`, accepted as AgentV accepts it",
        positive_int,
    ),
    field(
        "cwd",
        "Working directory (default: the eval file's directory)",
        string,
    ),
    field(
        "reset",
        "none, fast or strict: git reset to the baseline first",
        string,
    ),
];

/// Keys of `limits`.
pub const LIMITS: &[Field] = &[
    field(
        "timeout_ms",
        "Deadline of one grade call, in milliseconds (default 10000)",
        positive_int,
    ),
    field(
        "memory_mb",
        "Memory cap of one grade call, in MiB (default 256)",
        positive_int,
    ),
];

/// The names of `fields`.
pub fn names(fields: &[Field]) -> impl Iterator<Item = &'static str> + Clone + '_ {
    fields.iter().map(|f| f.name)
}

/// The field named `name`.
pub fn get(fields: &[Field], name: &str) -> Option<Field> {
    fields.iter().find(|f| f.name == name).copied()
}
