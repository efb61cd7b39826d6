#!/usr/bin/env bash
# Runs one suite under evalhost and under AgentV 4.42.4 (installed from npm
# into target/agentv on first use) and prints each test's score side by side.
# Tests that only evalhost supports can be left out with SKIP=id1,id2.
#
#   scripts/compare-agentv.sh tests/fixtures/code-grader-protocol
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
suite_dir=$(cd "$1" && pwd)
agentv_dir=$root/target/agentv
if [ ! -x "$agentv_dir/node_modules/.bin/agentv" ]; then
    mkdir -p "$agentv_dir"
    (cd "$agentv_dir" && npm install --silent agentv@4.42.4)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$suite_dir" "$work/suite"
cd "$work/suite"
mkdir -p .agentv
[ -f .evalhost/targets.yaml ] && cp .evalhost/targets.yaml .agentv/targets.yaml
python3 - "${SKIP:-}" <<'PY'
import sys, re
skip = [s for s in sys.argv[1].split(",") if s]
lines = open("EVAL.yaml").read().splitlines(keepends=True)
open("EVAL.yaml", "w").writelines(l for l in lines if not any(re.search(r"id: %s\b" % re.escape(s), l) for s in skip))
PY
cargo run -q --manifest-path "$root/Cargo.toml" -- run EVAL.yaml -o "$work/evalhost" -q >/dev/null 2>&1 || true
git init -q . 2>/dev/null || true
"$agentv_dir/node_modules/.bin/agentv" eval EVAL.yaml --target default >"$work/agentv.log" 2>&1 || true
python3 - "$work/evalhost/results.jsonl" .agentv/results/runs/default/*/index.jsonl <<'PY'
import json, sys
def load(path):
    return {r["test_id"]: r["score"] for r in map(json.loads, open(path))}
ours, theirs = load(sys.argv[1]), load(sys.argv[-1])
same = 0
for test_id in sorted(set(ours) | set(theirs)):
    a, b = ours.get(test_id), theirs.get(test_id)
    ok = a is not None and b is not None and abs(a - b) < 1e-9
    same += ok
    print(f"{test_id:28} evalhost={a!s:20} agentv={b!s:20} {'same' if ok else 'DIFFERENT'}")
print(f"{same}/{len(set(ours) | set(theirs))} tests score the same")
sys.exit(0 if same == len(set(ours) | set(theirs)) else 1)
PY
