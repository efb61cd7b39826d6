//! Which targets a run uses: the targets file (given with `--targets`, else
//! found walking up from the suite), and the names the suite or the command
//! line picks from it, each checked with "did you mean" at the place it was
//! written. `evalhost validate` runs the same checks.

use std::path::{Path, PathBuf};

use crate::diag::{Diagnostic, Diagnostics};
use crate::suite::{self, MatrixTarget, Suite};
use crate::target::{self, Targets};

use super::prepare::suites_own;

/// Reads the targets file: `given`, else the first one found walking up
/// from the suite. Under `--sandbox strict` a found file must really be
/// inside the suite's project, and its `${{ VAR }}` see only the suite's
/// `.env` files, so a target cannot carry the operator's keys to the
/// suite's server.
pub fn load(
    suite: &Suite,
    eval: &Path,
    given: Option<&PathBuf>,
    sandbox_strict: bool,
    check: Check,
) -> Result<Targets, Diagnostics> {
    let file = from_file(suite, eval, given, sandbox_strict)?;
    if suite.inline_targets.is_empty() {
        return Ok(file);
    }
    // Under --sandbox strict a target the suite defines itself may call a
    // model or echo, never run a command.
    if sandbox_strict {
        let refused: Vec<Diagnostic> = suite
            .inline_targets
            .iter()
            .filter(|t| {
                !matches!(
                    t.entry.get("provider").and_then(serde_json::Value::as_str),
                    Some(
                        "echo"
                            | "mock"
                            | "openai"
                            | "azure"
                            | "azure-openai"
                            | "anthropic"
                            | "gemini"
                            | "google"
                            | "google-gemini"
                            | "openrouter"
                            | "vllm"
                            | "ollama"
                    )
                )
            })
            .map(|t| {
                Diagnostic::error(
                    &t.loc.file,
                    format!(
                        "`--sandbox strict` refuses the provider `{}` the suite defines itself: it would run a command on the host",
                        t.entry.get("name").and_then(serde_json::Value::as_str).unwrap_or("")
                    ),
                )
                .at(t.loc.pos)
                .key(t.loc.key.clone())
                .hint("define the target in a targets file you trust, and name it with --targets FILE")
            })
            .collect();
        if !refused.is_empty() {
            return Err(Diagnostics(refused));
        }
    }
    target::with_inline(
        file,
        &suite.inline_targets,
        &suite.dir,
        check == Check::Validate,
    )
}

fn from_file(
    suite: &Suite,
    eval: &Path,
    given: Option<&PathBuf>,
    sandbox_strict: bool,
) -> Result<Targets, Diagnostics> {
    let roots = suite::roots::Roots::for_eval(eval);
    let env = suite::env::Env::load(&roots.eval_dir, &roots.project_root, &roots.cwd);
    match given {
        // The operator's own file, under strict: its `${{ VAR }}` come from
        // the process environment and the operator's `.env` (the current
        // directory's, when it is not inside the suite's project), never
        // from the suite's `.env` files — they would choose the operator's
        // commands and where the operator's keys go.
        Some(path) if sandbox_strict => target::load_targets(
            path,
            &suite::env::Env::operator(&roots.cwd, Some(&roots.project_root)),
        ),
        Some(path) => target::load_targets(path, &env),
        None => match target::find_targets_file(&suite.dir) {
            Some(path) if sandbox_strict && suites_own(&path, &roots) => {
                match roots.contain_own(&path) {
                    Ok(real) => target::load_targets(
                        &real,
                        &suite::env::Env::load_files_only(
                            &roots.eval_dir,
                            &roots.project_root,
                            &roots.cwd,
                        ),
                    )
                    .and_then(|targets| replays_contained(targets, &roots, &real)),
                    Err(err) => Err(Diagnostics(vec![
                        Diagnostic::error(&path, format!("the targets file: {err}"))
                            .hint("name the targets file you trust with --targets FILE"),
                    ])),
                }
            }
            Some(path) => target::load_targets(&path, &env),
            None => Ok(Targets::default()),
        },
    }
}

/// Under `--sandbox strict`, the recordings a suite's own targets file
/// replays must be the project's own files, as every file a suite names
/// is: a `replay` target there read `fixtures` from anywhere (a link, an
/// absolute path, `../..`).
fn replays_contained(
    mut targets: Targets,
    roots: &suite::roots::Roots,
    file: &std::path::Path,
) -> Result<Targets, Diagnostics> {
    let mut errors = Vec::new();
    for t in &mut targets.targets {
        if let crate::target::Provider::Replay(config) = &mut t.provider {
            match roots.contain_own(&config.fixtures) {
                Ok(real) => config.fixtures = real,
                Err(err) => errors.push(
                    Diagnostic::error(
                        file,
                        format!("target `{}`: its recordings {}: {err}", t.name, config.fixtures.display()),
                    )
                    .hint("under --sandbox strict a suite's own targets file replays only files inside its project; name a targets file you trust with --targets FILE"),
                ),
            }
        }
    }
    if errors.is_empty() {
        Ok(targets)
    } else {
        Err(Diagnostics(errors))
    }
}

/// The targets a run of `suite` uses when the command line names none:
/// `execution.targets`, else `execution.target`, else `default`.
pub fn chosen(suite: &Suite, override_name: Option<&str>) -> Vec<MatrixTarget> {
    if let Some(name) = override_name {
        vec![single(name, None)]
    } else if !suite.matrix.is_empty() {
        suite.matrix.clone()
    } else {
        match &suite.target {
            Some(name) => vec![single(name, suite.target_loc.clone())],
            None => vec![single("default", None)],
        }
    }
}

/// A target named once: by the suite's `execution.target`, the command
/// line, or by default.
pub fn single(name: &str, loc: Option<suite::model::Loc>) -> MatrixTarget {
    MatrixTarget {
        name: name.to_owned(),
        use_target: name.to_owned(),
        hooks: Default::default(),
        loc,
    }
}

/// Who checks the names: a run refuses what it cannot run; `validate`
/// warns where a run might still be given what it needs (`--targets`,
/// `--target`, a variable set in CI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// `evalhost run`.
    Run,
    /// `evalhost validate`.
    Validate,
}

/// Checks that every chosen target is in the targets file and runnable, at
/// the place in the suite that names it (the eval file when the name is
/// the default `default`).
pub fn check_names(
    suite: &Suite,
    targets: &Targets,
    chosen: &[MatrixTarget],
    check: Check,
) -> Diagnostics {
    let mut diags = Diagnostics::default();
    let validate = check == Check::Validate;
    if targets.file.is_none() && validate && suite.inline_targets.is_empty() {
        let names: Vec<String> = chosen
            .iter()
            .map(|m| format!("`{}`", m.use_target))
            .collect();
        diags.push(
            Diagnostic::warning(
                &suite.file,
                format!(
                    "no targets file found above the suite; a run needs one defining {}",
                    names.join(", ")
                ),
            )
            .hint("create `.evalhost/targets.yaml` (or `.agentv/targets.yaml`), or check one with `evalhost validate --targets FILE`"),
        );
        return diags;
    }
    for entry in chosen {
        let Err(message) = targets.select(&entry.use_target) else {
            continue;
        };
        // A target the suite defines that waits for a variable: already
        // said (`with_inline`), as a warning under `validate`.
        let waits_for_env = suite.inline_targets.iter().any(|t| {
            !t.unset_env.is_empty()
                && t.entry.get("name").and_then(serde_json::Value::as_str)
                    == Some(entry.use_target.as_str())
        });
        if validate && waits_for_env {
            continue;
        }
        let implicit =
            entry.loc.is_none() && entry.use_target == "default" && suite.target.is_none();
        let unavailable = targets.targets.iter().any(|t| {
            t.name == entry.use_target && matches!(t.provider, target::Provider::Unavailable(_))
        });
        let d = match &entry.loc {
            Some(loc) => Diagnostic::error(&loc.file, message)
                .at(loc.pos)
                .key(loc.key.clone()),
            None => Diagnostic::error(&suite.file, message),
        };
        let d = if implicit {
            d.hint(
                "the suite names no target, so a run uses the one called `default`: \
                 add `execution: {target: NAME}` to the suite, or pass --target NAME",
            )
        } else {
            d
        };
        diags.push(if validate && (implicit || unavailable) {
            crate::diag::Diagnostic {
                severity: crate::diag::Severity::Warning,
                ..d
            }
        } else {
            d
        });
    }
    diags
}
