// evalhost view: the browser side of `evalhost view`, a read-only results
// viewer. An ES module (strict, scoped, deferred); no framework, no build
// step, nothing loaded from elsewhere. Every string from the API goes into
// the DOM as text (text nodes, textContent), never as markup.
const app = document.getElementById('app');
const DASH = '—', MINUS = '−';

// DOM ----------------------------------------------------------------------

function attrs(e, a) {
  for (const [k, v] of Object.entries(a || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else {
      // value/checked/open: the attribute too, so a DOM dump shows the state a URL restored
      if (v !== '' || !['value', 'checked', 'open'].includes(k)) e.setAttribute(k, v === true ? '' : String(v));
      if (['value', 'checked', 'open'].includes(k)) e[k] = v;
    }
  }
  return e;
}
function add(e, kids) {
  for (const k of kids.flat(Infinity)) if (k !== null && k !== undefined && k !== false) e.append(k instanceof Node ? k : String(k));
  return e;
}
const h = (tag, a, ...kids) => add(attrs(document.createElement(tag), a), kids);
const s = (tag, a, ...kids) => add(attrs(document.createElementNS('http://www.w3.org/2000/svg', tag), a), kids);
const span = (cls, ...k) => h('span', { class: cls }, ...k);
const div = (cls, ...k) => h('div', { class: cls }, ...k);
const link = (href, text, a) => h('a', { href, ...a }, text);
const code = (t, cls) => h('code', { class: cls }, t);
const muted = (t) => span('muted', t);
const pre = (t, cls = 'text') => h('pre', { class: cls }, t);
const json = (v) => pre(JSON.stringify(v ?? null, null, 2), 'json');
const fold = (label, body, open) => h('details', { open }, h('summary', null, label), body);
const td = (cls, ...k) => h('td', { class: cls }, ...k);
function table(id, heads, nums, tbody) {
  return div('table-wrap', h('table', { id, class: 'grid-table' },
    h('thead', null, h('tr', null, heads.map((t, i) => (t instanceof Node && t.tagName === 'TH' ? t : h('th', { class: nums.includes(i) ? 'num' : null }, t))))), tbody));
}

// format -------------------------------------------------------------------

const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
function num(v, d = 3, plus = '') {
  if (!isNum(v)) return DASH;
  const a = Math.abs(v).toFixed(d);
  return (v < 0 && +a !== 0 ? MINUS : plus) + a;
}
const signed = (v, d = 3) => num(v, d, '+');
const score2 = (v) => num(v, 2);
function pct(v) {
  if (!isNum(v)) return DASH;
  const p = Math.round(v * 1000) / 10;
  return p.toFixed(Number.isInteger(p) ? 0 : 1) + '%';
}
const money = (v) => (!isNum(v) ? DASH : v === 0 ? '$0' : '$' + v.toFixed(Math.abs(v) < 1 ? 4 : 2));
const moneyTick = (v) => (v === 0 ? '$0' : '$' + +v.toPrecision(3)); // axis: $0.05, not $0.0500
const pad2 = (n) => String(n).padStart(2, '0');
function dur(ms) {
  if (!isNum(ms)) return DASH;
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
  const t = Math.round(ms / 1000), m = Math.floor(t / 60);
  return m < 60 ? `${m}m ${pad2(t % 60)}s` : `${Math.floor(m / 60)}h ${pad2(m % 60)}m`;
}
const int = (v) => (isNum(v) ? v.toLocaleString('en-US') : DASH);
function when(iso, short) {
  const d = new Date(iso);
  if (!iso || Number.isNaN(d.getTime())) return short ? '' : iso ? String(iso) : DASH;
  const md = `${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
  return short ? md : `${d.getFullYear()}-${md} ${pad2(d.getHours())}:${pad2(d.getMinutes())}`;
}
const plural = (n, w) => `${isNum(n) ? n : 0} ${w}${n === 1 ? '' : 's'}`;
const arr = (v) => (Array.isArray(v) ? v : []);
const str = (v) => (v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v, null, 2));
const excerpt = (t, n) => (t.length > n ? t.slice(0, n - 1) + '…' : t);
const slug = (v) => String(v || 'none').toLowerCase().replace(/[^a-z0-9_-]+/g, '-');
const TONE = { passed: 'ok', pass: 'ok', failed: 'bad', fail: 'bad', error: 'warn' };
const badge = (st, label) => span(`badge b-${TONE[String(st).toLowerCase()] || 'other'} s-${slug(st)}`, label || (st == null ? DASH : String(st)));
const tag = (t) => span('tag', t);
const tags = (xs) => (arr(xs).length ? div('sub', arr(xs).map(tag)) : null);
const below = (r) => (isNum(r.score) && isNum(r.threshold) && r.score < r.threshold ? 'below' : null);
// What a row's score was held to: its threshold, or — a row held to none —
// promptfoo's rule (every assertion must pass).
const ruleOf = (r) => (isNum(r.threshold) ? score2(r.threshold) : 'all must pass');
const terms = (q) => q.toLowerCase().split(/\s+/).filter(Boolean);

// URL state ----------------------------------------------------------------

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '/');
  const qi = raw.indexOf('?');
  const segs = (qi < 0 ? raw : raw.slice(0, qi)).split('/').filter(Boolean).map((x) => {
    try { return decodeURIComponent(x); } catch (e) { return x; }
  });
  return { segs, params: new URLSearchParams(qi < 0 ? '' : raw.slice(qi + 1)) };
}
function hashFor(segs, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const path = '#/' + segs.map((x) => encodeURIComponent(String(x))).join('/');
  return q.toString() ? `${path}?${q}` : path;
}
// State that changes as one types: replace the history entry, never add one.
const replaceHash = (hash) => location.hash !== hash && history.replaceState(history.state, '', hash);
const enc = encodeURIComponent;
const testHref = (runId, r, trial = true) => hashFor(['run', runId, 'test', r.test_id], { target: r.target, trial: trial ? r.trial : null });
const runHref = (id) => hashFor(['run', id]);

// API ----------------------------------------------------------------------

async function api(path) {
  let res;
  try {
    res = await fetch(path, { headers: { Accept: 'application/json' }, cache: 'no-store' });
  } catch (e) {
    throw new Error(`cannot reach evalhost (${e.message}): is \`evalhost view\` still running?`);
  }
  let body = null;
  try { body = JSON.parse(await res.text()); } catch (e) { body = null; }
  if (!res.ok) throw new Error(body && typeof body.error === 'string' ? body.error : `${res.status} ${res.statusText}`.trim());
  if (!body || typeof body !== 'object') throw new Error(`${path}: the answer is not JSON`);
  return body;
}

// page parts ---------------------------------------------------------------

let seq = 0;
function show(ctx, title, ...nodes) {
  if (ctx.seq !== seq) return false;
  document.title = `${title} · evalhost`;
  app.replaceChildren(...nodes.flat(Infinity).filter(Boolean));
  return true;
}
const errorBox = (msg) => h('div', { id: 'error', class: 'error-box', role: 'alert' }, h('strong', null, 'Error: '), msg);
// kids given as functions are built only when the section is shown
const section = (id, title, ...kids) => h('section', { id, class: 'block' }, h('h2', null, title), kids.map((k) => (typeof k === 'function' ? k() : k)));
const crumbs = (...k) => h('nav', { class: 'crumbs' }, link('#/', 'Runs'), k.length ? ' › ' : '', ...k);
function facts(pairs, id) {
  const dl = h('dl', { class: 'facts', id });
  for (const [k, v, cls] of pairs) {
    if (v !== null && v !== undefined && v !== '') dl.append(div(cls ? `fact ${cls}` : 'fact', h('dt', null, k), h('dd', null, v)));
  }
  return dl;
}
function commit(run) {
  if (!run.git_commit) return muted(DASH);
  return h('span', { class: 'commit', title: run.git_commit }, code(String(run.git_commit).slice(0, 7)),
    run.git_dirty ? h('span', { class: 'dirty', title: 'uncommitted changes' }, 'dirty') : null);
}
// A run of part of its suite (--test-id, --tag, --shard, --rerun-failed,
// another targets file): its numbers are not the suite's, and it says so.
const partialMark = (r) => (arr(r.partial).length ? h('span', { class: 'badge b-other partial', title: `partial run: ${arr(r.partial).join(', ')}` }, 'partial') : null);
const runStatus = (r) => [r.status === 'complete' ? muted('complete') : badge(r.status === 'interrupted' ? 'error' : r.status, r.status || DASH), ' ', partialMark(r)];
const counts = (r) => span('counts', span('n-pass', String(r.passed ?? 0)), ' / ', span('n-fail', String(r.failed ?? 0)), ' / ', span('n-err', String(r.errors ?? 0)));
function runFacts(r) {
  return facts([
    ['Suite', r.suite ? link(hashFor(['trend', r.suite]), r.suite, { title: 'trend of this suite' }) : null],
    ['Dialect', r.dialect],
    ['Targets', arr(r.targets).join(', ') || DASH],
    ['Started', h('span', { title: str(r.started_at) }, when(r.started_at))],
    ['Duration', dur(r.duration_ms)],
    ['Commit', commit(r)],
    ['Tests', span(null, String(r.tests || r.total || DASH), r.tests && r.total > r.tests ? ` (${r.total} rows)` : '', ' · ', counts(r))],
    ['Pass rate', pct(r.pass_rate)],
    ['Mean score', num(r.mean_score)],
    ['Cost', money(r.cost_usd)],
    ['Tokens', r.tokens_in == null && r.tokens_out == null ? null : `${int(r.tokens_in)} in / ${int(r.tokens_out)} out`],
    ['Tags', arr(r.tags).length ? arr(r.tags).map(tag) : null],
    ['Status', runStatus(r)],
    ['Partial', arr(r.partial).length ? arr(r.partial).join(', ') : null],
    ['Directory', r.dir ? code(r.dir, 'path') : null, 'wide'],
  ]);
}
// values: strings or [value, label]
function selectField(id, label, allLabel, values, current, onchange) {
  const sel = h('select', { id, name: id, onchange }, h('option', { value: '' }, allLabel));
  const vals = values.map((v) => (Array.isArray(v) ? v : [v, v]));
  if (current && !vals.some(([v]) => v === current)) vals.push([current, current]);
  for (const [v, text] of vals) sel.append(h('option', { value: v }, text));
  sel.value = current || '';
  sel.selectedOptions[0]?.setAttribute('selected', '');
  return h('label', { class: 'field' }, span(null, label), sel);
}
const field = (label, input, cls = 'field grow') => h('label', { class: cls }, span(null, label), input);
// Fills tbody with the items that pass keep(), in order; "showing N of M" into counter.
function refill(tbody, items, keep, counter, cols, order) {
  const shown = items.filter(keep);
  if (order) shown.sort(order);
  tbody.replaceChildren(...(shown.length ? shown.map((x) => x.tr) : [h('tr', { class: 'none' }, h('td', { colspan: cols, class: 'empty' }, 'No test matches.'))]));
  counter.textContent = `showing ${shown.length} of ${items.length}`;
}

// charts -------------------------------------------------------------------

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 2.5, 5, 10].find((m) => m * p >= v * 1.0001) * p || 10 * p;
}
// An SVG path through the numbers of vals, broken where one is missing.
function path(vals, x, y) {
  let d = '', pen = false;
  vals.forEach((v, i) => {
    if (!isNum(v)) { pen = false; return; }
    d += `${pen ? 'L' : 'M'}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
    pen = true;
  });
  return d;
}
// points: [{label, value|null, tip, href}], oldest first; fmt formats a
// value for its tooltip, tickFmt (default fmt) for the axis.
function lineChart({ id, title, points, yMax, fmt, tickFmt, width }) {
  const W = width || 520, H = 180, ml = 56, mt = 30, pw = W - ml - 24, ph = H - mt - 28;
  const vals = points.map((p) => p.value);
  const top = yMax ?? niceMax(Math.max(0, ...vals.filter(isNum)));
  const n = points.length;
  const x = (i) => ml + (n === 1 ? pw / 2 : (i * pw) / (n - 1));
  const y = (v) => mt + ph - (Math.max(0, Math.min(v, top)) / top) * ph;
  const svg = s('svg', { id, class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title },
    s('text', { class: 'chart-title', x: ml, y: 17 }, title));
  for (const t of [0, 0.5, 1]) {
    svg.append(s('line', { class: t ? 'grid' : 'axis', x1: ml, x2: ml + pw, y1: y(t * top), y2: y(t * top) }),
      s('text', { class: 'tick', x: ml - 6, y: y(t * top) + 4, 'text-anchor': 'end' }, (tickFmt || fmt)(t * top)));
  }
  svg.append(s('line', { class: 'axis', x1: ml, x2: ml, y1: mt, y2: mt + ph }));
  const every = Math.ceil(n / Math.floor(pw / 56));
  points.forEach((p, i) => {
    if (i % every === 0 || i === n - 1) svg.append(s('text', { class: 'tick', x: x(i), y: H - 8, 'text-anchor': 'middle' }, p.label));
  });
  if (!vals.some(isNum)) {
    return add(svg, [s('text', { class: 'no-data', x: ml + pw / 2, y: mt + ph / 2, 'text-anchor': 'middle' }, n ? 'no data recorded' : 'no runs')]);
  }
  svg.append(s('path', { class: 'line', d: path(vals, x, y) }));
  points.forEach((p, i) => {
    if (!isNum(p.value)) return;
    const dot = s('circle', { class: 'pt', cx: x(i), cy: y(p.value), r: 4 }, s('title', null, `${p.tip}\n${title}: ${fmt(p.value)}`));
    svg.append(p.href ? s('a', { href: p.href }, dot) : dot);
  });
  return svg;
}
function sparkline(scores, passed, tips) {
  const W = 120, H = 26, n = scores.length;
  const x = (i) => 4 + (n <= 1 ? (W - 8) / 2 : (i * (W - 8)) / (n - 1));
  const y = (v) => 4 + (1 - Math.max(0, Math.min(1, v))) * (H - 8);
  const svg = s('svg', { class: 'sparkline', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'aria-label': 'scores, oldest to newest' },
    [0, 1].map((v) => s('line', { class: 'grid', x1: 4, x2: W - 4, y1: y(v), y2: y(v) })),
    s('path', { class: 'line', d: path(scores, x, y) }));
  scores.forEach((v, i) => {
    if (isNum(v)) {
      svg.append(s('circle', { class: `pt ${passed[i] === true ? 'pass' : passed[i] === false ? 'fail' : ''}`, cx: x(i), cy: y(v), r: 2.4 }, s('title', null, tips[i])));
    }
  });
  return svg;
}

// diffs --------------------------------------------------------------------

// LCS line diff; the common head and tail are cut first so the table stays small.
function lineDiff(a, b) {
  let pre = 0, suf = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const A = a.slice(pre, a.length - suf), B = b.slice(pre, b.length - suf), n = A.length, m = B.length, w = m + 1;
  const out = a.slice(0, pre).map((t) => [' ', t]);
  let i = 0, j = 0;
  if (n * m <= 4e6) {
    const L = new Uint32Array((n + 1) * w);
    for (let p = n - 1; p >= 0; p--) {
      for (let q = m - 1; q >= 0; q--) L[p * w + q] = A[p] === B[q] ? L[(p + 1) * w + q + 1] + 1 : Math.max(L[(p + 1) * w + q], L[p * w + q + 1]);
    }
    while (i < n && j < m) {
      if (A[i] === B[j]) { out.push([' ', A[i++]]); j++; }
      else if (L[(i + 1) * w + j] >= L[i * w + j + 1]) out.push(['-', A[i++]]);
      else out.push(['+', B[j++]]);
    }
  }
  while (i < n) out.push(['-', A[i++]]);
  while (j < m) out.push(['+', B[j++]]);
  return out.concat(a.slice(a.length - suf).map((t) => [' ', t]));
}
function diffView(expected, actual) {
  const lines = lineDiff(expected.split('\n'), actual.split('\n'));
  const cls = { ' ': 'same', '-': 'del', '+': 'add' };
  const nDel = lines.filter(([op]) => op === '-').length, nAdd = lines.filter(([op]) => op === '+').length;
  return div(null,
    h('p', { class: 'legend' }, span('del', '− expected'), ' ', span('add', '+ output'),
      muted(nDel + nAdd ? ` · ${plural(nDel, 'line')} removed, ${plural(nAdd, 'line')} added` : ' · the output equals the expected output')),
    pre(lines.map(([op, t]) => span(cls[op], `${op} ${t}`)), 'diff line-diff'));
}
function unifiedDiff(text) {
  return pre(String(text).split('\n').map((l) => span(
    /^(diff |index |--- |\+\+\+ )/.test(l) ? 'meta' : l.startsWith('@@') ? 'hunk' : l[0] === '+' ? 'add' : l[0] === '-' ? 'del' : 'same', l)), 'diff unified');
}

// export -------------------------------------------------------------------

// The visible rows as a file: CSV (RFC 4180 quoting; a cell starting with
// = + - @ is prefixed with ' so a spreadsheet does not run it) or JSON.
const csvCell = (v) => {
  let t = v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);
  if (/^[=+\-@\t\r]/.test(t)) t = `'${t}`;
  return /[",\n\r]/.test(t) ? `"${t.replace(/"/g, '""')}"` : t;
};
function toCsv(records) {
  const cols = [...new Set(records.flatMap((r) => Object.keys(r)))];
  return [cols.map(csvCell).join(','), ...records.map((r) => cols.map((c) => csvCell(r[c])).join(','))].join('\r\n') + '\r\n';
}
function download(name, type, text) {
  const a = h('a', { href: URL.createObjectURL(new Blob([text], { type })), download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}
// Buttons exporting what records() returns when clicked (the rows shown).
function exportButtons(name, records) {
  const shownNow = () => records();
  return h('span', { class: 'export', id: 'export' }, muted('Export shown: '),
    h('button', { type: 'button', class: 'small', id: 'export-csv', onclick: () => download(`${name}.csv`, 'text/csv', toCsv(shownNow())) }, 'CSV'), ' ',
    h('button', { type: 'button', class: 'small', id: 'export-json', onclick: () => download(`${name}.json`, 'application/json', JSON.stringify(shownNow(), null, 2) + '\n') }, 'JSON'));
}
// Table | Grid switch of a run's pages.
const runViews = (id, current) => h('nav', { class: 'view-switch', id: 'view-switch' },
  current === 'table' ? span('current', 'Table') : link(runHref(id), 'Table', { id: 'to-table' }), ' · ',
  current === 'grid' ? span('current', 'Output grid') : link(hashFor(['run', id, 'grid']), 'Output grid', { id: 'to-grid' }));
// A partial run says so above its numbers.
const partialNote = (r) => (arr(r.partial).length || (r.status && r.status !== 'complete')
  ? h('p', { class: 'partial-note', id: 'partial-note' }, badge('error', r.status && r.status !== 'complete' ? r.status : 'partial'), ' ',
    arr(r.partial).length ? `partial run (${arr(r.partial).join(', ')}): its numbers are not the whole suite's` : 'this run did not finish: tests it did not reach are not shown')
  : null);

// #/ : runs ----------------------------------------------------------------

async function viewRuns(ctx) {
  const f = {};
  for (const k of ['suite', 'target', 'tag', 'since']) f[k] = ctx.params.get(k) || '';
  const q = hashFor([], f).split('?')[1];
  const data = await api('api/runs' + (q ? `?${q}` : ''));
  if (ctx.seq !== seq) return;
  const runs = arr(data.runs);
  const go = (key) => (e) => { location.hash = hashFor([], { ...f, [key]: e.target.value }); };
  const filtered = !!q;

  const bar = h('div', { class: 'toolbar', id: 'runs-filters' },
    selectField('suite-filter', 'Suite', 'all suites', arr(data.suites), f.suite, go('suite')),
    selectField('target-filter', 'Target', 'all targets', arr(data.targets), f.target, go('target')),
    selectField('tag-filter', 'Tag', 'all tags', arr(data.tags), f.tag, go('tag')),
    field('Since', h('input', { type: 'date', id: 'since-filter', name: 'since', value: f.since, onchange: go('since') }), 'field'),
    filtered ? link('#/', 'clear filters', { id: 'clear-filters', class: 'clear' }) : null);
  const trends = arr(data.suites).length ? h('p', { id: 'trend-links' }, muted('Trends: '),
    arr(data.suites).map((su, i) => [i ? ' · ' : '', link(hashFor(['trend', su]), su, { class: 'trend-link' })])) : null;

  const oldest = runs.slice().reverse();
  const pts = (key) => oldest.map((r) => ({ label: when(r.started_at, 1), value: r[key], tip: `${when(r.started_at)} · ${r.suite}\n${r.id}${arr(r.partial).length ? `\npartial run: ${arr(r.partial).join(', ')}` : ''}`, href: runHref(r.id) }));
  const charts = div('charts',
    lineChart({ id: 'chart-pass-rate', title: 'Pass rate', yMax: 1, fmt: pct, points: pts('pass_rate') }),
    lineChart({ id: 'chart-cost', title: 'Cost (USD)', fmt: money, tickFmt: moneyTick, points: pts('cost_usd') }));

  const byId = new Map(runs.map((r) => [r.id, r]));
  const btn = h('button', { id: 'compare-btn', type: 'button', disabled: true }, 'Compare');
  const hint = h('span', { id: 'compare-hint', class: 'muted' }, 'tick two runs to compare them');
  const tbody = h('tbody');
  // base = the older run, candidate = the newer
  const picked = () => [...tbody.querySelectorAll('input.pick:checked')].map((i) => byId.get(i.value))
    .sort((a, b) => String(a.started_at).localeCompare(String(b.started_at)) || String(a.id).localeCompare(String(b.id)));
  function onPick() {
    const ps = picked();
    btn.disabled = ps.length !== 2;
    for (const tr of tbody.rows) tr.classList.toggle('picked', tr.querySelector('input.pick').checked);
    hint.textContent = ps.length === 2
      ? `base ${ps[0].id} → candidate ${ps[1].id}${ps[0].suite !== ps[1].suite ? ' (different suites)' : ''}`
      : ['tick two runs to compare them', 'tick one more run'][ps.length] || `${ps.length} runs ticked: tick only two`;
  }
  btn.addEventListener('click', () => {
    const ps = picked();
    if (ps.length === 2) location.hash = hashFor(['compare', ps[0].id, ps[1].id]);
  });
  for (const r of runs) {
    tbody.append(h('tr', { class: 'run-row', 'data-run-id': r.id, 'data-suite': r.suite, 'data-status': r.status },
      td(null, h('input', { type: 'checkbox', class: 'pick', value: r.id, 'aria-label': `pick run ${r.id}`, onchange: onPick })),
      td(null, link(runHref(r.id), when(r.started_at), { class: 'run-link', title: str(r.started_at) }), div('sub mono', r.id)),
      td(null, link(hashFor(['trend', r.suite]), r.suite, { class: 'suite-link', title: `trend of ${r.suite}` })),
      td('targets', arr(r.targets).join(', ')),
      td(null, commit(r)),
      td('num', String(r.tests || r.total || DASH), r.tests && r.total > r.tests ? div('sub', `${r.total} rows`) : null),
      td('num', counts(r)),
      td('num', meter(r.pass_rate)),
      td('num', num(r.mean_score)),
      td('num', money(r.cost_usd)),
      td('num', dur(r.duration_ms)),
      td(null, runStatus(r), tags(r.tags))));
  }
  show(ctx, 'Runs',
    div('page-head', h('h1', null, 'Runs'), muted(`${plural(runs.length, 'run')}${filtered ? ' (filtered)' : ''}, newest first`)),
    bar, trends, runs.length ? charts : null,
    div('toolbar compare-bar', btn, hint),
    runs.length
      ? table('runs-table', ['', 'Started', 'Suite', 'Targets', 'Commit', 'Tests', 'P / F / E', 'Pass rate', 'Mean score', 'Cost', 'Duration', 'Status'], [5, 6, 7, 8, 9, 10], tbody)
      : h('p', { class: 'empty', id: 'no-runs' }, filtered ? 'No runs match these filters.' : 'No runs yet: `evalhost run` records each run here.'));
}
function meter(v) {
  const fill = span('meter-fill');
  if (isNum(v)) fill.style.width = `${Math.max(0, Math.min(1, v)) * 100}%`;
  return span('meter-wrap', span('meter', fill), span(null, pct(v)));
}

// #/run/{id} ----------------------------------------------------------------

async function viewRun(ctx, id) {
  const data = await api(`api/runs/${enc(id)}`);
  if (ctx.seq !== seq) return;
  const run = data.run || {}, rows = arr(data.rows), p = ctx.params;
  const nBy = new Map();
  for (const r of rows) nBy.set(r.status, (nBy.get(r.status) || 0) + 1);
  const main3 = ['passed', 'failed', 'error'];
  const statuses = main3.concat([...nBy.keys()].filter((x) => !main3.includes(x)).sort());

  const statusSel = selectField('status-filter', 'Status', `all (${rows.length})`,
    statuses.map((st) => [st, `${st} (${nBy.get(st) || 0})`]), p.get('status') || '', apply);
  const tagSel = selectField('tag-filter', 'Tag', 'all tags', [...new Set(rows.flatMap((r) => arr(r.tags)))].sort(), p.get('tag') || '', apply);
  const search = h('input', {
    type: 'search', id: 'search', name: 'q', placeholder: 'search test id, input, output…  ( / )',
    autocomplete: 'off', spellcheck: 'false', value: p.get('q') || '', oninput: apply,
  });
  const shown = h('span', { id: 'shown-count', class: 'muted' });
  const items = rows.map((r) => ({
    r,
    hay: `${r.test_id} ${r.text || ''}`.toLowerCase(),
    tr: h('tr', { class: 'row', 'data-test-id': r.test_id, 'data-target': r.target, 'data-status': r.status, 'data-trial': r.trial ?? 0 },
      td(null, link(testHref(id, r), r.test_id, { class: 'test-link mono' }), tags(r.tags)),
      td('mono', r.target),
      td('num', r.trial ? String(r.trial) : muted(DASH)),
      td(null, badge(r.status)),
      td('num', span(below(r), score2(r.score)), muted(isNum(r.threshold) ? ` / ${ruleOf(r)}` : ` · ${ruleOf(r)}`)),
      td('num', money(r.cost_usd)),
      td('num', dur(r.duration_ms)),
      h('td', { class: 'err-cell', title: r.error || null }, r.error ? excerpt(String(r.error), 140) : '')),
  }));
  const tbody = h('tbody');
  function apply() {
    const st = statusSel.lastChild.value, tg = tagSel.lastChild.value, q = search.value.trim(), ts = terms(q);
    refill(tbody, items, ({ r, hay }) => (!st || r.status === st) && (!tg || arr(r.tags).includes(tg)) && ts.every((t) => hay.includes(t)), shown, 8);
    replaceHash(hashFor(['run', id], { status: st, tag: tg, q }));
  }
  apply();
  const visible = () => items.filter((x) => x.tr.isConnected).map(({ r }) => ({
    test_id: r.test_id, target: r.target, trial: r.trial, status: r.status, score: r.score, threshold: r.threshold,
    cost_usd: r.cost_usd, duration_ms: r.duration_ms, error: r.error, tags: arr(r.tags).join(' '),
  }));
  const ok = show(ctx, `Run ${id}`,
    crumbs(code(id)),
    div('page-head', h('h1', null, 'Run ', code(id)), runViews(id, 'table'),
      run.suite ? link(hashFor(['trend', run.suite]), `trend of ${run.suite} →`, { class: 'trend-link' }) : null),
    partialNote(run),
    runFacts(run),
    h('div', { class: 'toolbar', id: 'row-filters' }, statusSel, tagSel, field('Search', search), shown, exportButtons(`run-${id}`, visible)),
    table('rows-table', ['Test', 'Target', 'Trial', 'Status', 'Score / thr.', 'Cost', 'Duration', 'Error'], [2, 4, 5, 6], tbody));
  if (ok && p.get('q')) search.focus();
}

// #/run/{id}/grid -----------------------------------------------------------

// promptfoo's view: a row per test, a column per prompt × target, a cell per
// output with its verdict; a click shows the assertions beside the grid.
async function viewGrid(ctx, id) {
  const data = await api(`api/runs/${enc(id)}/grid`);
  if (ctx.seq !== seq) return;
  const run = data.run || {}, cells = arr(data.cells), p = ctx.params;
  const colKey = (c) => JSON.stringify([c.prompt ?? null, c.target]);
  const cols = [], colIdx = new Map(), tests = [], testIdx = new Map();
  for (const c of cells) {
    const k = colKey(c);
    if (!colIdx.has(k)) { colIdx.set(k, cols.length); cols.push({ prompt: c.prompt ?? null, target: c.target, n: 0, pass: 0 }); }
    if (!testIdx.has(c.test)) { testIdx.set(c.test, tests.length); tests.push({ test: c.test, input: c.input, tags: arr(c.tags), cells: new Map() }); }
    const t = tests[testIdx.get(c.test)], ci = colIdx.get(k);
    if (!t.cells.has(ci)) t.cells.set(ci, []);
    t.cells.get(ci).push(c);
  }
  // A test's outcome: its trials combined by the suite's own rule (the
  // server's `test_status`), the same number the run page and the summary
  // show; a column counts tests, never trials.
  const passedStatus = (s) => s === 'passed' || s === 'expected-failed';
  const testStatus = (list) => list[0].test_status ?? list[list.length - 1].status;
  const testScore = (list) => list[0].test_score ?? list[list.length - 1].score;
  for (const t of tests) {
    for (const [ci, list] of t.cells) {
      cols[ci].n++;
      if (passedStatus(testStatus(list))) cols[ci].pass++;
    }
  }
  const prompts = [...new Set(cols.map((c) => c.prompt).filter((x) => x !== null))];
  const targets = [...new Set(cols.map((c) => c.target))];
  const good = (c) => c.status === 'passed' || c.status === 'expected-failed';
  const showSel = selectField('grid-show', 'Rows', `all tests (${tests.length})`, [
    ['failures', 'with a failure or error'], ['errors', 'with an error'], ['differ', 'where the columns disagree']], p.get('show') || '', apply);
  const promptSel = prompts.length > 1 ? selectField('grid-prompt', 'Prompt', `all prompts (${prompts.length})`, prompts, p.get('prompt') || '', apply) : null;
  const targetSel = targets.length > 1 ? selectField('grid-target', 'Target', `all targets (${targets.length})`, targets, p.get('target') || '', apply) : null;
  const search = h('input', { type: 'search', id: 'search', name: 'q', placeholder: 'search test, input, output…  ( / )', autocomplete: 'off', spellcheck: 'false', value: p.get('q') || '', oninput: apply });
  const count = h('span', { id: 'shown-count', class: 'muted' });
  const panel = h('aside', { id: 'cell-detail', class: 'cell-detail', hidden: true });
  const thead = h('thead'), tbody = h('tbody');
  let picked = null;

  function pick(td, list) {
    picked?.classList.remove('picked');
    picked = td;
    td.classList.add('picked');
    const c0 = list[0];
    panel.hidden = false;
    panel.replaceChildren(
      div('cd-head', h('button', { type: 'button', class: 'small', id: 'close-detail', onclick: () => { panel.hidden = true; td.classList.remove('picked'); } }, '×'),
        h('h3', null, code(c0.test)), muted([c0.prompt !== null ? `prompt ${c0.prompt} · ` : '', `target ${c0.target}`].join(''))),
      ...list.map((c) => div('cd-trial',
        div('cd-verdict', badge(c.status), ' ', span(null, `score ${score2(c.score)}`), c.trial ? muted(` · trial ${c.trial}`) : null, ' ',
          link(testHref(id, c), 'full test page →', { class: 'cd-link' })),
        c.error ? pre(str(c.error), 'error-text') : null,
        div('label', 'Output'), c.output ? pre(c.output + (c.output_cut ? '\n…' : ''), 'text output') : muted('(empty output)'),
        div('label', `Assertions (${arr(c.assertions).filter((a) => a.verdict === 'pass').length} of ${arr(c.assertions).length} passed)`),
        arr(c.assertions).map((a) => div(`assertion v-${slug(a.verdict)}`,
          div('a-head', badge(a.verdict, a.verdict), ' ', code(str(a.name), 'a-name'), ' ', span('a-type', str(a.type)), span('a-nums', `score ${score2(a.score)}`)),
          arr(a.checks).length ? h('ul', { class: 'checks' }, arr(a.checks).map((k) => h('li', { class: `check ${k.passed ? 'pass' : 'fail'}` }, span('mark', k.passed ? '✓' : '✗'), ' ', str(k.text)))) : null,
          typeof a.reasoning === 'string' && a.reasoning ? div('reasoning', div('label', 'Judge reasoning'), a.reasoning) : null,
          a.error ? pre(str(a.error), 'error-text') : null)))));
  }
  function cellTd(t, ci) {
    const list = t.cells.get(ci);
    if (!list) return h('td', { class: 'g-cell missing', title: 'not run for this column' }, muted(DASH));
    const c0 = list[list.length - 1];
    const status = testStatus(list), ok = passedStatus(status);
    const cell = h('td', {
      class: `g-cell ${ok ? 'pass' : status === 'error' ? 'error' : list.some(good) ? 'mixed' : 'fail'}`,
      'data-test': t.test, 'data-col': ci, 'data-status': status,
      tabindex: 0, title: 'show the assertions',
    },
      // The test's verdict and combined score; with trials, how many passed,
      // and the output shown is the last trial's (said so).
      div('g-verdict', list.length === 1 ? badge(status) : badge(status, `${status} · ${list.filter(good).length}/${list.length} trials passed`),
        ' ', span('g-score', score2(testScore(list)))),
      list.length > 1 ? muted(`last trial (${score2(c0.score)}):`) : null,
      pre(excerpt(c0.output || '', 280) || '(empty)', 'g-out'));
    cell.addEventListener('click', () => pick(cell, list));
    cell.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); pick(cell, list); } });
    return cell;
  }
  function state() {
    return { show: showSel.lastChild.value, prompt: promptSel?.lastChild.value || '', target: targetSel?.lastChild.value || '', q: search.value.trim() };
  }
  let shownRecords = [];
  function apply() {
    const st = state(), ts = terms(st.q);
    const vis = cols.map((c, i) => [c, i]).filter(([c]) => (!st.prompt || c.prompt === st.prompt) && (!st.target || c.target === st.target));
    thead.replaceChildren(h('tr', null, h('th', { class: 'g-test' }, 'Test'),
      vis.map(([c, i]) => h('th', { class: 'g-col', 'data-col': i },
        c.prompt !== null ? h('div', { class: 'g-prompt', title: c.prompt }, excerpt(c.prompt, 60)) : null,
        div('g-target mono', c.target),
        div('g-rate', span(c.pass === c.n ? 'n-pass' : 'n-fail', `${c.pass}/${c.n} tests passed`), muted(` · ${pct(c.n ? c.pass / c.n : null)}`))))));
    const keep = (t) => {
      const inVis = vis.flatMap(([, i]) => t.cells.get(i) || []);
      if (!inVis.length) return false;
      if (st.show === 'failures' && vis.every(([, i]) => !t.cells.get(i) || passedStatus(testStatus(t.cells.get(i))))) return false;
      if (st.show === 'errors' && !inVis.some((c) => c.status === 'error')) return false;
      if (st.show === 'differ') {
        const verdicts = new Set(vis.map(([, i]) => (t.cells.get(i) || []).map((c) => c.status).join(',')));
        const outs = new Set(vis.map(([, i]) => (t.cells.get(i) || []).map((c) => c.output).join('\u0000')));
        if (verdicts.size < 2 && outs.size < 2) return false;
      }
      const hay = `${t.test} ${t.input} ${inVis.map((c) => c.output).join(' ')}`.toLowerCase();
      return ts.every((x) => hay.includes(x));
    };
    const rows = tests.filter(keep);
    tbody.replaceChildren(...(rows.length ? rows.map((t) => h('tr', { class: 'g-row', 'data-test': t.test },
      h('th', { class: 'g-test', scope: 'row' }, code(t.test, 'mono'), t.input ? div('sub g-input', excerpt(t.input, 160)) : null, tags(t.tags)),
      vis.map(([, i]) => cellTd(t, i))))
      : [h('tr', { class: 'none' }, h('td', { colspan: vis.length + 1, class: 'empty' }, 'No test matches.'))]));
    count.textContent = `showing ${rows.length} of ${tests.length} tests × ${vis.length} of ${cols.length} columns`;
    shownRecords = rows.flatMap((t) => vis.flatMap(([, i]) => (t.cells.get(i) || []).map((c) => ({
      test: t.test, test_id: c.test_id, prompt: c.prompt, target: c.target, trial: c.trial, status: c.status, score: c.score,
      output: c.output, output_cut: c.output_cut, failed_assertions: arr(c.assertions).filter((a) => a.verdict !== 'pass').map((a) => a.name).join(' '),
    }))));
    replaceHash(hashFor(['run', id, 'grid'], st));
  }
  apply();
  const ok = show(ctx, `Grid · ${id}`,
    crumbs(link(runHref(id), id), ' › grid'),
    div('page-head', h('h1', null, 'Outputs of ', code(id)), runViews(id, 'grid'),
      run.suite ? link(hashFor(['trend', run.suite]), `trend of ${run.suite} →`, { class: 'trend-link' }) : null),
    partialNote(run),
    h('div', { class: 'toolbar', id: 'grid-filters' }, showSel, promptSel, targetSel, field('Search', search), count, exportButtons(`grid-${id}`, () => shownRecords)),
    div('grid-wrap', h('div', { class: 'table-wrap g-scroll' }, h('table', { class: 'output-grid', id: 'output-grid' }, thead, tbody)), panel));
  if (ok && p.get('q')) search.focus();
}

// #/run/{id}/test/{test_id} ------------------------------------------------

async function viewTest(ctx, runId, testId) {
  let target = ctx.params.get('target'), trial = ctx.params.get('trial');
  const runP = api(`api/runs/${enc(runId)}`);
  let rd = null;
  if (target === null) { // a link without target (compare, trend): the run's first row of the test
    rd = await runP;
    const m = arr(rd.rows).find((r) => r.test_id === testId && (trial === null || String(r.trial ?? 0) === trial));
    if (m) { target = m.target; if (trial === null) trial = String(m.trial ?? 0); }
  }
  const q = new URLSearchParams({ test: testId });
  if (target !== null) q.set('target', target);
  if (trial !== null) q.set('trial', trial);
  const [rowData, runData] = await Promise.all([api(`api/runs/${enc(runId)}/row?${q}`), rd || runP.catch(() => null)]);
  if (ctx.seq !== seq) return;
  const row = rowData.row || {}, run = runData?.run || {};
  const same = arr(runData?.rows).filter((r) => r.test_id === testId);
  const output = str(row.output), tu = row.token_usage, g = row.gated;
  const sec = (cond, ...a) => (cond ? section(...a) : null);

  const msgs = arr(row.output_messages);
  const nCalls = msgs.reduce((n, m) => n + arr(m.tool_calls).length, 0);
  const toggle = nCalls ? h('button', { type: 'button', class: 'small', id: 'toggle-tools' }, 'expand all') : null;
  const detail = h('div', { id: 'detail', 'data-test-id': row.test_id, 'data-status': row.status },
    crumbs(link(runHref(runId), runId, { id: 'back-to-run' }), ' › ', code(testId)),
    div('page-head', h('h1', null, code(row.test_id || testId), ' ', badge(row.status)),
      row.expected_fail ? tag('expected to fail') : null, row.cached ? tag('cached') : null),
    same.length > 1 ? h('nav', { id: 'variants', class: 'variants' }, muted('Variants: '), same.map((r) =>
      link(testHref(runId, r), [r.target, r.trial ? ` · trial ${r.trial}` : '', ' ', badge(r.status)],
        { class: `variant${r.target === row.target && String(r.trial ?? 0) === String(row.trial ?? 0) ? ' current' : ''}` }))) : null,
    facts([
      ['Target', code(row.target)],
      ['Trial', row.trial ? `${row.trial}${row.trials ? ` of ${row.trials}` : ''}${row.strategy ? ` (${row.strategy})` : ''}` : null],
      ['Score', span(null, span(below(row), score2(row.score)), muted(isNum(row.threshold) ? ` / threshold ${ruleOf(row)}` : ` · ${ruleOf(row)}`))],
      ['Execution', row.execution_status],
      ['Failure class', row.failure_class],
      ['Duration', row.duration_ms == null ? null : dur(row.duration_ms)],
      ['Wall time', isNum(row.wall_ms) ? dur(row.wall_ms) : null],
      ['Tokens', tu ? `${int(tu.input)} in / ${int(tu.output)} out${tu.cached ? ` / ${int(tu.cached)} cached` : ''}${tu.reasoning ? ` / ${int(tu.reasoning)} reasoning` : ''}` : null],
      ['Cost', row.cost_usd == null ? null : money(row.cost_usd)],
      ['LLM calls', isNum(row.llm_calls) ? String(row.llm_calls) : null],
      ['Target used', row.target_used],
      ['Finish reason', row.finish_reason],
      ['Prompt', row.prompt ? row.prompt.label || row.prompt.id : null],
      ['Tags', arr(row.tags).length ? arr(row.tags).map(tag) : null],
      ['Source', row.source?.file ? code(`${row.source.file}${row.source.line ? `:${row.source.line}` : ''}`, 'path') : null, 'wide'],
      ['Graded at', row.timestamp ? h('span', { title: row.timestamp }, when(row.timestamp)) : null],
    ], 'usage'),
    g ? h('p', { class: 'gate-note', id: 'gate-note' }, `required assertion \`${g.assertion}\` scored ${score2(g.score)} < ${score2(g.min_score)}: test score set to 0`) : null,
    sec(row.error, 'error-section', 'Error', pre(str(row.error), 'error-text')),
    sec(arr(row.input).length, 'input', 'Input', arr(row.input).map((m) => div(`msg role-${slug(m.role)}`, div('role', m.role || 'message'), blocks(m.content)))),
    sec(row.criteria, 'criteria', 'Criteria', pre(str(row.criteria))),
    sec(row.expected_output != null, 'expected', 'Expected output', pre(str(row.expected_output))),
    section('output', 'Output', output ? pre(output, 'text output') : muted('(empty output)'),
      row.untransformed_output != null ? fold('before the transform', pre(str(row.untransformed_output))) : null),
    sec(typeof row.expected_output === 'string', 'diff', 'Expected vs output', () => diffView(row.expected_output, output)),
    section('assertions', `Assertions (${arr(row.scores).filter((a) => a.verdict === 'pass').length} of ${arr(row.scores).length} passed)`,
      arr(row.scores).length ? arr(row.scores).map((a) => assertion(a, row, output)) : muted('no assertions')),
    sec(msgs.length, 'trace', `Trace (${plural(msgs.length, 'message')}, ${plural(nCalls, 'tool call')})`,
      toggle ? div('tools-bar', toggle) : null, msgs.map(traceMessage)),
    sec(arr(row.retries).length, 'retries', 'Retries', h('ul', { class: 'plain' }, arr(row.retries).map((r) =>
      h('li', null, `attempt ${r.attempt ?? '?'} · `, code(r.target || ''), ` · ${r.error || ''}`, muted(` · waited ${dur(r.wait_ms)}`))))),
    sec(row.sandbox && arr(row.sandbox.processes).length, 'sandbox', 'Sandbox (--isolate)', () => [
      row.sandbox.limits ? h('p', null, 'Case limits: ', row.sandbox.limits, row.sandbox.peak_memory_bytes ? muted(` · peak ${Math.round(row.sandbox.peak_memory_bytes / 1048576)} MiB`) : null) : null,
      arr(row.sandbox.refused).length ? h('ul', { class: 'plain' }, arr(row.sandbox.refused).map((x) => h('li', null, badge('failed', 'refused'), ' ', x))) : null,
    ].concat(arr(row.sandbox?.processes).map((p) => div('hook',
      h('h3', null, code(p.role || p.program), ' ', muted(`${p.program} · network ${p.network}`),
        arr(p.refused).length ? badge('failed', `${arr(p.refused).length} refused`) : null),
      arr(p.connections).length ? h('ul', { class: 'plain' }, arr(p.connections).map((c) =>
        h('li', null, c.allowed ? 'allowed ' : badge('failed', 'refused'), ' ', code(`${c.host}:${c.port}`), c.note ? muted(` · ${c.note}`) : null))) : null,
      arr(p.refused).filter((x) => !String(x).startsWith('connection to')).length ? h('ul', { class: 'plain' }, arr(p.refused).filter((x) => !String(x).startsWith('connection to')).map((x) => h('li', null, x))) : null)))),
    sec(row.hooks && Object.keys(row.hooks).length, 'hooks', 'Hooks', Object.entries(row.hooks || {}).map(([name, hk]) => div('hook',
      h('h3', null, code(name), hk?.error ? badge('error', 'failed') : null),
      hk?.output ? pre(str(hk.output)) : null, hk?.error ? pre(str(hk.error), 'error-text') : null))),
    sec(row.file_changes, 'file-changes', 'File changes', () => unifiedDiff(row.file_changes)),
    sec(row.transcript || row.workspace_path, 'transcript', 'Files', () => {
      const t = row.transcript, full = t && run.dir && !String(t).startsWith('/') ? `${run.dir}/${t}` : t;
      return [t ? h('p', null, 'Transcript: ', code(full, 'path select-all'), full !== t ? muted(` (${t} in the run directory)`) : null) : null,
        row.workspace_path ? h('p', null, 'Workspace kept at ', code(row.workspace_path, 'path select-all')) : null];
    }),
    sec(row.metadata && Object.keys(row.metadata).length, 'metadata', 'Metadata', json(row.metadata)),
    h('details', { class: 'raw' }, h('summary', null, 'raw result row (JSON)'), json(row)));
  toggle?.addEventListener('click', () => {
    const all = [...detail.querySelectorAll('details.tool-call')], open = !all.every((d) => d.open);
    all.forEach((d) => { d.open = open; });
    toggle.textContent = open ? 'collapse all' : 'expand all';
  });
  show(ctx, `${testId} · ${runId}`, detail);
}
function blocks(c) {
  if (typeof c === 'string') return c ? pre(c) : muted('(empty)');
  if (c == null) return muted('(empty)');
  if (!Array.isArray(c)) return json(c);
  return c.map((b) => (b?.type === 'text' ? pre(str(b.value ?? b.text ?? ''))
    : b?.type === 'file' || b?.type === 'image' ? div('file', muted(`${b.type} `), code(str(b.value ?? b.path ?? b.url ?? ''), 'path'))
      : json(b)));
}
function traceMessage(m) {
  return div(`msg role-${slug(m.role)}`, div('role', m.role || 'message', m.name ? ` · ${m.name}` : ''),
    m.content ? pre(str(m.content)) : null,
    m.content_json != null ? json(m.content_json) : null,
    arr(m.tool_calls).map((c) => h('details', { class: 'tool-call', 'data-tool': c.tool, 'data-status': c.status || '' },
      h('summary', null, span('tool-name', c.tool || 'tool'), ' ',
        c.status ? badge(c.status === 'ok' ? 'passed' : c.status, c.status) : null, ' ',
        isNum(c.duration_ms) ? muted(dur(c.duration_ms)) : null,
        c.input != null ? span('call-peek', excerpt(typeof c.input === 'string' ? c.input : JSON.stringify(c.input), 90)) : null),
      div('call-body', div('label', 'input'), pre(str(c.input ?? null), 'json'), div('label', 'output'), pre(str(c.output ?? null), 'json')))));
}
// The judge's reasoning: the row's own field, or what the plugin put in details.
function reasoningOf(a) {
  for (const v of [a.reasoning, a.details?.reasoning, a.details?.overall_reasoning, a.details?.reason]) if (typeof v === 'string' && v) return v;
  return null;
}
function assertion(a, row, output) {
  const gated = row.gated?.assertion === a.name, reasoning = reasoningOf(a), j = a.judge, us = a.duration_us;
  return h('div', { class: `assertion v-${slug(a.verdict)}${gated ? ' gated' : ''}`, 'data-name': a.name, 'data-verdict': a.verdict },
    div('a-head', badge(a.verdict, a.verdict), ' ', code(a.name, 'a-name'), ' ', span('a-type', a.type),
      a.negate ? span('flag', 'negated') : null,
      a.required || a.gate ? h('span', { class: 'flag required', title: 'required: below its gate, the test scores 0' }, isNum(a.gate) ? `required ≥ ${score2(a.gate)}` : 'required') : null,
      gated ? span('flag gate-failed', 'gate failed: test score set to 0') : null,
      span('a-nums', `score ${score2(a.score)} · weight ${isNum(a.weight) ? +a.weight.toFixed(3) : DASH}`,
        a.plugin ? muted(` · ${a.plugin}`) : null, isNum(us) ? muted(` · ${us < 1000 ? `${us} µs` : dur(us / 1000)}`) : null)),
    arr(a.assertions).length ? h('ul', { class: 'checks' }, arr(a.assertions).map((c) => h('li', { class: `check ${c.passed ? 'pass' : 'fail'}` },
      span('mark', c.passed ? '✓' : '✗'), ' ', c.text, c.evidence ? div('evidence', c.evidence) : null))) : null,
    reasoning ? div('reasoning', div('label', 'Judge reasoning'), reasoning) : null,
    a.error ? pre(str(a.error), 'error-text') : null,
    a.failure_class ? div('sub', `failure class: ${a.failure_class}`) : null,
    a.plugin_output ? fold('plugin output', pre(str(a.plugin_output))) : null,
    typeof a.expected === 'string' && a.expected !== row.expected_output ? fold('expected vs output', diffView(a.expected, output), true) : null,
    j ? div('sub', `judge: ${plural(j.calls, 'call')}${j.cached ? ` (${j.cached} cached)` : ''} · ${int(j.input_tokens)} in / ${int(j.output_tokens)} out tokens · ${money(j.cost_usd)}`) : null,
    a.details && typeof a.details === 'object' && Object.keys(a.details).length ? fold('details', json(a.details)) : null,
    arr(a.scores).length ? div('members', arr(a.scores).map((m) => assertion(m, row, output))) : null);
}

// #/compare/{base}/{cand} ---------------------------------------------------

// As the CLI writes them (history/compare.rs: signed, verdict_line).
const ciText = (ci = {}) => `${((isNum(ci.level) ? ci.level : 0.95) * 100).toFixed(0)} % CI ${signed(ci.low)} … ${signed(ci.high)}`;
const pval = (v) => (!isNum(v) ? DASH : v < 0.001 ? '< 0.001' : v.toFixed(3));
// The sentence `evalhost compare` prints:
//   regressed: 4 tests, mean −0.071 (95 % CI −0.120 … −0.020), significant
//   no significant change: mean +0.004 (95 % CI −0.031 … +0.040); 3 worse, 5 better
// "N tests" counts the losses of a regression, the wins of an improvement.
function verdictNodes(sm) {
  const v = sm.verdict || 'no significant change', moved = { regressed: sm.losses, improved: sm.wins }[v];
  const mean = ['mean ', h('span', { id: 'compare-mean-delta' }, signed(sm.mean_delta)), ' (', h('span', { id: 'compare-ci' }, ciText(sm.ci)), ')'];
  return moved === undefined
    ? [`${v}: `, mean, `; ${sm.losses ?? 0} worse, ${sm.wins ?? 0} better`]
    : [`${v}: ${plural(moved, 'test')}, `, mean, ', significant'];
}
async function viewCompare(ctx, baseId, candId) {
  const [data, baseGrid, candGrid] = await Promise.all([api(`api/compare?base=${enc(baseId)}&cand=${enc(candId)}`),
    api(`api/runs/${enc(baseId)}/grid`).catch(() => null), api(`api/runs/${enc(candId)}/grid`).catch(() => null)]);
  if (ctx.seq !== seq) return;
  const base = data.base || {}, cand = data.candidate || {}, sm = data.summary || {}, ci = sm.ci || {}, tests = arr(data.tests);
  // Each test's output in each run (its last trial), for the side-by-side view.
  const outputs = (g) => {
    const m = new Map();
    for (const c of arr(g?.cells)) m.set(`${c.test_id}\u0000${c.target}`, c);
    return m;
  };
  const baseOut = outputs(baseGrid), candOut = outputs(candGrid);
  const changedOnly = h('input', { type: 'checkbox', id: 'changed-outputs', checked: ctx.params.get('outputs') === 'changed', onchange: () => draw() });
  const sideBody = h('tbody'), sideCount = h('span', { class: 'muted', id: 'side-count' });
  const outText = (c) => (c ? c.output + (c.output_cut ? '\n…' : '') : null);
  function sideRow(t) {
    // Runs matched across targets: each side looked up by its own target.
    const b = baseOut.get(`${t.test_id}\u0000${t.base_target ?? t.target}`);
    const c = candOut.get(`${t.test_id}\u0000${t.cand_target ?? t.target}`);
    const bt = outText(b), ct = outText(c), same = bt === ct;
    const lines = bt !== null && ct !== null && !same ? lineDiff(bt.split('\n'), ct.split('\n')) : null;
    const cls = { ' ': 'same', '-': 'del', '+': 'add' };
    return {
      t, same,
      tr: h('tr', { class: `side-row${same ? ' same' : ' changed'}`, 'data-test-id': t.test_id, 'data-target': t.target },
        td(null, link(testHref(candId, { ...t, target: t.cand_target ?? t.target }, false), t.test_id, { class: 'mono' }), div('sub mono', t.target),
          same ? div('sub', 'same output') : div('sub n-fail', 'output changed')),
        td('side-out', b ? [div('sub', badge(b.status), ' ', score2(b.score)), pre(bt || '(empty)', 'text output')] : muted('not in base')),
        td('side-out', c ? [div('sub', badge(c.status), ' ', score2(c.score)), pre(ct || '(empty)', 'text output')] : muted('not in candidate')),
        td('side-diff', lines ? pre(lines.map(([op, x]) => span(cls[op], `${op} ${x}`)), 'diff line-diff') : muted(same ? 'identical' : DASH))),
    };
  }
  const sideItems = tests.map(sideRow);
  let sort = ctx.params.get('sort') || '', only = ctx.params.get('show') || '';
  const stats = facts([
    ['Matched tests', String(sm.matched ?? DASH)],
    ['Mean score', `${num(sm.mean_base)} → ${num(sm.mean_cand)}`],
    ['Mean delta', signed(sm.mean_delta)],
    ['Confidence interval', `${ciText(ci)}${isNum(ci.resamples) ? ` (bootstrap, ${ci.resamples} resamples, seed ${ci.seed ?? DASH})` : ''}`, 'wide'],
    ['Wins / losses / ties', h('span', { id: 'compare-wlt' }, `${sm.wins ?? 0} / ${sm.losses ?? 0} / ${sm.ties ?? 0}`)],
    ['Flips', h('span', { id: 'compare-flips' }, span('n-fail', `${sm.pass_to_fail ?? 0} pass→fail`), ' · ', span('n-pass', `${sm.fail_to_pass ?? 0} fail→pass`))],
    ['McNemar p (flips)', h('span', { id: 'compare-flip-p' }, pval(sm.flip_p_value))],
    ['Sign-test p (deltas)', h('span', { id: 'compare-delta-p' }, pval(sm.delta_p_value))],
    ['Normalized gain', signed(sm.normalized_gain)],
  ], 'compare-stats');

  const showField = selectField('compare-show', 'Show', `all tests (${tests.length})`, [
    ['changed', 'changed (win or loss)'], ['flips', 'flips only'], ['losses', 'losses only'], ['wins', 'wins only']], only, (e) => {
    only = e.target.value; draw();
  });
  const sortBtn = h('button', { type: 'button', id: 'sort-delta', class: 'th-sort', title: 'sort by delta' }, 'Δ');
  sortBtn.addEventListener('click', () => { sort = { '': 'delta', delta: '-delta' }[sort] || ''; draw(); });
  const tbody = h('tbody'), count = h('span', { class: 'muted', id: 'compare-count' });
  // A test's page in one run: with that run's own target (runs matched
  // across targets name `base → candidate` in `target`).
  const detailHref = (id, t) => testHref(id, { ...t, target: (id === baseId ? t.base_target : t.cand_target) ?? t.target }, false);
  const score = (id, t, sc, ok, rate, n) => td('num', link(detailHref(id, t), num(sc), { class: ok ? 'n-pass' : 'n-fail' }),
    isNum(n) && n > 1 ? div('sub', `pass ${pct(rate)} of ${n}`) : null);
  const items = tests.map((t, i) => ({
    t, i,
    tr: h('tr', { class: `compare-row outcome-${slug(t.outcome)}`, 'data-test-id': t.test_id, 'data-target': t.target, 'data-flip': t.flip || 'none', 'data-outcome': t.outcome || '' },
      td(null, link(detailHref(candId, t), t.test_id, { class: 'mono' })),
      td('mono', t.target),
      score(baseId, t, t.base_score, t.base_passed, t.base_pass_rate, t.base_trials),
      score(candId, t, t.cand_score, t.cand_passed, t.cand_pass_rate, t.cand_trials),
      td('num', span(`delta ${!isNum(t.delta) || Math.abs(t.delta) < 5e-4 ? 'zero' : t.delta > 0 ? 'pos' : 'neg'}`, signed(t.delta))),
      td(null, t.flip ? badge(t.flip === 'pass->fail' ? 'failed' : 'passed', t.flip === 'pass->fail' ? 'pass→fail' : 'fail→pass') : ''),
      td(null, span(`outcome ${slug(t.outcome)}`, t.outcome || DASH))),
  }));
  const dval = (x) => (isNum(x.t.delta) ? x.t.delta : 0);
  function draw() {
    const want = { flips: (t) => t.flip, losses: (t) => t.outcome === 'loss', wins: (t) => t.outcome === 'win', changed: (t) => t.outcome !== 'tie' }[only];
    const dir = { delta: 1, '-delta': -1 }[sort];
    refill(tbody, items, ({ t }) => !want || want(t), count, 7, dir && ((a, b) => dir * (dval(a) - dval(b)) || a.i - b.i));
    // The same tests, their outputs side by side (in the table's order).
    const order = new Map([...tbody.querySelectorAll('tr.compare-row')].map((tr, i) => [`${tr.dataset.testId}\u0000${tr.dataset.target}`, i]));
    const side = sideItems.filter((x) => order.has(`${x.t.test_id}\u0000${x.t.target}`) && (!changedOnly.checked || !x.same))
      .sort((a, b) => order.get(`${a.t.test_id}\u0000${a.t.target}`) - order.get(`${b.t.test_id}\u0000${b.t.target}`));
    sideBody.replaceChildren(...(side.length ? side.map((x) => x.tr) : [h('tr', { class: 'none' }, h('td', { colspan: 4, class: 'empty' }, 'No test matches.'))]));
    sideCount.textContent = `${side.length} shown · ${sideItems.filter((x) => !x.same).length} of ${sideItems.length} outputs changed`;
    sortBtn.textContent = { delta: 'Δ ▲', '-delta': 'Δ ▼' }[sort] || 'Δ ⇅';
    sortBtn.setAttribute('data-sort', sort || 'none');
    replaceHash(hashFor(['compare', baseId, candId], { show: only, sort, outputs: changedOnly.checked ? 'changed' : '' }));
  }
  draw();
  const onlyIn = (id, title, xs, runId) => h('div', { class: 'only', id }, h('h3', null, `${title} (${xs.length})`),
    xs.length ? h('ul', { class: 'plain' }, xs.map((x) => h('li', { 'data-test-id': x.test_id, 'data-target': x.target },
      link(detailHref(runId, x), x.test_id, { class: 'mono' }), muted(` · ${x.target}`)))) : muted('none'));
  const card = (label, r) => div('run-card', h('h2', null, label, ' ', link(runHref(r.id), r.id || DASH, { class: 'mono' })), runFacts(r));
  const vclass = { regressed: 'regressed', improved: 'improved' }[sm.verdict] || 'unchanged';
  show(ctx, 'Compare',
    crumbs('compare'),
    div('page-head', h('h1', null, 'Compare'), link(hashFor(['compare', candId, baseId]), 'swap ⇄', { id: 'swap', title: 'swap base and candidate' })),
    div('cmp-cols', card('Base', base), card('Candidate', cand)),
    h('p', { id: 'compare-verdict', class: `verdict ${vclass}`, 'data-verdict': sm.verdict || '' }, verdictNodes(sm)),
    stats,
    partialNote(base) ? div('partial-note', muted('Base: '), partialNote(base)) : null,
    partialNote(cand) ? div('partial-note', muted('Candidate: '), partialNote(cand)) : null,
    div('toolbar', showField, count, exportButtons(`compare-${baseId}-${candId}`, () => [...tbody.querySelectorAll('tr.compare-row')].map((tr) => {
      const t = tests.find((x) => x.test_id === tr.dataset.testId && x.target === tr.dataset.target) || {};
      const key = `${t.test_id}\u0000${t.target}`;
      return { test_id: t.test_id, target: t.target, base_score: t.base_score, cand_score: t.cand_score, delta: t.delta, flip: t.flip || '',
        outcome: t.outcome, base_output: outText(baseOut.get(key)), cand_output: outText(candOut.get(key)) };
    }))),
    table('compare-table', ['Test', 'Target', 'Base', 'Candidate', h('th', { class: 'num' }, sortBtn), 'Flip', 'Outcome'], [2, 3], tbody),
    h('section', { id: 'side-by-side', class: 'block' }, h('h2', null, 'Outputs side by side'),
      div('toolbar', h('label', { class: 'check-field' }, changedOnly, ' only outputs that changed'), sideCount),
      table('side-table', ['Test', `Base ${baseId}`, `Candidate ${candId}`, 'Diff (− base, + candidate)'], [], sideBody)),
    div('cmp-cols', onlyIn('only-in-base', 'Only in base', arr(data.only_in_base), baseId),
      onlyIn('only-in-candidate', 'Only in candidate', arr(data.only_in_candidate), candId)));
}

// #/trend/{suite} -----------------------------------------------------------

async function viewTrend(ctx, suite) {
  const p = ctx.params, n = Math.max(1, parseInt(p.get('n'), 10) || 20);
  const data = await api(`api/trend?suite=${enc(suite)}&n=${n}`);
  if (ctx.seq !== seq) return;
  const runs = arr(data.runs), tests = arr(data.tests);
  const state = () => ({ n: n === 20 ? '' : n, q: search.value.trim(), flaky: flaky.checked ? 1 : '' });
  const tip = (r) => `${when(r.started_at)}\n${r.id}${arr(r.partial).length ? `\npartial run: ${arr(r.partial).join(', ')}` : ''}`;
  const pts = (key) => runs.map((r) => ({ label: `${when(r.started_at, 1)}${arr(r.partial).length ? ' (partial)' : ''}`, value: r[key], tip: tip(r), href: runHref(r.id) }));
  const partials = runs.filter((r) => arr(r.partial).length);
  const chart = (id, title, key, o) => lineChart({ id, title, width: 360, points: pts(key), ...o });

  const nSel = selectField('trend-n', 'Runs', 'last 20', [5, 10, 50, 100].map((k) => [String(k), `last ${k}`]), n === 20 ? '' : String(n),
    (e) => { location.hash = hashFor(['trend', suite], { ...state(), n: e.target.value }); });
  const search = h('input', { type: 'search', id: 'trend-search', name: 'q', placeholder: 'filter test id…', value: p.get('q') || '', autocomplete: 'off', oninput: apply });
  const flaky = h('input', { type: 'checkbox', id: 'flaky-only', checked: p.get('flaky') === '1', onchange: apply });
  const count = h('span', { class: 'muted', id: 'trend-count' }), tbody = h('tbody');
  const items = tests.map((t) => {
    const sc = arr(t.scores), ok = arr(t.passed);
    const res = (i) => (ok[i] === true ? 'pass' : ok[i] === false ? 'fail' : '');
    const tips = runs.map((r, i) => `${when(r.started_at)} · ${r.id}\nscore ${num(sc[i])}${res(i) ? ` · ${res(i)}ed` : ''}`);
    return {
      t,
      tr: h('tr', { class: 'trend-row', 'data-test-id': t.test_id, 'data-target': t.target, 'data-flaky': String(!!t.flaky), 'data-drift': t.drift || 'none' },
        td('mono', t.test_id),
        td('mono', t.target),
        td(null, sparkline(sc, ok, tips)),
        runs.map((r, i) => td('run-col', isNum(sc[i])
          ? link(testHref(r.id, t, false), '', { class: `cell ${res(i)}`, title: tips[i], 'aria-label': tips[i] })
          : h('span', { class: 'cell missing', title: `${tips[i]}\nnot in this run` }))),
        td('num', num([...sc].reverse().find(isNum), 2)),
        td('num', String(t.flaps ?? 0)),
        td(null, t.flaky ? span('badge b-warn flaky', 'flaky') : ''),
        h('td', { class: `drift ${t.drift || 'none'}`, title: isNum(t.slope) ? `slope ${signed(t.slope)} per run` : null },
          { up: '↑', down: '↓' }[t.drift] || '→', t.drift && isNum(t.slope) ? span('slope', ` ${signed(t.slope)}`) : null)),
    };
  });
  function apply() {
    const st = state(), ts = terms(st.q);
    refill(tbody, items, ({ t }) => (!st.flaky || t.flaky) && ts.every((x) => `${t.test_id} ${t.target}`.toLowerCase().includes(x)), count, 7 + runs.length);
    replaceHash(hashFor(['trend', suite], st));
  }
  apply();
  show(ctx, `Trend · ${suite}`,
    crumbs('trend'),
    div('page-head', h('h1', null, 'Trend of ', code(data.suite || suite)), muted(`${plural(runs.length, 'run')}, oldest first`),
      link(hashFor([], { suite }), 'runs of this suite →', { class: 'trend-link' })),
    runs.length ? div('charts three',
      chart('chart-trend-pass-rate', 'Pass rate', 'pass_rate', { yMax: 1, fmt: pct }),
      chart('chart-trend-mean-score', 'Mean score', 'mean_score', { yMax: 1, fmt: score2 }),
      chart('chart-trend-cost', 'Cost (USD)', 'cost_usd', { fmt: money, tickFmt: moneyTick })) : h('p', { class: 'empty' }, 'No runs of this suite.'),
    partials.length ? h('p', { id: 'trend-partial', class: 'muted' }, `${plural(partials.length, 'run')} of part of the suite (marked “partial”): `,
      partials.map((r, i) => [i ? '; ' : '', link(runHref(r.id), r.id), ` (${arr(r.partial).join(', ')})`])) : null,
    div('toolbar', nSel, field('Filter', search), h('label', { class: 'check-field' }, flaky, ' flaky only'), count),
    h('p', { class: 'legend muted' }, `Columns 1…${runs.length}: the runs, oldest to newest; a cell is the test in that run (green passed, red failed, hatched absent).`),
    table('trend-table', ['Test', 'Target', 'Scores', ...runs.map((r, i) => h('th', { class: 'run-col', title: tip(r) }, link(runHref(r.id), String(i + 1)))),
      'Last', 'Flaps', 'Flaky', 'Drift'], [3 + runs.length, 4 + runs.length], tbody));
}

// router -------------------------------------------------------------------

async function route() {
  const { segs, params } = parseHash();
  const ctx = { seq: ++seq, params };
  document.getElementById('nav-runs')?.classList.toggle('active', !segs.length);
  if (app.dataset.route !== segs.join('/')) app.replaceChildren(h('p', { class: 'loading' }, 'Loading…'));
  app.dataset.route = segs.join('/');
  const [page, a, b] = segs;
  try {
    if (!page) await viewRuns(ctx);
    else if (page === 'run' && segs.length === 2) await viewRun(ctx, a);
    else if (page === 'run' && b === 'grid' && segs.length === 3) await viewGrid(ctx, a);
    else if (page === 'run' && b === 'test' && segs.length >= 4) await viewTest(ctx, a, segs.slice(3).join('/'));
    else if (page === 'compare' && segs.length === 3) await viewCompare(ctx, a, b);
    else if (page === 'trend' && a) await viewTrend(ctx, segs.slice(1).join('/'));
    else show(ctx, 'Not found', h('h1', null, 'Not found'), errorBox(`no page at ${location.hash || '#/'}`), h('p', null, link('#/', '← all runs')));
  } catch (e) {
    show(ctx, 'Error', crumbs(), errorBox(e?.message || String(e)));
  }
}

const bind = [...document.querySelectorAll('meta[name="evalhost-bind"]')].map((m) => (m.content || '').trim()).find(Boolean);
const note = document.getElementById('bind-note');
if (note) note.textContent = bind ? `read-only · ${bind}` : 'read-only';
window.addEventListener('hashchange', () => { window.scrollTo(0, 0); route(); });
document.addEventListener('keydown', (e) => { // "/" focuses the search box
  const t = e.target;
  if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey || t.isContentEditable || /^(INPUT|SELECT|TEXTAREA)$/.test(t.tagName)) return;
  const box = document.getElementById('search') || document.getElementById('trend-search');
  if (box) { e.preventDefault(); box.focus(); }
});
route();
