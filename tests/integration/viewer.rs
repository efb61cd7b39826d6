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

/// Headless Chromium with one tab, and every console error, uncaught
/// exception and failed load on it collected.
#[allow(clippy::type_complexity)]
fn open_browser(
    chromium: std::path::PathBuf,
) -> (
    tempfile::TempDir,
    Browser,
    Arc<Tab>,
    Arc<Mutex<Vec<String>>>,
) {
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
    (profile, browser, tab, problems)
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
    let (_profile, _browser, tab, problems) = open_browser(chromium);

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

/// Sets a `<select>` or an `<input>` and fires its event, as a user would.
fn set(tab: &Tab, selector: &str, value: &str, event: &str) {
    eval(
        tab,
        &format!(
            "(() => {{ const e = document.querySelector({selector:?}); e.value = {value:?}; e.dispatchEvent(new Event({event:?}, {{bubbles: true}})); return true; }})()"
        ),
    );
}

/// What clicking the export button `id` would download, as text: the Blob
/// handed to `URL.createObjectURL`, read back.
fn exported(tab: &Tab, id: &str) -> String {
    eval(
        tab,
        "(() => { window.__blobs = []; const f = URL.createObjectURL; URL.createObjectURL = (b) => { window.__blobs.push(b); return f(b); }; return true; })()",
    );
    eval(
        tab,
        &format!("(() => {{ document.getElementById({id:?}).click(); return true; }})()"),
    );
    let text = tab
        .evaluate("window.__blobs[window.__blobs.length - 1].text()", true)
        .unwrap()
        .value
        .unwrap();
    text.as_str().unwrap().to_owned()
}

/// promptfoo's view, in evalhost's (issue 37.4): a promptfoo config of two
/// prompts × two providers shows as a grid of outputs, a row per test and a
/// column per prompt × provider with its pass rate; the filters narrow rows
/// and columns; a click shows the cell's assertions; the shown rows export
/// as CSV and JSON; two runs compare with their outputs side by side and a
/// diff; a run of part of the suite is marked.
#[test]
fn the_output_grid_filters_details_exports_and_compares_outputs() {
    let Some(chromium) = crate::report_page::chromium() else {
        return;
    };
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    let config = |second: &str| {
        format!(
            "description: greetings\nprompts:\n  - 'Say {{{{word}}}} to {{{{who}}}}'\n  - id: short\n    label: short\n    raw: '{second}'\nproviders: [echo, {{id: echo, label: echo-b}}]\ntests:\n  - description: hello\n    vars: {{word: hello, who: Ann}}\n    assert: [{{type: starts-with, value: Say}}, {{type: icontains, value: '{{{{word}}}}'}}]\n  - description: goodbye\n    vars: {{word: goodbye, who: Bob}}\n    assert: [{{type: starts-with, value: Say}}]\n  - description: thanks\n    vars: {{word: thanks, who: Cy}}\n    assert: [{{type: icontains, value: '{{{{who}}}}'}}]\n"
        )
    };
    let write =
        |text: &str| std::fs::write(project.path().join("promptfooconfig.yaml"), text).unwrap();
    write(&config("{{word}}!"));
    let first = run_in(project.path(), &["run", "promptfooconfig.yaml"]);
    assert_eq!(first.code, 1, "{}{}", first.stdout, first.stderr);
    write(&config("{{word}}, {{who}}?"));
    let second = run_in(project.path(), &["run", "promptfooconfig.yaml"]);
    assert_eq!(second.code, 1, "{}{}", second.stdout, second.stderr);
    // A run of part of the suite.
    let part = run_in(
        project.path(),
        &["run", "promptfooconfig.yaml", "--test-id", "hello*"],
    );
    assert_eq!(part.code, 1, "{}{}", part.stdout, part.stderr);
    let list: Value =
        serde_json::from_str(&run_in(project.path(), &["runs", "list", "--json"]).stdout).unwrap();
    let ids: Vec<String> = list["runs"]
        .as_array()
        .or_else(|| list.as_array())
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    // Newest first.
    let (part_id, cand_id, base_id) = (ids[0].clone(), ids[1].clone(), ids[2].clone());

    let (_served, url) = serve(project.path());
    let (_profile, _browser, tab, problems) = open_browser(chromium);

    // The grid: 3 tests × (2 prompts × 2 providers).
    tab.navigate_to(&format!("{url}#/run/{cand_id}/grid"))
        .unwrap();
    until(
        &tab,
        "document.querySelectorAll('#output-grid tr.g-row').length === 3",
        "the grid's rows",
    );
    assert_eq!(shown(&tab, "#output-grid th.g-col"), 4);
    let heads = eval(
        &tab,
        "Array.from(document.querySelectorAll('#output-grid th.g-col')).map(e => e.innerText.replace(/\\s+/g, ' ').trim())",
    );
    let heads: Vec<String> = serde_json::from_value(heads).unwrap();
    assert!(
        heads
            .iter()
            .filter(|h| h.contains("Say {{word}} to {{who}}"))
            .count()
            == 2
            && heads.iter().filter(|h| h.contains("short")).count() == 2
            && heads.iter().filter(|h| h.contains("echo-b")).count() == 2,
        "{heads:?}"
    );
    // The first prompt passes everywhere; `short` fails the starts-with
    // tests (hello, goodbye) and passes thanks.
    assert!(
        heads
            .iter()
            .filter(|h| h.contains("3/3 tests passed"))
            .count()
            == 2
            && heads
                .iter()
                .filter(|h| h.contains("1/3 tests passed"))
                .count()
                == 2,
        "{heads:?}"
    );
    let failed_cells = eval(
        &tab,
        "document.querySelectorAll('#output-grid td.g-cell.fail').length",
    );
    assert_eq!(failed_cells, 4);
    let cell_text = eval(
        &tab,
        "document.querySelector('#output-grid tr.g-row[data-test=\"hello\"] td.g-cell').innerText",
    );
    assert!(
        cell_text.as_str().unwrap().contains("Say hello to Ann"),
        "{cell_text}"
    );
    screenshot(&tab, "grid");

    // A click on a failing cell: its assertions, with the check that failed.
    eval(
        &tab,
        "(() => { document.querySelector('#output-grid tr.g-row[data-test=\"hello\"] td.g-cell.fail').click(); return true; })()",
    );
    until(
        &tab,
        "!document.querySelector('#cell-detail').hidden",
        "the cell's detail",
    );
    let detail = eval(&tab, "document.querySelector('#cell-detail').innerText")
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        detail.contains("starts-with") && detail.contains("hello, Ann?") && detail.contains("✗"),
        "{detail}"
    );
    screenshot(&tab, "grid-detail");

    // Filters: the rows with a failure, one prompt's columns, a search.
    set(&tab, "#grid-show", "failures", "change");
    until(
        &tab,
        "document.querySelectorAll('#output-grid tr.g-row').length === 2",
        "the rows with a failure",
    );
    set(&tab, "#grid-prompt", "short", "change");
    until(
        &tab,
        "document.querySelectorAll('#output-grid th.g-col').length === 2",
        "one prompt's columns",
    );
    set(&tab, "#search", "goodbye", "input");
    until(
        &tab,
        "document.querySelectorAll('#output-grid tr.g-row').length === 1",
        "the search",
    );
    let hash = eval(&tab, "location.hash").as_str().unwrap().to_owned();
    assert!(
        hash.contains("show=failures")
            && hash.contains("prompt=short")
            && hash.contains("q=goodbye"),
        "{hash}"
    );
    // Export what is shown: one test × two columns.
    let csv = exported(&tab, "export-csv");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(
        lines[0].starts_with("test,test_id,prompt,target,trial,status,score,output"),
        "{csv}"
    );
    assert!(
        lines[1].contains("goodbye,goodbye @short,short,echo,0,failed,0"),
        "{csv}"
    );
    assert!(
        csv.contains("\"goodbye, Bob?\""),
        "quoted as CSV quotes a comma: {csv}"
    );
    let json: Value = serde_json::from_str(&exported(&tab, "export-json")).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 2, "{json}");
    assert_eq!(json[1]["target"], "echo-b");
    assert_eq!(json[0]["failed_assertions"], "starts-with");

    // The run's table exports its shown rows too.
    tab.navigate_to(&format!("{url}#/run/{cand_id}?status=failed"))
        .unwrap();
    until(
        &tab,
        "Array.from(document.querySelectorAll('tr.row')).filter(e => e.offsetParent !== null).length === 4",
        "the failed rows",
    );
    let csv = exported(&tab, "export-csv");
    assert_eq!(csv.lines().count(), 5, "{csv}");
    assert!(csv.lines().skip(1).all(|l| l.contains(",failed,")), "{csv}");

    // Two runs: the outputs side by side, the changed ones with a diff.
    tab.navigate_to(&format!("{url}#/compare/{base_id}/{cand_id}"))
        .unwrap();
    until(
        &tab,
        "document.querySelectorAll('#side-table tr.side-row').length === 12",
        "the outputs side by side",
    );
    assert_eq!(
        eval(
            &tab,
            "document.querySelectorAll('#side-table tr.side-row.changed').length"
        ),
        6
    );
    eval(
        &tab,
        "(() => { const c = document.querySelector('#changed-outputs'); c.checked = true; c.dispatchEvent(new Event('change', {bubbles: true})); return true; })()",
    );
    until(
        &tab,
        "document.querySelectorAll('#side-table tr.side-row').length === 6",
        "only the changed outputs",
    );
    let row = eval(
        &tab,
        "document.querySelector('#side-table tr.side-row[data-test-id=\"hello @short\"]').innerText",
    )
    .as_str()
    .unwrap()
    .to_owned();
    assert!(
        row.contains("hello!")
            && row.contains("hello, Ann?")
            && row.contains("- hello!")
            && row.contains("+ hello, Ann?"),
        "{row}"
    );
    eval(
        &tab,
        "(() => { document.querySelector('#side-by-side').scrollIntoView(); return true; })()",
    );
    screenshot(&tab, "compare-outputs");

    // A partial run says so on its pages.
    tab.navigate_to(&format!("{url}#/run/{part_id}/grid"))
        .unwrap();
    until(
        &tab,
        "!!document.querySelector('#partial-note') && document.querySelectorAll('#output-grid tr.g-row').length === 1",
        "the partial run's note",
    );
    let note = eval(&tab, "document.querySelector('#partial-note').innerText")
        .as_str()
        .unwrap()
        .to_owned();
    assert!(note.contains("partial"), "{note}");
    screenshot(&tab, "grid-partial");

    let problems = problems.lock().unwrap().clone();
    assert!(
        problems.is_empty(),
        "the pages logged problems: {problems:#?}"
    );
}

/// Issue 48, item 3: two runs on different targets compared in the viewer
/// — every output changed, and said so; no "not in base"; each test link
/// opens the test in its run (it opened "no row", and the side-by-side
/// counted "0 of 2 outputs changed").
#[test]
fn compare_across_targets_shows_each_runs_own_outputs() {
    let Some(chromium) = crate::report_page::chromium() else {
        return;
    };
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    std::fs::create_dir_all(project.path().join(".evalhost")).unwrap();
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: old, provider: mock, response: Refunds are not possible.}\n  - {name: new, provider: mock, response: Our refund window is 30 days.}\n",
    )
    .unwrap();
    std::fs::write(
        project.path().join("EVAL.yaml"),
        "name: support\ntests:\n  - {id: refund, input: q, assertions: [{type: contains, value: 30 days}]}\n  - {id: window, input: q, assertions: [{type: contains, value: window}]}\n",
    )
    .unwrap();
    for target in ["old", "new"] {
        let r = run_in(project.path(), &["run", "EVAL.yaml", "--target", target]);
        assert!(r.code <= 1, "{}{}", r.stdout, r.stderr);
    }
    let list: Value =
        serde_json::from_str(&run_in(project.path(), &["runs", "list", "--json"]).stdout).unwrap();
    let ids: Vec<String> = list["runs"]
        .as_array()
        .or_else(|| list.as_array())
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    let (cand_id, base_id) = (ids[0].clone(), ids[1].clone());
    let (_served, url) = serve(project.path());
    let (_profile, _browser, tab, problems) = open_browser(chromium);
    tab.navigate_to(&format!("{url}#/compare/{base_id}/{cand_id}"))
        .unwrap();
    until(
        &tab,
        "document.querySelectorAll('#side-table tr.side-row').length === 2",
        "the outputs side by side",
    );
    let count = eval(&tab, "document.querySelector('#side-count').innerText");
    assert!(
        count.as_str().unwrap().contains("2 of 2 outputs changed"),
        "{count}"
    );
    let table = eval(&tab, "document.querySelector('#side-table').innerText")
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        !table.contains("not in base") && !table.contains("not in candidate"),
        "{table}"
    );
    assert!(
        table.contains("Refunds are not possible.")
            && table.contains("Our refund window is 30 days."),
        "{table}"
    );
    screenshot(&tab, "compare-across-targets");
    // The test link opens the test in the candidate run.
    let href = eval(
        &tab,
        "document.querySelector('#side-table tr.side-row a').getAttribute('href')",
    );
    tab.navigate_to(&format!("{url}{}", href.as_str().unwrap()))
        .unwrap();
    until(
        &tab,
        "document.body.innerText.includes('Our refund window is 30 days.') || document.body.innerText.includes('no row')",
        "the test page",
    );
    let body = eval(&tab, "document.body.innerText")
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!body.contains("no row"), "{body}");
    let problems = problems.lock().unwrap().clone();
    assert!(
        problems.is_empty(),
        "the pages logged problems: {problems:#?}"
    );
}

/// Issue 48, item 9 (and review B6): after `--repeat`, the grid counts
/// tests by their combined outcome — the run page's number — never trials
/// ("2/3 passed" for a test that failed), and its cell says how many
/// trials passed and that the output shown is the last trial's.
#[test]
fn the_grid_after_repeat_counts_tests_as_the_run_does() {
    let Some(chromium) = crate::report_page::chromium() else {
        return;
    };
    let served = std::sync::atomic::AtomicUsize::new(0);
    let server = crate::support::FakeServer::start_fn(move |_| {
        let n = served.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        crate::support::Reply::chat(if n % 3 == 1 { "Bonjour" } else { "Hello world" })
    });
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    std::fs::write(
        project.path().join("promptfooconfig.yaml"),
        "prompts: ['Greet']\nproviders: [openai:gpt-4o-mini]\ntests:\n  - description: english\n    assert: [{type: contains, value: Hello}]\n",
    )
    .unwrap();
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("OPENAI_API_KEY", "sk-loopback")
        .args(["run", "promptfooconfig.yaml", "--repeat", "3"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let list: Value =
        serde_json::from_str(&run_in(project.path(), &["runs", "list", "--json"]).stdout).unwrap();
    let id = list["runs"].as_array().or_else(|| list.as_array()).unwrap()[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_served, url) = serve(project.path());
    let (_profile, _browser, tab, problems) = open_browser(chromium);
    tab.navigate_to(&format!("{url}#/run/{id}/grid")).unwrap();
    until(
        &tab,
        "document.querySelectorAll('#output-grid tr.g-row').length === 1",
        "the grid",
    );
    let head = eval(
        &tab,
        "document.querySelector('#output-grid thead').innerText",
    )
    .as_str()
    .unwrap()
    .to_owned();
    assert!(head.contains("0/1 tests passed"), "{head}");
    let cell = eval(
        &tab,
        "document.querySelector('#output-grid td.g-cell').innerText",
    )
    .as_str()
    .unwrap()
    .to_owned();
    assert!(
        cell.contains("2/3 trials passed") && cell.contains("last trial"),
        "{cell}"
    );
    screenshot(&tab, "grid-repeat");
    let problems = problems.lock().unwrap().clone();
    assert!(
        problems.is_empty(),
        "the pages logged problems: {problems:#?}"
    );
}
