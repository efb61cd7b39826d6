//! evalhost's integration tests: one binary, a module per feature. Each test
//! runs the real `evalhost` binary on suites it writes to a temporary
//! directory, with the built-in plugins compiled to WebAssembly.

// The README's quickstart runs end to end and writes results.jsonl.
mod quickstart;
// Every built-in grader, through the real wasm path.
mod builtin_graders;
// Bad configs are rejected at load time with file, line, test and assertion.
mod config_errors;
// Hostile plugins fail their assertion with a typed class; the run goes on.
mod sandbox;
// The hostile plugin corpus: one test per attack.
mod hostile;
// The hostile suite corpus: refused at load, nothing read outside the rule.
mod hostile_suites;
// Untrusted input beyond the suite: placeholders, run directories, shards,
// caches, and what reaches a terminal or a CI log.
mod hostile_runs;
// The third red-team pass: TypeScript bundling, the operator's targets
// file, judges, registries, doctor, warm instances, history, templates.
mod hostile_surfaces;
// Code a promptfoo config computes while it is read, in the sandbox.
mod hostile_code;
// 20,000 cases on 8 workers: right counts, no leaked process, bounded memory.
mod soak;
// Inputs the fuzzers found (and seeds), replayed.
mod fuzz_regressions;
// A second run loads compiled plugins from the cache.
mod compile_cache;
// Exit codes and scoring.
mod scoring;
// The committed JSON Schemas are current and agree with the loader.
mod schema;
// Precedence, gates, expected failures, filters, trials, crash safety,
// reporters, sharding and merge.
mod run_control;
// Targets: cli, OpenAI-compatible endpoints on loopback, replay, fallbacks.
mod targets;

mod providers;
// Run history: the index, compare, trend.
mod history;
// The viewer in headless Chromium.
mod viewer;
// Plugins through an OCI registry on loopback.
mod registry;
// The code-grader bridge and the exec capability.
mod code_grader;
// Workspaces, repos, hooks and the SWE-style example.
mod workspaces;
// LLM judges through the llm capability, against a loopback judge.
mod judge;
// Third-party plugins: wasm graders, plugins:, inspect, Rust and Python.
mod plugins;

// Bugs the layout review found, shown by whole runs.
mod review_bugs;
// The fourth red-team pass and review, outside the sandbox: YAML nesting,
// config code re-run per test, the Action's inputs, completions, shards,
// arguments, cache locations.
mod redteam4_misc;

mod support;
// report.html rendered in headless Chromium: reasons, tags, search, diffs.
mod report_page;
// AgentV's example suites on recorded outputs, scored as AgentV scored them.
mod conformance;
// Dialect detection: AgentV 4, AgentV 5 and promptfoo told apart, forced
// with --dialect, recorded in run.json.
mod dialects;
// ARCHITECTURE.md's import rules, checked against the code.
mod architecture;
// No silent wrong result, round two: trials, compare, CSV, caches, index.
mod silent_results;
// Beyond one machine: --shard auto in a real Slurm job array.
mod scaling;
// Everyday use: several suites per run, completions, the terminal.
mod everyday;
// The agent in a sandbox too: --isolate with bubblewrap.
mod isolation;
mod sandbox_value;
// Issue 48: same file, same number, round three.
// Issue 52: promptfoo configs as their users write them.
mod promptfoo_as_written;
mod same_number3;
