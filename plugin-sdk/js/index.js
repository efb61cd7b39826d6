// evalhost grader plugins in TypeScript and JavaScript: the Rust SDK's
// shape (describe, checkConfig, grade; checks and scores) over the WIT
// world `evalhost:grader/plugin@0.2.0`, built with componentize-js
// (`evalhost-plugin-build`). See index.d.ts for the types.

/** The WIT package version this SDK builds against. */
export const API_VERSION = "0.2.0";

const CAPABILITIES = ["llm", "exec", "workspace-read"];

/** An assertion's config is wrong; the message says what to fix. */
export class ConfigError extends Error {}

/** The plugin could not grade (`failed`, `bad-output`, `judge`): never a pass. */
export class GradeError extends Error {
  constructor(message, kind = "failed") {
    super(message);
    if (!["failed", "bad-output", "judge"].includes(kind)) throw new Error(`unknown grade error kind ${kind}`);
    this.kind = kind;
  }
}

/** An assertion's config with typed readers. */
export class Config {
  constructor(values) {
    Object.assign(this, values ?? {});
  }
  requiredStr(key) {
    const v = this[key];
    if (typeof v !== "string" || v === "") throw new ConfigError(`\`${key}\` is required and must be a non-empty string`);
    return v;
  }
  optionalStr(key) {
    const v = this[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string") throw new ConfigError(`\`${key}\` must be a string`);
    return v;
  }
  requiredNumber(key) {
    const v = this[key];
    if (typeof v !== "number" || !Number.isFinite(v)) throw new ConfigError(`\`${key}\` is required and must be a number`);
    return v;
  }
}

/** One assertion type. */
export function assertionType(name, description, { schema = { type: "object" }, threshold = 0.8, capabilities = [] } = {}) {
  for (const c of capabilities) if (!CAPABILITIES.includes(c)) throw new Error(`unknown capability ${c}; one of ${CAPABILITIES.join(", ")}`);
  return { name, description, schema, threshold, capabilities };
}

/** What the plugin says about itself. */
export function plugin(name, version, types, { stateless = false } = {}) {
  return { name, version, types, stateless };
}

/** One thing checked. */
export function check(passed, text, evidence) {
  return { passed: !!passed, text, evidence };
}

/** Grades from checks. */
export const Grade = {
  fromCheck(c) {
    return { score: c.passed ? 1 : 0, checks: [c] };
  },
  fromChecks(checks) {
    if (checks.length === 0) return { score: 1, checks: [] };
    return { score: checks.filter((c) => c.passed).length / checks.length, checks };
  },
};

const parse = (text) => {
  if (text === undefined || text === null) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

const message = (m) => ({
  role: m.role,
  content: m.content,
  contentJson: parse(m.contentJson),
  toolCalls: (m.toolCalls ?? []).map((c) => ({
    tool: c.tool,
    input: parse(c.inputJson),
    output: parse(c.outputJson),
    id: c.id,
    status: c.status,
    durationMs: c.durationMs === undefined ? undefined : Number(c.durationMs),
  })),
  name: m.name,
});

/** The SDK's request from the WIT record. */
export function toRequest(r) {
  const usage = r.trace?.tokenUsage;
  const metadata = parse(r.metadataJson);
  return {
    assertionType: r.assertionType,
    config: new Config(JSON.parse(r.configJson || "{}")),
    testId: r.testId,
    output: r.output,
    input: (r.input ?? []).map(message),
    outputMessages: (r.outputMessages ?? []).map(message),
    expectedOutput: r.expectedOutput,
    expectedMessages: (r.expectedMessages ?? []).map(message),
    criteria: r.criteria,
    metadata: metadata && typeof metadata === "object" ? metadata : {},
    trace: {
      inputTokens: usage ? Number(usage.input) : undefined,
      outputTokens: usage ? Number(usage.output) : undefined,
      costUsd: r.trace?.costUsd,
      durationMs: r.trace?.durationMs === undefined ? undefined : Number(r.trace.durationMs),
      llmCalls: r.trace?.llmCalls,
      fileChanges: r.trace?.fileChanges,
    },
    workspacePath: r.workspacePath,
  };
}

/**
 * The `grader` export componentize-js builds for `impl` ({describe,
 * checkConfig, grade}): `export const grader = exportGrader(impl)`.
 */
export function exportGrader(impl) {
  return {
    describe() {
      const info = impl.describe();
      return {
        name: info.name,
        version: info.version,
        types: info.types.map((t) => ({
          name: t.name,
          description: t.description,
          configSchema: JSON.stringify(t.schema),
          defaultThreshold: t.threshold,
          capabilities: t.capabilities,
        })),
        stateless: !!info.stateless,
      };
    },
    checkConfig(assertionType, configJson) {
      try {
        impl.checkConfig?.(assertionType, new Config(JSON.parse(configJson || "{}")));
      } catch (e) {
        throw String(e?.message ?? e);
      }
    },
    grade(request) {
      let g;
      try {
        g = impl.grade(toRequest(request));
      } catch (e) {
        const kind = e instanceof GradeError ? e.kind : "failed";
        throw { tag: kind, val: String(e?.message ?? e) };
      }
      return {
        score: Number(g.score),
        checks: g.checks.map((c) => ({ text: c.text, passed: !!c.passed, evidence: c.evidence ?? undefined })),
        detailsJson: g.details === undefined ? undefined : JSON.stringify(g.details),
      };
    },
  };
}
