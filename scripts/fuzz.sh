#!/usr/bin/env bash
# Fuzzes evalhost's loaders with cargo-fuzz (libFuzzer) for a bounded time
# per target, then copies any crashing input into fuzz/regressions/<target>/,
# where `cargo test` replays it on every run.
#
#   scripts/fuzz.sh            # 600 s per target
#   scripts/fuzz.sh 3600       # an hour per target
#
# Needs a nightly toolchain (`rustup toolchain install nightly`) and
# cargo-fuzz (`cargo install cargo-fuzz`). Not part of CI's default path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
cd "$root/fuzz"
# The fuzz build needs only the loaders, not the built-in wasm plugins.
export EVALHOST_NO_BUILTIN_PLUGINS=1

# Seed corpora: every suite and results file the tests already use.
mkdir -p corpus/suite_loader corpus/results_reader
find "$root/tests/fixtures" "$root/examples" -name '*.yaml' -o -name '*.jsonl' -o -name '*.yml' \
    | while read -r f; do cp "$f" "corpus/suite_loader/$(echo "$f" | sha1sum | cut -c1-16)"; done
find "$root/tests" -name 'results*.jsonl' \
    | while read -r f; do cp "$f" "corpus/results_reader/$(echo "$f" | sha1sum | cut -c1-16)"; done
printf '{"timestamp":"t","test_id":"a","suite":"s","target":"default","test_index":0,"status":"passed","score":1,"threshold":0.8,"execution_status":"ok","wall_ms":1,"output":"x","scores":[]}\n{"timest' \
    > corpus/results_reader/seed-torn

status=0
for target in suite_loader results_reader; do
    echo "== $target: ${seconds}s"
    # -s none: no sanitizer (safe Rust; the point is panics, hangs and OOMs).
    if ! cargo +nightly fuzz run "$target" -s none -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1; then
        status=1
    fi
    mkdir -p "regressions/$target"
    for crash in artifacts/"$target"/*; do
        [ -f "$crash" ] || continue
        cp "$crash" "regressions/$target/"
        echo "   kept $(basename "$crash") as a regression input"
    done
done
exit $status
