// Types of the SDK, written from the WIT world `evalhost:grader@0.2.0`
// (plugin-sdk/wit/grader.wit; a test checks every record field of the WIT
// has its name here).

export declare const API_VERSION: "0.2.0";

/** A capability a type may use: the WIT's `capability` enum. */
export type Capability = "llm" | "exec" | "workspace-read";

/** The WIT's `assertion-type`, with the schema as a value. */
export interface AssertionType {
  name: string;
  description: string;
  /** configSchema in the WIT: a JSON Schema (draft 2020-12). */
  schema: object;
  /** defaultThreshold in the WIT. */
  threshold: number;
  capabilities: Capability[];
}

/** The WIT's `plugin-info`. */
export interface PluginInfo {
  name: string;
  version: string;
  types: AssertionType[];
  stateless: boolean;
}

/** The WIT's `check`. */
export interface Check {
  text: string;
  passed: boolean;
  evidence?: string;
}

/** The WIT's `grade-result` (details as a value: detailsJson in the WIT). */
export interface Grade {
  score: number;
  checks: Check[];
  details?: unknown;
}

/** The WIT's `tool-call` (inputJson/outputJson parsed). */
export interface ToolCall {
  id?: string;
  tool: string;
  input?: unknown;
  output?: unknown;
  status?: string;
  durationMs?: number;
}

/** The WIT's `message` (contentJson parsed). */
export interface Message {
  role: string;
  content: string;
  contentJson?: unknown;
  toolCalls: ToolCall[];
  name?: string;
}

/** The WIT's `trace` (tokenUsage flattened). */
export interface Trace {
  inputTokens?: number;
  outputTokens?: number;
  costUsd?: number;
  durationMs?: number;
  llmCalls?: number;
  fileChanges?: string;
}

/** The WIT's `grade-request` (configJson and metadataJson parsed). */
export interface Request {
  assertionType: string;
  config: Config;
  testId: string;
  output: string;
  outputMessages: Message[];
  input: Message[];
  expectedOutput?: string;
  expectedMessages: Message[];
  criteria?: string;
  metadata: Record<string, unknown>;
  trace: Trace;
  workspacePath?: string;
}

export declare class Config {
  constructor(values?: Record<string, unknown>);
  [key: string]: unknown;
  requiredStr(key: string): string;
  optionalStr(key: string): string | undefined;
  requiredNumber(key: string): number;
}

export declare class ConfigError extends Error {}

/** The WIT's `grade-error`: failed, bad-output, judge. */
export declare class GradeError extends Error {
  constructor(message: string, kind?: "failed" | "bad-output" | "judge");
  kind: "failed" | "bad-output" | "judge";
}

/** What a grader implements. */
export interface Grader {
  describe(): PluginInfo;
  checkConfig?(assertionType: string, config: Config): void;
  grade(request: Request): Grade;
}

export declare function assertionType(
  name: string,
  description: string,
  options?: { schema?: object; threshold?: number; capabilities?: Capability[] },
): AssertionType;
export declare function plugin(name: string, version: string, types: AssertionType[], options?: { stateless?: boolean }): PluginInfo;
export declare function check(passed: boolean, text: string, evidence?: string): Check;
export declare const Grade: { fromCheck(c: Check): Grade; fromChecks(c: Check[]): Grade };
export declare function toRequest(record: unknown): Request;
/** The `grader` export componentize-js builds: `export const grader = exportGrader(impl)`. */
export declare function exportGrader(impl: Grader): unknown;
