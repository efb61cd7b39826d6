//! Beyond one machine (issue 36): `--shard auto` in a real Slurm job array
//! on a one-node cluster started here (`scripts/slurm-local.sh`), merged
//! back into exactly the single-machine result; a failed array task named
//! by `merge`.
//!
//! Where Slurm cannot start (not installed, not root) the test says so and
//! passes; with `EVALHOST_REQUIRE_SLURM=1` (set by `.ci/run` where it
//! installed Slurm) its absence is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{Project, Run};

/// A cluster started for one test, stopped when dropped.
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Jobs first: a cancelled array leaves no task behind.
        let _ = Command::new("scancel")
            .env("SLURM_CONF", &self.conf)
            .args(["--user", "root"])
            .output();
        let _ = Command::new(script())
            .args(["stop"])
            .arg(self.dir.path())
            .output();
    }
}

fn script() -> PathBuf {
    crate::support::root().join("scripts/slurm-local.sh")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A one-node cluster, or `None` (with why, on stderr) where it cannot
/// start and it is not required.
fn cluster() -> Option<Cluster> {
    let required = std::env::var_os("EVALHOST_REQUIRE_SLURM").is_some();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(script())
        .arg("start")
        .arg(dir.path())
        .arg(free_port().to_string())
        .arg(free_port().to_string())
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let conf = dir.path().join("slurm.conf");
            Some(Cluster { dir, conf })
        }
        other => {
            let why = match other {
                Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
                Err(e) => e.to_string(),
            };
            assert!(
                !required,
                "EVALHOST_REQUIRE_SLURM is set but the cluster did not start: {why}"
            );
            eprintln!(
                "skipped: a local Slurm cluster cannot start here ({})",
                why.trim()
            );
            None
        }
    }
}

const SUITE: &str = r#"name: sharded
tests:
  - {id: t01, input: q, assertions: [{type: contains, value: Paris}]}
  - {id: t02, input: q, assertions: [{type: contains, value: London}]}
  - {id: t03, input: q, assertions: [{type: regex, value: "^The"}]}
  - {id: t04, input: q, assertions: [{type: equals, value: "The capital is Paris."}]}
  - {id: t05, input: q, assertions: [{type: icontains, value: paris}, {type: contains, value: Rome}]}
  - {id: t06, input: q, assertions: [{type: contains, value: capital}]}
  - {id: t07, input: q, assertions: [{type: not-contains, value: Paris}]}
  - {id: t08, input: q, assertions: [{type: regex, value: "\\.$"}]}
  - {id: t09, input: q, assertions: [{type: contains, value: is}]}
  - {id: t10, input: q, assertions: [{type: contains, value: Berlin}]}
  - {id: t11, input: q, assertions: [{type: icontains, value: THE}]}
"#;

/// (test id, status, score, every assertion's name and score), in id order.
fn verdicts(dir: &Path) -> Vec<(String, String, String, String)> {
    let text = std::fs::read_to_string(dir.join("results.jsonl")).unwrap();
    let mut rows: Vec<(String, String, String, String)> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| {
            let scores: Vec<String> = r["scores"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| format!("{}={}", s["name"], s["score"]))
                .collect();
            (
                r["test_id"].as_str().unwrap().to_owned(),
                r["status"].as_str().unwrap().to_owned(),
                r["score"].to_string(),
                scores.join(","),
            )
        })
        .collect();
    rows.sort();
    rows
}

/// Submits a 4-task array running `body` (a shell script run in the
/// project) and waits for it; the exit code of `sbatch --wait`.
fn array(cluster: &Cluster, project: &Project, body: &str) -> i32 {
    let job = project.write("job.sh", &format!("#!/bin/sh\n{body}\n"));
    std::fs::create_dir_all(project.path().join("logs")).unwrap();
    let out = Command::new("sbatch")
        .env("SLURM_CONF", &cluster.conf)
        .env("EVALHOST", env!("CARGO_BIN_EXE_evalhost"))
        .env("EVALHOST_CACHE_DIR", crate::support::shared_cache())
        .args(["--wait", "--array=1-4", "--chdir"])
        .arg(project.path())
        .arg("--output")
        .arg(project.path().join("logs/task-%a.txt"))
        .arg(&job)
        .output()
        .expect("sbatch runs");
    out.status.code().unwrap_or(-1)
}

fn logs(project: &Project) -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir(project.path().join("logs")).unwrap() {
        let path = entry.unwrap().path();
        all += &format!(
            "--- {}\n{}",
            path.display(),
            std::fs::read_to_string(&path).unwrap_or_default()
        );
    }
    all
}

#[test]
fn a_slurm_array_with_shard_auto_merges_to_the_single_machine_result() {
    let Some(cluster) = cluster() else {
        return;
    };
    let project = Project::with_mock("The capital is Paris.");
    project.write("EVAL.yaml", SUITE);
    let single: Run =
        crate::support::run_in(project.path(), &["run", "EVAL.yaml", "-o", "single", "-q"]);
    assert_eq!(
        single.code, 1,
        "some tests fail on purpose: {}{}",
        single.stdout, single.stderr
    );

    // Each task runs its slice; 1 (tests failed) is a finished task.
    let code = array(
        &cluster,
        &project,
        "\"$EVALHOST\" run EVAL.yaml -o \"shards/$SLURM_ARRAY_TASK_ID\" --shard auto -q; code=$?; [ $code -le 1 ] || exit $code",
    );
    assert_eq!(code, 0, "the array ran: {}", logs(&project));
    let log = logs(&project);
    for k in 1..=4 {
        assert!(
            log.contains(&format!("shard {k}/4 from the Slurm job array (SLURM_ARRAY_TASK_ID={k}, SLURM_ARRAY_TASK_MIN=1")),
            "each task says where its slice came from: {log}"
        );
    }
    let merged = crate::support::run_in(
        project.path(),
        &[
            "merge", "shards/1", "shards/2", "shards/3", "shards/4", "-o", "merged",
        ],
    );
    assert_eq!(merged.code, 1, "{}{}", merged.stdout, merged.stderr);
    let whole = verdicts(&project.path().join("single"));
    assert_eq!(whole.len(), 11);
    assert_eq!(verdicts(&project.path().join("merged")), whole);
    // Every shard held a part: 11 tests over 4 shards.
    for k in 1..=4 {
        let n = verdicts(&project.path().join(format!("shards/{k}"))).len();
        assert!((2..=3).contains(&n), "shard {k} ran {n} tests");
    }
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("merged/summary.json")).unwrap(),
    )
    .unwrap();
    let single_summary: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("single/summary.json")).unwrap(),
    )
    .unwrap();
    for key in ["passed", "failed", "errors", "pass_rate", "mean_score"] {
        assert_eq!(summary[key], single_summary[key], "{key}");
    }
}

#[test]
fn a_failed_array_task_is_named_by_merge() {
    let Some(cluster) = cluster() else {
        return;
    };
    let project = Project::with_mock("The capital is Paris.");
    project.write("EVAL.yaml", SUITE);
    // Task 3 dies before it runs (a node lost, a job killed).
    let code = array(
        &cluster,
        &project,
        "[ \"$SLURM_ARRAY_TASK_ID\" = 3 ] && exit 9\n\"$EVALHOST\" run EVAL.yaml -o \"shards/$SLURM_ARRAY_TASK_ID\" --shard auto -q; code=$?; [ $code -le 1 ] || exit $code",
    );
    assert_ne!(
        code,
        0,
        "sbatch --wait reports the failed task: {}",
        logs(&project)
    );
    let dirs: Vec<String> = (1..=4)
        .map(|k| format!("shards/{k}"))
        .filter(|d| project.path().join(d).is_dir())
        .collect();
    assert_eq!(dirs, ["shards/1", "shards/2", "shards/4"]);
    let mut args = vec!["merge"];
    args.extend(dirs.iter().map(String::as_str));
    args.extend(["-o", "merged"]);
    let merged = crate::support::run_in(project.path(), &args);
    assert_eq!(merged.code, 2, "{}{}", merged.stdout, merged.stderr);
    assert!(
        merged.stderr.contains("shard(s) 3 of 4 missing"),
        "{}",
        merged.stderr
    );
}
