//! Data-driven fixtures: every directory under `tests/fixtures/` is one
//! test. Its `fixture.yaml` says how to run `evalhost` there and what must
//! come out:
//!
//! ```yaml
//! about: what the fixture shows            # required, one line
//! args: [run, EVAL.yaml]                   # default; `run` gets `-o <tmp>`
//! env: {NAME: value}                       # extra environment
//! exit: 0                                  # expected exit code
//! stderr: ["substring", ...]               # each must appear in stderr
//! not_stderr: ["substring", ...]           # none may appear
//! stdout: ["substring", ...]               # results and the summary
//! not_stdout: ["substring", ...]
//! results:                                 # rows of results.jsonl, in order;
//!   - {test_id: a, execution_status: ok}   # each listed key must match
//! ```
//!
//! Set `EVALHOST_FIXTURE_FILTER=name` to run one; failures print the whole
//! stderr and the rows.

use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::Value;

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("tests/fixtures");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("tests/fixtures exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("fixture.yaml").is_file())
        .collect();
    dirs.sort();
    let trials = dirs
        .into_iter()
        .map(|dir| {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            Trial::test(name, move || run_fixture(&dir))
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

fn run_fixture(dir: &Path) -> Result<(), Failed> {
    let spec_text = std::fs::read_to_string(dir.join("fixture.yaml")).map_err(|e| e.to_string())?;
    let spec: Value = yaml_serde::from_str(&spec_text).map_err(|e| format!("fixture.yaml: {e}"))?;
    if spec.get("about").and_then(Value::as_str).is_none() {
        return Err("fixture.yaml needs `about:`".into());
    }
    let mut args: Vec<String> = match spec.get("args") {
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_owned())
            .collect(),
        _ => vec!["run".into(), "EVAL.yaml".into()],
    };
    let out = tempfile::tempdir().map_err(|e| e.to_string())?;
    if args.first().map(String::as_str) == Some("run") {
        args.push("-o".into());
        args.push(out.path().display().to_string());
    }
    let mut command = Command::new(env!("CARGO_BIN_EXE_evalhost"));
    command.current_dir(dir).args(&args).env(
        "EVALHOST_CACHE_DIR",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("compile-cache"),
    );
    if let Some(Value::Object(env)) = spec.get("env") {
        for (k, v) in env {
            command.env(k, v.as_str().unwrap_or_default());
        }
    }
    let output = command.output().map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let code = output.status.code().unwrap_or(-1);
    let rows: Vec<Value> = std::fs::read_to_string(out.path().join("results.jsonl"))
        .map(|t| {
            t.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_default();
    let context = || {
        format!(
            "\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}\n--- rows ---\n{}",
            serde_json::to_string_pretty(&rows).unwrap()
        )
    };

    let expected_exit = spec.get("exit").and_then(Value::as_i64).unwrap_or(0);
    if i64::from(code) != expected_exit {
        return Err(format!("exit code {code}, expected {expected_exit}{}", context()).into());
    }
    for needle in strings(&spec, "stderr") {
        if !stderr.contains(&needle) {
            return Err(format!("stderr lacks {needle:?}{}", context()).into());
        }
    }
    for needle in strings(&spec, "not_stderr") {
        if stderr.contains(&needle) {
            return Err(format!("stderr has {needle:?}{}", context()).into());
        }
    }
    for needle in strings(&spec, "stdout") {
        if !stdout.contains(&needle) {
            return Err(format!("stdout lacks {needle:?}{}", context()).into());
        }
    }
    for needle in strings(&spec, "not_stdout") {
        if stdout.contains(&needle) {
            return Err(format!("stdout has {needle:?}{}", context()).into());
        }
    }
    if let Some(Value::Array(expected)) = spec.get("results") {
        if expected.len() != rows.len() {
            return Err(format!(
                "{} rows, expected {}{}",
                rows.len(),
                expected.len(),
                context()
            )
            .into());
        }
        for (i, (want, got)) in expected.iter().zip(&rows).enumerate() {
            if let Err(path) = subset(want, got, String::new()) {
                return Err(format!("row {i}: mismatch at `{path}`{}", context()).into());
            }
        }
    }
    Ok(())
}

fn strings(spec: &Value, key: &str) -> Vec<String> {
    match spec.get(key) {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// Every key of `want` is in `got` with a matching value; lists match
/// element by element and must have the same length; numbers compare as f64.
fn subset(want: &Value, got: &Value, path: String) -> Result<(), String> {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                let p = format!("{path}.{k}");
                match g.get(k) {
                    Some(gv) => subset(wv, gv, p)?,
                    None if wv.is_null() => {}
                    None => return Err(p),
                }
            }
            Ok(())
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => w
            .iter()
            .zip(g)
            .enumerate()
            .try_for_each(|(i, (wv, gv))| subset(wv, gv, format!("{path}[{i}]"))),
        (Value::Number(w), Value::Number(g))
            if (w.as_f64().unwrap() - g.as_f64().unwrap()).abs() < 1e-9 =>
        {
            Ok(())
        }
        (w, g) if w == g => Ok(()),
        _ => Err(path),
    }
}
