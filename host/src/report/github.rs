//! GitHub Actions (`--reporter github`): an `::error` annotation per
//! unsuccessful test, placed on the line of the case in its file, and a
//! Markdown step summary (appended to `$GITHUB_STEP_SUMMARY`, and written to
//! `summary.md` in the run directory).

use std::io::Write;

use super::{Details, Summary};

/// Escapes a workflow-command property value.
fn property(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
        .replace(':', "%3A")
        .replace(',', "%2C")
}

/// Escapes a workflow-command message.
fn message(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Prints the annotations.
pub fn annotations(
    out: &mut dyn Write,
    summary: &Summary,
    details: &Details,
) -> std::io::Result<()> {
    for outcome in summary.tests.iter().filter(|o| !o.status.is_success()) {
        let row = details.get(&(outcome.test_id.clone(), outcome.target.clone()));
        let mut location = String::new();
        if let Some(source) = row.and_then(|r| r.source.as_ref()) {
            location.push_str(&format!("file={}", property(&source.file)));
            if let Some(line) = source.line {
                location.push_str(&format!(",line={line}"));
            }
            location.push(',');
        }
        let title = format!(
            "{} {} [{}]",
            outcome.test_id,
            outcome.status.as_str(),
            outcome
                .failure_class
                .map_or_else(String::new, |c| c.to_string())
        );
        let details = row.map(|r| r.checks.clone()).unwrap_or_default();
        let body = format!(
            "score {:.2} (threshold {:.2})\n{}",
            outcome.score,
            outcome.threshold,
            details.join("\n")
        );
        writeln!(
            out,
            "::error {location}title={}::{}",
            property(&title),
            message(&body)
        )?;
    }
    Ok(())
}

/// The step summary, as Markdown.
pub fn step_summary(summary: &Summary) -> String {
    let t = &summary.tally;
    let icon = if t.all_passed() { "✅" } else { "❌" };
    let mut md = format!(
        "### {icon} evalhost · `{}` on `{}`\n\n| passed | failed | errors | expected failures | unexpected passes | not run | pass rate | mean score |\n|---|---|---|---|---|---|---|---|\n| {} | {} | {} | {} | {} | {} | {:.0}% | {:.2} |\n\n",
        summary.suite,
        summary.target,
        t.passed,
        t.failed,
        t.errors,
        t.expected_failed,
        t.unexpected_passed,
        t.not_run,
        t.pass_rate * 100.0,
        t.mean_score
    );
    let failing: Vec<_> = summary
        .tests
        .iter()
        .filter(|o| !o.status.is_success())
        .collect();
    if !failing.is_empty() {
        md.push_str("| test | status | class | score |\n|---|---|---|---|\n");
        for o in failing.iter().take(50) {
            md.push_str(&format!(
                "| `{}` | {} | {} | {:.2} |\n",
                o.test_id.replace('|', "\\|"),
                o.status.as_str(),
                o.failure_class.map_or_else(String::new, |c| c.to_string()),
                o.score
            ));
        }
        if failing.len() > 50 {
            md.push_str(&format!("\n…and {} more.\n", failing.len() - 50));
        }
    }
    md
}
