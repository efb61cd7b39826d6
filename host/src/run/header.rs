//! What a run prints before its first case: the suite, its tests and
//! targets, the dialect, where the targets came from, each plugin.

use std::io::Write;

use super::open::Opened;
use super::setup::Setup;
use super::{RunOptions, shown_path};
use crate::plugin;

/// Prints the header (not under `-q`) and the engine's warnings.
pub(super) fn print(
    options: &RunOptions,
    setup: &Setup,
    opened: &Opened,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    let Setup {
        suite,
        plan,
        target_names,
        targets,
        registry,
        engine,
        request,
        ..
    } = setup;
    let plan_options = &request.plan_options;
    let done = &opened.done;
    // `-q`: FAIL and ERROR lines, warnings and the summary; not this.
    let mut header: Box<dyn Write> = if options.quiet {
        Box::new(std::io::sink())
    } else {
        Box::new(&mut *out)
    };
    writeln!(
        header,
        "evalhost {}{} · suite `{}` · {}{} · target {}{}",
        env!("CARGO_PKG_VERSION"),
        options
            .regrade
            .as_ref()
            .map_or(String::new(), |dir| format!(
                " · regrade of {}",
                crate::text::shown(&dir.display().to_string())
            )),
        crate::text::shown(&suite.name),
        {
            // Tests and trials: `--repeat 3` over 3 tests is 9 trials.
            let trials: u64 = plan.iter().map(|p| u64::from(p.trials)).sum();
            let tests = plan.len();
            if trials == tests as u64 {
                format!("{tests} test(s)")
            } else {
                format!("{tests} test(s), {trials} trial(s)")
            }
        },
        plan_options
            .shard
            .map_or(String::new(), |s| format!(" (shard {s})")),
        target_names
            .iter()
            .map(|n| format!("`{}`", crate::text::shown(n)))
            .collect::<Vec<_>>()
            .join(", "),
        if done.is_empty() {
            String::new()
        } else {
            format!(" · resuming: {} row(s) already done", done.len())
        }
    )?;
    writeln!(
        header,
        "  dialect {} ({})",
        suite.dialect.title(),
        if setup.dialect_given {
            "as given with --dialect"
        } else if options.resume.is_some() {
            "as the run being resumed read it"
        } else {
            "told from the file"
        }
    )?;
    if let Some(sandbox) = &setup.sandbox {
        let limits = match sandbox.cgroups() {
            Ok(_) => format!(
                "limits {} per case (or the target's)",
                crate::isolate::Limits::default().describe()
            ),
            Err(why) => format!("no memory or process limits ({why})"),
        };
        let root = sandbox.root().map_or_else(
            || "the host's /usr and /etc".to_owned(),
            |r| crate::text::shown(&r.display().to_string()).into_owned(),
        );
        writeln!(
            header,
            "  isolated: each command in its own sandbox (bubblewrap): workspace writable, project read-only (its .git, .evalhost, .env files and credentials hidden), empty home, PATH and locale only; network: none for commands, an agent's model API through evalhost's proxy; {limits}; root: {root}"
        )?;
        if sandbox.secrets_incomplete() {
            writeln!(
                header,
                "  warning: the project has more than {} files: only those searched first are checked for secrets to hide (.git, .evalhost, .env files, credentials); run the suite from a smaller project",
                crate::isolate::case::SECRETS_SEARCH_LIMIT
            )?;
        }
        // What the targets file grants each target beyond that: said, since
        // a targets file found beside a suite is the suite's to write.
        for t in &setup.run_targets {
            let g = &t.target.isolate;
            let mut grants = Vec::new();
            if !g.env.is_empty() {
                grants.push(format!("keeps {}", g.env.join(", ")));
            }
            if !g.read.is_empty() {
                let read: Vec<String> = g.read.iter().map(|p| p.display().to_string()).collect();
                grants.push(format!("reads {}", read.join(", ")));
            }
            if let Some(network) = &g.network {
                grants.push(format!("network {}", network.describe()));
            }
            if let Some(limits) = g.limits {
                grants.push(limits.describe());
            }
            if !grants.is_empty() {
                writeln!(
                    header,
                    "  target `{}` in its sandbox: {}",
                    crate::text::shown(&t.target.name),
                    crate::text::shown(&grants.join("; "))
                )?;
            }
        }
    }
    if let Some((runtime, run)) = &setup.container {
        writeln!(
            header,
            "  container: each code grader runs in a new {runtime} container of `{}`{}{} (workspace.docker), removed after",
            crate::text::shown(&run.image),
            run.memory
                .as_deref()
                .map(|m| format!(", memory {m}"))
                .unwrap_or_default(),
            run.cpus
                .as_deref()
                .map(|c| format!(", {c} CPUs"))
                .unwrap_or_default(),
        )?;
    }
    if let Some(file) = &targets.file {
        writeln!(
            header,
            "  targets from {}",
            crate::text::shown(&shown_path(file))
        )?;
    }
    // One line for every plugin: the cached ones, then the compiled ones
    // with the time they took together.
    let (mut cached, mut compiled, mut took) = (Vec::new(), Vec::new(), 0u128);
    for p in registry.plugins() {
        let name = format!(
            "{} {}",
            crate::text::shown(&p.name),
            crate::text::shown(&p.version)
        );
        match p.compiled.0 {
            plugin::CompileSource::Cache => cached.push(name),
            plugin::CompileSource::Compiled => {
                compiled.push(name);
                took += p.compiled.1.as_millis();
            }
        }
    }
    let mut groups = Vec::new();
    if !cached.is_empty() {
        groups.push(format!("{} (cached)", cached.join(", ")));
    }
    if !compiled.is_empty() {
        groups.push(format!("{} (compiled in {took} ms)", compiled.join(", ")));
    }
    if !groups.is_empty() {
        writeln!(header, "  plugins: {}", groups.join("; "))?;
    }
    drop(header);
    for warning in engine.take_warnings() {
        writeln!(err, "  warning: {warning}")?;
    }
    Ok(())
}
