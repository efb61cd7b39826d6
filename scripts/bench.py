#!/usr/bin/env python3
"""Whole-process benchmarks of the release `evalhost` binary.

    scripts/bench.py                 # everything (builds the release binary first)
    scripts/bench.py --sizes 1000,10000 --no-build

For each N (default 1,000 / 10,000 / 100,000): a generated suite of N cases
(a JSONL file), each with 4 deterministic assertions (contains, icontains,
regex, equals), graded against the `mock` target; wall time, time per case
and peak RSS of the evalhost process. Then start-up: a 1-case suite with a
warm and with a cold compile cache; and `evalhost validate` of a directory
of 10,000 discovered case directories. Each figure is printed with its goal
(docs/performance.md). Every run is checked to have graded every case.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "evalhost")


def run(args, cwd, env=None, repeat=1):
    """Runs evalhost `repeat` times; returns (median wall seconds, max peak RSS in MiB)."""
    walls, rss = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.Popen([BIN] + args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - start)
        stderr = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):
            sys.exit(f"evalhost {' '.join(args)} exited {code}:\n{stderr}")
        rss = max(rss, usage.ru_maxrss / 1024)
    walls.sort()
    return walls[len(walls) // 2], rss


def suite(dir, n):
    os.makedirs(os.path.join(dir, ".evalhost"), exist_ok=True)
    with open(os.path.join(dir, ".evalhost", "targets.yaml"), "w") as f:
        f.write("targets:\n  - name: default\n    provider: mock\n    response: The capital of France is Paris.\n")
    with open(os.path.join(dir, "EVAL.yaml"), "w") as f:
        f.write("name: bench\ntests: ./cases.jsonl\n")
    with open(os.path.join(dir, "cases.jsonl"), "w") as f:
        for i in range(n):
            case = {
                "id": f"case-{i:06d}",
                "input": f"Question {i}: what is the capital of France?",
                "assertions": [
                    {"type": "contains", "value": "Paris"},
                    {"type": "icontains", "value": "capital"},
                    {"type": "regex", "value": r"\bParis\b"},
                    {"type": "equals", "value": "The capital of France is Paris."},
                ],
            }
            f.write(json.dumps(case) + "\n")


def check_rows(out, n):
    with open(os.path.join(out, "results.jsonl")) as f:
        rows = sum(1 for _ in f)
    if rows != n:
        sys.exit(f"expected {n} result rows in {out}, found {rows}")


def goal(text, ok):
    print(f"    goal {text}: {'met' if ok else 'NOT met'}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="1000,10000,100000")
    p.add_argument("--no-build", action="store_true")
    p.add_argument("--repeat", type=int, default=3, help="runs per size below 100,000 (median)")
    args = p.parse_args()
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "evalhost"], cwd=ROOT, check=True)
    work = tempfile.mkdtemp(prefix="evalhost-bench-")
    cache = os.path.join(work, "cache")
    env = dict(os.environ, EVALHOST_CACHE_DIR=cache, NO_COLOR="1")
    cpus = os.cpu_count()
    print(f"evalhost {BIN} · {cpus} CPUs\n")
    try:
        print("end to end: N cases × 4 deterministic assertions, mock target")
        per_case = {}
        for n in [int(s) for s in args.sizes.split(",")]:
            d = os.path.join(work, f"n{n}")
            suite(d, n)
            out = os.path.join(d, "out")
            # One untimed run warms the compile cache and the page cache.
            run(["run", "EVAL.yaml", "-o", out, "-q"], d, env)
            repeat = args.repeat if n < 100_000 else 1
            wall, rss = run(["run", "EVAL.yaml", "-o", out, "-q"], d, env, repeat)
            check_rows(out, n)
            per_case[n] = wall / n
            print(f"  N={n:>7,}: {wall:7.3f} s wall · {wall / n * 1e6:6.1f} µs per case · peak RSS {rss:6.1f} MiB")
            if n == 10_000:
                goal("10,000 cases in ≤ 1 s", wall <= 1.0)
            if n == 100_000:
                goal("100,000 cases in ≤ 300 MiB peak RSS", rss <= 300)
            shutil.rmtree(d)
        if 10_000 in per_case and 100_000 in per_case:
            ratio = per_case[100_000] / per_case[10_000]
            print(f"  time per case at 100,000 / at 10,000 = {ratio:.2f} (1.00 is linear)")
            goal("time linear in N (ratio ≤ 1.25)", ratio <= 1.25)

        print("\nstart-up: a 1-case suite")
        d = os.path.join(work, "one")
        suite(d, 1)
        cold_env = dict(env, EVALHOST_CACHE_DIR=os.path.join(work, "cold"))
        colds = []
        for _ in range(3):
            shutil.rmtree(os.path.join(work, "cold"), ignore_errors=True)
            colds.append(run(["run", "EVAL.yaml", "-o", os.path.join(d, "out"), "-q"], d, cold_env)[0])
        cold = sorted(colds)[1]
        warm, rss = run(["run", "EVAL.yaml", "-o", os.path.join(d, "out"), "-q"], d, cold_env, 11)
        print(f"  cold compile cache: {cold * 1e3:7.1f} ms (median of 3; every built-in plugin compiled)")
        print(f"  warm compile cache: {warm * 1e3:7.1f} ms (median of 11) · peak RSS {rss:.1f} MiB")
        goal("warm 1-case run in ≤ 50 ms", warm <= 0.050)

        print("\nloading: `evalhost validate` of 10,000 discovered case directories")
        d = os.path.join(work, "discover")
        os.makedirs(os.path.join(d, "cases"))
        with open(os.path.join(d, "EVAL.yaml"), "w") as f:
            f.write("name: bench\nassertions:\n  - type: is-json\ntests: ./cases/\n")
        for i in range(10_000):
            c = os.path.join(d, "cases", f"case-{i:06d}")
            os.makedirs(c)
            with open(os.path.join(c, "case.yaml"), "w") as f:
                f.write(
                    f'input: "Question number {i}: what is the capital of France?"\ncriteria: Names Paris.\n'
                    "assertions:\n  - type: contains\n    value: Paris\n  - type: regex\n    value: \"\\\\bParis\\\\b\"\n"
                )
        wall, rss = run(["validate", "EVAL.yaml"], d, env, 3)
        print(f"  {wall * 1e3:7.1f} ms wall ({wall / 10_000 * 1e6:.1f} µs per case) · peak RSS {rss:.1f} MiB")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
