#!/usr/bin/env bash
# The shell of the GitHub Action (action.yml): runs dedupctl check with the action's inputs (as
# INPUT_* variables), writes the report, prints the TOML lines' annotations (-o github) for the
# runner, appends the Markdown report to $GITHUB_STEP_SUMMARY and sets the outputs exit-code,
# report-file and findings in $GITHUB_OUTPUT. It always exits 0: the action's last step fails with
# dedupctl's exit status, after the SARIF upload. Runs the same on a developer's machine with those
# variables set (tests/cli/test_cli_ci_templates.cpp does, as the runner does).
set -uo pipefail

fail() { # a bad input: an annotation, exit-code 2
  echo "::error title=dedupctl action::$1"
  echo "exit-code=2" >>"$GITHUB_OUTPUT"
  exit 0
}

config=${INPUT_CONFIG:-dedupctl.toml}
format=${INPUT_FORMAT:-sarif}
report=${INPUT_REPORT_FILE:-dedupctl.sarif}
case "${INPUT_LIVE:-false}" in
true | false) ;;
*) fail "input live is '${INPUT_LIVE}': expected true or false" ;;
esac
case "$format" in
sarif | json | junit | gitlab | markdown | html | text) ;;
*) fail "input format is '$format': expected sarif, json, junit, gitlab, markdown, html or text" ;;
esac
case "${INPUT_FAIL_ON:-error}" in
error | warning | info | none) ;;
*) fail "input fail-on is '${INPUT_FAIL_ON}': expected error, warning, info or none" ;;
esac

dedupctl=()
if [ -n "${INPUT_DEDUPCTL:-}" ]; then
  read -r -a dedupctl <<<"$INPUT_DEDUPCTL"
elif command -v dedupctl >/dev/null; then
  dedupctl=(dedupctl)
elif [ -n "${INPUT_IMAGE:-}" ]; then
  # The image runs as its own user (uid 10001); the workspace is the runner's.
  dedupctl=(docker run --rm --network host --user "$(id -u):$(id -g)" -v "$PWD:$PWD" -w "$PWD" "$INPUT_IMAGE")
else
  fail "dedupctl is not installed: install the .deb scripts/package builds (sudo apt-get install ./dedupctl_VERSION_amd64.deb) or set the image input to the image it builds"
fi

extra=()
if [ -n "${INPUT_ARGS:-}" ]; then
  read -r -a extra <<<"$INPUT_ARGS"
fi
args=(check "$config" "${extra[@]}")
if [ "${INPUT_LIVE:-false}" = true ]; then
  args+=(--live)
fi

"${dedupctl[@]}" "${args[@]}" --fail-on "${INPUT_FAIL_ON:-error}" -o "$format" --output "$report"
code=$?
echo "exit-code=$code" >>"$GITHUB_OUTPUT"
if [ -s "$report" ]; then
  echo "report-file=$report" >>"$GITHUB_OUTPUT"
fi
if [ "$code" -eq 2 ]; then # the file cannot be read: dedupctl said why on stderr
  echo "::error title=dedupctl check::$config cannot be checked (exit status 2); the step's log says why"
  exit 0
fi

# The annotations on the TOML lines and the job summary, from the same declarations.
annotations=$("${dedupctl[@]}" "${args[@]}" --fail-on "${INPUT_FAIL_ON:-error}" -o github)
printf '%s\n' "$annotations"
# One annotation per finding; the run's own "incomplete" line (title=dedupctl check) is none.
findings=$(printf '%s\n' "$annotations" | grep '^::[a-z]* .*title=dedupctl [a-z0-9-]*::' | grep -vc 'title=dedupctl check::')
echo "findings=$findings" >>"$GITHUB_OUTPUT"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  "${dedupctl[@]}" "${args[@]}" --fail-on "${INPUT_FAIL_ON:-error}" -o markdown >>"$GITHUB_STEP_SUMMARY"
fi
exit 0
