#!/usr/bin/env bash
# One grader, three languages: scaffolds the grader `evalhost plugin new`
# writes in Rust, Python and TypeScript, builds each as its README says,
# and runs the dispatch benchmark on them (load, first call, warm call).
# Needs the wasm32-wasip2 target, python3 with componentize-py 0.25.1
# (pip install ./plugin-sdk/python), node and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build -q
eh="$root/target/debug/evalhost"
cd "$work"
"$eh" plugin new mentions-rs --sdk "$root/plugin-sdk" 2>/dev/null
"$eh" plugin new mentions-py --lang python --sdk "$root/plugin-sdk/python" 2>/dev/null
npm pack -q "$root/plugin-sdk/js" >/dev/null
"$eh" plugin new mentions-ts --lang ts --sdk "$work/evalhost-plugin-sdk-0.2.0.tgz" 2>/dev/null
(cd mentions-rs && cargo build -q --target wasm32-wasip2 --release)
(cd mentions-py && PYTHONPATH="$root/plugin-sdk/python" python3 -m evalhost_plugin.build app -o mentions_py.wasm)
(cd mentions-ts && npm install -s --no-audit --no-fund && npm run -s build)
export EVALHOST_BENCH_PLUGINS="mentions-rs=$work/mentions-rs/target/wasm32-wasip2/release/mentions_rs.wasm,mentions-py=$work/mentions-py/mentions_py.wasm,mentions-ts=$work/mentions-ts/mentions_ts.wasm"
cd "$root"
cargo bench --bench dispatch
