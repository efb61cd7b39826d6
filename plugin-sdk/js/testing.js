// Native tests for a JS/TS grader: what evalhost checks, without a build.
import { Config, GradeError } from "./index.js";

export class Harness {
  constructor(grader) {
    this.grader = grader;
    this.info = grader.describe();
  }
  #type(name) {
    const t = this.info.types.find((t) => t.name === name);
    if (!t) throw new Error(`the plugin describes no type ${name}`);
    return t;
  }
  /** undefined when the config is accepted, else the plugin's message. */
  checkConfig(type, config) {
    this.#type(type);
    try {
      this.grader.checkConfig?.(type, new Config(config));
    } catch (e) {
      return String(e?.message ?? e);
    }
    return undefined;
  }
  grade(type, output, config, request = {}) {
    const problem = this.checkConfig(type, config);
    if (problem !== undefined) throw new Error(`config refused: ${problem}`);
    const g = this.grader.grade({
      assertionType: type, config: new Config(config), output, testId: "test", input: [], outputMessages: [],
      expectedMessages: [], metadata: {}, trace: {}, ...request,
    });
    if (typeof g.score !== "number" || Number.isNaN(g.score) || g.score < 0 || g.score > 1) {
      throw new Error(`score ${g.score} is not in [0, 1]: evalhost fails it as bad output`);
    }
    return g;
  }
  score(type, output, config, request) {
    return this.grade(type, output, config, request).score;
  }
  error(type, output, config, request) {
    try {
      this.grade(type, output, config, request);
    } catch (e) {
      if (e instanceof GradeError) return e;
      throw e;
    }
    throw new Error("it graded");
  }
}
