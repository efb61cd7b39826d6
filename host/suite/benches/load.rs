//! Loading benchmark: a suite whose `tests:` is a directory of 10,000
//! discovered case directories (`cases/<id>/case.yaml`), loaded with the
//! real loader. Prints the median of several loads and the time per case.
//!
//! Run with `cargo bench -p evalhost-suite --bench load` (set `EVALHOST_BENCH_CASES` to change
//! the number of cases).

use std::time::{Duration, Instant};

fn main() {
    let cases: usize = std::env::var("EVALHOST_BENCH_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("EVAL.yaml"),
        "name: bench\nassertions:\n  - type: is-json\ntests: ./cases/\n",
    )
    .unwrap();
    let generate = Instant::now();
    for i in 0..cases {
        let case = dir.path().join("cases").join(format!("case-{i:06}"));
        std::fs::create_dir_all(&case).unwrap();
        std::fs::write(
            case.join("case.yaml"),
            format!(
                "input: \"Question number {i}: what is the capital of France?\"\ncriteria: Names Paris.\n\
                 metadata:\n  difficulty: easy\n  index: {i}\nassertions:\n  - type: contains\n    value: Paris\n  \
                 - type: regex\n    value: \"\\\\bParis\\\\b\"\n"
            ),
        )
        .unwrap();
    }
    println!(
        "generated {cases} case directories in {:?}",
        generate.elapsed()
    );

    let eval = dir.path().join("EVAL.yaml");
    let mut times: Vec<Duration> = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let (suite, diags) = evalhost_suite::load(&eval);
        let took = start.elapsed();
        assert!(!diags.has_errors(), "{diags:?}");
        assert_eq!(suite.expect("loaded").tests.len(), cases);
        times.push(took);
    }
    times.sort();
    let median = times[times.len() / 2];
    println!(
        "load {cases} discovered cases: median {:.1} ms (min {:.1} ms, max {:.1} ms) = {:.1} µs per case",
        median.as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3,
        median.as_secs_f64() * 1e6 / cases as f64
    );
}
