#!/usr/bin/env bash
# Opens a run's report.html in headless Chromium and saves a screenshot.
#   scripts/screenshot-report.sh RUN_DIR [OUT.png]
# Needs Debian's chromium (apt-get install chromium); not part of CI.
set -euo pipefail
run_dir=${1:?usage: $0 RUN_DIR [OUT.png]}
out=${2:-$run_dir/report.png}
report=$(realpath "$run_dir/report.html")
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --hide-scrollbars --window-size=1280,1400 \
    --screenshot="$(realpath -m "$out")" "file://$report" 2>/dev/null
echo "screenshot: $out"
