# Shared by the harness's check scripts (selfcheck.sh, selfcheck-node.sh, helm-check.sh), which source it after
# defining say(): a temporary work directory removed at exit (KEEP=1 keeps it), the launcher stopped at exit, and
# the check runner. The sourcing script sets launcher_pid when it starts kube-harness.
# shellcheck shell=bash

work="$(mktemp -d)"
dir="$work/cluster"
launcher_pid=""
cleanup() {
	if [[ -n $launcher_pid ]] && kill -0 "$launcher_pid" 2>/dev/null; then
		kill -TERM "$launcher_pid"
		wait "$launcher_pid" 2>/dev/null
	fi
	if [[ ${KEEP:-} == 1 ]]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

passed=0
failed=0
# check NAME COMMAND...: runs a check; its output is shown only when it fails. Checks run in this shell (not a
# subshell), so that they can wait for the launcher.
check() {
	local name=$1
	shift
	if "$@" >"$work/check.out" 2>&1; then
		passed=$((passed + 1))
		printf 'ok     %s\n' "$name"
	else
		failed=$((failed + 1))
		printf 'FAILED %s\n' "$name"
		sed 's/^/       /' "$work/check.out"
	fi
}

# eventually TIMEOUT COMMAND...: retries COMMAND every 0.2 s until it succeeds or TIMEOUT seconds pass.
eventually() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < deadline)) || { echo "still failing after the timeout: $*"; return 1; }
		sleep 0.2
	done
}

# quietly_eventually TIMEOUT COMMAND...: as eventually, but quiet while it retries; on a timeout it runs COMMAND once
# more with its output shown.
quietly_eventually() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || { echo "still failing after the timeout: $*"; "$@"; return 1; }
		sleep 0.2
	done
}

# expect WHAT ACTUAL EXPECTED: fails, saying what differs, unless ACTUAL is EXPECTED.
expect() {
	[[ $2 == "$3" ]] || { printf '%s:\n  got  %s\n  want %s\n' "$1" "$2" "$3"; return 1; }
}
