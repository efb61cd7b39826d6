//! Several suites in one invocation: `evalhost run evals/`, `run a.yaml
//! b.yaml`, `run 'evals/**/*.eval.yaml'` (and `validate` the same). The
//! paths are expanded to suite files ([`expand`]); every suite is checked
//! before any runs, so a typo in the third never costs the first two's
//! model calls; each then runs into its own run directory, and the command
//! ends with a combined summary and one exit code
//! ([`exit_codes::combine`]).

use std::path::Path;
use std::sync::{Arc, Mutex};

use super::*;

/// Globs' special characters: a path holding one that does not exist is
/// read as a glob (a quoted glob the shell did not expand).
const GLOB_CHARS: [char; 4] = ['*', '?', '[', '{'];

/// The suite files `paths` name, in order, each once: a file as given, a
/// directory's suite files ([`crate::suite::discover_eval_files`]), a glob's
/// matches. Every path that names none is an error, all of them reported.
pub(super) fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Vec<String>> {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    for path in paths {
        let text = path.to_string_lossy();
        if path.is_dir() {
            let found = crate::suite::discover_eval_files(path);
            if found.is_empty() {
                problems.push(format!(
                    "{}: no suite files here ({})\n  hint: name a file, or give it a suite's name",
                    path.display(),
                    crate::suite::EVAL_FILE_NAMES
                ));
            }
            files.extend(found);
        } else if !path.exists() && text.contains(GLOB_CHARS) {
            match glob(&text) {
                Ok(found) if found.is_empty() => problems.push(format!(
                    "`{text}`: no file matches this glob\n  hint: `**` matches across directories, `*` within one"
                )),
                Ok(found) => files.extend(found),
                Err(e) => problems.push(e),
            }
        } else if !path.exists() && path.extension().is_none() {
            // (A missing `x.yaml` is said by the loader, with its name.)
            problems.push(format!(
                "`{text}`: no such file or directory\n  hint: name a suite file (EVAL.yaml, *.eval.yaml, promptfooconfig.yaml), a directory of them or a quoted glob"
            ));
        } else {
            files.push(path.clone());
        }
    }
    // Each file once (named twice, or found by a directory and a glob).
    let mut seen = std::collections::HashSet::new();
    files.retain(|f| seen.insert(f.canonicalize().unwrap_or_else(|_| f.clone())));
    if problems.is_empty() {
        Ok(files)
    } else {
        Err(problems)
    }
}

/// The files matching `pattern` (`*` within a directory, `**` across),
/// walked from its longest directory without a glob character; hidden
/// directories, `node_modules` and `target` are not entered unless the
/// pattern names them.
fn glob(pattern: &str) -> Result<Vec<PathBuf>, String> {
    let matcher = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("`{pattern}` is not a glob: {e}"))?
        .compile_matcher();
    let mut base = PathBuf::new();
    for part in Path::new(pattern).components() {
        if part.as_os_str().to_string_lossy().contains(GLOB_CHARS) {
            break;
        }
        base.push(part);
    }
    let walk_from = if base.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        base.clone()
    };
    let mut found: Vec<PathBuf> = walkdir::WalkDir::new(&walk_from)
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            e.depth() == 0
                || !(name.starts_with('.') || name == "node_modules" || name == "target")
                || pattern.contains(name.as_ref())
        })
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let p = e.into_path();
            if base.as_os_str().is_empty() {
                p.strip_prefix(".").map(Path::to_path_buf).unwrap_or(p)
            } else {
                p
            }
        })
        .filter(|p| matcher.is_match(p))
        .collect();
    found.sort();
    Ok(found)
}

/// What checking one suite found: whether it can run, its tests, and its
/// warnings as printed (each a diagnostic's text).
pub(super) struct Checked {
    /// No error: it can run.
    pub valid: bool,
    /// Its tests.
    pub tests: usize,
    /// Its warnings.
    pub warnings: Vec<String>,
    /// Where its targets come from, as said.
    pub targets_from: String,
    /// The suite's name (`name:`, else from its file name).
    pub name: String,
}

/// How to check a suite: what `validate` and a run of several suites share.
pub(super) struct CheckOptions<'a> {
    pub engine: &'a Arc<crate::plugin::PluginEngine>,
    pub dialect: Option<evalhost_suite::dialect::Dialect>,
    pub targets: Option<&'a PathBuf>,
    pub target: Option<&'a str>,
    /// `validate --agentv`: evalhost-only features make it invalid.
    pub agentv: bool,
    /// Print warnings as they are found (else only collect them).
    pub print_warnings: bool,
    /// What a run would refuse is an error (`Run`), or only what nothing
    /// could run (`Validate`: a missing targets file is a warning).
    pub check: crate::run::targets::Check,
    /// `--sandbox strict`: the suite loaded as a strict run loads it.
    pub strict: bool,
    /// `--locked`: registry plugins only as the lock pins them.
    pub locked: bool,
}

/// Checks one suite as a run would load it: the suite, its plugins and
/// configs, its targets file and target names. Errors are printed to `err`
/// (file, line, key, hint); warnings collected, and printed when asked.
pub(super) fn check_suite(path: &Path, options: &CheckOptions, err: &mut dyn Write) -> Checked {
    let mut checked = Checked {
        valid: false,
        tests: 0,
        warnings: Vec::new(),
        targets_from: String::new(),
        name: String::new(),
    };
    let warn = |checked: &mut Checked, err: &mut dyn Write, text: String| {
        if options.print_warnings {
            let _ = writeln!(err, "{text}");
        }
        checked.warnings.push(text);
    };
    match crate::run::prepare_with(
        path,
        options.engine,
        options.strict,
        options.dialect,
        options.locked,
    ) {
        Ok(prepared) => {
            for d in prepared.warnings.iter() {
                warn(&mut checked, err, d.to_string());
            }
            let suite = &prepared.suite;
            checked.name = suite.name.clone();
            // The targets a run would use: the file, the names, their keys.
            let targets = crate::run::targets::load(
                suite,
                path,
                options.targets,
                options.strict,
                options.check,
            )
            .and_then(|t| {
                let chosen = crate::run::targets::chosen(suite, options.target);
                let problems = crate::run::targets::check_names(suite, &t, &chosen, options.check);
                let mut all = t.warnings.clone();
                all.0.extend(problems.0);
                if all.has_errors() {
                    Err(all)
                } else {
                    Ok((t.file, all))
                }
            });
            let extensions = if options.agentv {
                validate::agentv_differences(&prepared)
            } else {
                Vec::new()
            };
            for d in &extensions {
                let _ = writeln!(err, "{d}");
            }
            if !extensions.is_empty() {
                let _ = writeln!(
                    err,
                    "{}: {} evalhost-only feature(s): AgentV 4.42 would score this suite differently",
                    path.display(),
                    extensions.len()
                );
            }
            match targets {
                Ok(_) if !extensions.is_empty() => {}
                Ok((file, warnings)) => {
                    for d in warnings.iter() {
                        warn(&mut checked, err, d.to_string());
                    }
                    checked.targets_from = file.as_ref().map_or_else(
                        || "no targets file found".to_owned(),
                        |f| format!("targets from {}", shown_path(f)),
                    );
                    checked.valid = true;
                    checked.tests = suite.tests.len();
                }
                Err(diags) => {
                    report_run_error(err, &RunError::Invalid(diags));
                }
            }
            // A large suite is not taken apart value by value: the process
            // holds few suites and ends soon.
            std::mem::forget(prepared);
        }
        Err(error) => {
            report_run_error(err, &error);
        }
    }
    for warning in options.engine.take_warnings() {
        warn(&mut checked, err, format!("warning: {warning}"));
    }
    checked
}

/// One suite's part of a run of several.
#[derive(Debug, serde::Serialize)]
struct SuiteRun {
    /// The suite file, as found.
    eval: String,
    /// Its run directory (none when it could not start).
    run_dir: Option<String>,
    /// Its exit code alone.
    exit_code: u8,
    /// Its counts (none when it could not start).
    tally: Option<crate::outcome::Tally>,
}

/// `evalhost run` with several suites: all checked, then each run in turn
/// into its own run directory (`-o DIR`: `DIR/<suite>`), then the combined
/// summary (`DIR/suites.json` with `-o`), a combined JUnit file, one exit
/// code. Not `several`: one file named with `--deny-warnings`, checked
/// first and then run as a single suite is.
pub(super) fn run_many(
    args: &RunArgs,
    files: &[PathBuf],
    several: bool,
    shard: Option<crate::plan::Shard>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    if args.resume.is_some() || args.rerun_failed.is_some() {
        return report_run_error(
            err,
            &RunError::Usage(
                "--resume and --rerun-failed continue one run: name one suite, or none".into(),
            ),
        );
    }
    // Every suite checked first: nothing runs unless all can.
    let engine = match crate::run::engine(args.no_compile_cache, 2) {
        Ok(e) => e,
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
            return exit_codes::INTERNAL;
        }
    };
    let options = CheckOptions {
        engine: &engine,
        dialect: args.dialect,
        targets: args.targets.as_ref(),
        target: args.target.as_deref(),
        agentv: false,
        print_warnings: false,
        check: crate::run::targets::Check::Run,
        strict: args.sandbox == SandboxKind::Strict,
        locked: args.locked,
    };
    let mut invalid = 0;
    let mut warnings = 0;
    let mut suite_names: Vec<String> = Vec::new();
    for file in files {
        let checked = check_suite(file, &options, err);
        if !checked.valid {
            invalid += 1;
        } else if args.deny_warnings && !checked.warnings.is_empty() {
            for w in &checked.warnings {
                let _ = writeln!(err, "{w}");
            }
            warnings += checked.warnings.len();
        }
        suite_names.push(checked.name);
    }
    drop(engine);
    // Two suites of one name share a history: `trend` and `compare` by
    // suite name would mix them. Said before anything runs.
    let mut by_name: std::collections::BTreeMap<&str, Vec<&PathBuf>> = Default::default();
    for (file, name) in files
        .iter()
        .zip(&suite_names)
        .filter(|(_, n)| !n.is_empty())
    {
        by_name.entry(name).or_default().push(file);
    }
    for (name, same) in by_name.iter().filter(|(_, f)| f.len() > 1) {
        let _ = writeln!(
            err,
            "warning: {} are all suite `{name}`: their runs share one history (`trend` and `compare` by suite name mix them)\n  hint: give each its own `name:`",
            same.iter()
                .map(|f| shown_path(f))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if args.deny_warnings {
            warnings += 1;
        }
    }
    if invalid > 0 || warnings > 0 {
        let why = if invalid > 0 {
            format!("{invalid} of {} suites have errors", files.len())
        } else {
            format!("{warnings} warning(s) and --deny-warnings")
        };
        let _ = writeln!(err, "\nerror: {why}; no suite was run");
        return exit_codes::USAGE;
    }

    if !several {
        return run_single(args, files.first().cloned(), shard, out, err);
    }
    let names = dir_names(files);
    let junit = args
        .junit
        .as_ref()
        .map(|_| Arc::new(Mutex::new(Vec::new())));
    let mut runs = Vec::new();
    let started = std::time::Instant::now();
    for (i, (file, name)) in files.iter().zip(&names).enumerate() {
        let _ = writeln!(
            err,
            "\n── suite {} of {}: {} ──",
            i + 1,
            files.len(),
            shown_path(file)
        );
        let mut reporters = match exports(reporters(&None, &args.reporter), &args.export) {
            Ok(r) => r,
            Err(message) => return report_run_error(err, &RunError::Usage(message)),
        };
        reporters.junit_suites = junit.clone();
        // One export file per suite: `out.json` → `out-<suite>.json`.
        reporters.promptfoo_json = reporters.promptfoo_json.map(|p| with_suffix(&p, name));
        let mut options = run_options(args, Some(file.clone()), shard, reporters);
        options.output = args.output.as_ref().map(|dir| dir.join(name));
        let before = junit
            .as_ref()
            .map_or(0, |j| j.lock().map_or(0, |v| v.len()));
        let (code, report) = run_one(&options, out, err);
        // A name two suites share: their JUnit suites told apart by the
        // run directory's name.
        if let Some(j) = &junit
            && by_name
                .get(suite_names[i].as_str())
                .is_some_and(|f| f.len() > 1)
            && let Ok(mut added) = j.lock()
        {
            for suite in added.iter_mut().skip(before) {
                suite.name = format!("{} ({name})", suite.name.as_str()).into();
            }
        }
        let interrupted = report.as_ref().is_some_and(|r| r.interrupted);
        runs.push(SuiteRun {
            eval: shown_path(file),
            run_dir: report.as_ref().map(|r| shown_path(&r.run_dir)),
            exit_code: code,
            tally: report.map(|r| r.tally),
        });
        if interrupted {
            let rest: Vec<String> = files[i + 1..].iter().map(|f| shown_path(f)).collect();
            let resume = runs
                .last()
                .and_then(|r| r.run_dir.clone())
                .map(|d| format!("`evalhost run --resume {d}` finishes this suite"))
                .unwrap_or_default();
            let _ = writeln!(
                err,
                "interrupted: {resume}{}",
                if rest.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; not started: {} (`evalhost run {}` runs them)",
                        rest.join(", "),
                        rest.join(" ")
                    )
                }
            );
            break;
        }
    }
    let codes: Vec<u8> = runs.iter().map(|r| r.exit_code).collect();
    let code = exit_codes::combine(&codes);
    print_combined(out, &runs, files.len());
    // The combined summary, then the combined JUnit file: a failure to
    // write one is said and does not stop the other.
    let mut code = code;
    if let Some(dir) = &args.output {
        let doc = serde_json::json!({
            "suites": runs,
            "exit_code": code,
        });
        let path = dir.join("suites.json");
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n";
        if let Err(e) = std::fs::create_dir_all(dir)
            .and_then(|()| crate::safe_fs::write_atomic(&path, text.as_bytes()))
        {
            let _ = writeln!(err, "error: cannot write {}: {e}", path.display());
            code = exit_codes::INTERNAL;
        }
    }
    if let (Some(path), Some(suites)) = (&args.junit, &junit) {
        let suites = std::mem::take(&mut *suites.lock().unwrap_or_else(|e| e.into_inner()));
        let written =
            crate::report::junit::render_suites(suites, started.elapsed()).and_then(|xml| {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent)?;
                }
                Ok(crate::safe_fs::write_atomic(path, xml.as_bytes())?)
            });
        if let Err(e) = written {
            let _ = writeln!(err, "error: cannot write {}: {e:#}", path.display());
            code = exit_codes::INTERNAL;
        }
    }
    code
}

/// The combined summary: one line per suite, then the totals.
fn print_combined(out: &mut dyn Write, runs: &[SuiteRun], planned: usize) {
    let width = runs
        .iter()
        .map(|r| r.eval.chars().count())
        .max()
        .unwrap_or(0);
    let _ = writeln!(out, "\nSuites");
    let (mut tests, mut passed) = (0, 0);
    for r in runs {
        let label = match r.exit_code {
            exit_codes::SUCCESS => "PASS ",
            exit_codes::TEST_FAILED => "FAIL ",
            exit_codes::INTERRUPTED => "STOP ",
            _ => "ERROR",
        };
        let counts = match &r.tally {
            Some(t) => {
                tests += t.total + t.not_run;
                passed += t.passed + t.expected_failed;
                format!(
                    "{:>9} passed",
                    format!("{}/{}", t.passed + t.expected_failed, t.total + t.not_run)
                )
            }
            None => format!("could not run (exit {})", r.exit_code),
        };
        let _ = writeln!(
            out,
            "  {label}  {:<width$}  {counts}  {}",
            r.eval,
            r.run_dir.as_deref().unwrap_or("")
        );
    }
    let good = runs
        .iter()
        .filter(|r| r.exit_code == exit_codes::SUCCESS)
        .count();
    let not_started = planned - runs.len();
    let _ = writeln!(
        out,
        "{good} of {planned} suites passed; {passed} of {tests} tests passed{}",
        if not_started > 0 {
            format!("; {not_started} suite(s) not started")
        } else {
            String::new()
        }
    );
}

/// Each suite's run directory name under `-o DIR`: its path from the
/// suites' common directory, without the extension and without a file name
/// that only says "eval" (`evals/qa/EVAL.yaml` → `qa`), `/` as `-`; a name
/// taken twice gets `-2`.
fn dir_names(files: &[PathBuf]) -> Vec<String> {
    let absolute: Vec<PathBuf> = files
        .iter()
        .map(|f| std::path::absolute(f).unwrap_or_else(|_| f.clone()))
        .collect();
    let mut common = absolute
        .first()
        .and_then(|f| f.parent())
        .map(Path::to_path_buf)
        .unwrap_or_default();
    while !absolute.iter().all(|f| f.starts_with(&common)) {
        if !common.pop() {
            break;
        }
    }
    let mut taken = std::collections::HashSet::new();
    absolute
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(&common).unwrap_or(f);
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if let Some(last) = parts.pop() {
                let stem = last
                    .trim_end_matches(".yaml")
                    .trim_end_matches(".yml")
                    .trim_end_matches(".jsonl")
                    .trim_end_matches(".json");
                let stem = stem
                    .strip_suffix(".eval")
                    .or_else(|| stem.strip_suffix(".EVAL"))
                    .unwrap_or(stem);
                // `qa/EVAL.yaml` and `qa/qa.eval.yaml` are both `qa`.
                let says_nothing = stem.eq_ignore_ascii_case("eval")
                    || stem == "promptfooconfig"
                    || parts.last().is_some_and(|dir| dir == stem);
                if !says_nothing {
                    parts.push(stem.to_owned());
                } else if parts.is_empty() {
                    // The only suite, or the only one in the common
                    // directory: named after its directory.
                    parts.push(
                        f.parent()
                            .and_then(Path::file_name)
                            .map_or_else(|| stem.to_owned(), |n| n.to_string_lossy().into_owned()),
                    );
                }
            }
            let name: String = parts
                .join("-")
                .chars()
                .map(|c| {
                    if c.is_alphanumeric() || "-_.".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            // Never empty, `.` or `..`: the name is a directory under `-o DIR`.
            let name = if name.chars().all(|c| c == '.') {
                "suite".into()
            } else {
                name
            };
            let mut unique = name.clone();
            let mut n = 1;
            while !taken.insert(unique.clone()) {
                n += 1;
                unique = format!("{name}-{n}");
            }
            unique
        })
        .collect()
}

/// `out.json` with `name` → `out-name.json`.
fn with_suffix(path: &Path, name: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = match path.extension() {
        Some(ext) => format!("{stem}-{name}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{name}"),
    };
    path.with_file_name(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_directories_are_named_after_the_suites() {
        let files: Vec<PathBuf> = [
            "/p/evals/qa/EVAL.yaml",
            "/p/evals/tools.eval.yaml",
            "/p/evals/b/c/dataset.eval.yml",
            "/p/evals/qa/EVAL.yml",
            "/p/evals/promptfooconfig.yaml",
            "/p/evals/tools/tools.eval.yaml",
            "/p/evals/pf/promptfooconfig.yml",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(
            dir_names(&files),
            [
                "qa",
                "tools",
                "b-c-dataset",
                "qa-2",
                "evals",
                "tools-2",
                "pf"
            ]
        );
        assert_eq!(dir_names(&[PathBuf::from("/p/qa/EVAL.yaml")]), ["qa"]);
        assert_eq!(
            dir_names(&[
                PathBuf::from("/p/..eval.yaml"),
                PathBuf::from("/p/q/..eval.yaml")
            ]),
            ["suite", "q-."]
        );
        assert_eq!(
            with_suffix(Path::new("out/pf.json"), "qa"),
            Path::new("out/pf-qa.json")
        );
    }

    #[test]
    fn globs_walk_from_their_literal_directory() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "evals/a.eval.yaml",
            "evals/x/b.eval.yaml",
            "evals/x/targets.yaml",
            "evals/node_modules/c.eval.yaml",
        ] {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "tests: []\n").unwrap();
        }
        let base = dir.path().display().to_string();
        let deep = glob(&format!("{base}/evals/**/*.eval.yaml")).unwrap();
        assert_eq!(
            deep,
            [
                dir.path().join("evals/a.eval.yaml"),
                dir.path().join("evals/x/b.eval.yaml")
            ]
        );
        let shallow = glob(&format!("{base}/evals/*.eval.yaml")).unwrap();
        assert_eq!(shallow, [dir.path().join("evals/a.eval.yaml")]);
        assert!(glob(&format!("{base}/evals/[")).is_err());
        std::fs::create_dir_all(dir.path().join("evals/empty")).unwrap();
        let problems = expand(&[
            dir.path().join("evals/*.none"),
            dir.path().join("evals/empty"),
        ])
        .unwrap_err();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("no file matches"), "{problems:?}");
        assert!(problems[1].contains("no suite files here"), "{problems:?}");
        // Named twice, run once.
        let twice = expand(&[
            dir.path().join("evals/a.eval.yaml"),
            dir.path().join("evals"),
        ])
        .unwrap();
        assert_eq!(twice.len(), 2, "{twice:?}");
    }
}
