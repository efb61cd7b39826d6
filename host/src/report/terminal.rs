//! The terminal reporter (stderr): a live progress bar on a TTY, a plain
//! line per finished test otherwise, and the closing summary. Colour only
//! on a TTY, never with `NO_COLOR` set.

use std::io::Write;

use console::style;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use super::Summary;
use crate::results::{ResultRow, Status, Verdict};
use crate::text::shown;

/// Progress as rows arrive.
pub struct Progress {
    bar: Option<ProgressBar>,
    quiet: bool,
    full_output: bool,
    /// The run has more than one target: each line names its target.
    multi_target: bool,
    /// Finished tests that passed (or failed as expected), and the others,
    /// shared with the bar's template.
    counts: (Arc<AtomicUsize>, Arc<AtomicUsize>),
}

impl Progress {
    /// A bar for `total` tests when both streams are a terminal (results
    /// go to stdout, the bar to stderr); plain lines otherwise, so that a
    /// redirected stdout gets every row; with `quiet`, only the tests that
    /// did not pass.
    pub fn new(total: usize, quiet: bool, full_output: bool, multi_target: bool) -> Self {
        let counts: (Arc<AtomicUsize>, Arc<AtomicUsize>) = Default::default();
        let tty = console::Term::stderr().features().is_attended()
            && console::Term::stdout().features().is_attended();
        let bar = (tty && !quiet).then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            bar.set_style(
                // The rate and the time left, and the passes and failures so
                // far (on a terminal a passing test has no line of its own:
                // the counts show the run moving); the last test finished in
                // what width is left, so the line fits an 80-column terminal.
                ProgressStyle::with_template(
                    "{spinner} {elapsed:>4} {bar:20} {pos}/{len} {rate} ETA {eta} {counts} {wide_msg}",
                )
                .map(|style| {
                    let (passed, failed) = (counts.0.clone(), counts.1.clone());
                    style
                        .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                            let _ = write!(w, "{:.1}/s", s.per_sec());
                        })
                        .with_key(
                            "counts",
                            move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                                let _ = write!(
                                    w,
                                    "✓{} ✗{}",
                                    passed.load(Ordering::Relaxed),
                                    failed.load(Ordering::Relaxed)
                                );
                            },
                        )
                })
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        });
        Self {
            bar,
            quiet,
            full_output,
            multi_target,
            counts,
        }
    }

    /// Reports one finished row.
    pub fn row(&mut self, out: &mut dyn Write, row: &ResultRow) -> std::io::Result<()> {
        // `-q`: only what did not pass, with why.
        if self.quiet && row.passed() {
            return Ok(());
        }
        let lines = row_lines(row, self.full_output, self.multi_target);
        match &self.bar {
            Some(bar) => {
                if !row.passed() {
                    bar.suspend(|| {
                        for line in &lines {
                            writeln!(out, "{line}")?;
                        }
                        out.flush()
                    })?;
                }
                // Counted just before the bar moves (after the lines above
                // it, whose printing redraws it): every frame's counts add
                // up to its position.
                let count = if row.passed() {
                    &self.counts.0
                } else {
                    &self.counts.1
                };
                count.fetch_add(1, Ordering::Relaxed);
                bar.inc(1);
                bar.set_message(shown(&row.test_id).into_owned());
            }
            None => {
                for line in &lines {
                    writeln!(out, "{line}")?;
                }
            }
        }
        Ok(())
    }

    /// Removes the bar.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

fn mark(status: Status) -> String {
    let (text, color) = match status {
        Status::Passed => ("PASS", console::Color::Green),
        Status::Failed => ("FAIL", console::Color::Red),
        Status::Error => ("ERROR", console::Color::Red),
        Status::ExpectedFailed => ("XFAIL", console::Color::Yellow),
        Status::UnexpectedPassed => ("XPASS", console::Color::Red),
    };
    style(format!("{text:<5}"))
        .fg(color)
        .bold()
        .for_stdout()
        .to_string()
}

/// How much of an output the terminal shows under a test that did not pass.
const OUTPUT_SHOWN: usize = 200;

/// The lines for one finished row: a head line, then for a test that did
/// not pass, the failed checks, the output, and for `equals`, a diff.
/// With `name_target`, the head line names the row's target
/// (`capital-au @ llm-old`): a run over several targets.
pub fn row_lines(row: &ResultRow, full_output: bool, name_target: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let trial = match (row.trial, row.trials) {
        (Some(t), Some(n)) => format!(" (trial {t}/{n})"),
        _ => String::new(),
    };
    let class = row
        .failure_class
        .map_or(String::new(), |c| format!("  [{c}]"));
    let retries = match row.retries.len() {
        0 => String::new(),
        1 => "  (1 retry)".to_owned(),
        n => format!("  ({n} retries)"),
    };
    let target = if name_target {
        format!(" @ {}", shown(&row.target))
    } else {
        String::new()
    };
    lines.push(format!(
        "  {} {}{target}{trial}  {:.2}  {} ms{class}{retries}",
        mark(row.status),
        shown(&row.test_id),
        row.score,
        row.wall_ms
    ));
    if let (Some(error), true) = (&row.error, row.scores.is_empty()) {
        lines.push(format!("        {}", shown(error)));
    }
    if let Some(gate) = &row.gated {
        lines.push(format!("        {}", shown(&gate.explain())));
    }
    // What the sandbox refused the case's processes (`--isolate`), pass or
    // not: an agent that passed while refused a host should be seen.
    if let Some(sandbox) = &row.sandbox {
        let refused: Vec<String> = sandbox
            .processes
            .iter()
            .flat_map(|p| {
                let who = if p.role.is_empty() {
                    &p.program
                } else {
                    &p.role
                };
                p.refused.iter().map(move |r| format!("{who}: {r}"))
            })
            .chain(sandbox.refused.iter().map(|r| format!("case: {r}")))
            .collect();
        for line in refused.iter().take(3) {
            lines.push(format!("        sandbox refused {}", one_line(line, 160)));
        }
        if refused.len() > 3 {
            lines.push(format!(
                "        sandbox refused {} more (the row's `sandbox` lists all)",
                refused.len() - 3
            ));
        }
    }
    if !row.passed() {
        for score in row.scores.iter().filter(|s| s.verdict != Verdict::Pass) {
            let class = score
                .failure_class
                .map_or(String::new(), |c| format!(" [{c}]"));
            // A verdict the judge gave an earlier run, replayed: said, so a
            // stale answer is not taken for a fresh one (`--no-judge-cache`
            // asks again).
            let cached = match &score.judge {
                Some(j) if j.calls > 0 && j.cached == j.calls => " (judge answers from the cache)",
                Some(j) if j.cached > 0 => " (some judge answers from the cache)",
                _ => "",
            };
            lines.push(format!(
                "        ✗ {} ({}){class}{cached}",
                shown(&score.name),
                shown(&score.kind)
            ));
            for check in score.assertions.iter().filter(|c| !c.passed).take(3) {
                // "not met": AgentV's check texts are written positively
                // (`unit tests pass`), so a failed one alone reads as a
                // success.
                lines.push(format!("          not met: {}", one_line(&check.text, 150)));
                // What a code assertion printed (`console.log`, `print`).
                if let Some(printed) = check.evidence.as_deref().and_then(|e| {
                    e.strip_prefix("console:\n")
                        .map(|p| ("console", p))
                        .or_else(|| e.strip_prefix("print:\n").map(|p| ("print", p)))
                }) {
                    lines.push(format!(
                        "          {}: {}",
                        printed.0,
                        one_line(printed.1, 150)
                    ));
                } else if let Some(evidence) =
                    check.evidence.as_deref().filter(|e| !e.trim().is_empty())
                {
                    // The evidence the grader gave (`FAILED (failures=1)`).
                    lines.push(format!("          evidence: {}", one_line(evidence, 150)));
                }
            }
            if let Some(expected) = &score.expected {
                lines.extend(diff_lines(expected, &row.output));
            }
        }
        // (A test not run for a failed dependency has no output to show.)
        if (!row.output.is_empty() || row.scores.is_empty())
            && row.failure_class != Some(crate::failure::FailureClass::DependencyFailed)
        {
            lines.extend(output_lines(&row.output, full_output));
        }
    }
    lines
}

/// The output under a test that did not pass: its first characters on one
/// line, or with `--full-output` all of it.
fn output_lines(output: &str, full: bool) -> Vec<String> {
    if output.is_empty() {
        return vec!["        output: (empty)".to_owned()];
    }
    if full {
        let mut lines = vec!["        output:".to_owned()];
        lines.extend(output.lines().map(|l| format!("          {}", shown(l))));
        return lines;
    }
    let chars = output.chars().count();
    let more = if chars > OUTPUT_SHOWN {
        format!(" ({chars} characters; --full-output shows all)")
    } else {
        String::new()
    };
    vec![format!(
        "        output: {}{more}",
        one_line(output, OUTPUT_SHOWN)
    )]
}

/// Expected against actual: both on a line each when short, else a
/// unified diff (at most 40 lines).
fn diff_lines(expected: &str, actual: &str) -> Vec<String> {
    let (e, a) = (expected.trim(), actual.trim());
    if !e.contains('\n') && !a.contains('\n') {
        let quoted = |t: &str| format!("{:?}", one_line(t, OUTPUT_SHOWN));
        return vec![
            format!("          expected: {}", quoted(e)),
            format!("          actual:   {}", quoted(a)),
        ];
    }
    let (e, a) = (format!("{e}\n"), format!("{a}\n"));
    let diff = similar::TextDiff::from_lines(&e, &a);
    let text = diff
        .unified_diff()
        .context_radius(2)
        .header("expected", "actual")
        .to_string();
    let mut lines: Vec<String> = text
        .lines()
        .take(40)
        .map(|l| format!("          {}", shown(l)))
        .collect();
    if text.lines().count() > 40 {
        lines.push("          … (diff cut at 40 lines)".to_owned());
    }
    lines
}

fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    let flat = shown(&flat).into_owned();
    match flat.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// The closing summary.
pub fn print_summary(out: &mut dyn Write, summary: &Summary) -> std::io::Result<()> {
    let t = &summary.tally;
    writeln!(out)?;
    // An interrupted run has no verdict: what finished may all have passed.
    let verdict = if summary.interrupted {
        style("INTERRUPTED").yellow().bold().for_stdout()
    } else if t.all_passed() {
        style("PASS").green().bold().for_stdout()
    } else {
        style("FAIL").red().bold().for_stdout()
    };
    // Formatted whole, then written at once: the terminal writer passes a
    // colour sequence only when it arrives whole, and a styled value's
    // Display writes it in pieces (which showed as `\u{1b}[31m` text).
    let line = format!(
        "RESULT: {verdict}  {}/{} passed · pass rate {:.0}%{} · mean score {:.2} · {} ms",
        // The same `passed` as summary.json, report.html, JUnit and the
        // GitHub step summary; expected failures are counted on the next
        // line (and in the pass rate, as AgentV counts them).
        t.passed,
        t.total + t.not_run,
        t.pass_rate * 100.0,
        if summary.interrupted {
            format!(" of the {} finished", t.total)
        } else {
            String::new()
        },
        t.mean_score,
        summary.duration_ms
    );
    writeln!(out, "{line}")?;
    // promptfoo's named and derived metrics, per prompt and target.
    for m in &summary.metrics {
        let mut items: Vec<String> = m
            .named
            .iter()
            .map(|(k, v)| format!("{k} {}", crate::named_metrics::show(*v)))
            .collect();
        for (k, v) in &m.derived {
            items.push(match v {
                Some(v) => format!("{k} {}", crate::named_metrics::show(*v)),
                None => format!("{k} n/a (a metric it reads has no score here; promptfoo shows 0)"),
            });
        }
        let which = match &m.prompt {
            Some(p) => format!("{} on {}", crate::text::shown(p), m.target),
            None => m.target.clone(),
        };
        writeln!(
            out,
            "  metrics  {which} ({} rows): {}",
            m.count,
            items.join(" · ")
        )?;
    }
    let mut parts = Vec::new();
    for (n, label) in [
        (t.failed, "failed"),
        (t.errors, "execution error(s)"),
        (t.expected_failed, "expected failure(s)"),
        (t.unexpected_passed, "unexpected pass(es)"),
        (t.not_run, "not run"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {label}"));
        }
    }
    if !parts.is_empty() {
        writeln!(out, "  {}", parts.join(" · "))?;
    }
    if !t.failures_by_class.is_empty() {
        let classes: Vec<String> = t
            .failures_by_class
            .iter()
            .map(|(c, n)| format!("{c}: {n}"))
            .collect();
        writeln!(out, "  failures by class: {}", classes.join(", "))?;
    }
    if summary.tests.len() > 1 && summary.slowest.first().is_some_and(|s| s.wall_ms > 0) {
        let slow: Vec<String> = summary
            .slowest
            .iter()
            .take(3)
            .map(|s| match &s.target {
                Some(t) => format!("{} @ {} ({} ms)", shown(&s.test_id), shown(t), s.wall_ms),
                None => format!("{} ({} ms)", shown(&s.test_id), s.wall_ms),
            })
            .collect();
        writeln!(out, "  slowest: {}", slow.join(", "))?;
    }
    let j = &summary.judge;
    if j.calls > 0 {
        writeln!(
            out,
            "  judge: {} call(s), {} from cache · {} input + {} output tokens{}",
            j.calls,
            j.cached,
            j.input_tokens,
            j.output_tokens,
            if j.cost_usd > 0.0 {
                format!(" · ${:.4}", j.cost_usd)
            } else {
                String::new()
            }
        )?;
    }
    writeln!(out, "  results: {}", summary.results.display())?;
    writeln!(
        out,
        "  report:  {}",
        summary.run_dir.join("report.html").display()
    )?;
    Ok(())
}
