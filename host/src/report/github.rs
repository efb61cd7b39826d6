//! GitHub Actions (`--reporter github`): an `::error` annotation per
//! unsuccessful test, placed on the line of the case in its file, and a
//! Markdown step summary (appended to `$GITHUB_STEP_SUMMARY`, and written to
//! `summary.md` in the run directory).

use std::io::Write;

use super::{Details, Summary};

/// Escapes a workflow-command property value: the runner's own escapes
/// for `%`, CR, LF, `:` and `,`, and every other control character made
/// visible ([`crate::text::shown`]).
fn property(text: &str) -> String {
    escape(text, true)
}

/// Escapes a workflow-command message.
fn message(text: &str) -> String {
    escape(text, false)
}

fn escape(text: &str, property: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut buf = [0u8; 4];
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            ':' if property => out.push_str("%3A"),
            ',' if property => out.push_str("%2C"),
            c => out.push_str(&crate::text::shown(c.encode_utf8(&mut buf))),
        }
    }
    out
}

/// Text for the step summary's Markdown: one line, every control character
/// visible, HTML's `<`, `>` and `&` as entities (no comment, tag or entity
/// of the text's own survives), and every ASCII punctuation character
/// backslash-escaped (no emphasis, link, heading, table cell or code span
/// of its own either). GitHub renders it as the literal text.
pub fn markdown_text(text: &str) -> String {
    let flat = crate::text::shown(text);
    let mut out = String::with_capacity(flat.len() + 8);
    for c in flat.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            c if c.is_ascii_punctuation() => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A file as GitHub attaches annotations to it: relative to
/// `$GITHUB_WORKSPACE`, else to the git root above it, whatever directory
/// evalhost ran in; unchanged when it is outside both.
pub fn workspace_path(file: &str) -> String {
    let path = std::path::Path::new(file);
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let absolute = absolute.canonicalize().unwrap_or(absolute);
    let base = std::env::var_os("GITHUB_WORKSPACE")
        .map(std::path::PathBuf::from)
        .map(|w| w.canonicalize().unwrap_or(w))
        .filter(|w| absolute.starts_with(w))
        .or_else(|| {
            absolute
                .ancestors()
                .skip(1)
                .find(|d| d.join(".git").exists())
                .map(std::path::Path::to_path_buf)
        });
    match base.and_then(|b| {
        absolute
            .strip_prefix(&b)
            .ok()
            .map(std::path::Path::to_path_buf)
    }) {
        Some(relative) => relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        None => file.to_owned(),
    }
}

/// Prints the annotations.
pub fn annotations(
    out: &mut dyn Write,
    summary: &Summary,
    details: &Details,
) -> std::io::Result<()> {
    let multi_target = summary
        .tests
        .iter()
        .any(|o| o.target != summary.tests[0].target);
    for outcome in summary.tests.iter().filter(|o| !o.status.is_success()) {
        let row = details.get(&(outcome.test_id.clone(), outcome.target.clone()));
        let mut location = String::new();
        if let Some(source) = row.and_then(|r| r.source.as_ref()) {
            location.push_str(&format!("file={}", property(&workspace_path(&source.file))));
            if let Some(line) = source.line {
                location.push_str(&format!(",line={line}"));
            }
            location.push(',');
        }
        // In a run over several targets, the target the test failed on.
        let target = if multi_target {
            format!(" @ {}", outcome.target)
        } else {
            String::new()
        };
        let title = format!(
            "{}{target} {} [{}]",
            outcome.test_id,
            outcome.status.as_str(),
            outcome
                .failure_class
                .map_or_else(String::new, |c| c.to_string())
        );
        let details = row.map(|r| r.checks.clone()).unwrap_or_default();
        let body = format!(
            "score {:.2} ({})\n{}",
            outcome.score,
            crate::outcome::rule_text(outcome.threshold),
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
    let icon = if summary.interrupted {
        "⏸️"
    } else if t.all_passed() {
        "✅"
    } else {
        "❌"
    };
    let mut md = format!(
        "### {icon} evalhost · {} on {}{}\n\n| passed | failed | errors | expected failures | unexpected passes | not run | pass rate | mean score |\n|---|---|---|---|---|---|---|---|\n| {} | {} | {} | {} | {} | {} | {:.0}% | {:.2} |\n\n",
        markdown_text(&summary.suite),
        markdown_text(&summary.target),
        if summary.interrupted {
            " · interrupted"
        } else {
            ""
        },
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
    let multi_target = summary
        .tests
        .iter()
        .any(|o| o.target != summary.tests[0].target);
    if !failing.is_empty() {
        if multi_target {
            md.push_str("| test | target | status | class | score |\n|---|---|---|---|---|\n");
        } else {
            md.push_str("| test | status | class | score |\n|---|---|---|---|\n");
        }
        for o in failing.iter().take(50) {
            let target = if multi_target {
                format!(" {} |", markdown_text(&o.target))
            } else {
                String::new()
            };
            md.push_str(&format!(
                "| {} |{target} {} | {} | {:.2} |\n",
                markdown_text(&o.test_id),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_text_is_inert() {
        assert_eq!(
            markdown_text("x\n### ✅ all passed <!-- `a|b` *c* [l](u)"),
            "x\\\\n\\#\\#\\# ✅ all passed &lt;\\!\\-\\- \\`a\\|b\\` \\*c\\* \\[l\\]\\(u\\)"
        );
        assert_eq!(
            message("a\n::stop-commands::x\u{1b}[8m%"),
            "a%0A::stop-commands::x\\u{1b}[8m%25"
        );
        assert_eq!(property("f,i:le\r"), "f%2Ci%3Ale%0D");
    }
}
