//! `run.json`: what a run was asked to do, so that `--resume`,
//! `--rerun-failed`, `regrade` and `merge` can repeat or check it. It is read
//! back from a directory anyone may have written, so every field is checked
//! as the command line would check it.

use super::*;

/// `run.json`: what a run was asked to do, so that `--resume` and
/// `--rerun-failed` can repeat it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// evalhost's version.
    pub evalhost_version: String,
    /// The eval file, absolute.
    pub eval: PathBuf,
    /// The target name (the first, with a matrix).
    pub target: String,
    /// Every target of the run (a matrix has several).
    #[serde(default)]
    pub targets: Vec<String>,
    /// The targets file the run read: given with `--targets`, or found
    /// (then `targets_file_found`).
    #[serde(default)]
    pub targets_file: Option<PathBuf>,
    /// True when `targets_file` was found walking up from the suite rather
    /// than given: a resume under `--sandbox strict` does not demand it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub targets_file_found: bool,
    /// The shard runs this run merged (`evalhost merge`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<PathBuf>,
    /// The run whose outputs this one regraded (`evalhost regrade`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regrade_of: Option<PathBuf>,
    /// A digest of what the suite asks of every test (input, expected
    /// output, assertions), so that `--resume` can tell the suite changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite_digest: Option<String>,
    /// `--test-id` globs.
    #[serde(default)]
    pub test_ids: Vec<String>,
    /// `--tag` values.
    #[serde(default)]
    pub tags: Vec<String>,
    /// `--repeat`.
    #[serde(default)]
    pub repeat: Option<u32>,
    /// `--shard`, as `K/N`.
    #[serde(default)]
    pub shard: Option<String>,
    /// `--threshold`.
    #[serde(default)]
    pub threshold: Option<f64>,
    /// Only these tests (`--rerun-failed`).
    #[serde(default)]
    pub only: Option<Vec<String>>,
    /// The whole plan before sharding, so that `merge` can tell which rows
    /// belong to which shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<RecordedPlan>,
    /// When the run started.
    pub started_at: String,
    /// The suite's dialect (`agentv4`, `agentv5`, `promptfoo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<String>,
    /// The commit checked out where the suite lives, when it is in git.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
    /// True when that checkout had uncommitted changes to tracked files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_dirty: Option<bool>,
}

/// The commit checked out at `dir` and whether tracked files differ from
/// it (`git rev-parse HEAD`, `git status --porcelain
/// --untracked-files=no`); `(None, None)` outside git or without git.
///
/// `untrusted` (`--sandbox strict`): git is not run at all. A checkout's
/// own `.git/config` (delivered in an archive, an artifact or a cache)
/// can make `git status` run a command — `core.fsmonitor`, a clean
/// filter, `core.hooksPath` — so a suite's repository is never handed to
/// git for metadata. Otherwise (your own repository) git runs with hooks
/// and fsmonitor off all the same, and no optional locks.
pub fn git_state(dir: &std::path::Path, untrusted: bool) -> (Option<String>, Option<bool>) {
    if untrusted {
        return (None, None);
    }
    // Outside a checkout git has nothing to say: not started at all (two
    // processes cost milliseconds). `GIT_DIR` names a repository from
    // anywhere.
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    if std::env::var_os("GIT_DIR").is_none()
        && !absolute
            .ancestors()
            .any(|d| std::fs::symlink_metadata(d.join(".git")).is_ok())
    {
        return (None, None);
    }
    let git = |args: &[&str]| {
        let mut argv: Vec<String> = [
            "git",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "-C",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        argv.push(dir.display().to_string());
        argv.extend(args.iter().map(|s| (*s).to_owned()));
        crate::process::run(&crate::process::Spec {
            argv: &argv,
            env: &[("GIT_OPTIONAL_LOCKS".to_owned(), "0".to_owned())],
            timeout: Some(std::time::Duration::from_secs(30)),
            ..crate::process::Spec::default()
        })
        .ok()
        .filter(crate::process::Outcome::success)
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let Some(commit) = git(&["rev-parse", "HEAD"]).filter(|c| !c.is_empty()) else {
        return (None, None);
    };
    // A clean or process filter (in `.git/config` or an included file,
    // named by `.gitattributes`) runs when `git status` hashes a file: no
    // one switch turns filters off, so every filter the configuration
    // names is emptied for this call (reading the configuration runs
    // nothing).
    let names = git(&["config", "--name-only", "--get-regexp", r"^filter\."]).unwrap_or_default();
    let mut status: Vec<String> = Vec::new();
    for name in names.lines() {
        if let Some(driver) = name
            .strip_prefix("filter.")
            .and_then(|n| n.rsplit_once('.'))
            .map(|(d, _)| d)
        {
            for key in ["clean", "smudge", "process"] {
                status.extend(["-c".to_owned(), format!("filter.{driver}.{key}=")]);
            }
            status.extend(["-c".to_owned(), format!("filter.{driver}.required=false")]);
        }
    }
    status.extend(
        ["status", "--porcelain", "--untracked-files=no"]
            .iter()
            .map(|s| (*s).to_owned()),
    );
    let status: Vec<&str> = status.iter().map(String::as_str).collect();
    let dirty = git(&status).map(|s| !s.is_empty());
    (Some(commit), dirty)
}

/// [`git_state`] asked on a thread of its own when the run starts, so that
/// git runs while the suite is read; [`GitState::wait`] takes the answer
/// when `run.json` is written.
pub struct GitState(Option<std::thread::JoinHandle<(Option<String>, Option<bool>)>>);

impl GitState {
    /// Starts asking about `dir` (nothing under `untrusted`).
    pub fn start(dir: std::path::PathBuf, untrusted: bool) -> Self {
        if untrusted {
            return Self(None);
        }
        Self(
            std::thread::Builder::new()
                .name("evalhost-git".into())
                .spawn(move || git_state(&dir, false))
                .ok(),
        )
    }

    /// Nothing asked (a resumed run keeps the `run.json` it has).
    pub fn unasked() -> Self {
        Self(None)
    }

    /// The answer; `(None, None)` when git could not be asked (or the
    /// answer was taken before).
    pub fn wait(&mut self) -> (Option<String>, Option<bool>) {
        self.0
            .take()
            .and_then(|handle| handle.join().ok())
            .unwrap_or((None, None))
    }
}

/// The plan of a run before `--shard` sliced it: every (test, target) in
/// order, and the trials of each.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordedPlan {
    /// Trials per test.
    pub trials: u32,
    /// How the trials combine, when more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<crate::suite::model::Strategy>,
    /// Every planned (test, target), in plan order.
    pub tests: Vec<PlannedEntry>,
}

/// One planned (test, target).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedEntry {
    /// The test's index in the suite.
    pub index: usize,
    /// The test's id.
    pub id: String,
    /// The target's name.
    pub target: String,
    /// The threshold the test's score is held to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// The test is expected to fail.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expected_fail: bool,
    /// What `--shard` slices by when it is not the entry's position (a
    /// test in a `depends_on` group goes with its group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_key: Option<usize>,
}

impl PlannedEntry {
    /// The key `--shard K/N` assigns this entry by (`key % N == K - 1`).
    pub fn shard_key_at(&self, position: usize) -> usize {
        self.shard_key.unwrap_or(position)
    }
}

/// The largest `run.json` read.
pub(super) const MAX_RUN_RECORD: u64 = 64 << 20;

/// Reads and checks `DIR/run.json`.
pub fn read_record(dir: &Path) -> Result<RunRecord, RunError> {
    let path = dir.join("run.json");
    let text = crate::safe_fs::read_text_capped(&path, MAX_RUN_RECORD).map_err(|e| {
        // The directory of a command that ran several suites: each suite's
        // run is a directory inside it.
        if dir.join("suites.json").is_file() && !path.exists() {
            let inside: Vec<String> = std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.path().join("run.json").is_file())
                .map(|e| e.path().display().to_string())
                .collect();
            return RunError::Usage(format!(
                "{} holds the runs of several suites (suites.json), not one run: resume each suite's own directory{}",
                dir.display(),
                if inside.is_empty() {
                    String::new()
                } else {
                    format!(", e.g. `evalhost run --resume {}`", inside[0])
                }
            ));
        }
        RunError::Usage(format!(
            "{} is not a run directory ({}: {e}); a run stopped before it recorded itself has nothing to resume: start it again with `evalhost run EVAL.yaml -o {}`",
            dir.display(),
            path.display(),
            dir.display()
        ))
    })?;
    let record: RunRecord = serde_json::from_str(&text)
        .map_err(|e| RunError::Usage(format!("{} is damaged: {e}", path.display())))?;
    record
        .check()
        .map_err(|e| RunError::Usage(format!("{}: {e}", path.display())))?;
    Ok(record)
}

impl RunRecord {
    /// Checks every field as the command line would check it: `run.json`
    /// is read back from a directory anyone may have written.
    pub fn check(&self) -> Result<(), String> {
        if let Some(t) = self.threshold
            && !(0.0..=1.0).contains(&t)
        {
            return Err(format!("`threshold` must be between 0 and 1, got {t}"));
        }
        if let Some(n) = self.repeat
            && !(1..=MAX_REPEAT).contains(&n)
        {
            return Err(format!(
                "`repeat` must be between 1 and {MAX_REPEAT}, got {n}"
            ));
        }
        if let Some(shard) = &self.shard {
            shard
                .parse::<Shard>()
                .map_err(|e| format!("`shard`: {e}"))?;
        }
        for glob in &self.test_ids {
            globset::Glob::new(glob)
                .map_err(|e| format!("`test_ids`: `{glob}` is not a valid glob: {e}"))?;
        }
        let names = std::iter::once(&self.target).chain(&self.targets);
        for name in names {
            if name.is_empty() || name.chars().any(char::is_control) {
                return Err(format!("`targets`: {name:?} is not a target name"));
            }
        }
        if !self.eval.is_absolute() {
            return Err(format!(
                "`eval` must be an absolute path, got {}",
                self.eval.display()
            ));
        }
        if let Some(file) = &self.targets_file
            && !file.is_absolute()
        {
            return Err(format!(
                "`targets_file` must be an absolute path, got {}",
                file.display()
            ));
        }
        Ok(())
    }
}

/// The run's whole plan, before `--shard` slices it.
/// What the suite asks of every test, as a digest: input, expected output,
/// criteria, threshold and each assertion's type, config and gates. Two
/// loads of an unchanged suite agree; an edit to any of these does not.
pub(super) fn suite_digest(suite: &Suite) -> String {
    let mut text = String::new();
    for test in &suite.tests {
        text.push_str(&format!(
            "{}\u{0}{:?}\u{0}{:?}\u{0}{:?}\u{0}{:?}\u{0}{}\u{0}",
            test.id, test.input, test.expected, test.criteria, test.threshold, test.expected_fail
        ));
        for a in test.every_assertion().flat_map(|a| a.walk()) {
            text.push_str(&format!(
                "{}\u{0}{}\u{0}{:?}\u{0}{:?}\u{0}{:?}\u{0}{:?}\u{0}",
                a.kind, a.config_json, a.weight, a.required, a.min_score, a.negate
            ));
        }
    }
    text.push_str(&format!("{:?}", suite.threshold));
    crate::digest::sha256_hex(text.as_bytes())
}

pub(super) fn recorded_plan(
    suite: &Suite,
    targets: &[String],
    options: &PlanOptions,
    cli_threshold: Option<f64>,
) -> RecordedPlan {
    let whole = plan::plan(
        suite,
        targets,
        &PlanOptions {
            shard: None,
            ..options.clone()
        },
    )
    .unwrap_or_default();
    RecordedPlan {
        trials: whole.first().map_or(1, |p| p.trials),
        strategy: whole.first().and_then(|p| p.strategy),
        tests: whole
            .iter()
            .enumerate()
            .map(|(position, p)| {
                let test = &suite.tests[p.index];
                PlannedEntry {
                    index: p.index,
                    id: test.id.clone(),
                    target: targets[p.target].clone(),
                    threshold: super::trial::held_threshold(test, cli_threshold, suite.threshold),
                    expected_fail: test.expected_fail,
                    shard_key: (p.shard_key != position).then_some(p.shard_key),
                }
            })
            .collect(),
    }
}

/// The most trials `--repeat` (and a resumed run's `repeat`) may ask for.
pub const MAX_REPEAT: u32 = 1000;

/// The eval and targets files a `run.json` names must come from outside
/// the run directory (evalhost never writes a suite there: one that is
/// came with the directory), and under `--sandbox strict` the eval file is
/// taken from the command line only (`--resume`, `regrade`).
pub(super) fn check_sources(
    dir: &Path,
    record: &RunRecord,
    options: &RunOptions,
) -> Result<(), RunError> {
    let run_json = dir.join("run.json");
    let inside = |file: &Path| -> bool {
        let real_dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let real = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
        real.starts_with(&real_dir)
    };
    for (what, file) in [
        ("eval file", Some(&record.eval)),
        ("targets file", record.targets_file.as_ref()),
    ] {
        if let Some(file) = file
            && inside(file)
        {
            return Err(RunError::Usage(format!(
                "{} names the {what} {}, which is inside the run directory: a run directory never holds its own suite or targets; it is not one evalhost wrote",
                run_json.display(),
                file.display()
            )));
        }
    }
    if options.sandbox_strict
        && let Some(eval) = &options.eval
    {
        // The suite's project is the untrusted party's: a run directory in
        // it may have been prepared along with the suite.
        let root = outermost_project(&crate::suite::roots::Roots::for_eval(eval).project_root);
        let real_dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if real_dir.starts_with(&root) {
            return Err(RunError::Usage(format!(
                "{} is inside the suite's project ({}); under --sandbox strict a run directory read back must be one you wrote outside it (run with `-o DIR` outside the project)",
                dir.display(),
                root.display()
            )));
        }
    }
    if options.sandbox_strict && options.eval.is_none() {
        let how = if options.regrade.is_some() {
            format!(
                "evalhost regrade {} --eval {} --sandbox strict",
                dir.display(),
                record.eval.display()
            )
        } else {
            format!(
                "evalhost run {} --{} {} --sandbox strict",
                record.eval.display(),
                if options.rerun_failed.is_some() {
                    "rerun-failed"
                } else {
                    "resume"
                },
                dir.display()
            )
        };
        // The rest of what the run was started with, so the suggestion
        // works as typed.
        let mut how = how;
        if let Some(file) = record
            .targets_file
            .as_ref()
            .filter(|_| !record.targets_file_found)
        {
            how.push_str(&format!(" --targets {}", file.display()));
        }
        if let [only] = record.targets.as_slice() {
            how.push_str(&format!(" --target {only}"));
        }
        return Err(RunError::Usage(format!(
            "--sandbox strict takes the eval file from the command line, not from {}: run `{how}`",
            run_json.display()
        )));
    }
    Ok(())
}

/// Under `--sandbox strict`, `--resume` runs what the command line asks
/// (as a new run would) and `run.json` must have asked the same: a run
/// directory cannot narrow the plan, lower the threshold, drop a target or
/// bring its own targets file.
pub(super) fn check_strict_resume(
    dir: &Path,
    record: &RunRecord,
    options: &RunOptions,
) -> Result<(), RunError> {
    let run_json = dir.join("run.json");
    let differs = |field: &str, recorded: String, given: String| {
        RunError::Usage(format!(
            "{} has `{field}` {recorded}, but the command line asks {given}: under --sandbox strict, resume with the same options the run was started with",
            run_json.display()
        ))
    };
    if let Some(file) = record
        .targets_file
        .as_ref()
        .filter(|_| !record.targets_file_found)
    {
        let given = options
            .targets_file
            .as_ref()
            .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()));
        if given.as_ref() != Some(file) {
            return Err(RunError::Usage(format!(
                "{} names the targets file {}; --sandbox strict takes a targets file only from the command line: pass --targets again with the file you trust (it must be the one the run was started with)",
                run_json.display(),
                file.display()
            )));
        }
    }
    let plan = &options.plan;
    if record.threshold != options.threshold {
        return Err(differs(
            "threshold",
            format!("{:?}", record.threshold),
            format!("{:?}", options.threshold),
        ));
    }
    if record.test_ids != plan.test_ids {
        return Err(differs(
            "test_ids",
            format!("{:?}", record.test_ids),
            format!("{:?}", plan.test_ids),
        ));
    }
    if record.tags != plan.tags {
        return Err(differs(
            "tags",
            format!("{:?}", record.tags),
            format!("{:?}", plan.tags),
        ));
    }
    if record.repeat != plan.repeat {
        return Err(differs(
            "repeat",
            format!("{:?}", record.repeat),
            format!("{:?}", plan.repeat),
        ));
    }
    let shard = plan.shard.map(|s| s.to_string());
    if record.shard != shard {
        return Err(differs(
            "shard",
            format!("{:?}", record.shard),
            format!("{shard:?}"),
        ));
    }
    if record.only.is_some() {
        return Err(RunError::Usage(format!(
            "{} restricts the run to some tests (a --rerun-failed run); under --sandbox strict such a run is not resumed: run --rerun-failed again",
            run_json.display()
        )));
    }
    // The targets: compared once they are selected (`run`), whether from
    // `--target` or from the suite.
    Ok(())
}

/// The project a suite's checkout belongs to: its root, or, when that root's
/// `.git` is a file (a submodule or a worktree inside another checkout),
/// the enclosing checkout's root, and so on up.
fn outermost_project(root: &Path) -> PathBuf {
    let mut root = root.to_path_buf();
    while root.join(".git").is_file()
        && let Some(outer) = root.ancestors().skip(1).find(|a| a.join(".git").exists())
    {
        root = outer.to_path_buf();
    }
    root
}
