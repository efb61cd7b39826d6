//! Inputs the fuzzers (`scripts/fuzz.sh`) once crashed on, and seeds, are
//! replayed through the same calls on every test run: the loaders must
//! return diagnostics or errors, never panic.

use std::path::Path;

use crate::support::root;

fn inputs(target: &str) -> Vec<std::path::PathBuf> {
    let dir = root().join("fuzz/regressions").join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn replay(dir: &Path, name: &str, data: &[u8]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    path
}

#[test]
fn suite_loader_regressions_do_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let files = inputs("suite_loader");
    assert!(
        !files.is_empty(),
        "fuzz/regressions/suite_loader has no inputs"
    );
    for file in files {
        let data = std::fs::read(&file).unwrap();
        for name in ["EVAL.yaml", "EVAL.jsonl"] {
            let path = replay(dir.path(), name, &data);
            let (_suite, diags) = evalhost::suite::load(&path);
            for d in &diags.0 {
                let _ = d.to_string();
            }
        }
    }
}

#[test]
fn results_reader_regressions_do_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let files = inputs("results_reader");
    assert!(
        !files.is_empty(),
        "fuzz/regressions/results_reader has no inputs"
    );
    for file in files {
        let data = std::fs::read(&file).unwrap();
        let _ = serde_json::from_slice::<evalhost::results::ResultRow>(&data);
        let path = replay(dir.path(), "results.jsonl", &data);
        let _ = evalhost::results::read_rows(&path);
        let _ = evalhost::results::for_each_row(&path, |_| {});
        let _ = evalhost::results::repair_torn_tail(&path);
        if let Ok(mut writer) = evalhost::results::ResultsWriter::create(dir.path()) {
            let _ = writer.sort_in_place();
        }
    }
}
