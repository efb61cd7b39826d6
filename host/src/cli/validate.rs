//! `evalhost validate` and `evalhost schema`: their arguments and handlers.

use super::*;

/// `evalhost validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Eval files to check, directories to search for suite files
    /// (`EVAL.yaml`, `eval.yaml`, `*.eval.yaml`, `promptfooconfig.yaml`), or
    /// quoted globs (`'evals/**/*.yaml'`).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The suite's dialect: agentv4, agentv5 or promptfoo (default: told
    /// from the file's keys, name and `$schema` comment).
    #[arg(long, value_name = "DIALECT", value_parser = parse_dialect, add = clap_complete::ArgValueCandidates::new(dialects))]
    pub dialect: Option<evalhost_suite::dialect::Dialect>,
    /// The targets file a run would be given (default: the one found
    /// walking up from each suite).
    #[arg(long, value_name = "FILE")]
    pub targets: Option<PathBuf>,
    /// The target a run would be given (default: the suite's).
    #[arg(long, value_name = "NAME", add = clap_complete::ArgValueCandidates::new(target_names))]
    pub target: Option<String>,
    /// Also list every evalhost-only feature the suite uses (`not-` types,
    /// `expected_fail`, plugin types, ...), each a reason AgentV 4.42 would
    /// score it differently; any makes the exit code non-zero.
    #[arg(long)]
    pub agentv: bool,
    /// A warning fails the check (exit 2), for CI.
    #[arg(long)]
    pub deny_warnings: bool,
    /// Check the suite as a run with this sandbox policy loads it: `strict`
    /// refuses what a strict run refuses (files outside the project root,
    /// commands the suite defines).
    #[arg(long, value_enum, default_value = "default")]
    pub sandbox: SandboxKind,
}

pub(super) fn validate_command(args: &ValidateArgs, err: &mut dyn Write) -> u8 {
    let engine = match crate::run::engine(false, 2) {
        Ok(e) => e,
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
            return exit_codes::INTERNAL;
        }
    };
    let (files, mut invalid) = match super::suites::expand(&args.paths) {
        Ok(files) => (files, 0),
        // What was found is still checked: every problem in one pass.
        Err(problems) => {
            for p in &problems {
                let _ = writeln!(err, "error: {p}");
            }
            let found = args
                .paths
                .iter()
                .filter_map(|p| super::suites::expand(std::slice::from_ref(p)).ok())
                .flatten()
                .collect();
            (found, problems.len())
        }
    };
    let options = super::suites::CheckOptions {
        engine: &engine,
        dialect: args.dialect,
        targets: args.targets.as_ref(),
        target: args.target.as_deref(),
        agentv: args.agentv,
        print_warnings: true,
        check: crate::run::targets::Check::Validate,
        strict: args.sandbox == SandboxKind::Strict,
        locked: false,
    };
    let (mut tests, mut ok, mut warnings) = (0usize, 0usize, 0usize);
    for path in &files {
        let checked = super::suites::check_suite(path, &options, err);
        warnings += checked.warnings.len();
        if checked.valid {
            let _ = writeln!(
                err,
                "{}: ok ({} tests; {})",
                path.display(),
                checked.tests,
                checked.targets_from
            );
            ok += 1;
            tests += checked.tests;
        } else {
            invalid += 1;
        }
    }
    let several = files.len() > 1 || args.paths.iter().any(|p| !p.is_file());
    if several {
        let _ = writeln!(
            err,
            "\n{ok} of {} eval file(s) valid ({tests} tests){}{}",
            files.len(),
            if invalid > 0 {
                format!("; {invalid} invalid")
            } else {
                String::new()
            },
            if warnings > 0 {
                format!("; {warnings} warning(s)")
            } else {
                String::new()
            }
        );
    }
    if invalid > 0 {
        exit_codes::USAGE
    } else if args.deny_warnings && warnings > 0 {
        let _ = writeln!(
            err,
            "error: {warnings} warning(s) and --deny-warnings\n  hint: each warning above names its file, line and key"
        );
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
        Ok(schema) => printed(writeln!(std::io::stdout().lock(), "{schema}"), err),
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
            exit_codes::INTERNAL
        }
    }
}
