//! `evalhost runs`, `evalhost compare`, `evalhost trend`: the command-line
//! edge of `history` (arguments, output formats, exit codes).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Subcommand;

use crate::exit_codes;
use crate::history::index::{Filter, Index};
use crate::history::{self, Run, compare, stats, trend};

/// Where the project is: `--project`, else found from the current directory.
#[derive(Debug, Clone, clap::Args)]
pub struct ProjectArg {
    /// The project (the directory holding `.evalhost/`; default: found
    /// walking up from the current directory, else the git root).
    #[arg(long, value_name = "DIR", global = true)]
    pub project: Option<PathBuf>,
}

impl ProjectArg {
    /// The project directory.
    pub fn dir(&self) -> PathBuf {
        match &self.project {
            Some(p) => std::path::absolute(p).unwrap_or_else(|_| p.clone()),
            None => history::project_of(&std::env::current_dir().unwrap_or_default()),
        }
    }
}

/// Which runs to list.
#[derive(Debug, Clone, clap::Args)]
pub struct FilterArgs {
    /// Only this suite.
    #[arg(long)]
    pub suite: Option<String>,
    /// Only runs with this target.
    #[arg(long)]
    pub target: Option<String>,
    /// Only runs started on or after this date (`2026-11-01`, or RFC 3339).
    #[arg(long, value_name = "DATE", value_parser = since_value)]
    pub since: Option<String>,
    /// Only runs made with this `--tag`.
    #[arg(long)]
    pub tag: Option<String>,
    /// At most this many, newest first.
    #[arg(short = 'n', long, value_name = "N")]
    pub limit: Option<usize>,
}

/// `--since`: checked as a date or a time, kept as written.
fn since_value(s: &str) -> Result<String, String> {
    crate::history::index::parse_since(s).map(|_| s.to_owned())
}

impl FilterArgs {
    fn filter(&self) -> Filter {
        Filter {
            suite: self.suite.clone(),
            target: self.target.clone(),
            since: self.since.clone(),
            tag: self.tag.clone(),
            limit: self.limit,
        }
    }
}

/// `evalhost runs`.
#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// List the project's runs, newest first.
    List {
        #[command(flatten)]
        filter: FilterArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        project: ProjectArg,
    },
    /// Show one run: its facts and its rows.
    Show {
        /// The run's id (a unique prefix will do) or its directory.
        run: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        project: ProjectArg,
    },
    /// Delete runs: their directories and their index entries.
    Rm {
        /// Run ids (unique prefixes) or directories.
        #[arg(required = true)]
        runs: Vec<String>,
        /// Keep the directories; only forget them in the index.
        #[arg(long)]
        keep_files: bool,
        #[command(flatten)]
        project: ProjectArg,
    },
    /// Rebuild the index from the run directories.
    Reindex {
        #[command(flatten)]
        project: ProjectArg,
    },
}

/// `evalhost compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The base run: an id (a unique prefix will do) or a run directory.
    #[arg(required_unless_present = "last")]
    pub base: Option<String>,
    /// The candidate run.
    #[arg(required_unless_present = "last")]
    pub candidate: Option<String>,
    /// Compare the two latest runs (of `--suite` when the project has more
    /// than one suite).
    #[arg(long, conflicts_with_all = ["base", "candidate"])]
    pub last: bool,
    /// With `--last`: the suite.
    #[arg(long)]
    pub suite: Option<String>,
    /// Print JSON.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print Markdown (a pull-request comment).
    #[arg(long)]
    pub markdown: bool,
    /// Exit 1 when the candidate regressed beyond noise.
    #[arg(long)]
    pub fail_on_regression: bool,
    /// The smallest mean score drop that counts as a regression (with
    /// `--fail-on-regression`, and in the verdict).
    #[arg(long, value_name = "DELTA", default_value_t = 0.0)]
    pub min_effect: f64,
    /// The bootstrap's seed (the interval is reproducible).
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
    /// Bootstrap resamples.
    #[arg(long, default_value_t = 10_000)]
    pub resamples: usize,
    #[command(flatten)]
    pub project: ProjectArg,
}

/// `evalhost trend`.
#[derive(Debug, clap::Args)]
pub struct TrendArgs {
    /// The suite (default: the project's only suite).
    pub suite: Option<String>,
    /// How many of the latest runs.
    #[arg(short = 'n', long, default_value_t = 10)]
    pub runs: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// The bootstrap's seed.
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
    #[command(flatten)]
    pub project: ProjectArg,
}

/// The project's index, for reading: a directory without `.evalhost/` gets
/// an empty one, and nothing is created there.
fn open(project: &Path, err: &mut dyn Write) -> anyhow::Result<Index> {
    if std::fs::symlink_metadata(project.join(".evalhost")).is_err() {
        return Ok(Index::empty(project)?);
    }
    open_to_write(project, err)
}

/// The project's index, created when missing (`runs reindex`).
fn open_to_write(project: &Path, err: &mut dyn Write) -> anyhow::Result<Index> {
    let (index, note) = Index::open_or_rebuild(project)?;
    if let Some(note) = note {
        writeln!(err, "warning: {}", crate::text::shown(&note))?;
    }
    Ok(index)
}

/// A run named by id (or unique prefix) or by directory.
fn resolve(index: &Index, name: &str) -> anyhow::Result<Run> {
    let as_dir = Path::new(name);
    if as_dir.join("run.json").is_file() {
        return history::read_run(as_dir, &index.runs_dir).map_err(Into::into);
    }
    let found = index.find(name)?.or_else(|| {
        // Not indexed yet (the index was deleted): the directory is enough.
        let dir = index.runs_dir.join(name);
        history::read_run(&dir, &index.runs_dir)
            .ok()
            .map(|r| r.info)
    });
    let Some(info) = found else {
        anyhow::bail!(
            "no run `{name}` in {} (or more than one starts so); `evalhost runs list` shows them",
            index.runs_dir.display()
        );
    };
    history::read_run(Path::new(&info.dir), &index.runs_dir).with_context(|| {
        format!(
            "run `{}` is indexed but its directory cannot be read",
            info.id
        )
    })
}

/// The directory of a run that `runs rm` may delete: only a real
/// directory (not a link) directly inside the project's `.evalhost/runs`,
/// holding a `run.json` that is a regular file. The directory the index
/// records is a hint (an index can be planted); anything else — the
/// project, an ancestor, a run written elsewhere with `-o` — is left for
/// the user to delete.
fn removable(recorded: &str, runs_dir: &Path) -> Result<PathBuf, String> {
    let dir = PathBuf::from(recorded);
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !meta.is_dir() {
        return Err(format!(
            "{} is not a directory (or is a link)",
            dir.display()
        ));
    }
    let runs = runs_dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", runs_dir.display()))?;
    let real = dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    if real.parent() != Some(runs.as_path()) {
        return Err(format!(
            "{} is not inside {}; evalhost deletes only run directories there (delete it yourself if it is a run)",
            dir.display(),
            runs_dir.display()
        ));
    }
    if !std::fs::symlink_metadata(real.join("run.json")).is_ok_and(|m| m.is_file()) {
        return Err(format!("{} has no run.json", dir.display()));
    }
    Ok(real)
}

/// Multi-line output for a terminal: each line made safe on its own (test
/// ids come from suites), the newlines kept.
fn print_lines(out: &mut dyn Write, text: &str) -> std::io::Result<()> {
    for line in text.lines() {
        writeln!(out, "{}", crate::text::shown_line(line))?;
    }
    Ok(())
}

fn fmt_opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "—".into())
}

/// `evalhost runs …`.
pub fn runs(command: &RunsCommand, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match runs_inner(command, out, err) {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(err, "error: {}", crate::text::shown(&format!("{e:#}")));
            exit_codes::USAGE
        }
    }
}

fn runs_inner(
    command: &RunsCommand,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    match command {
        RunsCommand::List {
            filter,
            json,
            project,
        } => {
            let index = open(&project.dir(), err)?;
            let runs = index.list(&filter.filter())?;
            if *json {
                writeln!(out, "{}", serde_json::to_string_pretty(&runs)?)?;
                return Ok(exit_codes::SUCCESS);
            }
            if runs.is_empty() {
                writeln!(out, "no runs in {}", index.runs_dir.display())?;
                return Ok(exit_codes::SUCCESS);
            }
            writeln!(
                out,
                "{:<24}  {:<16}  {:<12}  {:>5}  {:>6}  {:>6}  {:>9}  {:<10}  status",
                "run", "suite", "target", "tests", "passed", "rate", "cost", "commit"
            )?;
            for r in runs {
                writeln!(
                    out,
                    "{:<24}  {:<16}  {:<12}  {:>5}  {:>6}  {:>6}  {:>9}  {:<10}  {}",
                    crate::text::shown(&r.id),
                    crate::text::shown(&r.suite),
                    crate::text::shown(&r.targets.join(",")),
                    r.tests,
                    r.passed,
                    r.pass_rate
                        .map(|p| format!("{:.0}%", p * 100.0))
                        .unwrap_or_else(|| "—".into()),
                    r.cost_usd
                        .map(|c| format!("${c:.4}"))
                        .unwrap_or_else(|| "—".into()),
                    r.git_commit
                        .as_deref()
                        .map(|c| format!(
                            "{}{}",
                            &c[..c.len().min(8)],
                            if r.git_dirty == Some(true) { "*" } else { "" }
                        ))
                        .unwrap_or_else(|| "—".into()),
                    r.status
                )?;
            }
            Ok(exit_codes::SUCCESS)
        }
        RunsCommand::Show { run, json, project } => {
            let index = open(&project.dir(), err)?;
            let run = resolve(&index, run)?;
            if *json {
                let value = serde_json::json!({"run": run.info, "rows": run.rows});
                writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
                return Ok(exit_codes::SUCCESS);
            }
            let i = &run.info;
            writeln!(out, "run:       {}", crate::text::shown(&i.id))?;
            writeln!(out, "directory: {}", crate::text::shown(&i.dir))?;
            writeln!(
                out,
                "suite:     {} ({})",
                crate::text::shown(&i.suite),
                fmt_opt(i.dialect.as_deref())
            )?;
            writeln!(
                out,
                "targets:   {}",
                crate::text::shown(&i.targets.join(", "))
            )?;
            writeln!(out, "started:   {} · {}", i.started_at, i.status)?;
            writeln!(
                out,
                "commit:    {}{}",
                fmt_opt(i.git_commit.as_deref()),
                if i.git_dirty == Some(true) {
                    " (uncommitted changes)"
                } else {
                    ""
                }
            )?;
            writeln!(
                out,
                "tests:     {} ({} rows) · {} passed · {} failed · {} errors · mean {} · cost {} · tokens {} in / {} out",
                i.tests,
                i.total,
                i.passed,
                i.failed,
                i.errors,
                i.mean_score
                    .map(|m| format!("{m:.3}"))
                    .unwrap_or_else(|| "—".into()),
                i.cost_usd
                    .map(|c| format!("${c:.4}"))
                    .unwrap_or_else(|| "—".into()),
                fmt_opt(i.tokens_in),
                fmt_opt(i.tokens_out)
            )?;
            for p in &i.plugins {
                writeln!(out, "plugin:    {}", crate::text::shown(p))?;
            }
            writeln!(out)?;
            for r in &run.rows {
                writeln!(
                    out,
                    "  {:<8} {:>5}  {}{}{}",
                    r.status.to_uppercase(),
                    r.score
                        .map(|s| format!("{s:.2}"))
                        .unwrap_or_else(|| "—".into()),
                    crate::text::shown(&r.test_id),
                    if i.targets.len() > 1 {
                        format!(" [{}]", crate::text::shown(&r.target))
                    } else {
                        String::new()
                    },
                    r.error
                        .as_deref()
                        .map(|e| format!("  {}", crate::text::shown(e)))
                        .unwrap_or_default()
                )?;
            }
            Ok(exit_codes::SUCCESS)
        }
        RunsCommand::Rm {
            runs,
            keep_files,
            project,
        } => {
            let mut index = open(&project.dir(), err)?;
            // Resolve all first: a typo removes nothing.
            let resolved: Vec<Run> = runs
                .iter()
                .map(|r| resolve(&index, r))
                .collect::<anyhow::Result<_>>()?;
            for run in resolved {
                index.remove(&run.info.id)?;
                let kept = if *keep_files {
                    Some(" from the index (its directory is kept)".to_owned())
                } else {
                    match removable(&run.info.dir, &index.runs_dir) {
                        Ok(dir) => {
                            std::fs::remove_dir_all(&dir)
                                .with_context(|| format!("cannot remove {}", dir.display()))?;
                            None
                        }
                        Err(why) => Some(format!(
                            " from the index; its directory is kept: {}",
                            crate::text::shown(&why)
                        )),
                    }
                };
                writeln!(
                    out,
                    "removed {}{}",
                    crate::text::shown(&run.info.id),
                    kept.unwrap_or_default()
                )?;
            }
            Ok(exit_codes::SUCCESS)
        }
        RunsCommand::Reindex { project } => {
            let mut index = open_to_write(&project.dir(), err)?;
            let done = index.reindex()?;
            writeln!(
                out,
                "indexed {} run(s) from {}; {} entr{} without a directory dropped",
                done.indexed,
                index.runs_dir.display(),
                done.dropped,
                if done.dropped == 1 { "y" } else { "ies" }
            )?;
            for s in &done.skipped {
                writeln!(err, "warning: skipped {}", crate::text::shown(s))?;
            }
            Ok(exit_codes::SUCCESS)
        }
    }
}

/// The two latest runs of a suite (the only one, when none is named).
fn last_two(index: &Index, suite: Option<&str>) -> anyhow::Result<(Run, Run)> {
    // Only runs this machine's evalhost recorded at their end (sealed with
    // the per-user key): a run directory that came with a checkout, or a
    // planted index, cannot become "the last run".
    let all = index.list(&Filter {
        suite: suite.map(str::to_owned),
        ..Filter::default()
    })?;
    let unsealed = all.iter().filter(|r| !r.sealed()).count();
    let runs: Vec<_> = all.into_iter().filter(|r| r.sealed()).collect();
    if runs.len() < 2 && unsealed > 0 {
        anyhow::bail!(
            "--last compares runs this machine recorded at their end, and found {}; {unsealed} other run(s) in the index came from directories it did not record (a checkout, another machine, `runs reindex`): name the two runs to compare",
            runs.len()
        );
    }
    let suites: std::collections::BTreeSet<&str> = runs.iter().map(|r| r.suite.as_str()).collect();
    if suite.is_none() && suites.len() > 1 {
        anyhow::bail!(
            "the project has runs of {} suites ({}); name one with --suite",
            suites.len(),
            suites.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    match runs.as_slice() {
        [newest, older, ..] => Ok((
            history::read_run(Path::new(&older.dir), &index.runs_dir)?,
            history::read_run(Path::new(&newest.dir), &index.runs_dir)?,
        )),
        _ => anyhow::bail!(
            "--last needs two runs{}; found {}",
            suite.map(|s| format!(" of `{s}`")).unwrap_or_default(),
            runs.len()
        ),
    }
}

/// `evalhost compare`.
pub fn compare(args: &CompareArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let result = (|| -> anyhow::Result<u8> {
        if !(0.0..=1.0).contains(&args.min_effect) {
            anyhow::bail!(
                "--min-effect must be between 0 and 1, got {}",
                args.min_effect
            );
        }
        if args.resamples == 0 {
            anyhow::bail!("--resamples must be at least 1");
        }
        let index = open(&args.project.dir(), err)?;
        let (base, cand) = if args.last {
            last_two(&index, args.suite.as_deref())?
        } else {
            (
                resolve(&index, args.base.as_deref().unwrap_or_default())?,
                resolve(&index, args.candidate.as_deref().unwrap_or_default())?,
            )
        };
        if base.info.suite != cand.info.suite {
            writeln!(
                err,
                "warning: comparing runs of different suites (`{}` and `{}`)",
                crate::text::shown(&base.info.suite),
                crate::text::shown(&cand.info.suite)
            )?;
        }
        let options = stats::Options {
            resamples: args.resamples,
            seed: args.seed,
            min_effect: args.min_effect,
            ..stats::Options::default()
        };
        let c = compare::compare(&base, &cand, &options);
        if c.tests.is_empty() {
            // Nothing compared is no verdict: never a pass of a gate.
            anyhow::bail!(
                "nothing to compare: no test of {} is in {} ({} only in the base, {} only in the candidate; matched by {}); compare runs of the same suite — runs on several targets are matched by test id and target",
                crate::text::shown(&base.info.id),
                crate::text::shown(&cand.info.id),
                c.only_in_base.len(),
                c.only_in_candidate.len(),
                c.matched_by
            );
        }
        if args.json {
            writeln!(out, "{}", serde_json::to_string_pretty(&c)?)?;
        } else if args.markdown {
            write!(out, "{}", compare::render_markdown(&c))?;
        } else {
            print_lines(out, &compare::render_text(&c))?;
        }
        Ok(
            if args.fail_on_regression && c.summary.verdict == "regressed" {
                exit_codes::REGRESSION
            } else {
                exit_codes::SUCCESS
            },
        )
    })();
    result.unwrap_or_else(|e| {
        let _ = writeln!(err, "error: {}", crate::text::shown(&format!("{e:#}")));
        exit_codes::USAGE
    })
}

/// `evalhost trend`.
pub fn trend(args: &TrendArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let result = (|| -> anyhow::Result<u8> {
        let index = open(&args.project.dir(), err)?;
        let all = index.list(&Filter::default())?;
        let suite = match &args.suite {
            Some(s) => s.clone(),
            None => {
                let suites: std::collections::BTreeSet<&str> =
                    all.iter().map(|r| r.suite.as_str()).collect();
                match suites.len() {
                    0 => anyhow::bail!("no runs in {}", index.runs_dir.display()),
                    1 => suites.into_iter().next().unwrap_or_default().to_owned(),
                    _ => anyhow::bail!(
                        "the project has runs of several suites ({}); name one",
                        suites.into_iter().collect::<Vec<_>>().join(", ")
                    ),
                }
            }
        };
        let mut infos: Vec<_> = all
            .into_iter()
            .filter(|r| r.suite == suite)
            .take(args.runs.max(1))
            .collect();
        if infos.is_empty() {
            anyhow::bail!("no runs of `{suite}` in {}", index.runs_dir.display());
        }
        infos.reverse();
        let runs: Vec<Run> = infos
            .iter()
            .filter_map(|i| history::read_run(Path::new(&i.dir), &index.runs_dir).ok())
            .collect();
        let options = stats::Options {
            seed: args.seed,
            ..stats::Options::default()
        };
        let t = trend::trend(&suite, &runs, &options);
        if args.json {
            writeln!(out, "{}", serde_json::to_string_pretty(&t)?)?;
        } else {
            print_lines(out, &trend::render_text(&t))?;
        }
        Ok(exit_codes::SUCCESS)
    })();
    result.unwrap_or_else(|e| {
        let _ = writeln!(err, "error: {}", crate::text::shown(&format!("{e:#}")));
        exit_codes::USAGE
    })
}
