#!/usr/bin/env bash
# The run step of action.yml (the GitHub Action), as a script so that it
# can be run and tested outside GitHub with the variables GitHub sets:
#
#   EVALHOST_BIN_DIR   where the install step put evalhost (added to PATH)
#   INPUT_SUITE        the suite (required unless INPUT_MERGE)
#   INPUT_MERGE        a glob of shards' run directories to merge instead
#   INPUT_ARGS         more `evalhost run` arguments (split at whitespace and
#                      line breaks, every line: no quotes, no expansion); not
#                      given to `merge`
#   INPUT_MERGE_ARGS   more `evalhost merge` arguments (split the same way)
#   INPUT_SHARD        K/N, or empty
#   INPUT_OUTPUT       the run directory, or empty for runs/<shard or "all">
#   INPUT_ARTIFACT_NAME  or empty for evalhost-<shard or "all">
#   GITHUB_OUTPUT, GITHUB_PATH, GITHUB_STEP_SUMMARY (GitHub's files)
#
# It writes run-dir, artifact-name and then exit-code to GITHUB_OUTPUT and
# exits 0: the action's last step fails the job with evalhost's code after
# the upload, so a failing run still uploads its directory. An input with a
# line break is refused before anything is written there: GitHub reads that
# file a line at a time, and a line break in a value would add an output of
# its own (a second `exit-code=0`, read last, made a failing run green).
set -uo pipefail

fail() {
    echo "::error title=evalhost::$*"
    echo "exit-code=2" >>"${GITHUB_OUTPUT:-/dev/null}"
    exit 0
}

# One `name=value` line of GITHUB_OUTPUT; a value with a line break is
# refused (the callers check their inputs first: this is the last guard).
output() {
    case "$2" in
    *$'\n'* | *$'\r'*) fail "the output \`$1\` would hold a line break" ;;
    esac
    echo "$1=$2" >>"${GITHUB_OUTPUT:-/dev/null}"
}

# Inputs that become outputs or file names hold one line.
for input in INPUT_SUITE INPUT_MERGE INPUT_SHARD INPUT_OUTPUT INPUT_ARTIFACT_NAME; do
    case "${!input:-}" in
    *$'\n'* | *$'\r'*) fail "the \`$(echo "${input#INPUT_}" | tr 'A-Z_' 'a-z-')\` input holds a line break" ;;
    esac
done

# Arguments split at blanks and line breaks, every line of them; nothing is
# expanded or run (`read -a` does not glob).
split_args() {
    local -n into=$1
    into=()
    if [ -n "${2:-}" ]; then
        IFS=$' \t\r\n' read -r -d '' -a into <<<"$2" || true
    fi
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
    # `args` are `evalhost run`'s (one `args:` for a matrix's runs and its
    # merge job must not break the merge); `merge-args` are merge's.
    split_args extra "${INPUT_MERGE_ARGS:-}"
    args+=("${extra[@]}")
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
    split_args extra "${INPUT_ARGS:-}"
    args+=("${extra[@]}")
fi
args+=(--reporter github -o "$out")

echo "evalhost ${args[*]}"
evalhost "${args[@]}"
code=$?
[[ "$code" =~ ^[0-9]+$ ]] || code=3
output run-dir "$out"
output artifact-name "$name"
# Last: whatever came before, the job's verdict is this line.
output exit-code "$code"
exit 0
