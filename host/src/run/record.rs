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
    /// The targets file, when given.
    #[serde(default)]
    pub targets_file: Option<PathBuf>,
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
}

/// The plan of a run before `--shard` sliced it: every (test, target) in
/// order, and the trials of each.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedPlan {
    /// Trials per test.
    pub trials: u32,
    /// Every planned (test, target), in plan order.
    pub tests: Vec<PlannedEntry>,
}

/// One planned (test, target).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedEntry {
    /// The test's index in the suite.
    pub index: usize,
    /// The test's id.
    pub id: String,
    /// The target's name.
    pub target: String,
}

/// The largest `run.json` read.
pub(super) const MAX_RUN_RECORD: u64 = 64 << 20;

/// Reads and checks `DIR/run.json`.
pub fn read_record(dir: &Path) -> Result<RunRecord, RunError> {
    let path = dir.join("run.json");
    let text = crate::safe_fs::read_text_capped(&path, MAX_RUN_RECORD).map_err(|e| {
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
pub(super) fn recorded_plan(
    suite: &Suite,
    targets: &[String],
    options: &PlanOptions,
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
        tests: whole
            .iter()
            .map(|p| PlannedEntry {
                index: p.index,
                id: suite.tests[p.index].id.clone(),
                target: targets[p.target].clone(),
            })
            .collect(),
    }
}

/// The most trials `--repeat` (and a resumed run's `repeat`) may ask for.
pub const MAX_REPEAT: u32 = 1000;
