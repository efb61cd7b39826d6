//! Reporters: sinks for a run's rows. The terminal reporter shows progress
//! as rows arrive; at the end `summary.json` and `report.html` are always
//! written, JUnit XML with `--junit FILE`, and GitHub annotations plus a
//! step summary with `--reporter github`.
//!
//! Human output (stderr) is not a stable interface; `results.jsonl`,
//! `summary.json` and the JUnit XML are.

pub mod github;
pub mod html;
pub mod junit;
pub mod promptfoo_json;
pub mod terminal;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::outcome::{self, Tally, TestOutcome};
use crate::results::ResultRow;

/// Which reporters run at the end, besides the terminal and the run
/// directory's files.
#[derive(Debug, Clone, Default)]
pub struct Reporters {
    /// `--junit FILE`.
    pub junit: Option<PathBuf>,
    /// `--reporter github`.
    pub github: bool,
    /// `--export promptfoo-json FILE`.
    pub promptfoo_json: Option<PathBuf>,
    /// `--junit FILE` of a command running several suites: each suite's
    /// JUnit test suites are added here, and the command writes one file.
    pub junit_suites: Option<std::sync::Arc<std::sync::Mutex<Vec<quick_junit::TestSuite>>>>,
}

/// A plugin as the summary reports it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PluginSummary {
    /// Name.
    pub name: String,
    /// Version (empty when only known from results).
    #[serde(default)]
    pub version: String,
    /// sha256 of the `.wasm`.
    pub digest: String,
    /// True when loaded from the compile cache.
    #[serde(default)]
    pub from_cache: bool,
    /// Milliseconds spent compiling or loading.
    #[serde(default)]
    pub load_ms: u128,
}

/// A slow test.
#[derive(Debug, Clone, Serialize)]
pub struct Slowest {
    /// Test id.
    pub test_id: String,
    /// Wall time of all its trials.
    pub wall_ms: u64,
    /// Its target, in a run over several targets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// The numbers of a finished run (`summary.json`).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// evalhost's version.
    pub evalhost_version: String,
    /// Suite name.
    pub suite: String,
    /// Target name.
    pub target: String,
    /// The run directory.
    pub run_dir: PathBuf,
    /// The results file.
    pub results: PathBuf,
    /// Tests the run planned.
    pub planned: usize,
    /// The counts.
    #[serde(flatten)]
    pub tally: Tally,
    /// True when Ctrl-C stopped the run.
    pub interrupted: bool,
    /// The five slowest tests.
    pub slowest: Vec<Slowest>,
    /// Every test's outcome, in suite order.
    pub tests: Vec<TestOutcome>,
    /// Plugins used.
    pub plugins: Vec<PluginSummary>,
    /// Wall time of the run, in milliseconds.
    pub duration_ms: u128,
    /// Every judge call of the run (LLM graders).
    pub judge: crate::results::usage::JudgeUsage,
    /// The suite's `before_all` and `after_all` hooks: output and errors.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub hooks: BTreeMap<String, crate::results::usage::HookRow>,
    /// Shards `merge --allow-partial` merged without: their tests did not
    /// run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing_shards: Vec<u32>,
    /// promptfoo's named and derived metrics, per prompt and target.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<crate::named_metrics::PromptMetrics>,
    /// This run in `evalhost view`, when a viewer is known (one running
    /// for the project, or `EVALHOST_VIEW_URL`): report.html links to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub viewer: Option<String>,
}

impl Summary {
    /// The summary of `rows`.
    #[allow(clippy::too_many_arguments)]
    pub fn new<R: outcome::Graded>(
        suite: &str,
        target: &str,
        run_dir: &Path,
        rows: &[R],
        planned: usize,
        plugins: Vec<PluginSummary>,
        took: Duration,
        interrupted: bool,
    ) -> Self {
        let tests = outcome::outcomes(rows);
        let tally = Tally::new(&tests, planned);
        let multi_target = tests.iter().any(|o| o.target != tests[0].target);
        let mut slowest: Vec<Slowest> = tests
            .iter()
            .map(|o| Slowest {
                test_id: o.test_id.clone(),
                wall_ms: o.wall_ms,
                target: multi_target.then(|| o.target.clone()),
            })
            .collect();
        slowest.sort_by(|a, b| b.wall_ms.cmp(&a.wall_ms).then(a.test_id.cmp(&b.test_id)));
        slowest.truncate(5);
        Self {
            evalhost_version: env!("CARGO_PKG_VERSION").into(),
            suite: suite.to_owned(),
            target: target.to_owned(),
            run_dir: run_dir.to_path_buf(),
            results: run_dir.join("results.jsonl"),
            planned,
            tally,
            interrupted,
            slowest,
            tests,
            plugins,
            duration_ms: took.as_millis(),
            judge: rows.iter().fold(
                crate::results::usage::JudgeUsage::default(),
                |mut total, r| {
                    total += r.judge();
                    total
                },
            ),
            hooks: BTreeMap::new(),
            missing_shards: Vec::new(),
            metrics: Vec::new(),
            viewer: None,
        }
    }
}

/// The plugins that graded `rows`, from their scores (for `merge`, which
/// has no registry).
pub fn plugins_of(rows: &[ResultRow]) -> Vec<PluginSummary> {
    let mut seen: BTreeMap<(String, String), PluginSummary> = BTreeMap::new();
    fn walk(
        scores: &[crate::results::ScoreRow],
        seen: &mut BTreeMap<(String, String), PluginSummary>,
    ) {
        for score in scores {
            if !score.plugin.is_empty() && !score.plugin_digest.is_empty() {
                seen.entry((score.plugin.clone(), score.plugin_digest.clone()))
                    .or_insert_with(|| PluginSummary {
                        name: score.plugin.clone(),
                        version: String::new(),
                        digest: score.plugin_digest.clone(),
                        from_cache: false,
                        load_ms: 0,
                    });
            }
            walk(&score.scores, seen);
        }
    }
    for row in rows {
        walk(&row.scores, &mut seen);
    }
    seen.into_values().collect()
}

/// What JUnit and GitHub annotations need of an unsuccessful test's last
/// row: its failed checks and where it was written.
#[derive(Debug, Clone, Default)]
pub struct RowDetails {
    /// The failed checks, one per line (the row's error first).
    pub checks: Vec<String>,
    /// Where the case is.
    pub source: Option<crate::results::SourceRef>,
}

/// Details by (test id, target).
pub type Details = BTreeMap<(String, String), RowDetails>;

/// Writes `summary.json`, `report.html` and the requested reporters, and
/// prints the terminal summary. Rows are read back from `results` one at a
/// time: the page keeps the tests it shows in full (failing ones first, at
/// most [`html::DETAILED_TESTS`]), the other reporters the failed checks of
/// unsuccessful tests.
pub fn write_all(
    summary: &Summary,
    results: &Path,
    reporters: &Reporters,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    write_summary(summary)?;
    write_pages(summary, results, reporters, out)
}

/// Writes `summary.json` into the run directory (what the results index
/// reads, with `run.json` and `results.jsonl`).
pub fn write_summary(summary: &Summary) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let path = summary.run_dir.join("summary.json");
    let file = crate::safe_fs::AtomicFile::create(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    serde_json::to_writer_pretty(&mut out, summary)?;
    out.write_all(b"\n")?;
    out.into_inner()
        .map_err(|e| e.into_error())?
        .commit()
        .with_context(|| format!("cannot write {}", path.display()))
}

/// [`write_all`] but `summary.json`: `report.html`, the exports the
/// reporters ask for, and the terminal summary.
pub fn write_pages(
    summary: &Summary,
    results: &Path,
    reporters: &Reporters,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let dir = &summary.run_dir;
    let page = html::Page::new(summary);
    let want_details =
        reporters.junit.is_some() || reporters.junit_suites.is_some() || reporters.github;
    let unsuccessful: std::collections::HashSet<(&str, &str)> = summary
        .tests
        .iter()
        .filter(|o| o.status != crate::results::Status::Passed)
        .map(|o| (o.test_id.as_str(), o.target.as_str()))
        .collect();
    let mut page_rows = Vec::new();
    let mut details = Details::new();
    let mut export_rows: Vec<crate::results::ResultRow> = Vec::new();
    if results.is_file() {
        // The page embeds rows as written; only the details of unsuccessful
        // rows, for JUnit and GitHub, need the rows built.
        crate::results::for_each_raw_row(results, |key, raw| {
            let pair = (key.test_id.as_str(), key.target.as_str());
            if want_details
                && unsuccessful.contains(&pair)
                && let Ok(row) = serde_json::from_str::<crate::results::ResultRow>(raw.get())
            {
                details.insert(
                    (row.test_id.clone(), row.target.clone()),
                    RowDetails {
                        checks: junit::failed_checks(&row),
                        source: row.source.clone(),
                    },
                );
            }
            if reporters.promptfoo_json.is_some()
                && let Ok(row) = serde_json::from_str::<crate::results::ResultRow>(raw.get())
            {
                export_rows.push(row);
            }
            if page.shows(pair) {
                page_rows.push(raw);
            }
        })
        .with_context(|| format!("cannot read {}", results.display()))?;
    }
    {
        let path = dir.join("report.html");
        let file = crate::safe_fs::AtomicFile::create(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        let mut out = std::io::BufWriter::new(file);
        page.render(&mut out, &page_rows)?;
        out.into_inner()
            .map_err(|e| e.into_error())?
            .commit()
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    drop(page_rows);
    if let Some(path) = &reporters.promptfoo_json {
        let doc = promptfoo_json::render(summary, &export_rows);
        let text = serde_json::to_string_pretty(&doc)?;
        crate::safe_fs::write_atomic(path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &reporters.junit {
        let xml = junit::render(summary, &details)?;
        std::fs::write(path, xml).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(suites) = &reporters.junit_suites {
        suites
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(junit::test_suites(summary, &details));
    }
    if reporters.github {
        // Workflow commands, written past the terminal filter (which stops
        // any value from starting one); after what `out` holds so far.
        out.flush()?;
        let mut stdout = std::io::stdout().lock();
        github::annotations(&mut stdout, summary, &details)?;
        stdout.flush()?;
        let markdown = github::step_summary(summary);
        crate::safe_fs::write_atomic(&dir.join("summary.md"), markdown.as_bytes())?;
        if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY") {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)?;
            file.write_all(markdown.as_bytes())?;
        }
    }
    terminal::print_summary(out, summary)?;
    if reporters.junit.is_some() || reporters.github {
        writeln!(out)?;
    }
    Ok(())
}
