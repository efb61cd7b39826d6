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

    scripts/bench.py --only scale --base OTHER_BIN [--sizes 1000,10000,100000]

N cases run by this build and another binary in turns: wall, peak RSS, the
phases (reports include writing the results index) and the index's size
beside the results file.

    scripts/bench.py --only latency [--base OTHER_BIN] [--peers]

A model that answers slowly (../shared/bench/latency_server.py, an
OpenAI-compatible loopback server with a fixed latency per request): 500
tests at 100 ms with 16 and with 64 in flight, and 2,000 tests at 1 s with
256 in flight (the same promptfoo config for every tool,
../shared/bench/latency_gen.py). The ideal is N × latency / in-flight; each
run's wall, its overhead over the ideal, the server's peak requests in
flight and the peak RSS. With `--peers`, promptfoo 0.121.20 (`-j K`) and
AgentV 4.42.4 (`--workers K`, its own suite) in the same sitting.

    scripts/bench.py --only promptfoo | --only agentv

The deterministic ratios: a generated promptfoo config (echo provider) run
by promptfoo 0.121.20 (target/promptfoo) and by evalhost, and the
generated AgentV suite (mock target) run by AgentV 4.42.4 (target/agentv)
and by evalhost; medians of 3 in one sitting.

    scripts/bench.py --only layout --base OTHER_BIN

The loader and run figures the layout work is measured by: `validate` of a
1,000-test EVAL.yaml (4 assertions each), `validate` of 10,000 discovered
case directories, and a whole 1,000-case run where every case fails (so the
report details them all), with the time per phase (load, plugins, run,
write, reports) that `EVALHOST_TIMINGS=1` prints. With `--base`, the same
figures for another evalhost binary (an older build) in the same sitting,
and the ratio.
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


def run(args, cwd, env=None, repeat=1, binary=None):
    """Runs evalhost `repeat` times; returns (median wall seconds, max peak RSS in MiB)."""
    walls, rss = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        # stderr to a file: a pipe read only after wait4 would fill up
        # (and block the run) when many tests fail.
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen([binary or BIN] + args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
            _, status, usage = os.wait4(proc.pid, 0)
            walls.append(time.perf_counter() - start)
            err.seek(0)
            stderr = err.read().decode(errors="replace")
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


def inline_suite(dir, n, response):
    """A single EVAL.yaml of `n` inline tests, 4 assertions each."""
    os.makedirs(os.path.join(dir, ".evalhost"), exist_ok=True)
    with open(os.path.join(dir, ".evalhost", "targets.yaml"), "w") as f:
        f.write(f"targets:\n  - name: default\n    provider: mock\n    response: {response}\n")
    with open(os.path.join(dir, "EVAL.yaml"), "w") as f:
        f.write("name: bench\ntests:\n")
        for i in range(n):
            f.write(
                f"  - id: case-{i:06d}\n"
                f"    input: \"Question {i}: what is the capital of France?\"\n"
                "    criteria: Names Paris.\n"
                "    metadata: {difficulty: easy}\n"
                "    assertions:\n"
                "      - {type: contains, value: Paris}\n"
                "      - {type: icontains, value: capital}\n"
                "      - {type: regex, value: '\\bParis\\b'}\n"
                "      - {type: equals, value: The capital of France is Paris.}\n"
            )


def discovered_suite(d, n):
    os.makedirs(os.path.join(d, "cases"))
    with open(os.path.join(d, "EVAL.yaml"), "w") as f:
        f.write("name: bench\nassertions:\n  - type: is-json\ntests: ./cases/\n")
    for i in range(n):
        c = os.path.join(d, "cases", f"case-{i:06d}")
        os.makedirs(c)
        with open(os.path.join(c, "case.yaml"), "w") as f:
            f.write(
                f'input: "Question number {i}: what is the capital of France?"\ncriteria: Names Paris.\n'
                "assertions:\n  - type: contains\n    value: Paris\n  - type: regex\n    value: \"\\\\bParis\\\\b\"\n"
            )


def timed_phases(binary, args, cwd, env, repeat):
    """Median wall of `repeat` runs of `binary`, and the phases of the median run."""
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run([binary] + args, cwd=cwd, env=dict(env, EVALHOST_TIMINGS="1"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - start
        if proc.returncode not in (0, 1):
            sys.exit(f"{binary} {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
        phases = next((l.split("timings: ", 1)[1] for l in proc.stderr.splitlines() if l.startswith("timings: ")), "n/a")
        peaks = next((l.split("after: ", 1)[1] for l in proc.stderr.splitlines() if l.startswith("peak memory after: ")), None)
        if peaks:
            phases += f"\n{'':>23}peak RSS after: {peaks}"
        runs.append((wall, phases))
    runs.sort()
    return runs[len(runs) // 2]


def layout(work, env, base):
    bins = [("this build", BIN)] + ([("base", base)] if base else [])
    print("layout: loading and a whole run (medians; the binaries take turns run by run)")
    d1 = os.path.join(work, "validate-1000")
    inline_suite(d1, 1000, "The capital of France is Paris.")
    d2 = os.path.join(work, "validate-discover")
    discovered_suite(d2, 10_000)
    d3 = os.path.join(work, "run-1000-failing")
    inline_suite(d3, 1000, "I do not know.")
    for label, binary in bins:
        # Warm the compile cache and the page cache for this binary.
        subprocess.run([binary, "run", "EVAL.yaml", "-o", "out", "-q"], cwd=d3, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # The binaries take turns, run by run, so that both see the same
    # machine: on a noisy machine, blocks of one then the other would
    # compare two different moments.
    measures = [
        ("validate 1,000 tests", ["validate", "EVAL.yaml"], d1, 15),
        ("validate 10,000 case dirs", ["validate", "EVAL.yaml"], d2, 3),
        ("run 1,000 failing", ["run", "EVAL.yaml", "-o", "out", "-q"], d3, 9),
    ]
    results = {label: [] for label, _ in bins}
    phases = {label: "n/a" for label, _ in bins}
    for name, args, cwd, repeat in measures:
        runs = {label: [] for label, _ in bins}
        for _ in range(repeat):
            for label, binary in bins:
                runs[label].append(timed_phases(binary, args, cwd, env, 1))
        for label, _ in bins:
            ordered = sorted(runs[label])
            wall, ph = ordered[len(ordered) // 2]
            results[label].append(wall)
            if args[0] == "run":
                phases[label] = ph
                check_rows(os.path.join(d3, "out"), 1000)
    for label, _ in bins:
        v1, v2, r = results[label]
        print(f"  {label:>10}: validate 1,000 tests {v1 * 1e3:7.1f} ms · validate 10,000 case dirs {v2 * 1e3:7.1f} ms · run 1,000 failing {r * 1e3:7.1f} ms")
        print(f"  {'':>10}  phases of that run: {phases[label]}")
    if base:
        a, b = results["base"], results["this build"]
        print(f"  base / this build: validate 1,000 × {a[0] / b[0]:.2f} · validate 10,000 dirs × {a[1] / b[1]:.2f} · run 1,000 × {a[2] / b[2]:.2f}")
        goal("validate of 1,000 tests ≥ 3× faster than base", a[0] / b[0] >= 3)
    goal("whole 1,000-case run ≤ 100 ms wall", results["this build"][2] <= 0.100)


def versus_promptfoo(work, env, n=1000):
    """One generated promptfoo config of n tests (echo provider, 4
    deterministic assertions each), run by promptfoo 0.121.20 and by
    evalhost in the same sitting; the ratio of their wall times."""
    pf = os.path.join(ROOT, "target", "promptfoo", "node_modules", ".bin", "promptfoo")
    if not os.path.exists(pf):
        sys.exit("promptfoo is not installed: run scripts/conformance-promptfoo.py once (it installs it into target/promptfoo)")
    d = os.path.join(work, "promptfoo")
    os.makedirs(d)
    lines = [
        "description: bench",
        "prompts: ['Question {{n}}: what is the capital of {{country}}?']",
        "providers: [echo]",
        "defaultTest:",
        "  assert:",
        "    - {type: icontains, value: capital}",
        "tests:",
    ]
    for i in range(n):
        lines.append(f"  - vars: {{n: {i}, country: France}}")
        lines.append("    assert:")
        lines.append(f"      - {{type: contains, value: 'Question {i}:'}}")
        lines.append("      - {type: regex, value: '\\d+'}")
        lines.append("      - {type: not-equals, value: nothing}")
    with open(os.path.join(d, "promptfooconfig.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    pf_env = dict(env, PROMPTFOO_DISABLE_TELEMETRY="1", PROMPTFOO_DISABLE_UPDATE="1",
                  PROMPTFOO_CONFIG_DIR=os.path.join(work, "pfhome"))
    out = os.path.join(d, "out")
    run(["run", "promptfooconfig.yaml", "-o", out, "-q"], d, env)
    ours, rss = run(["run", "promptfooconfig.yaml", "-o", out, "-q"], d, env, 3)
    check_rows(out, n)
    walls = []
    for _ in range(3):
        start = time.perf_counter()
        proc = subprocess.run([pf, "eval", "-c", "promptfooconfig.yaml", "-o", os.path.join(d, "pf.json"),
                               "--no-cache", "--no-table", "--no-write"],
                              cwd=d, env=pf_env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        if proc.returncode not in (0, 100):
            sys.exit(f"promptfoo exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    walls.sort()
    theirs = walls[1]
    with open(os.path.join(d, "pf.json")) as f:
        rows = len(json.load(f)["results"]["results"])
    if rows != n:
        sys.exit(f"promptfoo graded {rows} rows, not {n}")
    print(f"promptfoo config: {n:,} tests × 4 deterministic assertions, echo provider (median of 3 each)")
    print(f"  evalhost:  {ours:7.3f} s wall · peak RSS {rss:6.1f} MiB")
    print(f"  promptfoo: {theirs:7.3f} s wall")
    print(f"  promptfoo / evalhost = {theirs / ours:.1f}×")


def versus_agentv(work, env, n=1000):
    """The generated AgentV suite of n cases (mock target, 4 deterministic
    assertions each) run by AgentV 4.42.4 and by evalhost in the same
    sitting; the ratio of their wall times."""
    av = os.path.join(ROOT, "target", "agentv", "node_modules", ".bin", "agentv")
    if not os.path.exists(av):
        sys.exit("AgentV is not installed: (mkdir -p target/agentv && cd target/agentv && npm install agentv@4.42.4)")
    d = os.path.join(work, "agentv")
    suite(d, n)
    os.makedirs(os.path.join(d, ".agentv"), exist_ok=True)
    shutil.copy(os.path.join(d, ".evalhost", "targets.yaml"), os.path.join(d, ".agentv", "targets.yaml"))
    subprocess.run(["git", "init", "-q", d], check=True)
    out = os.path.join(d, "out")
    run(["run", "EVAL.yaml", "-o", out, "-q"], d, env)
    ours, rss = run(["run", "EVAL.yaml", "-o", out, "-q"], d, env, 3)
    check_rows(out, n)
    walls = []
    for _ in range(3):
        start = time.perf_counter()
        proc = subprocess.run([av, "eval", "EVAL.yaml", "--target", "default"], cwd=d, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        if proc.returncode not in (0, 1):
            sys.exit(f"AgentV exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    walls.sort()
    theirs = walls[1]
    print(f"AgentV suite: {n:,} cases × 4 deterministic assertions, mock target (median of 3 each)")
    print(f"  evalhost: {ours:7.3f} s wall · peak RSS {rss:6.1f} MiB")
    print(f"  AgentV:   {theirs:7.3f} s wall")
    print(f"  AgentV / evalhost = {theirs / ours:.1f}×")


def scale(work, env, base, sizes, repeat):
    """N cases × 4 deterministic assertions (mock target) run by this build
    and, with --base, another binary, in turns: wall, peak RSS, the phase
    that writes the reports and the results index, and the index's size
    beside the results file it indexes."""
    bins = [("this build", BIN)] + ([("base", base)] if base else [])
    print("scale: N cases × 4 deterministic assertions, mock target, the results index included (binaries in turns)")
    for n in sizes:
        d = os.path.join(work, f"scale{n}")
        suite(d, n)
        figures = {}
        for label, binary in bins:
            # An untimed run warms this binary's compile cache.
            run(["run", "EVAL.yaml", "-o", os.path.join(d, "out-" + label), "-q"], d, env, binary=binary)
        reps = repeat if n < 100_000 else 1
        walls = {label: [] for label, _ in bins}
        for _ in range(reps):
            for label, binary in bins:
                db = os.path.join(d, ".evalhost", "results.db")
                for side in ("", "-wal", "-shm"):
                    if os.path.exists(db + side):
                        os.remove(db + side)
                out = os.path.join(d, "out-" + label)
                wall, rss = run(["run", "EVAL.yaml", "-o", out, "-q"], d, env, binary=binary)
                _, phases = timed_phases(binary, ["run", "EVAL.yaml", "-o", out + "-t", "-q"], d, env, 1)
                check_rows(out, n)
                size = lambda p: os.path.getsize(p) / 2**20 if os.path.exists(p) else 0.0
                walls[label].append((wall, rss, phases, size(db) + size(db + "-wal"), size(os.path.join(out, "results.jsonl"))))
        for label, _ in bins:
            ordered = sorted(walls[label])
            wall, rss, phases, dbsize, jsonl = ordered[len(ordered) // 2]
            figures[label] = (wall, rss)
            print(f"  N={n:>7,} {label:>10}: {wall:7.3f} s wall · peak RSS {rss:7.1f} MiB · results.db {dbsize:7.1f} MiB for results.jsonl {jsonl:7.1f} MiB")
            if phases != "n/a":
                print(f"  {'':>20} phases: {phases}")
        if base:
            (a, ra), (b, rb) = figures["base"], figures["this build"]
            print(f"  N={n:>7,} base / this build: wall × {a / b:.2f} · peak RSS × {ra / rb:.2f}")
        shutil.rmtree(d)


SHARED_BENCH = os.path.join(os.path.dirname(ROOT), "shared", "bench")


def floor_client(port, n, inflight):
    """The same N requests sent by `inflight` threads of a minimal client
    (http.client, one kept-alive connection each, answers acknowledged at
    once, no grading, no files): the server's own floor at that
    concurrency."""
    import http.client
    import threading
    body = json.dumps({"model": "bench-model", "messages": [{"role": "user", "content": "What is the capital of country 1?"}]})
    left = [n]
    lock = threading.Lock()

    def worker():
        conn = http.client.HTTPConnection("127.0.0.1", port)
        while True:
            with lock:
                if left[0] == 0:
                    break
                left[0] -= 1
            conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
            # As evalhost's transport does: the answer acknowledged at once.
            import socket
            conn.sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, "TCP_QUICKACK", 12), 1)
            conn.getresponse().read()
        conn.close()

    start = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(inflight)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def latency(work, env, base, peers, cases=None):
    """Runs against a loopback model with a fixed latency: wall vs the
    ideal (N x latency / in flight)."""
    import socket
    import signal
    runs = cases or [(500, 100, 16), (500, 100, 64), (2000, 1000, 256)]
    bins = [("evalhost", BIN)] + ([("base", base)] if base else [])
    print("latency-bound: N tests x 4 deterministic assertions against a loopback model with a fixed latency")
    for n, ms, inflight in runs:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()
        d = os.path.join(work, f"lat{n}-{ms}-{inflight}")
        stats = os.path.join(d, "stats.json")
        os.makedirs(d, exist_ok=True)
        subprocess.run([sys.executable, os.path.join(SHARED_BENCH, "latency_gen.py"), str(n), str(port), d], check=True)
        server = subprocess.Popen([sys.executable, os.path.join(SHARED_BENCH, "latency_server.py"), str(port), str(ms), stats],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(50):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            ideal = n * ms / 1000 / inflight
            run_env = dict(env, OPENAI_API_KEY="sk-bench", BENCH_MODEL="bench-model")
            pf_dir = os.path.join(d, "pf")
            # An untimed one-test run per binary warms its compile cache.
            warm = os.path.join(d, "warm")
            subprocess.run([sys.executable, os.path.join(SHARED_BENCH, "latency_gen.py"), "1", str(port), warm], check=True)
            for label, binary in bins:
                run(["run", "promptfooconfig.yaml", "-o", os.path.join(warm, "out-" + label), "-q", "--no-cache"],
                    os.path.join(warm, "pf"), run_env, binary=binary)
            print(f"  {n:,} tests, {ms} ms per request, {inflight} in flight: ideal {ideal:.3f} s")
            def server_cpu():
                with open(f"/proc/{server.pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            for label, binary in bins:
                out = os.path.join(pf_dir, "out-" + label)
                cpu0 = server_cpu()
                wall, rss = run(["run", "promptfooconfig.yaml", "-o", out, "-q", "--no-cache", "-j", str(inflight)],
                                pf_dir, run_env, binary=binary)
                check_rows(out, n)
                # The server rewrites the file after each answer.
                peak = "?"
                for _ in range(20):
                    try:
                        with open(stats) as f:
                            peak = json.load(f)["peak"]
                        break
                    except (ValueError, OSError):
                        time.sleep(0.05)
                busy = server_cpu() - cpu0
                print(f"    {label:>9}: {wall:7.3f} s wall ({(wall / ideal - 1) * 100:+5.1f} % over the ideal) · peak in flight {peak} · peak RSS {rss:6.1f} MiB · the server's CPU {busy:.2f} s")
            floor = floor_client(port, n, inflight)
            print(f"    {'floor':>9}: {floor:7.3f} s wall ({(floor / ideal - 1) * 100:+5.1f} % over the ideal): {inflight} threads of a minimal client on kept-alive connections, nothing else — what this server allows")
            if peers:
                pf = os.path.join(ROOT, "target", "promptfoo", "node_modules", ".bin", "promptfoo")
                if os.path.exists(pf):
                    pf_env = dict(run_env, PROMPTFOO_DISABLE_TELEMETRY="1", PROMPTFOO_DISABLE_UPDATE="1",
                                  PROMPTFOO_CONFIG_DIR=os.path.join(work, "pfhome"))
                    start = time.perf_counter()
                    proc = subprocess.run([pf, "eval", "-c", "promptfooconfig.yaml", "-j", str(inflight), "--no-cache",
                                           "--no-table", "--no-write", "-o", os.path.join(pf_dir, "pf.json")],
                                          cwd=pf_dir, env=pf_env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
                    wall = time.perf_counter() - start
                    print(f"    promptfoo: {wall:7.3f} s wall ({(wall / ideal - 1) * 100:+5.1f} % over the ideal; exit {proc.returncode})")
                av = os.path.join(ROOT, "target", "agentv", "node_modules", ".bin", "agentv")
                if os.path.exists(av):
                    av_dir = os.path.join(d, "av")
                    start = time.perf_counter()
                    proc = subprocess.run([av, "eval", "EVAL.yaml", "--workers", str(inflight)], cwd=av_dir, env=run_env,
                                          stdin=subprocess.DEVNULL, capture_output=True, text=True)
                    wall = time.perf_counter() - start
                    print(f"    AgentV:    {wall:7.3f} s wall ({(wall / ideal - 1) * 100:+5.1f} % over the ideal; exit {proc.returncode})")
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait()
        shutil.rmtree(d)


def goal(text, ok):
    print(f"    goal {text}: {'met' if ok else 'NOT met'}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="1000,10000,100000")
    p.add_argument("--no-build", action="store_true")
    p.add_argument("--repeat", type=int, default=3, help="runs per size below 100,000 (median)")
    p.add_argument("--only", choices=["layout", "promptfoo", "agentv", "scale", "latency"], help="run only this section")
    p.add_argument("--peers", action="store_true", help="latency: also run promptfoo and AgentV")
    p.add_argument("--latency-cases", help="latency: N:MS:INFLIGHT,... instead of the three standard runs")
    p.add_argument("--base", help="another evalhost binary to compare with (layout and scale sections)")
    args = p.parse_args()
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "evalhost"], cwd=ROOT, check=True)
    work = tempfile.mkdtemp(prefix="evalhost-bench-")
    cache = os.path.join(work, "cache")
    env = dict(os.environ, EVALHOST_CACHE_DIR=cache, NO_COLOR="1")
    cpus = os.cpu_count()
    print(f"evalhost {BIN} · {cpus} CPUs\n")
    try:
        if args.only == "layout":
            layout(work, env, args.base)
            return
        if args.only == "promptfoo":
            versus_promptfoo(work, env)
            return
        if args.only == "agentv":
            versus_agentv(work, env)
            return
        if args.only == "latency":
            cases = None
            if args.latency_cases:
                cases = [tuple(int(x) for x in c.split(":")) for c in args.latency_cases.split(",")]
            latency(work, env, args.base, args.peers, cases)
            return
        if args.only == "scale":
            scale(work, env, args.base, [int(s) for s in args.sizes.split(",")], args.repeat)
            return
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
        print()
        layout(work, env, args.base)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
