//! A loaded plugin and the calls into it. Every call gets a fresh store and
//! instance (from an `InstancePre`, so instantiation is cheap), a memory cap
//! and an epoch deadline. A trap, a timeout, a memory cap hit or bad output
//! becomes a typed [`PluginFailure`]; nothing a plugin does can stop the run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::component::types::ComponentItem;
use wasmtime::{Store, Trap, UpdateDeadline};

use super::bindings::evalhost::grader::types as wit;
use super::bindings::exports::evalhost::grader::grader::GradeError;
use super::bindings::{API_VERSION, GRADER_INTERFACE, Plugin, PluginPre};
use super::engine::{CompileSource, PluginEngine};
use super::state::{Grants, HostState};
use crate::failure::FailureClass;

/// Limits on one call into a plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// Wall-clock deadline, enforced by epoch interruption.
    pub timeout: Duration,
    /// The most linear memory the plugin may grow to, in bytes.
    pub memory: usize,
}

impl CallLimits {
    /// Default deadline of a call.
    pub const DEFAULT_TIMEOUT: Duration =
        Duration::from_millis(evalhost_suite::LimitOverrides::DEFAULT_TIMEOUT_MS);
    /// Default memory cap of a call (256 MiB).
    pub const DEFAULT_MEMORY: usize =
        (evalhost_suite::LimitOverrides::DEFAULT_MEMORY_MB as usize) << 20;
}

impl Default for CallLimits {
    fn default() -> Self {
        Self {
            timeout: Self::DEFAULT_TIMEOUT,
            memory: Self::DEFAULT_MEMORY,
        }
    }
}

/// Caps on what a plugin may return from one grade.
pub const MAX_CHECKS: usize = 10_000;
/// Cap on the text of all checks, evidence and details of one grade.
pub const MAX_RESULT_TEXT: usize = 4 << 20;

/// Why a call into a plugin failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginFailure {
    /// The failure's class.
    pub class: FailureClass,
    /// What happened, for the user.
    pub message: String,
    /// What the plugin wrote to stdout and stderr (capped).
    pub output: String,
}

/// Why a plugin could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum PluginLoadError {
    /// The bytes are not a component wasmtime can compile.
    #[error("`{label}` is not a valid WebAssembly component: {message}")]
    Compile {
        /// The plugin's label (file or built-in name).
        label: String,
        /// The compiler's message.
        message: String,
    },
    /// The component does not export the grader interface.
    #[error(
        "`{label}` is not an evalhost grader plugin: it exports no `{GRADER_INTERFACE}@{API_VERSION}` \
         (its exports: {exports})"
    )]
    NotAGrader {
        /// The plugin's label.
        label: String,
        /// What it does export.
        exports: String,
    },
    /// The component was built for another version of the WIT package.
    #[error(
        "`{label}` was built for evalhost:grader@{found}, but this evalhost implements \
         evalhost:grader@{API_VERSION}; rebuild the plugin against the plugin-sdk of this evalhost \
         (evalhost:grader@{API_VERSION})"
    )]
    Version {
        /// The plugin's label.
        label: String,
        /// The version the plugin targets.
        found: String,
    },
    /// The component imports something the host does not provide.
    #[error("`{label}` cannot be linked: {message}")]
    Link {
        /// The plugin's label.
        label: String,
        /// wasmtime's message, which names the import.
        message: String,
    },
    /// `describe` failed.
    #[error("`{label}` failed to describe itself: {}", failure.message)]
    Describe {
        /// The plugin's label.
        label: String,
        /// The failure.
        failure: PluginFailure,
    },
}

/// An assertion type as a plugin describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeInfo {
    /// Kebab-case name.
    pub name: String,
    /// One line.
    pub description: String,
    /// JSON Schema of the config.
    pub config_schema: serde_json::Value,
    /// Pass threshold of the verdict.
    pub default_threshold: f64,
    /// Capabilities declared.
    pub capabilities: Vec<String>,
}

/// A compiled, linked plugin, ready to instantiate.
pub struct LoadedPlugin {
    /// Where it came from (`builtin:text`, a file path).
    pub label: String,
    /// Its name, from `describe`.
    pub name: String,
    /// Its version, from `describe`.
    pub version: String,
    /// sha256 of the `.wasm`, hex.
    pub digest: String,
    /// Its assertion types.
    pub types: Vec<TypeInfo>,
    /// Whether it declared itself stateless.
    pub stateless: bool,
    /// How it was compiled, and how long that took.
    pub compiled: (CompileSource, Duration),
    engine: Arc<PluginEngine>,
    pre: PluginPre<HostState>,
    /// Live instances kept between calls, for a stateless plugin.
    idle: std::sync::Mutex<Vec<Warm>>,
}

/// A live instance of a stateless plugin, reused for calls that grant no
/// workspace (the only grant fixed when the instance is made).
struct Warm {
    store: Store<HostState>,
    plugin: Plugin,
}

/// A reused instance is retired when its memory has grown past this, so a
/// one-off large case does not stay resident.
const WARM_MEMORY_MAX: usize = 64 << 20;

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("label", &self.label)
            .field("name", &self.name)
            .field("digest", &self.digest)
            .finish_non_exhaustive()
    }
}

pub use crate::digest::sha256_hex;

impl LoadedPlugin {
    /// Compiles (or loads from cache), checks the API version, links, and
    /// asks the plugin to describe itself.
    pub fn load(
        engine: &Arc<PluginEngine>,
        label: &str,
        wasm: &[u8],
    ) -> Result<Self, PluginLoadError> {
        Self::load_with_digest(engine, label, wasm, &sha256_hex(wasm))
    }

    /// [`LoadedPlugin::load`] for bytes whose sha256 (hex) is known already:
    /// the built-in plugins' is computed at build time, a suite plugin's
    /// when its pin is checked.
    pub fn load_with_digest(
        engine: &Arc<PluginEngine>,
        label: &str,
        wasm: &[u8],
        digest: &str,
    ) -> Result<Self, PluginLoadError> {
        let digest = digest.to_owned();
        let (component, source, took) =
            engine
                .compile(wasm, &digest)
                .map_err(|e| PluginLoadError::Compile {
                    label: label.to_owned(),
                    message: format!("{e:#}"),
                })?;
        check_api_version(engine, &component, label)?;
        let instance_pre =
            engine
                .linker()
                .instantiate_pre(&component)
                .map_err(|e| PluginLoadError::Link {
                    label: label.to_owned(),
                    message: format!("{e:#}"),
                })?;
        let pre = PluginPre::new(instance_pre).map_err(|e| PluginLoadError::Link {
            label: label.to_owned(),
            message: format!("{e:#}"),
        })?;
        let mut plugin = Self {
            label: label.to_owned(),
            name: label.to_owned(),
            version: String::new(),
            digest,
            types: Vec::new(),
            stateless: false,
            compiled: (source, took),
            engine: engine.clone(),
            pre,
            idle: std::sync::Mutex::new(Vec::new()),
        };
        let info = plugin
            .call(CallLimits::default(), Grants::default(), |p, s| {
                p.evalhost_grader_grader().call_describe(s)
            })
            .map_err(|failure| PluginLoadError::Describe {
                label: label.to_owned(),
                failure,
            })?;
        plugin.name = info.name;
        plugin.version = info.version;
        plugin.stateless = info.stateless;
        plugin.types = info
            .types
            .into_iter()
            .map(|t| TypeInfo {
                name: t.name,
                description: t.description,
                config_schema: serde_json::from_str(&t.config_schema)
                    .unwrap_or_else(|_| serde_json::json!({"type": "object"})),
                default_threshold: if t.default_threshold.is_finite() {
                    t.default_threshold.clamp(0.0, 1.0)
                } else {
                    0.8
                },
                capabilities: t
                    .capabilities
                    .into_iter()
                    .map(|c| match c {
                        wit::Capability::Llm => "llm".to_owned(),
                        wit::Capability::Exec => "exec".to_owned(),
                        wit::Capability::WorkspaceRead => "workspace-read".to_owned(),
                    })
                    .collect(),
            })
            .collect();
        Ok(plugin)
    }

    /// The interfaces the component imports.
    pub fn imports(&self) -> Vec<String> {
        self.pre
            .instance_pre()
            .component()
            .component_type()
            .imports(self.engine.engine())
            .map(|(name, _)| name.to_owned())
            .collect()
    }

    /// Asks the plugin whether an assertion's config is valid. The outer
    /// `Err` is a failure of the plugin itself.
    pub fn check_config(
        &self,
        assertion_type: &str,
        config_json: &str,
    ) -> Result<Result<(), String>, PluginFailure> {
        self.call(CallLimits::default(), Grants::default(), |p, s| {
            p.evalhost_grader_grader()
                .call_check_config(s, assertion_type, config_json)
        })
    }

    /// Grades one case for one assertion.
    pub fn grade(
        &self,
        request: &wit::GradeRequest,
        limits: CallLimits,
        grants: Grants,
    ) -> (
        Result<wit::GradeResult, PluginFailure>,
        crate::results::usage::JudgeUsage,
    ) {
        let (result, usage) = self.call_with_usage(limits, grants, |p, s| {
            p.evalhost_grader_grader().call_grade(s, request)
        });
        let graded = match result {
            Ok(Ok(grade)) => validate_grade(grade),
            Ok(Err(GradeError::Failed(message))) => Err(PluginFailure {
                class: FailureClass::PluginError,
                message,
                output: String::new(),
            }),
            Ok(Err(GradeError::BadOutput(message))) => Err(PluginFailure {
                class: FailureClass::PluginBadOutput,
                message,
                output: String::new(),
            }),
            Ok(Err(GradeError::Judge(message))) => Err(PluginFailure {
                class: FailureClass::Judge,
                message,
                output: String::new(),
            }),
            Err(failure) => Err(failure),
        };
        (graded, usage)
    }

    fn call<R>(
        &self,
        limits: CallLimits,
        grants: Grants,
        f: impl FnOnce(&Plugin, &mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R, PluginFailure> {
        self.call_with_usage(limits, grants, f).0
    }

    fn call_with_usage<R>(
        &self,
        limits: CallLimits,
        grants: Grants,
        f: impl FnOnce(&Plugin, &mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> (Result<R, PluginFailure>, crate::results::usage::JudgeUsage) {
        // A stateless plugin keeps warm instances: no instantiation, and its
        // caches (compiled patterns) survive between calls. A workspace
        // grant is part of the WASI context, so such calls get a fresh one.
        let reusable = self.stateless && grants.workspace.is_none();
        let warm = if reusable {
            self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop()
        } else {
            None
        };
        // An instance that already holds more memory than this call's cap
        // allows is not reused.
        let warm = warm.filter(|w| w.store.data().limiter.memory_peak <= limits.memory);
        let (mut store, plugin) = match warm {
            Some(Warm { mut store, plugin }) => {
                store
                    .data_mut()
                    .begin_call(grants, limits.timeout, limits.memory);
                store.set_epoch_deadline(1);
                (store, Ok(plugin))
            }
            None => {
                let mut store = Store::new(
                    self.engine.engine(),
                    HostState::new(&self.name, limits.memory, grants),
                );
                store.limiter(|state| &mut state.limiter);
                // The deadline is checked on every epoch tick: time the
                // plugin spent waiting on host calls (commands it was
                // granted) does not count.
                store.epoch_deadline_callback(|ctx| {
                    let state = ctx.data();
                    if state.call_started.elapsed() < state.timeout + state.host_time {
                        Ok(UpdateDeadline::Continue(1))
                    } else {
                        Ok(UpdateDeadline::Interrupt)
                    }
                });
                store.data_mut().timeout = limits.timeout;
                store.data_mut().call_started = Instant::now();
                store.set_epoch_deadline(1);
                let plugin = self.pre.instantiate(&mut store);
                (store, plugin)
            }
        };
        let outcome = plugin.and_then(|plugin| f(&plugin, &mut store).map(|value| (value, plugin)));
        let usage = store.data().judge_usage;
        let result = match outcome {
            Ok((value, plugin)) => {
                // Only an instance that finished cleanly, within its bounds,
                // goes back to the pool; a trap leaves it unusable.
                let state = store.data();
                if reusable
                    && state.limiter.memory_peak <= WARM_MEMORY_MAX
                    && state.output_used() <= super::state::OUTPUT_CAP / 2
                {
                    let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
                    if idle.len() < self.engine.max_idle() {
                        idle.push(Warm { store, plugin });
                    }
                }
                Ok(value)
            }
            Err(err) => {
                let state = store.data();
                let output = state.output();
                let (class, message) = classify(&err, state, &output, limits);
                Err(PluginFailure {
                    class,
                    message,
                    output,
                })
            }
        };
        (result, usage)
    }
}

fn check_api_version(
    engine: &PluginEngine,
    component: &wasmtime::component::Component,
    label: &str,
) -> Result<(), PluginLoadError> {
    let ty = component.component_type();
    let mut names = Vec::new();
    for (name, item) in ty.exports(engine.engine()) {
        if let Some(version) = name
            .strip_prefix(GRADER_INTERFACE)
            .and_then(|rest| rest.strip_prefix('@'))
            && matches!(item.ty, ComponentItem::ComponentInstance(_))
        {
            return if compatible(version, API_VERSION) {
                Ok(())
            } else {
                Err(PluginLoadError::Version {
                    label: label.to_owned(),
                    found: version.to_owned(),
                })
            };
        }
        names.push(format!("`{name}`"));
    }
    Err(PluginLoadError::NotAGrader {
        label: label.to_owned(),
        exports: if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        },
    })
}

/// Semver compatibility as the component model's linker sees it: same major,
/// and for 0.x the same minor.
fn compatible(found: &str, ours: &str) -> bool {
    let parts = |v: &str| -> Vec<u64> {
        v.split(['.', '-', '+'])
            .take(3)
            .map(|p| p.parse().unwrap_or(u64::MAX))
            .collect()
    };
    let (a, b) = (parts(found), parts(ours));
    match (a.first(), b.first()) {
        (Some(0), Some(0)) => a.get(1) == b.get(1),
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

fn classify(
    err: &wasmtime::Error,
    state: &HostState,
    output: &str,
    limits: CallLimits,
) -> (FailureClass, String) {
    if let Some(desired) = state.limiter.memory_hit {
        return (
            FailureClass::PluginMemory,
            format!(
                "plugin exceeded its memory cap of {} MiB (asked for {} MiB)",
                limits.memory >> 20,
                desired >> 20
            ),
        );
    }
    if let Some(trap) = err.downcast_ref::<Trap>() {
        return match trap {
            Trap::Interrupt => (
                FailureClass::PluginTimeout,
                format!(
                    "plugin exceeded its deadline of {} ms",
                    limits.timeout.as_millis()
                ),
            ),
            Trap::StackOverflow => (
                FailureClass::PluginTrap,
                "plugin overflowed its stack".into(),
            ),
            // A Rust or C guest keeps its stack in linear memory: deep
            // recursion runs it off the bottom of memory.
            Trap::MemoryOutOfBounds => (
                FailureClass::PluginTrap,
                "plugin trapped: out-of-bounds memory access (usually its stack overflowing: deep recursion)".into(),
            ),
            Trap::UnreachableCodeReached if output.contains("memory allocation of") => (
                FailureClass::PluginMemory,
                "plugin ran out of memory (an allocation failed)".into(),
            ),
            Trap::UnreachableCodeReached if output.contains("panicked") => (
                FailureClass::PluginTrap,
                format!("plugin panicked: {}", panic_line(output)),
            ),
            other => (FailureClass::PluginTrap, format!("plugin trapped: {other}")),
        };
    }
    if let Some(exit) = err.downcast_ref::<wasmtime_wasi::I32Exit>() {
        return (
            FailureClass::PluginTrap,
            format!("plugin called exit({})", exit.0),
        );
    }
    (FailureClass::PluginTrap, format!("plugin failed: {err:#}"))
}

fn panic_line(output: &str) -> String {
    output
        .lines()
        .skip_while(|l| !l.contains("panicked"))
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

fn validate_grade(grade: wit::GradeResult) -> Result<wit::GradeResult, PluginFailure> {
    let bad = |message: String| PluginFailure {
        class: FailureClass::PluginBadOutput,
        message,
        output: String::new(),
    };
    if !grade.score.is_finite() || !(0.0..=1.0).contains(&grade.score) {
        return Err(bad(format!(
            "plugin returned score {}, outside [0, 1]",
            grade.score
        )));
    }
    if grade.checks.len() > MAX_CHECKS {
        return Err(bad(format!(
            "plugin returned {} checks, more than the cap of {MAX_CHECKS}",
            grade.checks.len()
        )));
    }
    let text: usize = grade
        .checks
        .iter()
        .map(|c| c.text.len() + c.evidence.as_ref().map_or(0, String::len))
        .sum::<usize>()
        + grade.details_json.as_ref().map_or(0, String::len);
    if text > MAX_RESULT_TEXT {
        return Err(bad(format!(
            "plugin returned {} KiB of text, more than the cap of {} KiB",
            text >> 10,
            MAX_RESULT_TEXT >> 10
        )));
    }
    if let Some(details) = &grade.details_json
        && !matches!(
            serde_json::from_str::<serde_json::Value>(details),
            Ok(serde_json::Value::Object(_))
        )
    {
        return Err(bad(
            "plugin returned details that are not a JSON object".into()
        ));
    }
    Ok(grade)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semver_compatibility_follows_the_component_model() {
        assert!(compatible("0.1.0", "0.1.0"));
        assert!(compatible("0.1.3", "0.1.0"));
        assert!(!compatible("0.2.0", "0.1.0"));
        assert!(!compatible("0.1.0", "0.2.0"));
        assert!(!compatible("1.0.0", "0.1.0"));
        assert!(compatible("1.4.0", "1.0.0"));
    }

    #[test]
    fn grades_out_of_range_are_refused() {
        let grade = |score: f64| wit::GradeResult {
            score,
            checks: Vec::new(),
            details_json: None,
        };
        for score in [f64::NAN, f64::INFINITY, -1.0, 7.0] {
            let failure = validate_grade(grade(score)).unwrap_err();
            assert_eq!(failure.class, FailureClass::PluginBadOutput, "{score}");
        }
        assert!(validate_grade(grade(0.0)).is_ok());
        assert!(validate_grade(grade(1.0)).is_ok());
    }
}
