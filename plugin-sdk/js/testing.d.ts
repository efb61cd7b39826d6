import type { Grade, Grader, GradeError, Request } from "./index.js";
export declare class Harness {
  constructor(grader: Grader);
  checkConfig(type: string, config: Record<string, unknown>): string | undefined;
  grade(type: string, output: string, config: Record<string, unknown>, request?: Partial<Request>): Grade;
  score(type: string, output: string, config: Record<string, unknown>, request?: Partial<Request>): number;
  error(type: string, output: string, config: Record<string, unknown>, request?: Partial<Request>): GradeError;
}
