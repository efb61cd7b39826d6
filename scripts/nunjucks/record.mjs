// Records what real Nunjucks 3.2.4 renders, configured as promptfoo 0.121
// and 0.123 configure it (`nunjucks.configure({autoescape: false})`, the
// `env` global), for every template of the corpus:
//
//   - tests/data/nunjucks/everyday.yaml: hand-written everyday templates,
//     each with its vars (YAML, as a config writes them);
//   - every template found in the suites and configs under the directories
//     given on the command line (string leaves of YAML and JSON files
//     holding `{{` or `{%`, and prompt files), each rendered with two sets
//     of vars: every name a string, and every name a value of a type taken
//     in turn from TYPED below.
//
// Usage (from the repository root, not run by CI):
//   npm install --prefix scripts/nunjucks
//   node scripts/nunjucks/record.mjs tests/data ../shared/corpus > tests/data/nunjucks/corpus.jsonl
//
// Each line: {id, source, template, vars_yaml, output} or {…, error}.
// vars_yaml is YAML text, read by evalhost's own YAML reader in the test,
// so that `1.0` stays a float there as it does in a config.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const nunjucks = require('nunjucks');
const yaml = require('js-yaml');

const env = nunjucks.configure({ autoescape: false, throwOnUndefined: false });
env.addGlobal('env', { HOME_REGION: 'eu-west-1', API_HOST: 'api.example.com' });
// promptfoo's own filter (getNunjucksEngine).
env.addFilter('load', (str) => JSON.parse(str));

const TYPED = [
  "'Paris'", '3', '1.0', '2.5', 'true', 'false', '[1, 2, 3]', '[a, b]',
  '{name: Ada, age: 36, city: London}', '{z: 1, a: 2}', '[]', '{}', 'null', "'10'", '0',
  "''", '0.0000001', '[{role: user, content: hi}, {role: assistant, content: hello}]',
  "'<b>bold</b> & \"q\"'", '-4', '1e21', '10.00', "'  padded  '", '[[1, 2], [3]]',
];

function render(template, varsYaml) {
  const vars = yaml.load(varsYaml) ?? {};
  try {
    return { output: env.renderString(template, vars) };
  } catch (e) {
    return { error: String(e.message).replace(/\s+/g, " ").slice(0, 300) };
  }
}

function symbols(template) {
  let root;
  try {
    root = nunjucks.parser.parse(template, env.extensionsList, env.opts);
  } catch {
    return null;
  }
  const names = new Set();
  const walk = (node) => {
    if (!node || typeof node !== 'object') return;
    if (node instanceof nunjucks.nodes.Symbol) names.add(node.value);
    if (node.fields) for (const f of node.fields) walk(node[f]);
    if (node.children) node.children.forEach(walk);
  };
  walk(root);
  for (const n of ['env', 'loop', 'range', 'cycler', 'joiner', 'caller']) names.delete(n);
  return [...names].sort();
}

function hash(s) {
  let h = 2166136261;
  for (const c of s) h = Math.imul(h ^ c.codePointAt(0), 16777619) >>> 0;
  return h;
}

function yamlKey(name) {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : JSON.stringify(name);
}

const templates = [];
const seen = new Set();
function add(source, template) {
  if (seen.has(template)) return;
  if (template.includes('${{')) return; // AgentV's ${{ VAR }}, not Nunjucks
  if (!template.includes('{{') && !template.includes('{%')) return;
  seen.add(template);
  templates.push({ source, template });
}

function leaves(value, out) {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) value.forEach((v) => leaves(v, out));
  else if (value && typeof value === 'object') Object.values(value).forEach((v) => leaves(v, out));
}

function scan(dir, root) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (['node_modules', '.git', '.evalhost', 'nunjucks'].includes(entry.name)) continue;
      scan(full, root);
      continue;
    }
    const rel = path.relative(process.cwd(), full);
    const ext = path.extname(entry.name);
    let text;
    try {
      text = fs.readFileSync(full, 'utf8');
    } catch {
      continue;
    }
    if (!text.includes('{{') && !text.includes('{%')) continue;
    if (['.yaml', '.yml', '.json'].includes(ext)) {
      let docs;
      try {
        docs = ext === '.json' ? [JSON.parse(text)] : yaml.loadAll(text);
      } catch {
        continue;
      }
      const out = [];
      docs.forEach((d) => leaves(d, out));
      out.forEach((t) => add(rel, t));
    } else if (['.txt', '.md', '.njk', '.j2', '.prompt'].includes(ext)) {
      add(rel, text);
    }
  }
}

const everyday = yaml.load(fs.readFileSync('tests/data/nunjucks/everyday.yaml', 'utf8'));
let n = 0;
const lines = [];
for (const item of everyday) {
  const varsYaml = item.vars_yaml ?? '{}';
  lines.push({ id: `everyday-${++n}`, source: 'tests/data/nunjucks/everyday.yaml', template: item.template, vars_yaml: varsYaml, ...render(item.template, varsYaml) });
}
for (const dir of process.argv.slice(2)) scan(dir, dir);
n = 0;
for (const { source, template } of templates) {
  const names = symbols(template);
  n += 1;
  if (names === null) {
    lines.push({ id: `corpus-${n}`, source, template, vars_yaml: '{}', ...render(template, '{}') });
    continue;
  }
  const strings = names.map((name) => `${yamlKey(name)}: ${JSON.stringify(`${name} text`)}`).join('\n') || '{}';
  lines.push({ id: `corpus-${n}-strings`, source, template, vars_yaml: strings, ...render(template, strings) });
  if (names.length) {
    const typed = names.map((name) => `${yamlKey(name)}: ${TYPED[hash(name + n) % TYPED.length]}`).join('\n');
    lines.push({ id: `corpus-${n}-typed`, source, template, vars_yaml: typed, ...render(template, typed) });
  }
}
for (const line of lines) process.stdout.write(`${JSON.stringify(line)}\n`);
