//! `report.html` as a browser shows it: the page is rendered by headless
//! Chromium (`--dump-dom` runs its script) and the DOM is checked. Chromium
//! is not part of a fresh machine: without it these tests say so and check
//! only the page's data; `.ci/run` installs it and sets
//! `EVALHOST_REQUIRE_CHROMIUM=1`, which makes its absence a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::Project;

pub(crate) fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(name))
                    .find(|p| p.is_file())
            })
        });
    if found.is_none() {
        assert!(
            std::env::var_os("EVALHOST_REQUIRE_CHROMIUM").is_none(),
            "EVALHOST_REQUIRE_CHROMIUM is set but no chromium is on PATH"
        );
        eprintln!("report_page: no chromium on PATH; the rendered page is not checked");
    }
    found
}

/// The page's DOM after its script ran.
fn rendered(browser: &Path, page: &Path) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.canonicalize().unwrap().display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Issue 16.10: every collapsed row of a test that did not pass says why
/// (the gate, the target's error, the first failing check); each test shows
/// its tags and `file:line`; a tag filter and a search over inputs and
/// outputs exist; a target error is shown with its message instead of an
/// empty assertion table; an `equals` shows expected against actual.
#[test]
fn the_report_answers_why_at_a_glance() {
    let project = Project::with_mock("We open at 9 on Saturday");
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: mock, response: We open at 9 on Saturday}\n  - name: broken\n    provider: cli\n    command: \"echo 'agent crashed: no API key' >&2; exit 3\"\n    max_retries: 0\n",
    )
    .unwrap();
    project.write(
        "EVAL.yaml",
        "execution:\n  targets: [default, broken]\ntests:\n  - id: exact-hours\n    tags: [hours, smoke]\n    input: When do you open on Saturday?\n    assertions:\n      - {type: equals, value: We open at 10 on Saturday}\n  - id: gated\n    tags: [billing]\n    input: How much is the premium plan?\n    assertions:\n      - {type: contains, value: Lyon, required: true}\n      - {type: contains, value: open}\n",
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let page = project.path().join("out/report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    // The controls are on the page whatever renders it.
    assert!(html.contains(r#"<select id="tag""#), "tag filter");
    assert!(html.contains("Search ids, inputs and outputs"));
    let Some(browser) = chromium() else { return };
    let dom = rendered(&browser, &page);
    // Collapsed rows say why.
    assert!(
        dom.contains(r#"<span class="reason" title="required assertion `contains-Lyon` scored 0.00 &lt; 0.80: test score set to 0">"#),
        "{dom}"
    );
    assert!(
        dom.contains(
            r#"<span class="reason" title="equals-We open at 10 on Saturday: Output does not equal"#
        ),
        "{dom}"
    );
    assert!(
        dom.contains(
            r#"<span class="reason" title="error: agent crashed: no API key (exit code 3)">"#
        ),
        "{dom}"
    );
    // Tags, source, the tag filter's options.
    assert!(dom.contains(r#"<span class="tag">smoke</span>"#), "{dom}");
    assert!(dom.contains("EVAL.yaml:4 · tags: hours, smoke"), "{dom}");
    assert!(
        dom.contains(r#"<option value="billing">billing</option>"#),
        "{dom}"
    );
    // Search covers inputs and outputs.
    assert!(
        dom.contains("how much is the premium plan?"),
        "the search text holds the input: {dom}"
    );
    // A target error: its message, no empty assertion table.
    assert!(
        dom.contains("<h3>target error</h3><pre>agent crashed: no API key (exit code 3)</pre>"),
        "{dom}"
    );
    assert!(
        dom.contains("No assertion ran: there was no output to grade."),
        "{dom}"
    );
    // Expected against actual.
    assert!(
        dom.contains(r#"<div class="diff"><span class="del">- We open at 10 on Saturday</span><span class="add">+ We open at 9 on Saturday</span></div>"#),
        "{dom}"
    );
}

/// A conversation's page shows every message of it, the replies included,
/// not only the last reply.
#[test]
fn a_conversation_shows_its_messages() {
    let project = Project::with_mock("Thirty.");
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: chat\n    mode: conversation\n    input: [{role: system, content: Be brief.}]\n    turns:\n      - input: What is 15% of 200?\n        assertions: [{type: contains, value: Sixty}]\n      - input: Double it.\n",
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let Some(browser) = chromium() else { return };
    let dom = rendered(&browser, &project.path().join("out/report.html"));
    assert!(
        dom.contains("<h3>conversation</h3><div class=\"role\">system</div><pre>Be brief.</pre><div class=\"role\">user</div><pre>What is 15% of 200?</pre><div class=\"role\">assistant</div><pre>Thirty.</pre><div class=\"role\">user</div><pre>Double it.</pre>"),
        "{dom}"
    );
}
