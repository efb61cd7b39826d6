// evalhost view: the browser side of `evalhost view`, a read-only results
// viewer. No framework, no build step, nothing loaded from elsewhere. Every
// string that comes from the API goes into the DOM as text (textContent or
// text nodes), never as markup.
'use strict';
(() => {
  const app = document.getElementById('app');
  const SVGNS = 'http://www.w3.org/2000/svg';
  const DASH = '—';
  const MINUS = '−';

  // ---------------------------------------------------------------- DOM

  function setAttrs(e, attrs) {
    if (!attrs) return;
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
      else if (k === 'value' || k === 'checked' || k === 'open') e[k] = v;
      else e.setAttribute(k, v === true ? '' : String(v));
    }
  }
  function add(e, kids) {
    for (const k of kids.flat(Infinity)) {
      if (k === null || k === undefined || k === false) continue;
      e.append(k instanceof Node ? k : String(k));
    }
    return e;
  }
  function h(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    return add(e, kids);
  }
  function s(tag, attrs, ...kids) {
    const e = document.createElementNS(SVGNS, tag);
    setAttrs(e, attrs);
    return add(e, kids);
  }
  const code = (t, cls) => h('code', { class: cls }, t);
  const muted = (t) => h('span', { class: 'muted' }, t);

  // ---------------------------------------------------------------- format

  const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
  function num(v, d = 3) {
    if (!isNum(v)) return DASH;
    const a = Math.abs(v).toFixed(d);
    return (v < 0 && Number(a) !== 0 ? MINUS : '') + a;
  }
  function signed(v, d = 3) {
    if (!isNum(v)) return DASH;
    const a = Math.abs(v).toFixed(d);
    return (v < 0 && Number(a) !== 0 ? MINUS : '+') + a;
  }
  function pct(v) {
    if (!isNum(v)) return DASH;
    const p = Math.round(v * 1000) / 10;
    return (Number.isInteger(p) ? p.toFixed(0) : p.toFixed(1)) + '%';
  }
  const score2 = (v) => (isNum(v) ? v.toFixed(2) : DASH);
  function money(v) {
    if (!isNum(v)) return DASH;
    if (v === 0) return '$0';
    return '$' + (Math.abs(v) < 1 ? v.toFixed(4) : v.toFixed(2));
  }
  // Axis labels: no trailing zeros ($0.05, not $0.0500).
  const moneyTick = (v) => (v === 0 ? '$0' : '$' + String(+v.toPrecision(3)));
  function dur(ms) {
    if (!isNum(ms)) return DASH;
    if (ms < 1000) return Math.round(ms) + ' ms';
    if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
    const t = Math.round(ms / 1000);
    const m = Math.floor(t / 60);
    if (m < 60) return `${m}m ${String(t % 60).padStart(2, '0')}s`;
    return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, '0')}m`;
  }
  const int = (v) => (isNum(v) ? v.toLocaleString('en-US') : DASH);
  const pad2 = (n) => String(n).padStart(2, '0');
  function when(iso) {
    const d = new Date(iso);
    if (!iso || Number.isNaN(d.getTime())) return iso ? String(iso) : DASH;
    return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${pad2(d.getHours())}:${pad2(d.getMinutes())}`;
  }
  function shortDate(iso) {
    const d = new Date(iso);
    return Number.isNaN(d.getTime()) ? '' : `${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
  }
  const plural = (n, w) => `${isNum(n) ? n : 0} ${w}${n === 1 ? '' : 's'}`;
  const arr = (v) => (Array.isArray(v) ? v : []);
  const str = (v) => (v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v, null, 2));
  const excerpt = (t, n) => (t.length > n ? t.slice(0, n - 1) + '…' : t);
  const slug = (v) => String(v || 'none').toLowerCase().replace(/[^a-z0-9_-]+/g, '-');

  function tone(status) {
    const k = String(status || '').toLowerCase();
    if (k === 'passed' || k === 'pass') return 'ok';
    if (k === 'failed' || k === 'fail') return 'bad';
    if (k === 'error') return 'warn';
    return 'other';
  }
  const badge = (st, label) =>
    h('span', { class: `badge b-${tone(st)} s-${slug(st)}` }, label || (st == null ? DASH : String(st)));
  const tag = (t) => h('span', { class: 'tag' }, t);

  // ---------------------------------------------------------------- URL state

  function parseHash() {
    let raw = location.hash.replace(/^#/, '');
    if (!raw.startsWith('/')) raw = '/' + raw;
    const qi = raw.indexOf('?');
    const path = qi < 0 ? raw : raw.slice(0, qi);
    const params = new URLSearchParams(qi < 0 ? '' : raw.slice(qi + 1));
    const segs = path.split('/').filter(Boolean).map((x) => {
      try { return decodeURIComponent(x); } catch (e) { return x; }
    });
    return { segs, params };
  }
  function hashFor(segs, params) {
    const path = '#/' + segs.map((x) => encodeURIComponent(String(x))).join('/');
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) {
      if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
    }
    const qs = q.toString();
    return qs ? `${path}?${qs}` : path;
  }
  // State that changes as one types: replace the entry, never add one.
  function replaceHash(hash) {
    if (location.hash !== hash) history.replaceState(history.state, '', hash);
  }
  const enc = encodeURIComponent;
  const testHref = (runId, row) =>
    hashFor(['run', runId, 'test', row.test_id], { target: row.target, trial: row.trial });

  // ---------------------------------------------------------------- API

  async function api(path) {
    let res;
    try {
      res = await fetch(path, { headers: { Accept: 'application/json' }, cache: 'no-store' });
    } catch (e) {
      throw new Error(`cannot reach evalhost (${e.message}): is \`evalhost view\` still running?`);
    }
    const text = await res.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
    if (!res.ok) {
      const msg = body && typeof body.error === 'string' ? body.error : `${res.status} ${res.statusText}`.trim();
      throw new Error(msg);
    }
    if (!body || typeof body !== 'object') throw new Error(`${path}: the answer is not JSON`);
    return body;
  }

  // ---------------------------------------------------------------- page frame

  let seq = 0;
  function show(ctx, title, ...nodes) {
    if (ctx.seq !== seq) return false;
    document.title = `${title} · evalhost`;
    app.replaceChildren(...nodes.flat(Infinity).filter(Boolean));
    return true;
  }
  const errorBox = (msg) => h('div', { id: 'error', class: 'error-box', role: 'alert' }, h('strong', null, 'Error: '), msg);
  function section(id, title, ...kids) {
    return h('section', { id, class: 'block' }, h('h2', null, title), ...kids);
  }
  function facts(pairs) {
    const dl = h('dl', { class: 'facts' });
    for (const [k, v, cls] of pairs) {
      if (v === null || v === undefined || v === '') continue;
      dl.append(h('div', { class: cls ? `fact ${cls}` : 'fact' }, h('dt', null, k), h('dd', null, v)));
    }
    return dl;
  }
  function commit(run) {
    if (!run.git_commit) return muted(DASH);
    return h('span', { class: 'commit', title: run.git_commit },
      code(String(run.git_commit).slice(0, 7)), run.git_dirty ? h('span', { class: 'dirty', title: 'uncommitted changes' }, 'dirty') : null);
  }
  function runStatus(run) {
    return run.status === 'complete' ? muted('complete') : badge(run.status === 'interrupted' ? 'error' : run.status, run.status || DASH);
  }
  function runFacts(run) {
    return facts([
      ['Suite', run.suite ? h('a', { href: hashFor(['trend', run.suite]), title: 'trend of this suite' }, run.suite) : null],
      ['Dialect', run.dialect],
      ['Targets', arr(run.targets).join(', ') || DASH],
      ['Started', h('span', { title: str(run.started_at) }, when(run.started_at))],
      ['Duration', dur(run.duration_ms)],
      ['Commit', commit(run)],
      ['Tests', h('span', null, String(run.total ?? DASH), ' · ', counts(run))],
      ['Pass rate', pct(run.pass_rate)],
      ['Mean score', num(run.mean_score)],
      ['Cost', money(run.cost_usd)],
      ['Tokens', run.tokens_in == null && run.tokens_out == null ? null : `${int(run.tokens_in)} in / ${int(run.tokens_out)} out`],
      ['Tags', arr(run.tags).length ? arr(run.tags).map(tag) : null],
      ['Status', runStatus(run)],
      ['Directory', run.dir ? code(run.dir, 'path') : null, 'wide'],
    ]);
  }
  function counts(run) {
    return h('span', { class: 'counts' },
      h('span', { class: 'n-pass', title: 'passed' }, String(run.passed ?? 0)), ' / ',
      h('span', { class: 'n-fail', title: 'failed' }, String(run.failed ?? 0)), ' / ',
      h('span', { class: 'n-err', title: 'errors' }, String(run.errors ?? 0)));
  }
  function selectField(id, label, allLabel, values, current, onchange) {
    const sel = h('select', { id, name: id, onchange });
    sel.append(h('option', { value: '' }, allLabel));
    const vals = values.map((v) => (Array.isArray(v) ? v : [v, v]));
    if (current && !vals.some(([v]) => v === current)) vals.push([current, current]);
    for (const [v, text] of vals) sel.append(h('option', { value: v }, text));
    sel.value = current || '';
    return h('label', { class: 'field' }, h('span', null, label), sel);
  }

  // ---------------------------------------------------------------- charts

  function niceMax(v) {
    if (!(v > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v * 1.0001) return m * p;
    return 10 * p;
  }
  // points: [{label, value|null, tip, href}], oldest first; fmt formats a
  // value in a tooltip, tickFmt (default fmt) an axis label.
  function lineChart({ id, title, points, yMax, fmt, tickFmt, width }) {
    const W = width || 520, H = 180, ml = 56, mr = 24, mt = 30, mb = 28;
    const pw = W - ml - mr, ph = H - mt - mb;
    const vals = points.map((p) => p.value).filter(isNum);
    const top = yMax ?? niceMax(Math.max(0, ...vals));
    const n = points.length;
    const x = (i) => ml + (n === 1 ? pw / 2 : (i * pw) / (n - 1));
    const y = (v) => mt + ph - (Math.max(0, Math.min(v, top)) / top) * ph;
    const svg = s('svg', { id, class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title });
    svg.append(s('text', { class: 'chart-title', x: ml, y: 17 }, title));
    for (const t of [0, 0.5, 1]) {
      const ty = y(t * top);
      svg.append(s('line', { class: t === 0 ? 'axis' : 'grid', x1: ml, x2: ml + pw, y1: ty, y2: ty }));
      svg.append(s('text', { class: 'tick', x: ml - 6, y: ty + 4, 'text-anchor': 'end' }, (tickFmt || fmt)(t * top)));
    }
    svg.append(s('line', { class: 'axis', x1: ml, x2: ml, y1: mt, y2: mt + ph }));
    const every = Math.max(1, Math.ceil(n / Math.floor(pw / 56)));
    points.forEach((p, i) => {
      if (i % every === 0 || i === n - 1) {
        svg.append(s('text', { class: 'tick', x: x(i), y: H - 8, 'text-anchor': 'middle' }, p.label));
      }
    });
    if (!vals.length) {
      svg.append(s('text', { class: 'no-data', x: ml + pw / 2, y: mt + ph / 2, 'text-anchor': 'middle' }, n ? 'no data recorded' : 'no runs'));
      return svg;
    }
    let d = '';
    let pen = false;
    points.forEach((p, i) => {
      if (!isNum(p.value)) { pen = false; return; }
      d += `${pen ? 'L' : 'M'}${x(i).toFixed(1)},${y(p.value).toFixed(1)}`;
      pen = true;
    });
    svg.append(s('path', { class: 'line', d }));
    points.forEach((p, i) => {
      if (!isNum(p.value)) return;
      const dot = s('circle', { class: 'pt', cx: x(i).toFixed(1), cy: y(p.value).toFixed(1), r: 4 },
        s('title', null, `${p.tip}\n${title}: ${fmt(p.value)}`));
      svg.append(p.href ? s('a', { href: p.href }, dot) : dot);
    });
    return svg;
  }
  function sparkline(scores, passed, tips) {
    const W = 120, H = 26, p = 4, n = scores.length;
    const x = (i) => p + (n <= 1 ? (W - 2 * p) / 2 : (i * (W - 2 * p)) / (n - 1));
    const y = (v) => p + (1 - Math.max(0, Math.min(1, v))) * (H - 2 * p);
    const svg = s('svg', { class: 'sparkline', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'aria-label': 'scores, oldest to newest' });
    svg.append(s('line', { class: 'grid', x1: p, x2: W - p, y1: y(1), y2: y(1) }));
    svg.append(s('line', { class: 'grid', x1: p, x2: W - p, y1: y(0), y2: y(0) }));
    let d = '';
    let pen = false;
    scores.forEach((v, i) => {
      if (!isNum(v)) { pen = false; return; }
      d += `${pen ? 'L' : 'M'}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
      pen = true;
    });
    if (d) svg.append(s('path', { class: 'line', d }));
    scores.forEach((v, i) => {
      if (!isNum(v)) return;
      const cls = passed[i] === true ? 'pt pass' : passed[i] === false ? 'pt fail' : 'pt';
      svg.append(s('circle', { class: cls, cx: x(i).toFixed(1), cy: y(v).toFixed(1), r: 2.4 }, s('title', null, tips[i])));
    });
    return svg;
  }

  // ---------------------------------------------------------------- line diff

  // LCS line diff; common head and tail are trimmed first so the table stays small.
  function lineDiff(a, b) {
    let pre = 0;
    while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
    let suf = 0;
    while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
    const A = a.slice(pre, a.length - suf), B = b.slice(pre, b.length - suf);
    const out = a.slice(0, pre).map((t) => [' ', t]);
    const n = A.length, m = B.length;
    if (n * m > 4e6) {
      A.forEach((t) => out.push(['-', t]));
      B.forEach((t) => out.push(['+', t]));
    } else {
      const w = m + 1;
      const L = new Uint32Array((n + 1) * w);
      for (let i = n - 1; i >= 0; i--) {
        for (let j = m - 1; j >= 0; j--) {
          L[i * w + j] = A[i] === B[j] ? L[(i + 1) * w + j + 1] + 1 : Math.max(L[(i + 1) * w + j], L[i * w + j + 1]);
        }
      }
      let i = 0, j = 0;
      while (i < n && j < m) {
        if (A[i] === B[j]) { out.push([' ', A[i]]); i++; j++; }
        else if (L[(i + 1) * w + j] >= L[i * w + j + 1]) out.push(['-', A[i++]]);
        else out.push(['+', B[j++]]);
      }
      while (i < n) out.push(['-', A[i++]]);
      while (j < m) out.push(['+', B[j++]]);
    }
    a.slice(a.length - suf).forEach((t) => out.push([' ', t]));
    return out;
  }
  function diffView(expected, actual) {
    const lines = lineDiff(expected.split('\n'), actual.split('\n'));
    const cls = { ' ': 'same', '-': 'del', '+': 'add' };
    const pre = h('pre', { class: 'diff line-diff' });
    for (const [op, t] of lines) pre.append(h('span', { class: cls[op] }, `${op} ${t}`));
    const changed = lines.filter(([op]) => op !== ' ').length;
    return h('div', null,
      h('p', { class: 'legend' }, h('span', { class: 'del' }, '− expected'), ' ', h('span', { class: 'add' }, '+ output'),
        changed ? muted(` · ${plural(lines.filter(([op]) => op === '-').length, 'line')} removed, ${plural(lines.filter(([op]) => op === '+').length, 'line')} added`) : muted(' · the output equals the expected output')),
      pre);
  }
  function unifiedDiff(text) {
    const pre = h('pre', { class: 'diff unified' });
    for (const line of String(text).split('\n')) {
      let cls = 'same';
      if (/^(diff |index |--- |\+\+\+ )/.test(line)) cls = 'meta';
      else if (line.startsWith('@@')) cls = 'hunk';
      else if (line.startsWith('+')) cls = 'add';
      else if (line.startsWith('-')) cls = 'del';
      pre.append(h('span', { class: cls }, line));
    }
    return pre;
  }

  // ---------------------------------------------------------------- #/ runs

  async function viewRuns(ctx) {
    const p = ctx.params;
    const f = { suite: p.get('suite') || '', target: p.get('target') || '', tag: p.get('tag') || '', since: p.get('since') || '' };
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(f)) if (v) q.set(k, v);
    const data = await api('api/runs' + (q.toString() ? `?${q}` : ''));
    if (ctx.seq !== seq) return;
    const runs = arr(data.runs);
    const go = (key) => (e) => { location.hash = hashFor([], { ...f, [key]: e.target.value }); };
    const filtered = Object.values(f).some(Boolean);

    const bar = h('div', { class: 'toolbar', id: 'runs-filters' },
      selectField('suite-filter', 'Suite', 'all suites', arr(data.suites), f.suite, go('suite')),
      selectField('target-filter', 'Target', 'all targets', arr(data.targets), f.target, go('target')),
      selectField('tag-filter', 'Tag', 'all tags', arr(data.tags), f.tag, go('tag')),
      h('label', { class: 'field' }, h('span', null, 'Since'),
        h('input', { type: 'date', id: 'since-filter', name: 'since', value: f.since, onchange: go('since') })),
      filtered ? h('a', { href: '#/', id: 'clear-filters', class: 'clear' }, 'clear filters') : null);

    const suites = arr(data.suites);
    const trends = suites.length
      ? h('p', { class: 'trend-links', id: 'trend-links' }, muted('Trends: '),
        suites.map((su, i) => [i ? ' · ' : '', h('a', { href: hashFor(['trend', su]), class: 'trend-link' }, su)]))
      : null;

    const oldest = runs.slice().reverse();
    const tip = (r) => `${when(r.started_at)} · ${r.suite}\n${r.id}`;
    const charts = h('div', { class: 'charts' },
      lineChart({
        id: 'chart-pass-rate', title: 'Pass rate', yMax: 1, fmt: pct,
        points: oldest.map((r) => ({ label: shortDate(r.started_at), value: r.pass_rate, tip: tip(r), href: hashFor(['run', r.id]) })),
      }),
      lineChart({
        id: 'chart-cost', title: 'Cost (USD)', fmt: money, tickFmt: moneyTick,
        points: oldest.map((r) => ({ label: shortDate(r.started_at), value: r.cost_usd, tip: tip(r), href: hashFor(['run', r.id]) })),
      }));

    const byId = new Map(runs.map((r) => [r.id, r]));
    const btn = h('button', { id: 'compare-btn', type: 'button', disabled: true }, 'Compare');
    const hint = h('span', { id: 'compare-hint', class: 'muted' }, 'tick two runs to compare them');
    const tbody = h('tbody');
    const picked = () => [...tbody.querySelectorAll('input.pick:checked')].map((i) => byId.get(i.value)).filter(Boolean);
    const order = (xs) => xs.slice().sort((a, b) => String(a.started_at).localeCompare(String(b.started_at)) || String(a.id).localeCompare(String(b.id)));
    function onPick() {
      const ps = picked();
      btn.disabled = ps.length !== 2;
      for (const tr of tbody.rows) tr.classList.toggle('picked', tr.querySelector('input.pick')?.checked === true);
      if (ps.length === 0) hint.textContent = 'tick two runs to compare them';
      else if (ps.length === 1) hint.textContent = 'tick one more run';
      else if (ps.length > 2) hint.textContent = `${ps.length} runs ticked: tick only two`;
      else {
        const [a, b] = order(ps);
        hint.textContent = `base ${a.id} → candidate ${b.id}` + (a.suite !== b.suite ? ' (different suites)' : '');
      }
    }
    btn.addEventListener('click', () => {
      const ps = picked();
      if (ps.length !== 2) return;
      const [a, b] = order(ps);
      location.hash = hashFor(['compare', a.id, b.id]);
    });

    for (const r of runs) {
      tbody.append(h('tr', { class: 'run-row', 'data-run-id': r.id, 'data-suite': r.suite, 'data-status': r.status },
        h('td', { class: 'pick-cell' }, h('input', { type: 'checkbox', class: 'pick', value: r.id, 'aria-label': `pick run ${r.id}`, onchange: onPick })),
        h('td', null, h('a', { href: hashFor(['run', r.id]), class: 'run-link', title: str(r.started_at) }, when(r.started_at)),
          h('div', { class: 'sub mono' }, r.id)),
        h('td', null, h('a', { href: hashFor(['trend', r.suite]), class: 'suite-link', title: `trend of ${r.suite}` }, r.suite)),
        h('td', { class: 'targets' }, arr(r.targets).join(', ')),
        h('td', null, commit(r)),
        h('td', { class: 'num' }, String(r.total ?? DASH)),
        h('td', { class: 'num' }, counts(r)),
        h('td', { class: 'num' }, meter(r.pass_rate)),
        h('td', { class: 'num' }, num(r.mean_score)),
        h('td', { class: 'num' }, money(r.cost_usd)),
        h('td', { class: 'num' }, dur(r.duration_ms)),
        h('td', null, runStatus(r), arr(r.tags).length ? h('div', { class: 'sub' }, arr(r.tags).map(tag)) : null)));
    }
    const table = h('div', { class: 'table-wrap' }, h('table', { id: 'runs-table', class: 'grid-table' },
      h('thead', null, h('tr', null, ['', 'Started', 'Suite', 'Targets', 'Commit', 'Tests', 'P / F / E', 'Pass rate', 'Mean score', 'Cost', 'Duration', 'Status']
        .map((t, i) => h('th', { class: i >= 5 && i <= 10 ? 'num' : null }, t)))),
      tbody));
    const empty = runs.length ? null : h('p', { class: 'empty', id: 'no-runs' },
      filtered ? 'No runs match these filters.' : 'No runs yet: `evalhost run` records each run here.');

    show(ctx, 'Runs',
      h('div', { class: 'page-head' }, h('h1', null, 'Runs'), muted(`${plural(runs.length, 'run')}${filtered ? ' (filtered)' : ''}, newest first`)),
      bar, trends, runs.length ? charts : null,
      h('div', { class: 'toolbar compare-bar' }, btn, hint),
      empty || table);
  }
  function meter(v) {
    const bar = h('span', { class: 'meter-fill' });
    if (isNum(v)) bar.style.width = `${Math.max(0, Math.min(1, v)) * 100}%`;
    return h('span', { class: 'meter-wrap' }, h('span', { class: 'meter' }, bar), h('span', null, pct(v)));
  }

  // ---------------------------------------------------------------- #/run/{id}

  async function viewRun(ctx, id) {
    const data = await api(`api/runs/${enc(id)}`);
    if (ctx.seq !== seq) return;
    const run = data.run || {};
    const rows = arr(data.rows);
    const p = ctx.params;

    const statusCounts = new Map();
    for (const r of rows) statusCounts.set(r.status, (statusCounts.get(r.status) || 0) + 1);
    const statuses = ['passed', 'failed', 'error'].concat([...statusCounts.keys()].filter((x) => !['passed', 'failed', 'error'].includes(x)).sort());
    const tags = [...new Set(rows.flatMap((r) => arr(r.tags)))].sort();

    const statusSel = selectField('status-filter', 'Status', `all (${rows.length})`,
      statuses.map((st) => [st, `${st} (${statusCounts.get(st) || 0})`]), p.get('status') || '', () => apply());
    const tagSel = selectField('tag-filter', 'Tag', 'all tags', tags, p.get('tag') || '', () => apply());
    const search = h('input', {
      type: 'search', id: 'search', name: 'q', placeholder: 'search test id, input, output…  ( / )',
      autocomplete: 'off', spellcheck: 'false', value: p.get('q') || '', oninput: () => apply(),
    });
    const shown = h('span', { id: 'shown-count', class: 'muted' });

    const items = rows.map((r) => ({
      r,
      hay: `${r.test_id} ${r.text || ''}`.toLowerCase(),
      tr: h('tr', { class: 'row', 'data-test-id': r.test_id, 'data-target': r.target, 'data-status': r.status, 'data-trial': r.trial ?? 0 },
        h('td', null, h('a', { href: testHref(id, r), class: 'test-link mono' }, r.test_id),
          arr(r.tags).length ? h('div', { class: 'sub' }, arr(r.tags).map(tag)) : null),
        h('td', { class: 'mono' }, r.target),
        h('td', { class: 'num' }, r.trial ? String(r.trial) : muted(DASH)),
        h('td', null, badge(r.status)),
        h('td', { class: 'num' }, h('span', { class: isNum(r.score) && isNum(r.threshold) && r.score < r.threshold ? 'below' : null }, score2(r.score)),
          muted(` / ${score2(r.threshold)}`)),
        h('td', { class: 'num' }, money(r.cost_usd)),
        h('td', { class: 'num' }, dur(r.duration_ms)),
        h('td', { class: 'err-cell', title: r.error || null }, r.error ? excerpt(String(r.error), 140) : '')),
    }));
    const tbody = h('tbody');
    const none = h('tr', { class: 'none' }, h('td', { colspan: 8, class: 'empty' }, 'No test matches these filters.'));

    function apply() {
      const st = statusSel.querySelector('select').value;
      const tg = tagSel.querySelector('select').value;
      const q = search.value.trim();
      const terms = q.toLowerCase().split(/\s+/).filter(Boolean);
      const keep = items.filter(({ r, hay }) =>
        (!st || r.status === st) && (!tg || arr(r.tags).includes(tg)) && terms.every((t) => hay.includes(t)));
      tbody.replaceChildren(...(keep.length ? keep.map((x) => x.tr) : [none]));
      shown.textContent = `showing ${keep.length} of ${rows.length}`;
      replaceHash(hashFor(['run', id], { status: st, tag: tg, q }));
    }
    apply();

    const shown_ok = show(ctx, `Run ${id}`,
      h('nav', { class: 'crumbs' }, h('a', { href: '#/' }, 'Runs'), ' › ', code(id)),
      h('div', { class: 'page-head' }, h('h1', null, 'Run ', code(id)),
        run.suite ? h('a', { href: hashFor(['trend', run.suite]), class: 'trend-link' }, `trend of ${run.suite} →`) : null),
      runFacts(run),
      h('div', { class: 'toolbar', id: 'row-filters' }, statusSel, tagSel,
        h('label', { class: 'field grow' }, h('span', null, 'Search'), search), shown),
      h('div', { class: 'table-wrap' }, h('table', { id: 'rows-table', class: 'grid-table' },
        h('thead', null, h('tr', null, ['Test', 'Target', 'Trial', 'Status', 'Score / thr.', 'Cost', 'Duration', 'Error']
          .map((t, i) => h('th', { class: [2, 4, 5, 6].includes(i) ? 'num' : null }, t)))),
        tbody)));
    if (shown_ok && p.get('q')) search.focus();
  }

  // ---------------------------------------------------------------- #/run/{id}/test/{test}

  async function viewTest(ctx, runId, testId) {
    const p = ctx.params;
    let target = p.get('target');
    let trial = p.get('trial');
    const runP = api(`api/runs/${enc(runId)}`);
    let runData = null;
    if (target === null) {
      runData = await runP;
      const m = arr(runData.rows).find((r) => r.test_id === testId && (trial === null || String(r.trial ?? 0) === trial));
      if (m) { target = m.target; if (trial === null) trial = String(m.trial ?? 0); }
    }
    const q = new URLSearchParams({ test: testId });
    if (target !== null) q.set('target', target);
    if (trial !== null) q.set('trial', trial);
    const [rowData, rd] = await Promise.all([
      api(`api/runs/${enc(runId)}/row?${q}`),
      runData ? Promise.resolve(runData) : runP.catch(() => null),
    ]);
    if (ctx.seq !== seq) return;
    const row = rowData.row || {};
    const run = (rd && rd.run) || {};
    const siblings = rd ? arr(rd.rows).filter((r) => r.test_id === testId) : [];

    const detail = h('div', { id: 'detail', 'data-test-id': row.test_id, 'data-status': row.status });
    detail.append(
      h('nav', { class: 'crumbs' }, h('a', { href: '#/' }, 'Runs'), ' › ', h('a', { href: hashFor(['run', runId]), id: 'back-to-run' }, runId), ' › ', code(testId)),
      h('div', { class: 'page-head' }, h('h1', null, code(row.test_id || testId), ' ', badge(row.status)),
        row.expected_fail ? tag('expected to fail') : null, row.cached ? tag('cached') : null));

    if (siblings.length > 1) {
      detail.append(h('nav', { id: 'variants', class: 'variants' }, muted('Variants: '),
        siblings.map((r) => {
          const cur = r.target === row.target && String(r.trial ?? 0) === String(row.trial ?? 0);
          return h('a', { href: testHref(runId, r), class: `variant${cur ? ' current' : ''}` },
            r.target, r.trial ? ` · trial ${r.trial}` : '', ' ', badge(r.status));
        })));
    }

    const tu = row.token_usage || null;
    detail.append(facts([
      ['Target', code(row.target)],
      ['Trial', row.trial ? `${row.trial}${row.trials ? ` of ${row.trials}` : ''}${row.strategy ? ` (${row.strategy})` : ''}` : null],
      ['Score', h('span', null, h('span', { class: isNum(row.score) && isNum(row.threshold) && row.score < row.threshold ? 'below' : null }, score2(row.score)), muted(` / threshold ${score2(row.threshold)}`))],
      ['Execution', row.execution_status],
      ['Failure class', row.failure_class],
      ['Duration', dur(row.duration_ms)],
      ['Wall time', isNum(row.wall_ms) ? dur(row.wall_ms) : null],
      ['Tokens', tu ? `${int(tu.input)} in / ${int(tu.output)} out${tu.cached ? ` / ${int(tu.cached)} cached` : ''}${tu.reasoning ? ` / ${int(tu.reasoning)} reasoning` : ''}` : null],
      ['Cost', row.cost_usd == null ? null : money(row.cost_usd)],
      ['LLM calls', isNum(row.llm_calls) ? String(row.llm_calls) : null],
      ['Target used', row.target_used],
      ['Finish reason', row.finish_reason],
      ['Prompt', row.prompt ? row.prompt.label || row.prompt.id : null],
      ['Tags', arr(row.tags).length ? arr(row.tags).map(tag) : null],
      ['Source', row.source && row.source.file ? code(`${row.source.file}${row.source.line ? `:${row.source.line}` : ''}`, 'path') : null, 'wide'],
      ['Graded at', row.timestamp ? h('span', { title: row.timestamp }, when(row.timestamp)) : null],
    ]));
    detail.querySelector('dl.facts').id = 'usage';

    if (row.gated) {
      const g = row.gated;
      detail.append(h('p', { class: 'gate-note', id: 'gate-note' },
        `required assertion \`${g.assertion}\` scored ${score2(g.score)} < ${score2(g.min_score)}: test score set to 0`));
    }
    if (row.error) detail.append(section('error-section', 'Error', h('pre', { class: 'error-text' }, str(row.error))));

    // input
    const inputs = arr(row.input);
    if (inputs.length) detail.append(section('input', 'Input', inputs.map(message)));
    if (row.criteria) detail.append(section('criteria', 'Criteria', h('pre', { class: 'text' }, str(row.criteria))));
    const hasExpected = row.expected_output !== undefined && row.expected_output !== null;
    if (hasExpected) detail.append(section('expected', 'Expected output', h('pre', { class: 'text' }, str(row.expected_output))));
    const output = str(row.output);
    detail.append(section('output', 'Output', output ? h('pre', { class: 'text output' }, output) : muted('(empty output)'),
      row.untransformed_output != null ? h('details', null, h('summary', null, 'before the transform'), h('pre', { class: 'text' }, str(row.untransformed_output))) : null));
    if (typeof row.expected_output === 'string') detail.append(section('diff', 'Expected vs output', diffView(row.expected_output, output)));

    // assertions
    const scores = arr(row.scores);
    const passedN = scores.filter((a) => a.verdict === 'pass').length;
    detail.append(section('assertions', `Assertions (${passedN} of ${scores.length} passed)`,
      scores.length ? scores.map((a) => assertion(a, row, output)) : muted('no assertions')));

    // trace
    const msgs = arr(row.output_messages);
    if (msgs.length) {
      const nCalls = msgs.reduce((n, m) => n + arr(m.tool_calls).length, 0);
      const toggle = h('button', { type: 'button', class: 'small', id: 'toggle-tools' }, 'expand all');
      toggle.addEventListener('click', () => {
        const all = [...detail.querySelectorAll('details.tool-call')];
        const open = !all.every((d) => d.open);
        all.forEach((d) => { d.open = open; });
        toggle.textContent = open ? 'collapse all' : 'expand all';
      });
      detail.append(section('trace', `Trace (${plural(msgs.length, 'message')}, ${plural(nCalls, 'tool call')})`,
        nCalls ? h('div', { class: 'tools-bar' }, toggle) : null, msgs.map(traceMessage)));
    }
    const retries = arr(row.retries);
    if (retries.length) {
      detail.append(section('retries', 'Retries', h('ul', { class: 'plain' }, retries.map((r) =>
        h('li', null, `attempt ${r.attempt ?? '?'} · `, code(r.target || ''), ` · ${r.error || ''}`, muted(` · waited ${dur(r.wait_ms)}`))))));
    }
    const hooks = row.hooks && typeof row.hooks === 'object' ? Object.entries(row.hooks) : [];
    if (hooks.length) {
      detail.append(section('hooks', 'Hooks', hooks.map(([name, hk]) => h('div', { class: 'hook' },
        h('h3', null, code(name), hk && hk.error ? badge('error', 'failed') : null),
        hk && hk.output ? h('pre', { class: 'text' }, str(hk.output)) : null,
        hk && hk.error ? h('pre', { class: 'error-text' }, str(hk.error)) : null))));
    }
    if (row.file_changes) detail.append(section('file-changes', 'File changes', unifiedDiff(row.file_changes)));
    if (row.transcript || row.workspace_path) {
      const full = row.transcript && run.dir && !String(row.transcript).startsWith('/') ? `${run.dir}/${row.transcript}` : row.transcript;
      detail.append(section('transcript', 'Files',
        row.transcript ? h('p', null, 'Transcript: ', code(full, 'path select-all'), full !== row.transcript ? muted(` (${row.transcript} in the run directory)`) : null) : null,
        row.workspace_path ? h('p', null, 'Workspace kept at ', code(row.workspace_path, 'path select-all')) : null));
    }
    if (row.metadata && Object.keys(row.metadata).length) {
      detail.append(section('metadata', 'Metadata', h('pre', { class: 'json' }, JSON.stringify(row.metadata, null, 2))));
    }
    if (Array.isArray(row.logprobs) && row.logprobs.length) {
      const mean = row.logprobs.reduce((a, b) => a + b, 0) / row.logprobs.length;
      detail.append(section('logprobs', 'Log-probabilities', h('p', null, `${row.logprobs.length} tokens, mean ${num(mean)}`)));
    }
    detail.append(h('details', { class: 'raw' }, h('summary', null, 'raw result row (JSON)'), h('pre', { class: 'json' }, JSON.stringify(row, null, 2))));
    show(ctx, `${testId} · ${runId}`, detail);
  }

  function blocks(content) {
    if (typeof content === 'string') return [content ? h('pre', { class: 'text' }, content) : muted('(empty)')];
    if (Array.isArray(content)) {
      return content.map((b) => {
        if (b && b.type === 'text') return h('pre', { class: 'text' }, str(b.value ?? b.text ?? ''));
        if (b && b.type === 'file') return h('div', { class: 'file' }, muted('file '), code(str(b.value ?? b.path ?? ''), 'path'));
        if (b && b.type === 'image') return h('div', { class: 'file' }, muted('image '), code(str(b.value ?? b.url ?? ''), 'path'));
        return h('pre', { class: 'json' }, JSON.stringify(b, null, 2));
      });
    }
    if (content === null || content === undefined) return [muted('(empty)')];
    return [h('pre', { class: 'json' }, JSON.stringify(content, null, 2))];
  }
  function message(m) {
    return h('div', { class: `msg role-${slug(m.role)}` }, h('div', { class: 'role' }, m.role || 'message'), blocks(m.content));
  }
  function traceMessage(m) {
    const calls = arr(m.tool_calls);
    return h('div', { class: `msg role-${slug(m.role)}` },
      h('div', { class: 'role' }, m.role || 'message', m.name ? ` · ${m.name}` : ''),
      m.content ? h('pre', { class: 'text' }, str(m.content)) : null,
      m.content_json != null ? h('pre', { class: 'json' }, JSON.stringify(m.content_json, null, 2)) : null,
      calls.map((c) => h('details', { class: 'tool-call', 'data-tool': c.tool, 'data-status': c.status || '' },
        h('summary', null, h('span', { class: 'tool-name' }, c.tool || 'tool'), ' ',
          c.status ? badge(c.status === 'ok' ? 'passed' : c.status, c.status) : null, ' ',
          isNum(c.duration_ms) ? muted(dur(c.duration_ms)) : null,
          c.input != null ? h('span', { class: 'call-peek' }, excerpt(typeof c.input === 'string' ? c.input : JSON.stringify(c.input), 90)) : null),
        h('div', { class: 'call-body' },
          h('div', { class: 'label' }, 'input'), h('pre', { class: 'json' }, str(c.input ?? null)),
          h('div', { class: 'label' }, 'output'), h('pre', { class: 'json' }, str(c.output ?? null))))));
  }
  function reasoningOf(a) {
    if (typeof a.reasoning === 'string' && a.reasoning) return a.reasoning;
    const d = a.details;
    if (d && typeof d === 'object') {
      for (const k of ['reasoning', 'overall_reasoning', 'reason']) if (typeof d[k] === 'string' && d[k]) return d[k];
    }
    return null;
  }
  function assertion(a, row, output) {
    const gated = row.gated && row.gated.assertion === a.name;
    const required = a.required || a.gate;
    const checks = arr(a.assertions);
    const reasoning = reasoningOf(a);
    const j = a.judge;
    const box = h('div', { class: `assertion v-${slug(a.verdict)}${gated ? ' gated' : ''}`, 'data-name': a.name, 'data-verdict': a.verdict },
      h('div', { class: 'a-head' },
        badge(a.verdict, a.verdict), ' ', code(a.name, 'a-name'), ' ', h('span', { class: 'a-type' }, a.type),
        a.negate ? h('span', { class: 'flag' }, 'negated') : null,
        required ? h('span', { class: 'flag required', title: 'a required assertion: below its gate, the test scores 0' }, typeof a.gate === 'number' ? `required ≥ ${score2(a.gate)}` : 'required') : null,
        gated ? h('span', { class: 'flag gate-failed' }, 'gate failed: test score set to 0') : null,
        h('span', { class: 'a-nums' }, `score ${score2(a.score)} · weight ${isNum(a.weight) ? String(+a.weight.toFixed(3)) : DASH}`,
          a.plugin ? muted(` · ${a.plugin}`) : null, isNum(a.duration_us) ? muted(` · ${a.duration_us < 1000 ? `${a.duration_us} µs` : dur(a.duration_us / 1000)}`) : null)),
      checks.length ? h('ul', { class: 'checks' }, checks.map((c) => h('li', { class: `check ${c.passed ? 'pass' : 'fail'}` },
        h('span', { class: 'mark' }, c.passed ? '✓' : '✗'), ' ', c.text,
        c.evidence ? h('div', { class: 'evidence' }, c.evidence) : null))) : null,
      reasoning ? h('div', { class: 'reasoning' }, h('div', { class: 'label' }, 'Judge reasoning'), reasoning) : null,
      a.error ? h('pre', { class: 'error-text' }, str(a.error)) : null,
      a.failure_class ? h('div', { class: 'sub' }, muted(`failure class: ${a.failure_class}`)) : null,
      a.plugin_output ? h('details', null, h('summary', null, 'plugin output'), h('pre', { class: 'text' }, str(a.plugin_output))) : null,
      typeof a.expected === 'string' && a.expected !== row.expected_output ? h('details', { open: true }, h('summary', null, 'expected vs output'), diffView(a.expected, output)) : null,
      j ? h('div', { class: 'sub' }, muted(`judge: ${plural(j.calls, 'call')}${j.cached ? ` (${j.cached} cached)` : ''} · ${int(j.input_tokens)} in / ${int(j.output_tokens)} out tokens · ${money(j.cost_usd)}`)) : null,
      a.details && typeof a.details === 'object' && Object.keys(a.details).length
        ? h('details', null, h('summary', null, 'details'), h('pre', { class: 'json' }, JSON.stringify(a.details, null, 2))) : null,
      arr(a.scores).length ? h('div', { class: 'members' }, arr(a.scores).map((m) => assertion(m, row, output))) : null);
    return box;
  }

  // ---------------------------------------------------------------- #/compare/{base}/{cand}

  function levelText(l) {
    const v = isNum(l) ? l : 0.95;
    return `${+(v * 100).toFixed(1)} %`;
  }
  function pval(v) {
    if (!isNum(v)) return DASH;
    return v < 0.001 ? '< 0.001' : v.toFixed(3);
  }
  // The sentence `evalhost compare` prints.
  function verdictNodes(sm) {
    const verdict = sm.verdict || 'no significant change';
    const ci = sm.ci || {};
    let lead = `${verdict}: `;
    if (verdict === 'regressed') lead += `${plural(sm.losses, 'test')}, `;
    else if (verdict === 'improved') lead += `${plural(sm.wins, 'test')}, `;
    const tail = verdict === 'no significant change' ? '' : sm.significant ? ', significant' : ', not significant';
    return [lead, 'mean ', h('span', { id: 'compare-mean-delta' }, signed(sm.mean_delta)),
      ' (', h('span', { id: 'compare-ci' }, `${levelText(ci.level)} CI ${num(ci.low)} … ${num(ci.high)}`), ')', tail];
  }
  async function viewCompare(ctx, baseId, candId) {
    const data = await api(`api/compare?base=${enc(baseId)}&cand=${enc(candId)}`);
    if (ctx.seq !== seq) return;
    const base = data.base || {}, cand = data.candidate || {};
    const sm = data.summary || {};
    const tests = arr(data.tests);
    const p = ctx.params;
    let sort = p.get('sort') || '';
    let showSel = p.get('show') || '';

    const vclass = sm.verdict === 'regressed' ? 'regressed' : sm.verdict === 'improved' ? 'improved' : 'unchanged';
    const verdict = h('p', { id: 'compare-verdict', class: `verdict ${vclass}`, 'data-verdict': sm.verdict || '' }, verdictNodes(sm));
    const ci = sm.ci || {};
    const stats = facts([
      ['Matched tests', String(sm.matched ?? DASH)],
      ['Mean score', `${num(sm.mean_base)} → ${num(sm.mean_cand)}`],
      ['Mean delta', signed(sm.mean_delta)],
      ['Confidence interval', `${levelText(ci.level)} CI ${num(ci.low)} … ${num(ci.high)}${isNum(ci.resamples) ? ` (bootstrap, ${ci.resamples} resamples, seed ${ci.seed ?? DASH})` : ''}`, 'wide'],
      ['Wins / losses / ties', h('span', { id: 'compare-wlt' }, `${sm.wins ?? 0} / ${sm.losses ?? 0} / ${sm.ties ?? 0}`)],
      ['Flips', h('span', { id: 'compare-flips' }, h('span', { class: 'n-fail' }, `${sm.pass_to_fail ?? 0} pass→fail`), ' · ', h('span', { class: 'n-pass' }, `${sm.fail_to_pass ?? 0} fail→pass`))],
      ['McNemar p (flips)', h('span', { id: 'compare-flip-p' }, pval(sm.flip_p_value))],
      ['Sign-test p (deltas)', h('span', { id: 'compare-delta-p' }, pval(sm.delta_p_value))],
      ['Normalized gain', isNum(sm.normalized_gain) ? signed(sm.normalized_gain) : DASH],
    ]);
    stats.id = 'compare-stats';

    const showField = selectField('compare-show', 'Show', `all tests (${tests.length})`, [
      ['changed', 'changed (win or loss)'], ['flips', 'flips only'], ['losses', 'losses only'], ['wins', 'wins only']], showSel, (e) => {
      showSel = e.target.value; draw();
    });
    const sortBtn = h('button', { type: 'button', id: 'sort-delta', class: 'th-sort' }, 'Δ');
    sortBtn.addEventListener('click', () => {
      sort = sort === 'delta' ? '-delta' : sort === '-delta' ? '' : 'delta';
      draw();
    });
    const tbody = h('tbody');
    const rowsShown = h('span', { class: 'muted', id: 'compare-count' });
    const candHref = (t) => hashFor(['run', cand.id || candId, 'test', t.test_id], { target: t.target });
    const baseHref = (t) => hashFor(['run', base.id || baseId, 'test', t.test_id], { target: t.target });
    const trs = tests.map((t, i) => ({
      t, i,
      tr: h('tr', { class: `compare-row outcome-${slug(t.outcome)}`, 'data-test-id': t.test_id, 'data-target': t.target, 'data-flip': t.flip || 'none', 'data-outcome': t.outcome || '' },
        h('td', null, h('a', { href: candHref(t), class: 'mono' }, t.test_id)),
        h('td', { class: 'mono' }, t.target),
        h('td', { class: 'num' }, h('a', { href: baseHref(t), class: t.base_passed ? 'n-pass' : 'n-fail', title: 'base run detail' }, num(t.base_score)), trials(t.base_pass_rate, t.base_trials)),
        h('td', { class: 'num' }, h('a', { href: candHref(t), class: t.cand_passed ? 'n-pass' : 'n-fail', title: 'candidate run detail' }, num(t.cand_score)), trials(t.cand_pass_rate, t.cand_trials)),
        h('td', { class: 'num' }, h('span', { class: `delta ${!isNum(t.delta) || Math.abs(t.delta) < 5e-4 ? 'zero' : t.delta > 0 ? 'pos' : 'neg'}` }, signed(t.delta))),
        h('td', null, t.flip ? badge(t.flip === 'pass->fail' ? 'failed' : 'passed', t.flip === 'pass->fail' ? 'pass→fail' : 'fail→pass') : ''),
        h('td', null, h('span', { class: `outcome ${slug(t.outcome)}` }, t.outcome || DASH))),
    }));
    const none = h('tr', { class: 'none' }, h('td', { colspan: 7, class: 'empty' }, tests.length ? 'No test matches.' : 'No test is in both runs.'));
    function draw() {
      const keep = trs.filter(({ t }) => !showSel
        || (showSel === 'flips' && t.flip) || (showSel === 'losses' && t.outcome === 'loss')
        || (showSel === 'wins' && t.outcome === 'win') || (showSel === 'changed' && t.outcome !== 'tie'));
      if (sort) {
        const dir = sort === '-delta' ? -1 : 1;
        keep.sort((a, b) => (dir * ((isNum(a.t.delta) ? a.t.delta : 0) - (isNum(b.t.delta) ? b.t.delta : 0))) || a.i - b.i);
      }
      tbody.replaceChildren(...(keep.length ? keep.map((x) => x.tr) : [none]));
      sortBtn.textContent = sort === 'delta' ? 'Δ ▲' : sort === '-delta' ? 'Δ ▼' : 'Δ ⇅';
      sortBtn.title = sort === 'delta' ? 'sorted by delta, worst first (click: best first)' : sort === '-delta' ? 'sorted by delta, best first (click: unsorted)' : 'sort by delta';
      sortBtn.setAttribute('data-sort', sort || 'none');
      rowsShown.textContent = `showing ${keep.length} of ${tests.length}`;
      replaceHash(hashFor(['compare', baseId, candId], { show: showSel, sort }));
    }
    draw();

    const onlyList = (id, title, xs, runIdForLinks) => h('div', { class: 'only', id },
      h('h3', null, `${title} (${xs.length})`),
      xs.length ? h('ul', { class: 'plain' }, xs.map((x) => h('li', { 'data-test-id': x.test_id, 'data-target': x.target },
        h('a', { href: hashFor(['run', runIdForLinks, 'test', x.test_id], { target: x.target }), class: 'mono' }, x.test_id), muted(` · ${x.target}`))))
        : muted('none'));

    const card = (label, r, cls) => h('div', { class: `run-card ${cls}` },
      h('h2', null, label, ' ', h('a', { href: hashFor(['run', r.id]), class: 'mono' }, r.id || DASH)), runFacts(r));
    show(ctx, 'Compare',
      h('nav', { class: 'crumbs' }, h('a', { href: '#/' }, 'Runs'), ' › compare'),
      h('div', { class: 'page-head' }, h('h1', null, 'Compare'),
        h('a', { href: hashFor(['compare', candId, baseId]), id: 'swap', title: 'swap base and candidate' }, 'swap ⇄')),
      h('div', { class: 'cmp-cols' }, card('Base', base, 'base'), card('Candidate', cand, 'cand')),
      verdict, stats,
      h('div', { class: 'toolbar' }, showField, rowsShown),
      h('div', { class: 'table-wrap' }, h('table', { id: 'compare-table', class: 'grid-table' },
        h('thead', null, h('tr', null, h('th', null, 'Test'), h('th', null, 'Target'), h('th', { class: 'num' }, 'Base'),
          h('th', { class: 'num' }, 'Candidate'), h('th', { class: 'num' }, sortBtn), h('th', null, 'Flip'), h('th', null, 'Outcome'))),
        tbody)),
      h('div', { class: 'cmp-cols' },
        onlyList('only-in-base', 'Only in base', arr(data.only_in_base), base.id || baseId),
        onlyList('only-in-candidate', 'Only in candidate', arr(data.only_in_candidate), cand.id || candId)));
  }
  function trials(rate, n) {
    return isNum(n) && n > 1 ? h('div', { class: 'sub' }, `pass ${pct(rate)} of ${n}`) : null;
  }

  // ---------------------------------------------------------------- #/trend/{suite}

  async function viewTrend(ctx, suite) {
    const p = ctx.params;
    const n = Math.max(1, parseInt(p.get('n') || '20', 10) || 20);
    const data = await api(`api/trend?suite=${enc(suite)}&n=${n}`);
    if (ctx.seq !== seq) return;
    const runs = arr(data.runs);
    const tests = arr(data.tests);
    let q = p.get('q') || '';
    let flakyOnly = p.get('flaky') === '1';

    const tip = (r) => `${when(r.started_at)}\n${r.id}`;
    const pts = (key) => runs.map((r) => ({ label: shortDate(r.started_at), value: r[key], tip: tip(r), href: hashFor(['run', r.id]) }));
    const charts = h('div', { class: 'charts three' },
      lineChart({ id: 'chart-trend-pass-rate', title: 'Pass rate', width: 360, yMax: 1, fmt: pct, points: pts('pass_rate') }),
      lineChart({ id: 'chart-trend-mean-score', title: 'Mean score', width: 360, yMax: 1, fmt: (v) => v.toFixed(2), points: pts('mean_score') }),
      lineChart({ id: 'chart-trend-cost', title: 'Cost (USD)', width: 360, fmt: money, tickFmt: moneyTick, points: pts('cost_usd') }));

    const nSel = selectField('trend-n', 'Runs', 'last 20', [5, 10, 50, 100].map((k) => [String(k), `last ${k}`]), n === 20 ? '' : String(n),
      (e) => { location.hash = hashFor(['trend', suite], { n: e.target.value, q, flaky: flakyOnly ? 1 : '' }); });
    const search = h('input', { type: 'search', id: 'trend-search', name: 'q', placeholder: 'filter test id…', value: q, autocomplete: 'off' });
    const flaky = h('input', { type: 'checkbox', id: 'flaky-only', checked: flakyOnly });
    const shown = h('span', { class: 'muted', id: 'trend-count' });
    const tbody = h('tbody');

    const head = h('tr', null, h('th', null, 'Test'), h('th', null, 'Target'), h('th', null, 'Scores'),
      runs.map((r, i) => h('th', { class: 'run-col', title: tip(r) }, h('a', { href: hashFor(['run', r.id]) }, String(i + 1)))),
      h('th', { class: 'num' }, 'Last'), h('th', { class: 'num' }, 'Flaps'), h('th', null, 'Flaky'), h('th', null, 'Drift'));
    const items = tests.map((t) => {
      const scores = arr(t.scores), passed = arr(t.passed);
      const tips = runs.map((r, i) => `${when(r.started_at)} · ${r.id}\nscore ${isNum(scores[i]) ? scores[i].toFixed(3) : DASH}${passed[i] === true ? ' · passed' : passed[i] === false ? ' · failed' : ''}`);
      const last = [...scores].reverse().find(isNum);
      const arrow = t.drift === 'up' ? '↑' : t.drift === 'down' ? '↓' : '→';
      return {
        t,
        tr: h('tr', { class: 'trend-row', 'data-test-id': t.test_id, 'data-target': t.target, 'data-flaky': t.flaky ? 'true' : 'false', 'data-drift': t.drift || 'none' },
          h('td', { class: 'mono' }, t.test_id),
          h('td', { class: 'mono' }, t.target),
          h('td', null, sparkline(scores, passed, tips)),
          runs.map((r, i) => h('td', { class: 'run-col' }, isNum(scores[i])
            ? h('a', { href: hashFor(['run', r.id, 'test', t.test_id], { target: t.target }), class: `cell ${passed[i] === true ? 'pass' : passed[i] === false ? 'fail' : ''}`, title: tips[i], 'aria-label': tips[i] })
            : h('span', { class: 'cell missing', title: `${tips[i]}\nnot in this run` }))),
          h('td', { class: 'num' }, num(last, 2)),
          h('td', { class: 'num' }, String(t.flaps ?? 0)),
          h('td', null, t.flaky ? h('span', { class: 'badge b-warn flaky' }, 'flaky') : ''),
          h('td', { class: `drift ${t.drift || 'none'}`, title: isNum(t.slope) ? `slope ${signed(t.slope)} per run` : null }, arrow, t.drift && isNum(t.slope) ? h('span', { class: 'slope' }, ` ${signed(t.slope)}`) : null)),
      };
    });
    const none = h('tr', { class: 'none' }, h('td', { colspan: 7 + runs.length, class: 'empty' }, 'No test matches.'));
    function apply() {
      q = search.value.trim();
      flakyOnly = flaky.checked;
      const terms = q.toLowerCase().split(/\s+/).filter(Boolean);
      const keep = items.filter(({ t }) => (!flakyOnly || t.flaky) && terms.every((x) => `${t.test_id} ${t.target}`.toLowerCase().includes(x)));
      tbody.replaceChildren(...(keep.length ? keep.map((x) => x.tr) : [none]));
      shown.textContent = `showing ${keep.length} of ${tests.length}`;
      replaceHash(hashFor(['trend', suite], { n: n === 20 ? '' : n, q, flaky: flakyOnly ? 1 : '' }));
    }
    search.addEventListener('input', apply);
    flaky.addEventListener('change', apply);
    apply();

    show(ctx, `Trend · ${suite}`,
      h('nav', { class: 'crumbs' }, h('a', { href: '#/' }, 'Runs'), ' › trend'),
      h('div', { class: 'page-head' }, h('h1', null, 'Trend of ', code(data.suite || suite)),
        muted(`${plural(runs.length, 'run')}, oldest first`),
        h('a', { href: hashFor([], { suite }), class: 'trend-link' }, 'runs of this suite →')),
      runs.length ? charts : h('p', { class: 'empty' }, 'No runs of this suite.'),
      h('div', { class: 'toolbar' }, nSel, h('label', { class: 'field grow' }, h('span', null, 'Filter'), search),
        h('label', { class: 'check-field' }, flaky, ' flaky only'), shown),
      h('p', { class: 'legend' }, muted('Columns 1…'), muted(String(runs.length)), muted(': runs, oldest to newest; a cell is the test in that run (green passed, red failed, grey absent).')),
      h('div', { class: 'table-wrap' }, h('table', { id: 'trend-table', class: 'grid-table' }, h('thead', null, head), tbody)));
  }

  // ---------------------------------------------------------------- router

  async function route() {
    const mySeq = ++seq;
    const { segs, params } = parseHash();
    const ctx = { seq: mySeq, params };
    document.getElementById('nav-runs')?.classList.toggle('active', segs.length === 0);
    if (!app.firstElementChild || app.dataset.route !== segs.join('/')) {
      app.replaceChildren(h('p', { class: 'loading' }, 'Loading…'));
    }
    app.dataset.route = segs.join('/');
    try {
      if (segs.length === 0) await viewRuns(ctx);
      else if (segs[0] === 'run' && segs.length === 2) await viewRun(ctx, segs[1]);
      else if (segs[0] === 'run' && segs.length >= 4 && segs[2] === 'test') await viewTest(ctx, segs[1], segs.slice(3).join('/'));
      else if (segs[0] === 'compare' && segs.length === 3) await viewCompare(ctx, segs[1], segs[2]);
      else if (segs[0] === 'trend' && segs.length >= 2) await viewTrend(ctx, segs.slice(1).join('/'));
      else {
        show(ctx, 'Not found', h('h1', null, 'Not found'), errorBox(`no page at ${location.hash || '#/'}`),
          h('p', null, h('a', { href: '#/' }, '← all runs')));
      }
    } catch (e) {
      show(ctx, 'Error', h('nav', { class: 'crumbs' }, h('a', { href: '#/' }, 'Runs')),
        errorBox(e && e.message ? e.message : String(e)));
    }
  }

  function init() {
    const metas = [...document.querySelectorAll('meta[name="evalhost-bind"]')];
    const bind = metas.map((m) => (m.getAttribute('content') || '').trim()).find(Boolean);
    const note = document.getElementById('bind-note');
    if (note) {
      note.textContent = bind ? `read-only · ${bind}` : 'read-only';
      note.title = bind ? `evalhost view, bound to ${bind}; it never changes results` : 'evalhost view never changes results';
    }
    window.addEventListener('hashchange', () => { window.scrollTo(0, 0); route(); });
    window.addEventListener('unhandledrejection', (e) => {
      e.preventDefault();
      app.append(errorBox(e.reason && e.reason.message ? e.reason.message : String(e.reason)));
    });
    document.addEventListener('keydown', (e) => {
      if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey) return;
      const t = e.target;
      if (t && (t.isContentEditable || ['INPUT', 'SELECT', 'TEXTAREA'].includes(t.tagName))) return;
      const box = document.getElementById('search') || document.getElementById('trend-search');
      if (box) { e.preventDefault(); box.focus(); }
    });
    route();
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
