//! `evalhost doctor`: its arguments and handler.

use super::*;

/// `evalhost doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// The eval file whose targets to check.
    pub eval: PathBuf,
    /// The targets file a run would be given (default: the one found
    /// walking up from the suite).
    #[arg(long, value_name = "FILE")]
    pub targets: Option<PathBuf>,
    /// The target a run would be given (default: the suite's).
    #[arg(long, value_name = "NAME", add = clap_complete::ArgValueCandidates::new(target_names))]
    pub target: Option<String>,
    /// The suite's dialect: agentv4, agentv5 or promptfoo.
    #[arg(long, value_name = "DIALECT", value_parser = parse_dialect, add = clap_complete::ArgValueCandidates::new(dialects))]
    pub dialect: Option<evalhost_suite::dialect::Dialect>,
    /// Trust the targets the suite brings (a targets file found beside it,
    /// targets it defines itself): run their programs' `--version` and
    /// `--help`, and send keys to the URLs they name. Without it (and
    /// without `--targets`), doctor only looks programs up and checks that
    /// keys are set.
    #[arg(long)]
    pub trust: bool,
}

pub(super) fn doctor_command(args: &DoctorArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let engine = match crate::run::engine(false, 2) {
        Ok(e) => e,
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
            return exit_codes::INTERNAL;
        }
    };
    let prepared = match crate::run::prepare(&args.eval, &engine, false, args.dialect) {
        Ok(p) => p,
        Err(error) => return report_run_error(err, &error),
    };
    let suite = &prepared.suite;
    // A targets file found beside the suite (and targets the suite
    // defines) may be a stranger's: nothing of it is run or contacted
    // unless the operator named the file or said `--trust`. (Reading it
    // with the environment is harmless then: doctor only says whether a
    // variable is set, never its value, and sends nothing.)
    let file_trusted = args.trust || args.targets.is_some();
    let inline: Vec<String> = suite
        .inline_targets
        .iter()
        .filter_map(|t| t.entry.get("name").and_then(serde_json::Value::as_str))
        .map(str::to_owned)
        .collect();
    let trusted = |name: &str| args.trust || (file_trusted && !inline.iter().any(|n| n == name));
    let targets = match crate::run::targets::load(
        suite,
        &args.eval,
        args.targets.as_ref(),
        false,
        crate::run::targets::Check::Run,
    ) {
        Ok(t) => t,
        Err(diags) => {
            for d in diags.iter() {
                let _ = writeln!(err, "{d}");
            }
            return exit_codes::USAGE;
        }
    };
    let names: Vec<String> = crate::run::targets::chosen(suite, args.target.as_deref())
        .into_iter()
        .map(|m| m.use_target)
        .collect();
    let _ = writeln!(
        out,
        "evalhost doctor · suite `{}` · targets from {}",
        suite.name,
        targets
            .file
            .as_deref()
            .map_or_else(|| "the suite".to_owned(), |f| f.display().to_string())
    );
    // A variable the targets file names and the environment lacks: named,
    // never a value.
    let unset: Vec<String> = targets
        .warnings
        .iter()
        .map(ToString::to_string)
        .filter(|w| w.contains("environment variable") && w.contains("is not set"))
        .collect();
    for w in &unset {
        let _ = writeln!(out, "  ✗ {}", w.rsplit("warning: ").next().unwrap_or(w));
    }
    if !args.trust && (!file_trusted || !inline.is_empty()) {
        let _ = writeln!(
            out,
            "  note: {} may come with the suite: programs are looked up, not run, and URLs are not contacted (name the targets file with --targets, or pass --trust, to check them fully)",
            if file_trusted {
                "the targets the suite defines itself"
            } else {
                "the targets file found beside the suite"
            }
        );
    }
    match crate::doctor::run(&targets, &names, &trusted, out) {
        Ok(tally) if tally.problems + unset.len() > 0 => {
            let _ = writeln!(
                out,
                "{} problem(s): a run would fail on them",
                tally.problems + unset.len()
            );
            exit_codes::TEST_FAILED
        }
        Ok(tally) if tally.unchecked > 0 => {
            // Never "ready" for what was not checked: a CI pre-flight step
            // must not go green with an endpoint nobody asked.
            let _ = writeln!(
                out,
                "not verified: {} check(s) marked ? were not made in full; nothing else is wrong (pass --trust, or name the targets file with --targets, to make them)",
                tally.unchecked
            );
            exit_codes::TEST_FAILED
        }
        Ok(_) => {
            let _ = writeln!(out, "ready: every target a run would use can run here");
            exit_codes::SUCCESS
        }
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            exit_codes::INTERNAL
        }
    }
}
