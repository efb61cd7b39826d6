#!/usr/bin/env python3
"""Records AgentV 4.42.4's scores on the shared corpus's deterministic suites.

For each suite below, every test gets a recorded answer in two variants —
`expected` (its expected output, else its criteria) and `wrong` (a fixed
wrong answer) — and AgentV runs the suite unchanged against a `replay` cli
target that prints the recorded answer for the test's id. What AgentV scored
(each test, each grader) is written to tests/data/agentv-conformance/, with
the answers, so that `tests/integration/conformance.rs` can run evalhost on
the same suites and answers and compare row by row without Node.

    scripts/conformance-agentv.py            # needs node and npm (offline registry ok)

AgentV is installed from npm into target/agentv on first use.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus" / "agentv-4.42.4"
OUT = ROOT / "tests" / "data" / "agentv-conformance"
AGENTV = ROOT / "target" / "agentv"

# Suites whose graders are all deterministic and need nothing but the
# answer (no bun, no network, no judge).
SUITES = [
    "assert/evals/dataset.eval.yaml",
    "assert-extended/evals/dataset.eval.yaml",
    "compare/evals/dataset.eval.yaml",
    "deterministic-graders/evals/dataset.eval.yaml",
    "trace-analysis/evals/dataset.eval.yaml",
    "sdk-config-file/evals/dataset.eval.yaml",
    "tool-trajectory-simple/evals/dataset.eval.yaml",
]

# Suites with LLM graders, run with a mock judge that gives both tools the
# same reply (a free-form verdict and a checklist in one JSON object).
JUDGED = [
    "default-graders/evals/dataset.eval.yaml",
    "autoresearch/EVAL.yaml",
    "experiments/evals/coding-ability.eval.yaml",
    "basic-jsonl/evals/dataset.eval.yaml",
    "suite-level-input/evals/dataset.eval.yaml",
    "input-files-shorthand/evals/dataset.eval.yaml",
    "test-vars-templating/evals/dataset.eval.yaml",
    "external-datasets/evals/dataset.eval.yaml",
    "trials/evals/dataset.eval.yaml",
    "weighted-graders/evals/dataset.eval.yaml",
    "threshold-grader/evals/dataset.eval.yaml",
    "composite/evals/dataset.eval.yaml",
    "multi-turn-conversation/evals/dataset.eval.yaml",
    "tool-calls-template/evals/eval.yaml",
    "rubric/evals/operators.eval.yaml",
    "benchmark-tooling/evals/benchmark.eval.yaml",
    "suite-level-input-files/evals/dataset.eval.yaml",
    "multi-turn-conversation-live/evals/dataset.eval.yaml",
    "agent-skills-evals/csv-analyzer.EVAL.yaml",
    "agent-skills-evals/multi-provider-skill-trigger.EVAL.yaml",
    "langfuse-export/evals/eval.yaml",
    "local-cli/evals/dataset.eval.yaml",
    "env-interpolation/evals/dataset.eval.yaml",
    "matrix-evaluation/evals/dataset.eval.yaml",
]

JUDGE_REPLY = json.dumps({
    "score": 0.75,
    "assertions": [{"text": "judged", "passed": True}, {"text": "missed a point", "passed": False}],
    "checks": [
        {"id": "rubric-1", "satisfied": True, "score": 8, "reasoning": "met"},
        {"id": "rubric-2", "satisfied": False, "score": 3, "reasoning": "not met"},
        {"id": "rubric-3", "satisfied": True, "score": 6, "reasoning": "met"},
    ],
    "overall_reasoning": "mock judge",
})

WRONG = "I am not sure."

REPLAY = """targets:
  - name: replay
    provider: cli
    command: cat "$REPLAY_DIR"/{EVAL_ID}.txt > {OUTPUT_FILE}
    grader_target: judge
  - name: judge
    provider: mock
    response: '%s'
""" % JUDGE_REPLY.replace("'", "''")


def text_of(value):
    """The text of an expected_output / content value."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if "content" in value:
            return text_of(value["content"])
        return json.dumps(value)
    if isinstance(value, list):
        parts = []
        for item in value:
            if isinstance(item, dict) and item.get("type") == "text":
                parts.append(item.get("value") or item.get("text") or "")
            elif isinstance(item, dict) and "role" in item:
                t = text_of(item.get("content"))
                if t is not None and item.get("role") == "assistant":
                    parts.append(t)
            elif isinstance(item, str):
                parts.append(item)
        return "\n".join(parts) if parts else None
    return str(value)


def load_tests(suite_path):
    """The suite's test cases (inline, a file, or a JSONL file)."""
    if suite_path.suffix == ".jsonl":
        return [json.loads(l) for l in suite_path.read_text().splitlines() if l.strip()]
    doc = yaml.safe_load(suite_path.read_text())
    tests = doc.get("tests")

    def read(ref):
        ref = suite_path.parent / ref.removeprefix("file://")
        if ref.suffix == ".jsonl":
            return [json.loads(l) for l in ref.read_text().splitlines() if l.strip()]
        found = yaml.safe_load(ref.read_text())
        return found.get("tests", []) if isinstance(found, dict) else found or []

    if isinstance(tests, str):
        return read(tests)
    out = []
    for t in tests or []:
        out.extend(read(t) if isinstance(t, str) else [t])
    return out


def from_assertions(assertions):
    """An answer built to meet the test's text assertions (where it can)."""
    values, first, last, equals, is_json, calls = [], "", "", None, False, []
    for a in assertions or []:
        if not isinstance(a, dict):
            continue
        kind, value = str(a.get("type", "")).replace("_", "-"), a.get("value")
        if kind == "tool-trajectory":
            for item in a.get("expected") or []:
                if isinstance(item, dict) and isinstance(item.get("tool"), str):
                    args = item.get("args")
                    call = {"tool": item["tool"]}
                    if isinstance(args, dict):
                        call["input"] = args
                    calls.append(call)
            continue
        if kind == "equals" and isinstance(value, str):
            equals = value
        elif kind == "is-json":
            is_json = True
        elif kind == "starts-with" and isinstance(value, str):
            first = value
        elif kind == "ends-with" and isinstance(value, str):
            last = value
        elif isinstance(value, str):
            values.append(value)
        elif isinstance(value, list):
            values.extend(str(v) for v in value)
    if calls:
        # An AgentV output file: the expected calls, then an answer.
        return json.dumps({"output": [
            {"role": "assistant", "content": "", "tool_calls": calls},
            {"role": "assistant", "content": "Done."},
        ]})
    if equals is not None:
        return equals
    if is_json:
        return json.dumps({"status": "ok", "values": values})
    return " ".join(p for p in [first, *values, last] if p)


def answers(tests):
    expected, wrong, built = {}, {}, {}
    for t in tests:
        tid = str(t["id"])
        expected[tid] = text_of(t.get("expected_output")) or t.get("criteria") or ""
        wrong[tid] = WRONG
        built[tid] = from_assertions(t.get("assertions") or t.get("assert"))
    return {"expected": expected, "wrong": wrong, "built": built}


def brief(row):
    def scores(items):
        out = []
        for s in items or []:
            entry = {"name": s.get("name"), "type": s.get("type"), "score": s.get("score"), "verdict": s.get("verdict")}
            if s.get("scores"):
                entry["scores"] = scores(s["scores"])
            out.append(entry)
        return out
    return {
        "test_id": row["test_id"],
        "score": row.get("score"),
        "execution_status": row.get("execution_status"),
        "scores": scores(row.get("scores")),
    }


def main():
    if not (AGENTV / "node_modules" / ".bin" / "agentv").exists():
        AGENTV.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "init", "-y"], cwd=AGENTV, check=True, capture_output=True)
        subprocess.run(["npm", "install", "--silent", "agentv@4.42.4"], cwd=AGENTV, check=True)
    version = subprocess.run(
        [str(AGENTV / "node_modules" / ".bin" / "agentv"), "--version"], capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp) / "corpus"
        shutil.copytree(CORPUS, work)
        for p in work.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        subprocess.run(["git", "init", "-q", "."], cwd=work, check=True)
        # The targets AgentV runs with, kept for evalhost's side.
        OUT.mkdir(parents=True, exist_ok=True)
        targets = OUT / "targets.yaml"
        targets.write_text(REPLAY)
        for rel in SUITES + JUDGED:
            suite = work / "features" / rel
            slug = rel.split("/")[0] + "--" + pathlib.Path(rel).stem.replace(".eval", "")
            variants = answers(load_tests(suite))
            if rel in JUDGED:
                variants.pop("wrong")
            for variant, by_id in variants.items():
                dest = OUT / slug / variant
                if dest.exists():
                    shutil.rmtree(dest)
                (dest / "answers").mkdir(parents=True)
                for tid, text in by_id.items():
                    (dest / "answers" / f"{tid}.txt").write_text(text)
                run_dir = pathlib.Path(tmp) / "runs" / slug / variant
                env = dict(os.environ, REPLAY_DIR=str(dest / "answers"), AGENTV_NO_UPDATE_CHECK="1")
                proc = subprocess.run(
                    [str(AGENTV / "node_modules" / ".bin" / "agentv"), "eval", str(suite),
                     "--targets", str(targets), "--target", "replay", "-o", str(run_dir)],
                    cwd=suite.parent, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                )
                index = run_dir / "index.jsonl"
                if not index.exists():
                    print(f"{slug}/{variant}: AgentV wrote no results (exit {proc.returncode})\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}", file=sys.stderr)
                    shutil.rmtree(OUT / slug)
                    break
                rows = [brief(json.loads(l)) for l in index.read_text().splitlines() if l.strip()]
                rows.sort(key=lambda r: r["test_id"])
                (dest / "agentv.json").write_text(json.dumps({
                    "agentv": version, "suite": f"agentv-4.42.4/features/{rel}", "variant": variant,
                    "judged": rel in JUDGED, "rows": rows,
                }, indent=1) + "\n")
                print(f"{slug}/{variant}: {len(rows)} rows")


if __name__ == "__main__":
    main()
