//! `evalhost merge DIR... -o DIR`: combines the run directories of the shards
//! of one run into one — results in suite order, summary, report, and
//! optionally JUnit — so a suite split across CI jobs (`--shard K/N`) ends in
//! one report, as if it had run on one machine.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::outcome::Tally;
use crate::report::{self, Reporters, Summary};
use crate::results::{self, ResultRow, ResultsWriter};

/// Merges `dirs` into `output`. The inner `Err` is a usage problem (a
/// directory that is not a run, shards of different suites).
pub fn merge(
    dirs: &[PathBuf],
    output: &Path,
    reporters: &Reporters,
    err: &mut dyn Write,
) -> anyhow::Result<Result<Tally, String>> {
    let mut rows: BTreeMap<(usize, String, String, u32), ResultRow> = BTreeMap::new();
    let mut planned = 0;
    let mut suite: Option<String> = None;
    let mut duration_ms = 0u128;
    for dir in dirs {
        let results = dir.join("results.jsonl");
        let (dir_rows, dropped) = match results::read_rows(&results) {
            Ok(r) => r,
            Err(e) => {
                return Ok(Err(format!(
                    "{} is not a run directory ({}: {e})",
                    dir.display(),
                    results.display()
                )));
            }
        };
        if dropped > 0 {
            writeln!(
                err,
                "warning: {dropped} damaged line(s) in {} were skipped",
                results.display()
            )?;
        }
        if let Ok(text) = std::fs::read_to_string(dir.join("summary.json"))
            && let Ok(summary) = serde_json::from_str::<serde_json::Value>(&text)
        {
            planned += summary["planned"].as_u64().unwrap_or(0) as usize;
            duration_ms = duration_ms.max(u128::from(summary["duration_ms"].as_u64().unwrap_or(0)));
        }
        for row in dir_rows {
            match &suite {
                Some(name) if *name != row.suite => {
                    return Ok(Err(format!(
                        "{} holds results of suite `{}`, not `{name}`: merge the shards of one run",
                        dir.display(),
                        row.suite
                    )));
                }
                None => suite = Some(row.suite.clone()),
                _ => {}
            }
            let key = (
                row.test_index,
                row.test_id.clone(),
                row.target.clone(),
                row.trial.unwrap_or(1),
            );
            if rows.insert(key, row).is_some() {
                writeln!(
                    err,
                    "warning: a row appears in more than one directory; the last one is kept"
                )?;
            }
        }
    }
    let rows: Vec<ResultRow> = rows.into_values().collect();
    std::fs::create_dir_all(output)
        .with_context(|| format!("cannot create {}", output.display()))?;
    let results_path = output.join("results.jsonl");
    if results_path.exists() {
        std::fs::remove_file(&results_path)?;
    }
    let mut writer = ResultsWriter::create(output)?;
    writer.rewrite_in_order(&rows)?;
    let target = rows.first().map(|r| r.target.clone()).unwrap_or_default();
    let summary = Summary::new(
        suite.as_deref().unwrap_or_default(),
        &target,
        output,
        &rows,
        planned.max(crate::outcome::outcomes(&rows).len()),
        None,
        std::time::Duration::from_millis(duration_ms as u64),
        false,
    );
    let mut summary = summary;
    summary.plugins = report::plugins_of(&rows);
    writeln!(
        err,
        "merged {} run director{} into {}",
        dirs.len(),
        if dirs.len() == 1 { "y" } else { "ies" },
        output.display()
    )?;
    drop(rows);
    report::write_all(&summary, &results_path, reporters, err)?;
    Ok(Ok(summary.tally))
}
