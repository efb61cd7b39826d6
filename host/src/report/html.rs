//! `report.html`: one self-contained page per run (no network, no external
//! files). Per test: status, score, why it did not pass (on the collapsed
//! row), tags and `file:line`, input, expected output, output (with a diff
//! against what an `equals` or the expected output wanted), retries, a
//! target's error, and each assertion's verdict, checks and evidence;
//! filter by status and tag, search ids, inputs and outputs. The data is embedded as JSON and rendered with `textContent`, so no
//! output under test can inject markup.

use std::io::Write as _;

use serde_json::value::RawValue;

use super::Summary;
use crate::results::ResultRow;

const STYLE: &str = r#"
:root { --pass:#1a7f37; --fail:#cf222e; --warn:#9a6700; --muted:#57606a; --line:#d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1f2328; background: #f6f8fa; }
header { background: #fff; border-bottom: 1px solid var(--line); padding: 16px 24px; }
h1 { font-size: 20px; margin: 0 0 4px; }
.meta { color: var(--muted); }
.counts { display: flex; gap: 12px; margin-top: 12px; flex-wrap: wrap; }
.count { background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; padding: 6px 12px; }
.count b { font-size: 18px; display: block; }
.bar { display: flex; gap: 8px; padding: 12px 24px; align-items: center; flex-wrap: wrap; }
.bar button { border: 1px solid var(--line); background: #fff; border-radius: 16px; padding: 4px 12px; cursor: pointer; }
.bar button.on { background: #0969da; color: #fff; border-color: #0969da; }
.bar input { margin-left: auto; padding: 5px 10px; border: 1px solid var(--line); border-radius: 6px; min-width: 240px; }
main { padding: 0 24px 24px; }
details.test { background: #fff; border: 1px solid var(--line); border-radius: 6px; margin: 6px 0; }
details.test > summary { display: flex; gap: 12px; align-items: center; padding: 8px 12px; cursor: pointer; list-style: none; }
.badge { font-weight: 600; font-size: 12px; border-radius: 10px; padding: 1px 8px; color: #fff; min-width: 110px; text-align: center; }
.s-passed { background: var(--pass); } .s-failed, .s-error, .s-unexpected-passed { background: var(--fail); } .s-expected-failed { background: var(--warn); }
.id { font-family: ui-monospace, monospace; font-weight: 600; flex: 1; }
.score { font-variant-numeric: tabular-nums; } .class { color: var(--fail); font-size: 12px; } .ms { color: var(--muted); font-size: 12px; }
.body { padding: 4px 16px 16px; border-top: 1px solid var(--line); }
h3 { font-size: 13px; margin: 14px 0 6px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
pre { background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; padding: 8px; white-space: pre-wrap; word-break: break-word; margin: 4px 0; max-height: 320px; overflow: auto; }
.role { font-size: 12px; color: var(--muted); }
table { border-collapse: collapse; width: 100%; }
td, th { text-align: left; border-bottom: 1px solid var(--line); padding: 5px 8px; vertical-align: top; }
th { font-size: 12px; color: var(--muted); }
.v-pass { color: var(--pass); font-weight: 600; } .v-fail { color: var(--fail); font-weight: 600; } .v-skip { color: var(--muted); }
.ok::before { content: "✓ "; color: var(--pass); } .no::before { content: "✗ "; color: var(--fail); }
.evidence { color: var(--muted); font-family: ui-monospace, monospace; font-size: 12px; }
.empty { color: var(--muted); padding: 24px; text-align: center; }
.required { font-size: 11px; font-weight: 600; color: #fff; background: var(--warn); border-radius: 8px; padding: 0 6px; }
.gate { color: var(--fail); font-weight: 600; }
.reason { color: var(--muted); font-size: 12px; flex: 2; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; min-width: 0; }
.tag { font-size: 11px; border: 1px solid var(--line); border-radius: 8px; padding: 0 6px; color: var(--muted); }
.where { color: var(--muted); font-size: 12px; font-family: ui-monospace, monospace; margin-top: 8px; }
.diff { font-family: ui-monospace, monospace; font-size: 12px; background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; padding: 6px 8px; margin: 4px 0; white-space: pre-wrap; word-break: break-word; }
.diff .del { background: #ffebe9; color: #82071e; display: block; } .diff .add { background: #dafbe1; color: #116329; display: block; } .diff .same { display: block; color: var(--muted); }
.bar select { padding: 4px 8px; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
"#;

const SCRIPT: &str = r#"
const data = JSON.parse(document.getElementById('data').textContent);
const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
const t = data.summary;
document.getElementById('title').textContent = 'evalhost · ' + t.suite;
document.getElementById('meta').textContent = 'target ' + t.target + ' · ' + t.duration_ms + ' ms · evalhost ' + t.evalhost_version + (t.interrupted ? ' · INTERRUPTED' : '');
if (t.viewer && /^https?:\/\//.test(t.viewer)) { const a = document.createElement('a'); a.href = t.viewer; a.id = 'viewer-link'; a.textContent = 'open in evalhost view'; document.getElementById('meta').append(' · ', a); }
const counts = document.getElementById('counts');
[['passed', t.passed], ['failed', t.failed], ['errors', t.errors], ['expected failures', t.expected_failed], ['unexpected passes', t.unexpected_passed], ['not run', t.not_run], ['pass rate', Math.round(t.pass_rate * 100) + '%'], ['mean score', t.mean_score.toFixed(2)]]
  .forEach(([label, n]) => { const c = el('div', 'count'); c.appendChild(el('b', '', String(n))); c.appendChild(document.createTextNode(label)); counts.appendChild(c); });
const byTest = {};
data.rows.forEach(r => { (byTest[r.test_id + '\u0000' + r.target] ||= []).push(r); });
const list = document.getElementById('tests');
const failingCount = data.tests.filter(x => !['passed', 'expected-failed'].includes(x.status)).length;
if (data.unlisted) { const u = document.getElementById('unlisted'); u.style.display = ''; u.textContent = data.unlisted + ' more passing tests are not listed here; every row is in results.jsonl.'; }
// Why a test did not pass, in one line: the gate, else the error, else the
// first failing check.
function reason(rows) {
  const r = rows.find(x => !['passed', 'expected-failed'].includes(x.status)) || rows[0];
  if (!r) return '';
  if (r.gated) return 'required assertion `' + r.gated.assertion + '` scored ' + r.gated.score.toFixed(2) + ' < ' + r.gated.min_score.toFixed(2) + ': test score set to 0';
  if (r.error && !(r.scores || []).length) return 'error: ' + r.error;
  for (const sc of (r.scores || [])) {
    if (sc.verdict === 'pass') continue;
    const c = (sc.assertions || []).find(c => !c.passed);
    return sc.name + ': ' + (sc.error || (c ? c.text : sc.verdict));
  }
  return r.error || '';
}
// A line diff (longest common subsequence) of expected against actual.
function diff(parent, expected, actual) {
  const a = String(expected).split('\n'), b = String(actual).split('\n');
  const box = el('div', 'diff');
  if (a.length * b.length > 250000) { box.appendChild(el('span', 'del', '- ' + expected)); box.appendChild(el('span', 'add', '+ ' + actual)); parent.appendChild(box); return; }
  const n = a.length, m = b.length, L = Array.from({length: n + 1}, () => new Int32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = a[i] === b[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) { box.appendChild(el('span', 'same', '  ' + a[i])); i++; j++; }
    else if (i < n && (j === m || L[i + 1][j] >= L[i][j + 1])) { box.appendChild(el('span', 'del', '- ' + a[i])); i++; }
    else { box.appendChild(el('span', 'add', '+ ' + b[j])); j++; }
  }
  parent.appendChild(box);
}
const allTags = new Set();
function messages(parent, title, msgs) {
  if (!msgs || !msgs.length) return;
  parent.appendChild(el('h3', '', title));
  msgs.forEach(m => { parent.appendChild(el('div', 'role', m.role)); parent.appendChild(el('pre', '', m.content)); });
}
const manyTargets = new Set(data.tests.map(t => t.target)).size > 1;
data.tests.forEach(o => {
  const rows = byTest[o.test_id + '\u0000' + o.target] || [];
  const tags = rows.length ? (rows[0].tags || []) : [];
  tags.forEach(g => allTags.add(g));
  const d = el('details', 'test'); d.dataset.status = o.status; d.dataset.tags = JSON.stringify(tags);
  // Search looks at the id, the inputs, the expected output and the output.
  d.dataset.text = [o.test_id].concat(rows.flatMap(r => (r.input || []).map(m => m.content).concat([r.expected_output || '', r.output || '']))).join('\n').toLowerCase();
  const s = el('summary');
  s.appendChild(el('span', 'badge s-' + o.status, o.status));
  s.appendChild(el('span', 'id', o.test_id + (o.trials > 1 ? ' ×' + o.trials : '') + (manyTargets ? ' · ' + o.target : '')));
  if (!['passed', 'expected-failed'].includes(o.status)) { const why = reason(rows); if (why) { const w = el('span', 'reason', why); w.title = why; s.appendChild(w); } }
  tags.forEach(g => s.appendChild(el('span', 'tag', g)));
  if (o.failure_class) s.appendChild(el('span', 'class', o.failure_class));
  const allPass = o.threshold == null;
  s.appendChild(el('span', 'score', o.score.toFixed(2) + (allPass ? ' · all must pass' : ' / ' + o.threshold.toFixed(2))));
  s.appendChild(el('span', 'ms', o.wall_ms + ' ms'));
  d.appendChild(s);
  const body = el('div', 'body');
  if (rows.length && rows[0].source) body.appendChild(el('div', 'where', rows[0].source.file + (rows[0].source.line ? ':' + rows[0].source.line : '') + (tags.length ? ' · tags: ' + tags.join(', ') : '')));
  if (!rows.length) body.appendChild(el('div', 'role', 'Not shown in full: the page details ' + data.detailed + ' tests, failing ones first. Every row is in results.jsonl.'));
  rows.forEach(r => {
    if (rows.length > 1) body.appendChild(el('h3', '', 'trial ' + r.trial + ' · ' + r.status + ' · ' + r.score.toFixed(2)));
    messages(body, 'input', r.input);
    if (r.criteria) { body.appendChild(el('h3', '', 'criteria')); body.appendChild(el('pre', '', r.criteria)); }
    if (r.expected_output) { body.appendChild(el('h3', '', 'expected output')); body.appendChild(el('pre', '', r.expected_output)); }
    // A conversation (or any multi-message output): every message, replies included.
    if ((r.output_messages || []).length > 1 && (r.scores || []).some(sc => sc.type === 'conversation-turn')) messages(body, 'conversation', r.output_messages.filter(m => m.content));
    else { body.appendChild(el('h3', '', 'output')); body.appendChild(el('pre', '', r.output || '(no output)')); }
    // (An `equals` shows its own diff in its row.)
    if (r.expected_output && r.output && !['passed', 'expected-failed'].includes(r.status) && r.expected_output.trim() !== r.output.trim() && !(r.scores || []).some(sc => sc.expected != null)) { body.appendChild(el('h3', '', 'expected output → output')); diff(body, r.expected_output.trim(), r.output.trim()); }
    if (r.sandbox && (r.sandbox.processes || []).length) { body.appendChild(el('h3', '', 'sandbox (--isolate)')); if (r.sandbox.limits) body.appendChild(el('div', 'role', 'case limits: ' + r.sandbox.limits + (r.sandbox.peak_memory_bytes ? ' · peak ' + Math.round(r.sandbox.peak_memory_bytes / 1048576) + ' MiB' : ''))); (r.sandbox.refused || []).forEach(x => body.appendChild(el('div', 'role', 'refused: ' + x))); r.sandbox.processes.forEach(p => { body.appendChild(el('div', 'role', (p.role || p.program) + ' (' + p.program + ') · network ' + p.network)); (p.connections || []).forEach(c => body.appendChild(el('div', 'role', '  ' + (c.allowed ? 'allowed ' : 'REFUSED ') + c.host + ':' + c.port + (c.note ? ' (' + c.note + ')' : '')))); (p.refused || []).filter(x => !String(x).startsWith('connection to')).forEach(x => body.appendChild(el('div', 'role', '  refused: ' + x))); }); }
    if ((r.retries || []).length) { body.appendChild(el('h3', '', 'retries')); r.retries.forEach(x => body.appendChild(el('div', 'role', x.target + ' attempt ' + x.attempt + ' failed: ' + x.error + (x.wait_ms ? ' (waited ' + (x.wait_ms / 1000).toFixed(1) + ' s)' : '')))); }
    if (r.error) { body.appendChild(el('h3', '', (r.scores || []).length ? 'error' : r.failure_class === 'input' ? 'input error' : 'target error')); body.appendChild(el('pre', '', r.error)); }
    if (r.gated) { body.appendChild(el('h3', '', 'gate')); body.appendChild(el('div', 'gate', 'required assertion `' + r.gated.assertion + '` scored ' + r.gated.score.toFixed(2) + ' < ' + r.gated.min_score.toFixed(2) + ': test score set to 0')); }
    if (!(r.scores || []).length) { body.appendChild(el('div', 'role', r.error ? 'No assertion ran: there was no output to grade.' : 'No assertions.')); return; }
    body.appendChild(el('h3', '', 'assertions'));
    const table = el('table'); const head = el('tr');
    ['assertion', 'verdict', 'score', 'weight', 'checks'].forEach(h => head.appendChild(el('th', '', h)));
    table.appendChild(head);
    (r.scores || []).forEach(sc => {
      const tr = el('tr');
      const name = el('td'); name.appendChild(el('div', 'id', sc.name)); if (sc.required) name.appendChild(el('span', 'required', 'required')); name.appendChild(el('div', 'role', sc.type + (sc.negate ? ' (negated)' : '') + ' · ' + (sc.plugin || '')));
      tr.appendChild(name);
      tr.appendChild(el('td', 'v-' + sc.verdict, sc.verdict + (sc.failure_class && sc.failure_class !== 'assertion' ? ' [' + sc.failure_class + ']' : '')));
      tr.appendChild(el('td', 'score', sc.score.toFixed(2)));
      tr.appendChild(el('td', 'score', String(sc.weight)));
      const checks = el('td');
      (sc.assertions || []).forEach(c => { checks.appendChild(el('div', c.passed ? 'ok' : 'no', c.text)); if (c.evidence) checks.appendChild(el('div', 'evidence', c.evidence)); });
      if (sc.error && !(sc.assertions || []).length) checks.appendChild(el('div', 'no', sc.error));
      if (sc.expected !== undefined && sc.expected !== null) diff(checks, sc.expected.trim(), (r.output || '').trim());
      if (sc.plugin_output) checks.appendChild(el('pre', '', sc.plugin_output));
      tr.appendChild(checks);
      table.appendChild(tr);
    });
    body.appendChild(table);
  });
  d.appendChild(body);
  if (!['passed', 'expected-failed'].includes(o.status) && failingCount <= 10) d.open = true;
  list.appendChild(d);
});
let filter = 'all';
const search = document.getElementById('search');
const tagSelect = document.getElementById('tag');
[...allTags].sort().forEach(g => { const o = el('option', '', g); o.value = g; tagSelect.appendChild(o); });
if (!allTags.size) tagSelect.style.display = 'none';
function apply() {
  const q = search.value.toLowerCase(); const tag = tagSelect.value; let shown = 0;
  list.querySelectorAll('details.test').forEach(d => {
    const ok = (filter === 'all' || (filter === 'failing' ? !['passed', 'expected-failed'].includes(d.dataset.status) : d.dataset.status === filter)) && d.dataset.text.includes(q) && (!tag || JSON.parse(d.dataset.tags).includes(tag));
    d.style.display = ok ? '' : 'none'; if (ok) shown++;
  });
  document.getElementById('empty').style.display = shown ? 'none' : '';
}
document.querySelectorAll('.bar button').forEach(b => b.addEventListener('click', () => {
  document.querySelectorAll('.bar button').forEach(x => x.classList.remove('on')); b.classList.add('on'); filter = b.dataset.filter; apply();
}));
search.addEventListener('input', apply);
tagSelect.addEventListener('change', apply);
if (failingCount) document.querySelector('[data-filter=failing]').click(); else apply();
"#;

/// How many tests the page shows in full (input, output, assertions):
/// unsuccessful ones first, in suite order, then passing ones. The others
/// are listed with their status and score; `results.jsonl` has everything.
pub const DETAILED_TESTS: usize = 2_000;

/// How many passing tests the page lists at all; the rest are counted.
pub const LISTED_PASSING: usize = 10_000;

/// The page of one run: which tests it details, then its rendering.
pub struct Page<'a> {
    summary: &'a Summary,
    detailed: std::collections::HashSet<(&'a str, &'a str)>,
    listed: Vec<&'a crate::outcome::TestOutcome>,
    unlisted: usize,
}

impl<'a> Page<'a> {
    /// Chooses what the page shows.
    pub fn new(summary: &'a Summary) -> Self {
        let (failing, passing): (Vec<_>, Vec<_>) =
            summary.tests.iter().partition(|o| !o.status.is_success());
        let detailed = failing
            .iter()
            .chain(&passing)
            .take(DETAILED_TESTS)
            .map(|o| (o.test_id.as_str(), o.target.as_str()))
            .collect();
        let unlisted = passing.len().saturating_sub(LISTED_PASSING);
        let mut listed: Vec<_> = failing;
        listed.extend(passing.into_iter().take(LISTED_PASSING));
        listed.sort_by_key(|o| o.test_index);
        Self {
            summary,
            detailed,
            listed,
            unlisted,
        }
    }

    /// True when the page shows the row of this test and target in full.
    pub fn shows(&self, (test_id, target): (&str, &str)) -> bool {
        self.detailed.contains(&(test_id, target))
    }

    /// Writes the page.
    /// `rows` are the rows it shows in full, as JSON ([`Self::shows`]).
    pub fn render(
        &self,
        out: &mut dyn std::io::Write,
        rows: &[Box<RawValue>],
    ) -> std::io::Result<()> {
        #[derive(serde::Serialize)]
        struct Data<'b> {
            summary: &'b Summary,
            tests: &'b [&'b crate::outcome::TestOutcome],
            unlisted: usize,
            detailed: usize,
            rows: &'b [Box<RawValue>],
        }
        write!(
            out,
            r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>evalhost report</title><style>{STYLE}</style></head>
<body>
<header><h1 id="title">evalhost</h1><div class="meta" id="meta"></div><div class="counts" id="counts"></div></header>
<div class="bar">
<button data-filter="all" class="on">All</button><button data-filter="failing">Failing</button><button data-filter="passed">Passed</button><button data-filter="failed">Failed</button><button data-filter="error">Errors</button><button data-filter="expected-failed">Expected failures</button><button data-filter="unexpected-passed">Unexpected passes</button>
<select id="tag" aria-label="Tag"><option value="">All tags</option></select>
<input id="search" type="search" placeholder="Search ids, inputs and outputs">
</div>
<main><div id="tests"></div><div class="empty" id="empty" style="display:none">No test matches.</div><div class="empty" id="unlisted" style="display:none"></div></main>
<script type="application/json" id="data">"#
        )?;
        // Streamed, never held whole. Inside <script>, `</script>` or `<!--`
        // could end the data early: every `<` is written as `\u003c`.
        let data = Data {
            summary: self.summary,
            tests: &self.listed,
            unlisted: self.unlisted,
            detailed: DETAILED_TESTS,
            rows,
        };
        // serde_json writes token by token: buffer before the escaping, so
        // that it scans (and writes through) large chunks.
        let mut buffered = std::io::BufWriter::with_capacity(64 << 10, EscapeLt(&mut *out));
        serde_json::to_writer(&mut buffered, &data).map_err(std::io::Error::other)?;
        buffered.flush()?;
        drop(buffered);
        write!(
            out,
            "</script>\n<script>{SCRIPT}</script>\n</body></html>\n"
        )
    }
}

/// Writes JSON text with every `<` as `\u003c` (valid JSON: `<` only
/// appears inside strings).
struct EscapeLt<W>(W);

impl<W: std::io::Write> std::io::Write for EscapeLt<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(i) = rest.iter().position(|b| *b == b'<') {
            self.0.write_all(&rest[..i])?;
            self.0.write_all(b"\\u003c")?;
            rest = &rest[i + 1..];
        }
        self.0.write_all(rest)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Renders the page of `summary` with `rows` in full (for tests).
pub fn render(summary: &Summary, rows: &[ResultRow]) -> String {
    let page = Page::new(summary);
    let shown: Vec<Box<RawValue>> = rows
        .iter()
        .filter(|r| page.shows((&r.test_id, &r.target)))
        .map(|r| serde_json::value::to_raw_value(r).expect("a row is JSON"))
        .collect();
    let mut out = Vec::new();
    page.render(&mut out, &shown).expect("writing to memory");
    String::from_utf8(out).expect("the page is UTF-8")
}
