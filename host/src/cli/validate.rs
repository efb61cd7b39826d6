//! `evalhost validate` and `evalhost schema`: their arguments and handlers.

use super::*;

/// `evalhost validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Eval files to check, or directories to search for `EVAL.yaml`,
    /// `eval.yaml` and `*.eval.yaml`.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The suite's dialect: agentv4, agentv5 or promptfoo (default: told
    /// from the file's keys, name and `$schema` comment).
    #[arg(long, value_name = "DIALECT", value_parser = parse_dialect)]
    pub dialect: Option<evalhost_suite::dialect::Dialect>,
    /// The targets file a run would be given (default: the one found
    /// walking up from each suite).
    #[arg(long, value_name = "FILE")]
    pub targets: Option<PathBuf>,
    /// The target a run would be given (default: the suite's).
    #[arg(long, value_name = "NAME")]
    pub target: Option<String>,
    /// Also list every evalhost-only feature the suite uses (`not-` types,
    /// `expected_fail`, plugin types, ...), each a reason AgentV 4.42 would
    /// score it differently; any makes the exit code non-zero.
    #[arg(long)]
    pub agentv: bool,
}

pub(super) fn validate_command(args: &ValidateArgs, err: &mut dyn Write) -> u8 {
    let engine = match crate::run::engine(false, 2) {
        Ok(e) => e,
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
            return exit_codes::INTERNAL;
        }
    };
    let mut invalid = 0;
    let mut files = Vec::new();
    for path in &args.paths {
        if path.is_dir() {
            let found = crate::suite::discover_eval_files(path);
            if found.is_empty() {
                let _ = writeln!(
                    err,
                    "{}: no eval files (EVAL.yaml, eval.yaml, *.eval.yaml) found",
                    path.display()
                );
                invalid += 1;
            }
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    let (mut tests, mut ok) = (0usize, 0usize);
    for path in &files {
        match crate::run::prepare(path, &engine, false, args.dialect) {
            Ok(prepared) => {
                for d in prepared.warnings.iter() {
                    let _ = writeln!(err, "{d}");
                }
                let suite = &prepared.suite;
                // The targets a run would use: the file, the names, their keys.
                let targets = crate::run::targets::load(
                    suite,
                    path,
                    args.targets.as_ref(),
                    false,
                    crate::run::targets::Check::Validate,
                )
                .and_then(|t| {
                    let chosen = crate::run::targets::chosen(suite, args.target.as_deref());
                    let problems = crate::run::targets::check_names(
                        suite,
                        &t,
                        &chosen,
                        crate::run::targets::Check::Validate,
                    );
                    let mut all = t.warnings.clone();
                    all.0.extend(problems.0);
                    if all.has_errors() {
                        Err(all)
                    } else {
                        Ok((t.file, all))
                    }
                });
                let extensions = if args.agentv {
                    agentv_differences(&prepared)
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
                    invalid += 1;
                }
                match targets {
                    Ok(_) if !extensions.is_empty() => {}
                    Ok((file, warnings)) => {
                        for d in warnings.iter() {
                            let _ = writeln!(err, "{d}");
                        }
                        let from = file.as_ref().map_or_else(
                            || "no targets file found".to_owned(),
                            |f| format!("targets from {}", shown_path(f)),
                        );
                        let _ = writeln!(
                            err,
                            "{}: ok ({} tests; {from})",
                            path.display(),
                            suite.tests.len()
                        );
                        ok += 1;
                        tests += suite.tests.len();
                    }
                    Err(diags) => {
                        invalid += 1;
                        report_run_error(err, &RunError::Invalid(diags));
                    }
                }
                // The last suite is not taken apart: the process ends
                // next, and freeing a large suite value by value costs
                // milliseconds.
                if std::ptr::eq(path, files.last().expect("this is one")) {
                    std::mem::forget(prepared);
                }
            }
            Err(error) => {
                invalid += 1;
                report_run_error(err, &error);
            }
        }
        for warning in engine.take_warnings() {
            let _ = writeln!(err, "warning: {warning}");
        }
    }
    if files.len() > 1 || args.paths.iter().any(|p| p.is_dir()) {
        let _ = writeln!(
            err,
            "\n{ok} of {} eval file(s) valid ({tests} tests){}",
            files.len(),
            if invalid > 0 {
                format!("; {invalid} invalid")
            } else {
                String::new()
            }
        );
    }
    if invalid > 0 {
        exit_codes::USAGE
    } else {
        exit_codes::SUCCESS
    }
}

/// The evalhost-only features a suite uses (`validate --agentv`): what the
/// loader noted, and each assertion type a third-party plugin provides.
pub(super) fn agentv_differences(prepared: &crate::run::Prepared) -> Vec<crate::diag::Diagnostic> {
    let suite = &prepared.suite;
    let mut out: Vec<crate::diag::Diagnostic> = suite
        .extensions
        .iter()
        .map(|e| {
            crate::diag::Diagnostic::warning(&e.loc.file, format!("evalhost-only: {}", e.what))
                .at(e.loc.pos)
                .key(e.loc.key.clone())
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    for assertion in suite
        .tests
        .iter()
        .flat_map(|t| t.every_assertion())
        .flat_map(crate::suite::Assertion::walk)
        .filter(|a| a.wasm.is_none() && a.group.is_none())
    {
        let Some((plugin, _)) = prepared.registry.resolve_for(assertion) else {
            continue;
        };
        if plugin.label.starts_with("builtin:")
            || !seen.insert((assertion.loc.file.clone(), assertion.loc.key.clone()))
        {
            continue;
        }
        out.push(
            crate::diag::Diagnostic::warning(
                &assertion.loc.file,
                format!(
                    "evalhost-only: type `{}` comes from the plugin {}; AgentV 4.42 grades it only if `.agentv/assertions/{}.ts` defines it (else an unknown grader type, scored 0)",
                    assertion.kind, plugin.name, assertion.kind
                ),
            )
            .at(assertion.loc.pos)
            .key(assertion.loc.key.key("type")),
        );
    }
    out
}

/// `evalhost schema`.
#[derive(Debug, clap::Args)]
pub struct SchemaArgs {
    /// Which file's schema.
    #[arg(value_enum, default_value = "suite")]
    pub which: SchemaKind,
}

pub(super) fn schema_command(args: &SchemaArgs, err: &mut dyn Write) -> u8 {
    match crate::schema::generate(args.which) {
        Ok(schema) => {
            let mut out = std::io::stdout().lock();
            match writeln!(out, "{schema}") {
                Ok(()) => exit_codes::SUCCESS,
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => exit_codes::SUCCESS,
                Err(e) => {
                    let _ = writeln!(err, "error: {e}");
                    exit_codes::INTERNAL
                }
            }
        }
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
            exit_codes::INTERNAL
        }
    }
}
