//! `evalhost view` in a real browser: headless Chromium driven over the
//! DevTools protocol (`headless_chrome`) against the viewer on loopback.
//! The pages load without console errors; typing in the search box and
//! choosing a status change the rows shown (and the URL, so a link
//! reproduces the view); the comparison page shows the numbers `evalhost
//! compare --json` prints. Screenshots of each page are written to the
//! test's target directory. Without Chromium the test says so and stops,
//! unless `EVALHOST_REQUIRE_CHROMIUM` is set (as `.ci/run` sets it).

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use headless_chrome::protocol::cdp::Page::CaptureScreenshotFormatOption;
use headless_chrome::protocol::cdp::types::Event;
use headless_chrome::{Browser, LaunchOptions, Tab};
use serde_json::Value;

use crate::history::{answer, run, scored_project};
use crate::support::{evalhost, run_in};

/// Stops the viewer when the test ends, however it ends.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(project: &std::path::Path) -> (Served, String) {
    let mut child = evalhost()
        .args(["view", "--port", "0", "--project"])
        .arg(project)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = first
        .trim()
        .strip_prefix("evalhost view: ")
        .unwrap_or_else(|| panic!("no URL in {first:?}"))
        .to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    (Served(child), url)
}

/// Evaluates `js` and returns its value as JSON.
fn eval(tab: &Tab, js: &str) -> Value {
    tab.evaluate(&format!("JSON.stringify({js})"), false)
        .unwrap()
        .value
        .and_then(|v| v.as_str().map(|s| serde_json::from_str(s).unwrap()))
        .unwrap_or(Value::Null)
}

/// Waits until `js` is true.
fn until(tab: &Tab, js: &str, what: &str) {
    let start = Instant::now();
    while eval(tab, js) != Value::Bool(true) {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "timed out waiting for {what} ({js} is {}): {}",
            eval(tab, js),
            eval(tab, "document.body.innerHTML.slice(0, 3000)")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How many elements match `selector` and are shown.
fn shown(tab: &Tab, selector: &str) -> u64 {
    eval(
        tab,
        &format!(
            "Array.from(document.querySelectorAll({selector:?})).filter(e => e.offsetParent !== null).length"
        ),
    )
    .as_u64()
    .unwrap()
}

fn screenshot(tab: &Tab, name: &str) {
    let png = tab
        .capture_screenshot(CaptureScreenshotFormatOption::Png, None, None, true)
        .unwrap();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("viewer-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
}

#[test]
fn the_viewer_lists_filters_searches_and_compares_in_a_browser() {
    let Some(chromium) = crate::report_page::chromium() else {
        return;
    };
    // Two runs of twelve tests: t03, t07, t11 fail in the second, t05
    // recovers.
    let project = scored_project(12);
    let mut base = vec![10; 12];
    base[5] = 3;
    answer(&project, &base);
    run(&project);
    let mut cand = vec![10; 12];
    for i in [3, 7, 11] {
        cand[i] = 2;
    }
    answer(&project, &cand);
    run(&project);
    let cli: Value =
        serde_json::from_str(&run_in(project.path(), &["compare", "--last", "--json"]).stdout)
            .unwrap();
    let base_id = cli["base"]["id"].as_str().unwrap().to_owned();
    let cand_id = cli["candidate"]["id"].as_str().unwrap().to_owned();

    let (_served, url) = serve(project.path());
    let profile = tempfile::tempdir().unwrap();
    let browser = Browser::new(
        LaunchOptions::default_builder()
            .path(Some(chromium))
            .sandbox(false)
            .headless(true)
            .window_size(Some((1280, 900)))
            .user_data_dir(Some(profile.path().to_path_buf()))
            .idle_browser_timeout(Duration::from_secs(120))
            .build()
            .unwrap(),
    )
    .unwrap();
    let tab = browser.new_tab().unwrap();
    // Every console error, uncaught exception and failed load, on every page.
    let problems: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = problems.clone();
    tab.add_event_listener(Arc::new(move |event: &Event| {
        let problem = match event {
            Event::RuntimeExceptionThrown(e) => {
                Some(format!("exception: {:?}", e.params.exception_details.text))
            }
            Event::RuntimeConsoleAPICalled(e) => {
                let kind = format!("{:?}", e.params.Type);
                (kind == "Error" || kind == "Warning")
                    .then(|| format!("console.{kind}: {:?}", e.params.args))
            }
            Event::LogEntryAdded(e) => {
                let level = format!("{:?}", e.params.entry.level);
                (level == "Error" || level == "Warning")
                    .then(|| format!("log {level}: {}", e.params.entry.text))
            }
            _ => None,
        };
        if let Some(p) = problem {
            seen.lock().unwrap().push(p);
        }
    }))
    .unwrap();
    tab.enable_log().unwrap();
    tab.call_method(headless_chrome::protocol::cdp::Runtime::Enable(None))
        .unwrap();

    // Runs list: both runs, newest first, with the charts.
    tab.navigate_to(&url).unwrap();
    until(
        &tab,
        &format!("document.body.innerText.includes({cand_id:?})"),
        "the runs list",
    );
    assert!(
        eval(
            &tab,
            &format!("document.body.innerText.includes({base_id:?})")
        ) == Value::Bool(true)
    );
    until(
        &tab,
        "document.querySelectorAll('#chart-pass-rate circle.pt').length === 2",
        "the pass-rate chart",
    );
    screenshot(&tab, "runs");

    // A run: 12 rows; the search box and the status filter narrow them.
    tab.navigate_to(&format!("{url}#/run/{cand_id}")).unwrap();
    until(
        &tab,
        "document.querySelectorAll('tr.row').length === 12",
        "the run's rows",
    );
    assert_eq!(shown(&tab, "tr.row"), 12);
    tab.wait_for_element("#search").unwrap().click().unwrap();
    tab.type_str("t07").unwrap();
    until(
        &tab,
        "location.hash.includes('q=t07')",
        "the search in the URL",
    );
    assert_eq!(shown(&tab, "tr.row"), 1);
    assert_eq!(
        eval(
            &tab,
            "Array.from(document.querySelectorAll('tr.row')).filter(e => e.offsetParent !== null).map(e => e.dataset.testId)"
        ),
        serde_json::json!(["t07"])
    );
    screenshot(&tab, "run-search");
    // Cleared, then only the failed rows.
    eval(
        &tab,
        "(() => { const s = document.querySelector('#search'); s.value = ''; s.dispatchEvent(new Event('input', {bubbles: true})); return true; })()",
    );
    until(
        &tab,
        "Array.from(document.querySelectorAll('tr.row')).filter(e => e.offsetParent !== null).length === 12",
        "all rows again",
    );
    eval(
        &tab,
        "(() => { const s = document.querySelector('#status-filter'); s.value = 'failed'; s.dispatchEvent(new Event('change', {bubbles: true})); return true; })()",
    );
    until(
        &tab,
        "Array.from(document.querySelectorAll('tr.row')).filter(e => e.offsetParent !== null).length === 3",
        "the failed rows",
    );
    let failed = eval(
        &tab,
        "Array.from(document.querySelectorAll('tr.row')).filter(e => e.offsetParent !== null).map(e => e.dataset.testId + ':' + e.dataset.status)",
    );
    assert_eq!(
        failed,
        serde_json::json!(["t03:failed", "t07:failed", "t11:failed"])
    );
    // A link with the filter in it shows the same rows on load.
    let link = eval(&tab, "location.href").as_str().unwrap().to_owned();
    assert!(link.contains("status=failed"), "{link}");
    tab.navigate_to(&url).unwrap();
    until(
        &tab,
        &format!("document.body.innerText.includes({cand_id:?})"),
        "the runs list again",
    );
    tab.navigate_to(&link).unwrap();
    until(
        &tab,
        "Array.from(document.querySelectorAll('tr.row')).filter(e => e.offsetParent !== null).length === 3",
        "the filtered rows from the link",
    );
    screenshot(&tab, "run-failed");

    // A test's detail: its assertions and output.
    tab.navigate_to(&format!(
        "{url}#/run/{cand_id}/test/t03?target=default&trial=0"
    ))
    .unwrap();
    until(
        &tab,
        "!!document.querySelector('#detail') && document.querySelector('#detail').innerText.includes('w9')",
        "the detail",
    );
    let detail = eval(&tab, "document.querySelector('#detail').innerText")
        .as_str()
        .unwrap()
        .to_owned();
    assert!(detail.contains("contains"), "{detail}");
    screenshot(&tab, "detail");

    // The comparison: the CLI's numbers and flips.
    tab.navigate_to(&format!("{url}#/compare/{base_id}/{cand_id}"))
        .unwrap();
    until(
        &tab,
        "!!document.querySelector('#compare-verdict') && document.querySelectorAll('tr.compare-row').length === 12",
        "the comparison",
    );
    let verdict = eval(&tab, "document.querySelector('#compare-verdict').innerText")
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        verdict.starts_with(cli["summary"]["verdict"].as_str().unwrap()),
        "{verdict}"
    );
    let mean = cli["summary"]["mean_delta"].as_f64().unwrap();
    let shown_mean = eval(
        &tab,
        "document.querySelector('#compare-mean-delta').innerText",
    )
    .as_str()
    .unwrap()
    .to_owned();
    assert!(
        shown_mean.contains(&format!("{:.3}", mean.abs())),
        "{shown_mean} vs {mean}"
    );
    let ci = eval(&tab, "document.querySelector('#compare-ci').innerText")
        .as_str()
        .unwrap()
        .to_owned();
    for bound in ["low", "high"] {
        let v = cli["summary"]["ci"][bound].as_f64().unwrap();
        assert!(ci.contains(&format!("{:.3}", v.abs())), "{ci} lacks {v}");
    }
    let flips = eval(
        &tab,
        "Array.from(document.querySelectorAll('tr.compare-row')).filter(e => e.dataset.flip && e.dataset.flip !== 'none').map(e => e.dataset.testId + ' ' + e.dataset.flip).sort()",
    );
    assert_eq!(
        flips,
        serde_json::json!([
            "t03 pass->fail",
            "t05 fail->pass",
            "t07 pass->fail",
            "t11 pass->fail"
        ])
    );
    screenshot(&tab, "compare");

    // The trend page.
    tab.navigate_to(&format!("{url}#/trend/scored")).unwrap();
    until(
        &tab,
        "document.querySelectorAll('tr.trend-row').length === 12",
        "the trend",
    );
    screenshot(&tab, "trend");

    let problems = problems.lock().unwrap().clone();
    assert!(
        problems.is_empty(),
        "the pages logged problems: {problems:#?}"
    );
}

#[test]
fn a_run_while_a_viewer_runs_links_its_report_to_it() {
    let project = scored_project(2);
    answer(&project, &[10, 10]);
    run(&project);
    // No viewer: no link.
    let runs = |p: &std::path::Path| -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(p.join(".evalhost/runs"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        v.sort();
        v
    };
    let first = runs(project.path()).pop().unwrap();
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(first.join("summary.json")).unwrap())
            .unwrap();
    assert!(summary.get("viewer").is_none());
    let (_served, url) = serve(project.path());
    run(&project);
    let second = runs(project.path()).pop().unwrap();
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(second.join("summary.json")).unwrap())
            .unwrap();
    let id = second.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(summary["viewer"], format!("{url}#/run/{id}"));
    let page = std::fs::read_to_string(second.join("report.html")).unwrap();
    assert!(page.contains("viewer-link"));
    // The API knows that run.
    let body = ureq_get(&format!("{url}api/runs/{id}"));
    assert_eq!(body["run"]["id"], id);
}

/// A GET on loopback, as JSON (a plain socket: the test needs no client).
fn ureq_get(url: &str) -> Value {
    use std::io::{Read as _, Write as _};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut s = std::net::TcpStream::connect(host).unwrap();
    write!(s, "GET /{path} HTTP/1.0\r\nHost: {host}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let body = text.split_once("\r\n\r\n").unwrap().1;
    serde_json::from_str(body).unwrap()
}
