#!/usr/bin/env bash
# One test step of `make test`: `cargo test CARGO_ARGS -- TEST_ARGS`, after recording which tests it selects (the same
# command with `--list`) and on which API server (E2E_SERVER), for tests/ci/accounting.py to check that every test of
# the workspace runs exactly once per server it is meant for.
#
#   tests/ci/cargo-test.sh NAME CARGO_ARGS... [-- TEST_ARGS...]
set -euo pipefail

name=${1:?usage: cargo-test.sh NAME CARGO_ARGS... [-- TEST_ARGS...]}
shift
log_dir=${CI_LOG_DIR:?CI_LOG_DIR names the directory of the step logs}
cargo_args=()
test_args=()
while [[ $# -gt 0 ]]; do
	if [[ $1 == -- ]]; then
		shift
		test_args=("$@")
		break
	fi
	cargo_args+=("$1")
	shift
done

echo "${E2E_SERVER:-embedded}" >"$log_dir/$name.server"
cargo test "${cargo_args[@]}" -- "${test_args[@]}" --list --format terse >"$log_dir/$name.list" 2>&1 ||
	{ cat "$log_dir/$name.list"; exit 1; }
exec cargo test "${cargo_args[@]}" -- "${test_args[@]}"
