#!/usr/bin/env bash
# Runs one step of `make test` (Makefile, "test"): the step's output goes to $CI_LOG_DIR/NAME.log; the terminal gets a
# line when it starts, one a minute while it runs (with the last line of its log), and one when it ends, with its wall
# time and the CPU time it and its children used; a failed step also prints the end of its log. Every step appends
# "name, start, wall, user, system, status" to $CI_LOG_DIR/steps.tsv (seconds, start counted from $CI_STARTED).
#
#   tests/ci/step.sh NAME COMMAND [ARG...]
set -uo pipefail

name=${1:?usage: step.sh NAME COMMAND [ARG...]}
shift
log_dir=${CI_LOG_DIR:?CI_LOG_DIR names the directory of the step logs}
run_started=${CI_STARTED:-$(date +%s)}
mkdir -p "$log_dir"
log="$log_dir/$name.log"
times="$log_dir/$name.times"

clock() {
	local elapsed=$(($(date +%s) - run_started))
	printf '%02d:%02d' $((elapsed / 60)) $((elapsed % 60))
}

started=$(date +%s)
printf '[%s] %s: started (log: %s)\n' "$(clock)" "$name" "$log"

# One line a minute while the step runs: how long, and what it printed last.
(
	while sleep 60; do
		last=$(tail -n 1 "$log" 2>/dev/null | tr -d '\r' | cut -c1-110)
		printf '[%s] %s: running for %s s: %s\n' "$(clock)" "$name" $(($(date +%s) - started)) "$last"
	done
) &
ticker=$!

# bash's `time` counts the CPU time of the command's children too: compilers, servers, hosts.
TIMEFORMAT='%R %U %S'
{ time "$@" >"$log" 2>&1 </dev/null; } 2>"$times"
status=$?
kill "$ticker" 2>/dev/null
wait "$ticker" 2>/dev/null

read -r wall user system <"$times"
printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" $((started - run_started)) "$wall" "$user" "$system" "$status" \
	>>"$log_dir/steps.tsv"
if [[ $status == 0 ]]; then
	printf '[%s] %s: done in %.0f s (CPU %.0f s)\n' "$(clock)" "$name" "$wall" \
		"$(awk -v u="$user" -v s="$system" 'BEGIN { print u + s }')"
else
	printf '[%s] %s: FAILED (exit %s) after %.0f s; the end of %s:\n' "$(clock)" "$name" "$status" "$wall" "$log"
	tail -n 80 "$log" | sed "s/^/  $name | /"
fi
exit "$status"
