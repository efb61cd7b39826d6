#!/usr/bin/env bash
# The run step of action.yml (the GitHub Action), as a script so that it
# can be run and tested outside GitHub with the variables GitHub sets:
#
#   EVALHOST_BIN_DIR   where the install step put evalhost (added to PATH)
#   INPUT_SUITE        the suite (required unless INPUT_MERGE)
#   INPUT_MERGE        a glob of shards' run directories to merge instead
#   INPUT_ARGS         more `evalhost run` arguments (split at whitespace: no quotes, no expansion)
#   INPUT_SHARD        K/N, or empty
#   INPUT_OUTPUT       the run directory, or empty for runs/<shard or "all">
#   INPUT_ARTIFACT_NAME  or empty for evalhost-<shard or "all">
#   GITHUB_OUTPUT, GITHUB_PATH, GITHUB_STEP_SUMMARY (GitHub's files)
#
# It writes run-dir, exit-code and artifact-name to GITHUB_OUTPUT and exits
# 0: the action's last step fails the job with evalhost's code after the
# upload, so a failing run still uploads its directory.
set -uo pipefail

fail() {
    echo "::error title=evalhost::$*"
    echo "exit-code=2" >>"${GITHUB_OUTPUT:-/dev/null}"
    exit 0
}

if [ -n "${EVALHOST_BIN_DIR:-}" ]; then
    export PATH="$EVALHOST_BIN_DIR:$PATH"
    [ -n "${GITHUB_PATH:-}" ] && echo "$EVALHOST_BIN_DIR" >>"$GITHUB_PATH"
fi
command -v evalhost >/dev/null 2>&1 || fail "evalhost is not installed (the install step failed?)"

if [ -n "${INPUT_MERGE:-}" ]; then
    out=${INPUT_OUTPUT:-runs/all}
    name=${INPUT_ARTIFACT_NAME:-evalhost-all}
    # The glob is expanded here, by this shell, into the shards' directories.
    shopt -s nullglob
    # shellcheck disable=SC2206
    dirs=($INPUT_MERGE)
    [ ${#dirs[@]} -gt 0 ] || fail "the \`merge\` input \`$INPUT_MERGE\` matches no directory"
    args=(merge "${dirs[@]}")
else
    [ -n "${INPUT_SUITE:-}" ] || fail "the action's \`suite\` input is required (or \`merge\`)"
    shard=${INPUT_SHARD:-}
    label=all
    args=(run "$INPUT_SUITE")
    if [ -n "$shard" ]; then
        [[ "$shard" =~ ^[0-9]+/[0-9]+$ ]] || fail "the \`shard\` input is K/N (like 2/4), got \`$shard\`"
        label="shard-${shard%/*}-of-${shard#*/}"
        args+=(--shard "$shard")
    fi
    out=${INPUT_OUTPUT:-runs/$label}
    name=${INPUT_ARTIFACT_NAME:-evalhost-$label}
fi
# Split at whitespace; nothing is expanded or run.
if [ -n "${INPUT_ARGS:-}" ]; then
    read -r -a extra <<<"$INPUT_ARGS"
    args+=("${extra[@]}")
fi
args+=(--reporter github -o "$out")

echo "evalhost ${args[*]}"
evalhost "${args[@]}"
code=$?
{
    echo "run-dir=$out"
    echo "exit-code=$code"
    echo "artifact-name=$name"
} >>"${GITHUB_OUTPUT:-/dev/null}"
exit 0
