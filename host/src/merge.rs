//! `evalhost merge DIR... -o DIR`: combines the run directories of the shards
//! of one run into one — results in suite order, summary, report, and
//! optionally JUnit — so a suite split across CI jobs (`--shard K/N`) ends in
//! one report, as if it had run on one machine.
//!
//! A shard's directory comes from another machine and is not trusted: each
//! must hold a `run.json` that agrees with the others on the whole plan
//! (which tests, which targets, how many trials, the threshold), the shards
//! must be distinct and, unless `--allow-partial`, complete; and every row
//! must belong to its own shard's slice of that plan, hold scores in
//! [0, 1], a status its score and threshold allow, and plugin digests that
//! agree across shards (and with this evalhost's built-in plugins). A row
//! that breaks a rule is refused with its directory and line, and nothing
//! is merged.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::outcome::Tally;
use crate::plan::Shard;
use crate::report::{self, Reporters, Summary};
use crate::results::{self, ResultRow, ResultsWriter};
use crate::run::{RecordedPlan, RunRecord};

/// How `merge` was asked to merge.
#[derive(Debug, Clone, Default)]
pub struct MergeOptions {
    /// `--allow-partial`: merge even when shards are missing.
    pub allow_partial: bool,
}

/// One shard, read and checked.
struct ShardDir {
    dir: PathBuf,
    record: RunRecord,
    shard: Shard,
}

fn read_shard(dir: &Path) -> Result<ShardDir, String> {
    let record = crate::run::read_record(dir).map_err(|e| e.to_string())?;
    let shard = match record.shard.as_deref() {
        Some(s) => s
            .parse::<Shard>()
            .map_err(|e| format!("{}: {e}", dir.join("run.json").display()))?,
        None => Shard { index: 1, count: 1 },
    };
    if record.plan.is_none() {
        return Err(format!(
            "{} does not record its plan (it was written by an older evalhost): run the shards again with this version",
            dir.join("run.json").display()
        ));
    }
    Ok(ShardDir {
        dir: dir.to_path_buf(),
        record,
        shard,
    })
}

/// The fields of two shards' `run.json` that must agree.
fn disagreement(a: &RunRecord, b: &RunRecord) -> Option<&'static str> {
    if a.plan != b.plan {
        Some("plan (tests, targets, trials)")
    } else if a.threshold != b.threshold {
        Some("threshold")
    } else if a.targets != b.targets {
        Some("targets")
    } else if a.test_ids != b.test_ids || a.tags != b.tags || a.only != b.only {
        Some("test filters")
    } else {
        None
    }
}

/// Checks the shard set: one plan, one N, distinct K, none missing unless
/// allowed. Returns the indices of the missing shards.
fn check_set(shards: &[ShardDir], options: &MergeOptions) -> Result<Vec<u32>, String> {
    let first = &shards[0];
    let mut seen: BTreeMap<u32, &Path> = BTreeMap::new();
    for s in shards {
        if s.shard.count != first.shard.count {
            return Err(format!(
                "{} is shard {} but {} is shard {}: merge the shards of one run",
                s.dir.display(),
                s.shard,
                first.dir.display(),
                first.shard
            ));
        }
        if let Some(what) = disagreement(&first.record, &s.record) {
            return Err(format!(
                "{} and {} disagree on the {what}: they are not shards of one run",
                first.dir.display(),
                s.dir.display()
            ));
        }
        if let Some(other) = seen.insert(s.shard.index, &s.dir) {
            return Err(format!(
                "shard {} appears twice: {} and {}",
                s.shard,
                other.display(),
                s.dir.display()
            ));
        }
    }
    let missing: Vec<u32> = (1..=first.shard.count)
        .filter(|k| !seen.contains_key(k))
        .collect();
    if !missing.is_empty() && !options.allow_partial {
        return Err(format!(
            "shard(s) {} of {} missing: merge every shard, or pass --allow-partial to merge these and report the rest as not run",
            missing
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            first.shard.count
        ));
    }
    Ok(missing)
}

/// The built-in plugins' digests, by name.
fn builtin_digests() -> HashMap<&'static str, String> {
    crate::builtin::plugins()
        .iter()
        .map(|(name, _, digest)| (*name, (*digest).to_owned()))
        .collect()
}

/// Checks one row against its shard's slice of `plan`; `Ok` gives its key.
fn check_row(
    row: &ResultRow,
    plan: &RecordedPlan,
    positions: &HashMap<(usize, &str, &str), usize>,
    shard: Shard,
) -> Result<(), String> {
    let Some(&position) =
        positions.get(&(row.test_index, row.test_id.as_str(), row.target.as_str()))
    else {
        return Err(format!(
            "test `{}` (index {}) on target `{}` is not in the run's plan",
            row.test_id, row.test_index, row.target
        ));
    };
    let entry = &plan.tests[position];
    // In u64, as the plan assigns shards: a key past u32 is not cut.
    let key = entry.shard_key_at(position) as u64;
    if key % u64::from(shard.count) != u64::from(shard.index - 1) {
        return Err(format!(
            "test `{}` on target `{}` belongs to shard {}/{}, not to this shard ({shard})",
            row.test_id,
            row.target,
            key % u64::from(shard.count) + 1,
            shard.count
        ));
    }
    if let Some(threshold) = entry.threshold
        && row.threshold.is_none_or(|t| (t - threshold).abs() > 1e-12)
    {
        return Err(format!(
            "test `{}` was held to threshold {}, but the run's plan says {threshold}",
            row.test_id,
            row.threshold.map_or("none".to_owned(), |t| t.to_string())
        ));
    }
    if row.expected_fail != entry.expected_fail {
        return Err(format!(
            "test `{}` says expected_fail: {}, but the run's plan says {}",
            row.test_id, row.expected_fail, entry.expected_fail
        ));
    }
    row.check_trials(plan.trials, plan.strategy)
        .map_err(|e| format!("test `{}` {e}", row.test_id))?;
    row.check()
        .map_err(|e| format!("test `{}`: {e}", row.test_id))
}

/// Every (plugin, digest) a row's scores name.
fn digests<'a>(scores: &'a [results::ScoreRow], out: &mut Vec<(&'a str, &'a str)>) {
    for s in scores {
        if !s.plugin.is_empty() {
            out.push((&s.plugin, &s.plugin_digest));
        }
        digests(&s.scores, out);
    }
}

/// The plugin digests a row names: each a sha256, a built-in's this
/// build's own (when the shard ran this version), and the same plugin's the
/// same in every shard (`known`: the first digest seen, and where).
fn check_digests(
    row: &ResultRow,
    s: &ShardDir,
    builtins: &HashMap<&'static str, String>,
    known: &mut BTreeMap<String, (String, PathBuf)>,
) -> Result<(), String> {
    let mut named = Vec::new();
    digests(&row.scores, &mut named);
    for (plugin, digest) in named {
        if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!(
                "refused {}: test `{}` names plugin `{plugin}` with digest {digest:?}, which is not a sha256",
                s.dir.display(),
                row.test_id
            ));
        }
        if s.record.evalhost_version == env!("CARGO_PKG_VERSION")
            && let Some(own) = builtins.get(plugin)
            && own != digest
        {
            return Err(format!(
                "refused {}: test `{}` says the built-in plugin `{plugin}` has digest {digest}, but evalhost {}'s is {own}",
                s.dir.display(),
                row.test_id,
                env!("CARGO_PKG_VERSION")
            ));
        }
        match known.get(plugin) {
            Some((first, dir)) if first != digest => {
                return Err(format!(
                    "refused {}: plugin `{plugin}` has digest {digest} there but {first} in {}: the shards did not grade with the same plugins",
                    s.dir.display(),
                    dir.display()
                ));
            }
            Some(_) => {}
            None => {
                known.insert(plugin.to_owned(), (digest.to_owned(), s.dir.clone()));
            }
        }
    }
    Ok(())
}

/// Merges `dirs` into `output`. The inner `Err` is a usage problem or a
/// refused shard: nothing is written then.
pub fn merge(
    dirs: &[PathBuf],
    output: &Path,
    options: &MergeOptions,
    reporters: &Reporters,
    history: &dyn crate::run::History,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Result<Tally, String>> {
    let mut shards = Vec::new();
    for dir in dirs {
        match read_shard(dir) {
            Ok(s) => shards.push(s),
            Err(e) => return Ok(Err(e)),
        }
    }
    let missing = match check_set(&shards, options) {
        Ok(m) => m,
        Err(e) => return Ok(Err(e)),
    };
    let plan = shards[0].record.plan.clone().unwrap_or_default();
    let positions: HashMap<(usize, &str, &str), usize> = plan
        .tests
        .iter()
        .enumerate()
        .map(|(i, t)| ((t.index, t.id.as_str(), t.target.as_str()), i))
        .collect();
    let builtins = builtin_digests();
    let mut plugin_digests: BTreeMap<String, (String, PathBuf)> = BTreeMap::new();
    let mut rows: BTreeMap<(usize, String, String, u32), (ResultRow, PathBuf)> = BTreeMap::new();
    let mut suite: Option<(String, PathBuf)> = None;
    let mut duration_ms = 0u128;
    // What only the shards' summaries hold: the suite-level hooks each shard
    // ran, and whether the run had named metrics to count again.
    let mut hooks: std::collections::BTreeMap<String, crate::results::usage::HookRow> =
        Default::default();
    let mut had_metrics = false;
    for s in &shards {
        let results = s.dir.join("results.jsonl");
        let mut line = 0usize;
        let mut refused: Option<String> = None;
        let mut shard_rows = Vec::new();
        let read = results::for_each_line(&results, |parsed| {
            line += 1;
            if refused.is_some() {
                return;
            }
            match parsed {
                Ok(row) => match check_row(&row, &plan, &positions, s.shard) {
                    Ok(()) => shard_rows.push(row),
                    Err(e) => refused = Some(format!("{}:{line}: {e}", results.display())),
                },
                Err(e) => {
                    refused = Some(format!(
                        "{}:{line}: not a result row ({e})",
                        results.display()
                    ));
                }
            }
        });
        if let Err(e) = read {
            return Ok(Err(format!(
                "{} is not a run directory ({}: {e})",
                s.dir.display(),
                results.display()
            )));
        }
        if let Some(e) = refused {
            return Ok(Err(format!("refused {}: {e}", s.dir.display())));
        }
        if let Ok(text) = crate::safe_fs::read_text_capped(&s.dir.join("summary.json"), 64 << 20)
            && let Ok(summary) = serde_json::from_str::<serde_json::Value>(&text)
        {
            duration_ms = duration_ms.max(u128::from(summary["duration_ms"].as_u64().unwrap_or(0)));
            had_metrics |= summary["metrics"].as_array().is_some_and(|m| !m.is_empty());
            if let Ok(shard_hooks) = serde_json::from_value::<
                std::collections::BTreeMap<String, crate::results::usage::HookRow>,
            >(summary["hooks"].clone())
            {
                for (name, hook) in shard_hooks {
                    hooks.entry(name).or_insert(hook);
                }
            }
        }
        for row in shard_rows {
            match &suite {
                Some((name, dir)) if *name != row.suite => {
                    return Ok(Err(format!(
                        "{} holds results of suite `{}`, but {} of `{name}`: merge the shards of one run",
                        s.dir.display(),
                        row.suite,
                        dir.display()
                    )));
                }
                None => suite = Some((row.suite.clone(), s.dir.clone())),
                _ => {}
            }
            if let Err(e) = check_digests(&row, s, &builtins, &mut plugin_digests) {
                return Ok(Err(e));
            }
            let key = (
                row.test_index,
                row.test_id.clone(),
                row.target.clone(),
                row.trial.unwrap_or(1),
            );
            if let Some((_, other)) = rows.get(&key) {
                return Ok(Err(format!(
                    "refused {}: test `{}` on target `{}` (trial {}) appears twice (also in {})",
                    s.dir.display(),
                    key.1,
                    key.2,
                    key.3,
                    other.display()
                )));
            }
            rows.insert(key, (row, s.dir.clone()));
        }
    }
    if let Some(version) = shards
        .iter()
        .map(|s| &s.record.evalhost_version)
        .find(|v| *v != env!("CARGO_PKG_VERSION"))
    {
        writeln!(
            err,
            "warning: shards were run by evalhost {}, this is {}: built-in plugin digests were not checked against this build",
            crate::text::shown(version),
            env!("CARGO_PKG_VERSION")
        )?;
    }
    let rows: Vec<ResultRow> = rows.into_values().map(|(r, _)| r).collect();
    if let Err(e) = crate::safe_fs::check_dir(output, &[&std::env::current_dir()?]) {
        return Ok(Err(format!("the output directory: {e}")));
    }
    std::fs::create_dir_all(output)
        .with_context(|| format!("cannot create {}", output.display()))?;
    let results_path = output.join("results.jsonl");
    if std::fs::symlink_metadata(&results_path).is_ok() {
        std::fs::remove_file(&results_path)?;
    }
    let mut writer = ResultsWriter::create(output)?;
    writer.rewrite_in_order(&rows)?;
    // Every target of the run, in its order (as the run reports them).
    let record = &shards[0].record;
    let target = if record.targets.is_empty() {
        record.target.clone()
    } else {
        record.targets.join(", ")
    };
    let planned = plan.tests.len();
    let mut summary = Summary::new(
        suite.as_ref().map_or("", |(s, _)| s.as_str()),
        &target,
        output,
        &rows,
        planned.max(crate::outcome::outcomes(&rows).len()),
        report::plugins_of(&rows),
        std::time::Duration::from_millis(duration_ms as u64),
        false,
    );
    summary.missing_shards = missing.clone();
    summary.hooks = hooks;
    // promptfoo's named and derived metrics, counted again over every
    // shard's rows (a derived metric is no sum of the shards').
    if had_metrics {
        let loaded =
            evalhost_suite::dialect::Dialect::parse(record.dialect.as_deref().unwrap_or_default())
                .map(|d| crate::suite::load::load_as(&record.eval, true, Some(d)).0);
        match loaded.flatten() {
            Some(suite) => summary.metrics = crate::named_metrics::compute(&suite, &results_path),
            None => writeln!(
                err,
                "warning: the named metrics of the shards were not counted again: the suite {} could not be read; `summary.json` has none",
                record.eval.display()
            )?,
        }
    }
    writeln!(
        out,
        "merged {} run director{} into {}",
        dirs.len(),
        if dirs.len() == 1 { "y" } else { "ies" },
        output.display()
    )?;
    if !missing.is_empty() {
        writeln!(
            err,
            "warning: --allow-partial: shard(s) {} of {} are missing; their tests count as not run",
            missing
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            shards[0].shard.count
        )?;
    }
    drop(rows);
    // A `run.json`, so that the merged run is a run: `compare`, `runs
    // show` and the viewer take it, and the project's history holds it
    // (not only its shards, as partial runs).
    let merged = crate::run::RunRecord {
        shard: None,
        merged_from: shards
            .iter()
            .map(|s| std::path::absolute(&s.dir).unwrap_or_else(|_| s.dir.clone()))
            .collect(),
        started_at: shards
            .iter()
            .map(|s| s.record.started_at.clone())
            .min()
            .unwrap_or_default(),
        ..record.clone()
    };
    crate::safe_fs::write_atomic(
        &output.join("run.json"),
        (serde_json::to_string_pretty(&merged)? + "\n").as_bytes(),
    )?;
    report::write_all(&summary, &results_path, reporters, out)?;
    if let Some(line) = history.record(
        &crate::run::runs_base(&evalhost_suite::roots::Roots::for_eval(&record.eval)),
        output,
    ) {
        writeln!(err, "{line}")?;
    }
    Ok(Ok(summary.tally))
}
