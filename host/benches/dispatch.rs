//! Per-assertion dispatch: grading one `contains` and one `regex` assertion
//! through the sandboxed plugin, against the same check done natively in
//! Rust — the same plugin code (`plugins/text`, `plugins/regex`) compiled
//! for the host and called through the same SDK entry point the component
//! export uses: the config parsed from JSON, the check, the result built
//! (the regex plugin keeps its compiled patterns in both cases).
//!
//! Two parts, both in one run:
//! 1. divan's table of each operation (median and spread);
//! 2. the goal check: plugin and native timed in interleaved batches (so
//!    both see the same machine noise), and their ratio, against the goal
//!    of ≤ 10× in steady state.
//!
//! Run with `cargo bench --bench dispatch` (divan's own filters apply:
//! `cargo bench --bench dispatch -- contains`).

use std::hint::black_box;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use evalhost::plugin::bindings::evalhost::grader::types as wit;
use evalhost::plugin::{CallLimits, Grants, LoadedPlugin, PluginEngine, Registry};

const OUTPUT: &str = "The capital of France is Paris. It has been the capital since the \
                      tenth century, and it is also the country's largest city.";
const PATTERN: &str = r"\bParis\b";

struct Fixture {
    registry: Registry,
    _engine: Arc<PluginEngine>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let engine = evalhost::run::engine(false, 2).expect("engine");
        let registry = Registry::with_builtins(&engine).expect("built-in plugins");
        Fixture {
            registry,
            _engine: engine,
        }
    })
}

fn request(kind: &str, config: serde_json::Value) -> wit::GradeRequest {
    wit::GradeRequest {
        assertion_type: kind.into(),
        config_json: config.to_string(),
        test_id: "bench".into(),
        output: OUTPUT.into(),
        output_messages: Vec::new(),
        input: Vec::new(),
        expected_output: None,
        expected_messages: Vec::new(),
        criteria: None,
        metadata_json: "{}".into(),
        trace: wit::Trace {
            token_usage: None,
            cost_usd: None,
            duration_ms: None,
            llm_calls: None,
            file_changes: None,
        },
        workspace_path: None,
    }
}

fn plugin(kind: &str) -> &'static LoadedPlugin {
    fixture().registry.resolve(kind).expect("built-in type").0
}

fn grade(kind: &str, request: &wit::GradeRequest) -> f64 {
    let (result, _) = plugin(kind).grade(request, CallLimits::default(), Grants::default());
    result.expect("grades").score
}

use evalhost_plugin_sdk::__private::{WitGradeRequest, bindings::evalhost::grader::types as sdk};

/// The same request, as the guest sees it after lifting.
fn native_request(kind: &str, config: serde_json::Value) -> WitGradeRequest {
    WitGradeRequest {
        assertion_type: kind.into(),
        config_json: config.to_string(),
        test_id: "bench".into(),
        output: OUTPUT.into(),
        output_messages: Vec::new(),
        input: Vec::new(),
        expected_output: None,
        expected_messages: Vec::new(),
        criteria: None,
        metadata_json: "{}".into(),
        trace: sdk::Trace {
            token_usage: None,
            cost_usd: None,
            duration_ms: None,
            llm_calls: None,
            file_changes: None,
        },
        workspace_path: None,
    }
}

fn native_contains(req: &WitGradeRequest) -> f64 {
    evalhost_plugin_sdk::__private::grade::<evalhost_plugin_text::TextGrader>(req.clone())
        .map_or(0.0, |g| g.score)
}

fn native_regex(req: &WitGradeRequest) -> f64 {
    evalhost_plugin_sdk::__private::grade::<evalhost_plugin_regex::RegexGrader>(req.clone())
        .map_or(0.0, |g| g.score)
}

#[divan::bench]
fn contains_native(bencher: divan::Bencher) {
    let req = native_request("contains", serde_json::json!({"value": "Paris"}));
    bencher.bench(|| native_contains(black_box(&req)));
}

#[divan::bench]
fn contains_plugin(bencher: divan::Bencher) {
    let req = request("contains", serde_json::json!({"value": "Paris"}));
    bencher.bench(|| grade("contains", black_box(&req)));
}

#[divan::bench]
fn regex_native(bencher: divan::Bencher) {
    let req = native_request("regex", serde_json::json!({"value": PATTERN}));
    bencher.bench(|| native_regex(black_box(&req)));
}

#[divan::bench]
fn regex_plugin(bencher: divan::Bencher) {
    let req = request("regex", serde_json::json!({"value": PATTERN}));
    bencher.bench(|| grade("regex", black_box(&req)));
}

/// Median time per call of `f`, over interleaved batches with `g`.
fn interleaved(
    mut f: impl FnMut(),
    mut g: impl FnMut(),
    batch: usize,
    rounds: usize,
) -> (Duration, Duration) {
    let mut a = Vec::with_capacity(rounds);
    let mut b = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..batch {
            f();
        }
        a.push(start.elapsed() / batch as u32);
        let start = Instant::now();
        for _ in 0..batch {
            g();
        }
        b.push(start.elapsed() / batch as u32);
    }
    a.sort();
    b.sort();
    (a[rounds / 2], b[rounds / 2])
}

fn goal(name: &str, plugin: Duration, native: Duration) {
    let ratio = plugin.as_secs_f64() / native.as_secs_f64().max(1e-12);
    println!(
        "{name:<9} plugin {:>9.2} µs   native {:>9.3} µs   ratio {ratio:>7.1}×   goal ≤ 10×: {}",
        plugin.as_secs_f64() * 1e6,
        native.as_secs_f64() * 1e6,
        if ratio <= 10.0 { "met" } else { "NOT met" }
    );
}

fn main() {
    // Load (compile or read from the cache) before timing anything.
    let _ = fixture();
    divan::main();

    println!("\nper-assertion dispatch, steady state (interleaved batches, medians):");
    let contains = request("contains", serde_json::json!({"value": "Paris"}));
    let native = native_request("contains", serde_json::json!({"value": "Paris"}));
    assert_eq!(grade("contains", &contains), native_contains(&native));
    // Warm up both paths (instances, caches).
    for _ in 0..1000 {
        black_box(grade("contains", &contains));
    }
    let (p, n) = interleaved(
        || {
            black_box(grade("contains", black_box(&contains)));
        },
        || {
            black_box(native_contains(black_box(&native)));
        },
        2000,
        21,
    );
    goal("contains", p, n);
    let regex = request("regex", serde_json::json!({"value": PATTERN}));
    let native = native_request("regex", serde_json::json!({"value": PATTERN}));
    assert_eq!(grade("regex", &regex), native_regex(&native));
    for _ in 0..1000 {
        black_box(grade("regex", &regex));
    }
    let (p, n) = interleaved(
        || {
            black_box(grade("regex", black_box(&regex)));
        },
        || {
            black_box(native_regex(black_box(&native)));
        },
        2000,
        21,
    );
    goal("regex", p, n);
    inline_code();
}

/// The snippet both tools run.
const SNIPPET: &str = "output.includes('Paris') && output.length > 10";

/// promptfoo's inline `javascript`: evalhost's sandboxed Boa plugin, first
/// call (a fresh instance: instantiation, engine start, the snippet
/// compiled) and warm (a reused instance, the snippet compiled once),
/// beside promptfoo 0.121 running the same snippet in its own process
/// (`scripts/bench-promptfoo-code.mjs`, when node and promptfoo are there).
fn inline_code() {
    println!("\ninline code assertions, per call (medians):");
    let js = request(
        "promptfoo-javascript",
        serde_json::json!({"value": SNIPPET}),
    );
    assert_eq!(grade("promptfoo-javascript", &js), 1.0);
    // A workspace grant is part of the WASI context: each such call gets a
    // fresh instance, so this times a first call.
    let dir = tempfile::tempdir().expect("temp dir");
    let fresh = || {
        let grants = Grants {
            workspace: Some(dir.path().to_path_buf()),
            ..Grants::default()
        };
        let start = Instant::now();
        let (result, _) = plugin("promptfoo-javascript").grade(&js, CallLimits::default(), grants);
        assert_eq!(result.expect("grades").score, 1.0);
        start.elapsed()
    };
    let mut firsts: Vec<Duration> = (0..9).map(|_| fresh()).collect();
    firsts.sort();
    let first = firsts[4];
    for _ in 0..200 {
        black_box(grade("promptfoo-javascript", &js));
    }
    let mut rounds: Vec<Duration> = (0..11)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..500 {
                black_box(grade("promptfoo-javascript", black_box(&js)));
            }
            start.elapsed() / 500
        })
        .collect();
    rounds.sort();
    let warm = rounds[5];
    println!(
        "javascript  evalhost (Boa, sandboxed)  first {:>9.2} ms   warm {:>8.1} µs   goal < 1 ms warm: {}",
        first.as_secs_f64() * 1e3,
        warm.as_secs_f64() * 1e6,
        if warm < Duration::from_millis(1) {
            "met"
        } else {
            "NOT met"
        }
    );
    python_code(&dir);
    languages();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let script = root.join("scripts/bench-promptfoo-code.mjs");
    if !root
        .join("target/promptfoo/node_modules/promptfoo")
        .is_dir()
    {
        println!(
            "javascript  promptfoo 0.121: not installed (npm install promptfoo@0.121.20 in target/promptfoo to compare)"
        );
        return;
    }
    match std::process::Command::new("node").arg(&script).output() {
        Ok(out) if out.status.success() => {
            let line = String::from_utf8_lossy(&out.stdout);
            let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap_or_default();
            let (f, w) = (v["js_first_us"].as_f64(), v["js_warm_us"].as_f64());
            if let (Some(f), Some(w)) = (f, w) {
                println!(
                    "javascript  promptfoo 0.121 (new Function, in-process)  first {:>9.2} ms   warm {:>8.1} µs   evalhost / promptfoo warm: {:.2}×",
                    f / 1e3,
                    w,
                    warm.as_secs_f64() * 1e6 / w
                );
            }
        }
        Ok(out) => println!(
            "javascript  promptfoo 0.121: failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or_default()
        ),
        Err(e) => println!("javascript  promptfoo 0.121: node not found ({e})"),
    }
    match std::process::Command::new("node")
        .arg(&script)
        .arg("--python")
        .output()
    {
        Ok(out) if out.status.success() => {
            let v: serde_json::Value =
                serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim())
                    .unwrap_or_default();
            if let (Some(f), Some(w)) = (v["py_first_us"].as_f64(), v["py_warm_us"].as_f64()) {
                println!(
                    "python      promptfoo 0.121 (its Python worker)        first {:>9.2} ms   warm {:>8.1} µs",
                    f / 1e3,
                    w
                );
            }
        }
        _ => println!("python      promptfoo 0.121: did not run"),
    }
}

/// The same for promptfoo's `python`, in evalhost's CPython runner (built
/// with componentize-py when it is there).
fn python_code(dir: &tempfile::TempDir) {
    let bytes = match evalhost::run::python_runner() {
        Ok(b) => b,
        Err(why) => {
            println!("python      evalhost: not measured ({why})");
            return;
        }
    };
    let digest = evalhost::plugin::sha256_hex(&bytes);
    let started = Instant::now();
    let runner =
        LoadedPlugin::load_with_digest(&fixture()._engine, "python-runner", &bytes, &digest)
            .expect("the Python runner loads");
    let load = started.elapsed();
    let py = request(
        "promptfoo-python",
        serde_json::json!({"value": "'Paris' in output and len(output) > 10"}),
    );
    let call = |grants: Grants| {
        let start = Instant::now();
        let (result, _) = runner.grade(&py, CallLimits::default(), grants);
        assert_eq!(result.expect("grades").score, 1.0);
        start.elapsed()
    };
    let mut firsts: Vec<Duration> = (0..5)
        .map(|_| {
            call(Grants {
                workspace: Some(dir.path().to_path_buf()),
                ..Grants::default()
            })
        })
        .collect();
    firsts.sort();
    for _ in 0..50 {
        call(Grants::default());
    }
    let mut rounds: Vec<Duration> = (0..11)
        .map(|_| (0..100).map(|_| call(Grants::default())).sum::<Duration>() / 100)
        .collect();
    rounds.sort();
    println!(
        "python      evalhost (CPython, sandboxed)  load {:>7.0} ms   first {:>9.2} ms   warm {:>8.1} µs   goal < 1 ms warm: {}",
        load.as_secs_f64() * 1e3,
        firsts[2].as_secs_f64() * 1e3,
        rounds[5].as_secs_f64() * 1e6,
        if rounds[5] < Duration::from_millis(1) {
            "met"
        } else {
            "NOT met"
        }
    );
}

/// One grader, three languages: the scaffolds `evalhost plugin new` writes
/// in Rust, Python and TypeScript (the same rule), built by
/// `scripts/bench-languages.sh` and named in `EVALHOST_BENCH_PLUGINS`
/// (`TYPE=PATH,…`). Load (compile, or the compile cache), first call (a
/// fresh instance) and warm call, per component.
fn languages() {
    let Ok(list) = std::env::var("EVALHOST_BENCH_PLUGINS") else {
        println!(
            "\none grader, three languages: not measured (scripts/bench-languages.sh builds them)"
        );
        return;
    };
    println!("\none grader, three languages (medians):");
    for item in list.split(',').filter(|i| !i.is_empty()) {
        let Some((kind, path)) = item.split_once('=') else {
            continue;
        };
        let bytes = std::fs::read(path).expect("the component");
        let digest = evalhost::plugin::sha256_hex(&bytes);
        let started = Instant::now();
        let plugin = LoadedPlugin::load_with_digest(&fixture()._engine, kind, &bytes, &digest)
            .expect("it loads");
        let load = started.elapsed();
        let req = request(kind, serde_json::json!({"value": "paris"}));
        let call = || {
            let start = Instant::now();
            let (result, _) = plugin.grade(&req, CallLimits::default(), Grants::default());
            assert_eq!(result.expect("grades").score, 1.0);
            start.elapsed()
        };
        let first = call();
        for _ in 0..50 {
            call();
        }
        let mut rounds: Vec<Duration> = (0..11)
            .map(|_| (0..100).map(|_| call()).sum::<Duration>() / 100)
            .collect();
        rounds.sort();
        println!(
            "{kind:<14} {:>6.1} MB   load {:>8.1} ms   first {:>8.2} ms   warm {:>8.1} µs",
            bytes.len() as f64 / 1e6,
            load.as_secs_f64() * 1e3,
            first.as_secs_f64() * 1e3,
            rounds[5].as_secs_f64() * 1e6
        );
    }
}
