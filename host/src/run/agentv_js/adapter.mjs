// The grader an AgentV assertion script becomes: evalhost's grade request
// turned into AgentV's code-grader input (snake_case as AgentV's host
// writes it, then camelCased deep as @agentv/sdk's runtime does), the
// handler called, its result normalized as @agentv/sdk's `normalizeScore`.
import "__SCRIPT__";
import { takeHandler } from "@agentv/sdk";

const KIND = "__KIND__";
const parse = (t) => {
  if (t === undefined || t === null) return undefined;
  try { return JSON.parse(t); } catch { return t; }
};
const messageJson = (m) => {
  const content = m.contentJson !== undefined && m.contentJson !== null ? parse(m.contentJson) : m.content;
  const o = { role: m.role, content };
  if (m.toolCalls && m.toolCalls.length) {
    o.tool_calls = m.toolCalls.map((c) => ({
      id: c.id ?? null, tool: c.tool, input: parse(c.inputJson) ?? null, output: parse(c.outputJson) ?? null,
      status: c.status ?? null, duration_ms: c.durationMs === undefined ? null : Number(c.durationMs),
    }));
  }
  if (m.name !== undefined && m.name !== null) o.name = m.name;
  return o;
};
function payload(r) {
  const inputFiles = (r.input ?? [])
    .flatMap((m) => { const c = parse(m.contentJson); return Array.isArray(c) ? c : []; })
    .filter((b) => b && b.type === "file" && b.resolved_path)
    .map((b) => b.resolved_path);
  const out = r.outputMessages ?? [];
  const toolCalls = out.reduce((n, m) => n + (m.toolCalls?.length ?? 0), 0);
  const errors = out.flatMap((m) => m.toolCalls ?? []).filter((c) => c.status === "error").length;
  const llm = r.trace?.llmCalls ?? 0;
  const usage = r.trace?.tokenUsage
    ? { input: Number(r.trace.tokenUsage.input), output: Number(r.trace.tokenUsage.output), cached: Number(r.trace.tokenUsage.cached) }
    : null;
  const transcript = [...(r.input ?? []), ...out].map(messageJson);
  const trace = {
    event_count: transcript.length, tool_calls: toolCalls, error_count: errors, llm_call_count: llm,
    messages: out.map(messageJson), metadata: { eval_case_id: r.testId },
  };
  if (usage) trace.token_usage = usage;
  const metadata = parse(r.metadataJson);
  return {
    criteria: r.criteria ?? "",
    expected_output: (r.expectedMessages ?? []).map(messageJson),
    output: r.output,
    messages: transcript,
    input_files: inputFiles,
    input: (r.input ?? []).map(messageJson),
    metadata: metadata && typeof metadata === "object" && Object.keys(metadata).length ? metadata : null,
    trace,
    trace_summary: { event_count: transcript.length, tool_calls: toolCalls, error_count: errors, llm_call_count: llm },
    token_usage: usage,
    cost_usd: r.trace?.costUsd ?? null,
    duration_ms: r.trace?.durationMs === undefined ? null : Number(r.trace.durationMs),
    start_time: null,
    end_time: null,
    file_changes: r.trace?.fileChanges ?? null,
    workspace_path: r.workspacePath ?? null,
    config: null,
  };
}
// @agentv/sdk's toCamelCaseDeep.
const camel = (s) => (/^[A-Z]/.test(s) ? s : s.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase()));
function camelDeep(v) {
  if (v === null || v === undefined) return v;
  if (Array.isArray(v)) return v.map(camelDeep);
  if (typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [camel(k), camelDeep(x)]));
  return v;
}
// @agentv/sdk's clampScore and normalizeScore.
const clamp = (x) => (typeof x !== "number" || Number.isNaN(x) || !Number.isFinite(x) ? 0 : Math.max(0, Math.min(1, x)));
function normalize(result) {
  const r = result ?? {};
  const score = r.score !== undefined ? clamp(r.score) : r.pass !== undefined ? (r.pass ? 1 : 0) : 0;
  return { score, assertions: Array.isArray(r.assertions) ? r.assertions : [], details: r.details };
}

export const grader = {
  describe() {
    return {
      name: `agentv-assertion-${KIND}`,
      version: "0.0.0",
      types: [{
        name: KIND,
        description: `AgentV custom assertion ${KIND} (defineAssertion), sandboxed`,
        configSchema: JSON.stringify({ type: "object" }),
        // AgentV's verdict: a score of 0.8 or more passes (scoreToVerdict).
        defaultThreshold: 0.8,
        capabilities: [],
      }],
      stateless: false,
    };
  },
  checkConfig() {},
  grade(request) {
    const handler = takeHandler();
    if (typeof handler !== "function") {
      throw { tag: "failed", val: "the script did not call defineAssertion(handler)" };
    }
    let raw;
    try {
      raw = handler(camelDeep(payload(request)));
    } catch (e) {
      throw { tag: "failed", val: `Assertion failed: ${e && e.message !== undefined ? e.message : String(e)}` };
    }
    if (raw && typeof raw.then === "function") {
      throw { tag: "failed", val: "the handler returned a Promise: evalhost's sandbox runs assertion handlers synchronously (make the handler a plain function)" };
    }
    const n = normalize(raw);
    return {
      score: n.score,
      checks: n.assertions.map((a) => ({ text: String(a.text ?? ""), passed: !!a.passed, evidence: a.evidence === undefined ? undefined : String(a.evidence) })),
      detailsJson: n.details === undefined ? undefined : JSON.stringify(n.details),
    };
  },
};
