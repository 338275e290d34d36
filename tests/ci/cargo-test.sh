#!/usr/bin/env bash
# One test step of `make test`: `cargo test CARGO_ARGS -- TEST_ARGS`, after recording which tests it selects (the same
# command with `--list`) and on which API server (E2E_SERVER), for tests/ci/accounting.py to check that every test of
# the workspace runs exactly once per server it is meant for.
#
#   tests/ci/cargo-test.sh NAME CARGO_ARGS... [-- TEST_ARGS...]
#   tests/ci/cargo-test.sh NAME --exe TEST [-- TEST_ARGS...]
#
# With --exe, the test binary TEST that `make build-release-first` built (listed in $CI_FIRST_BUILD, cargo's JSON
# messages) runs directly, as `cargo test` would run it: from its package's directory, with cargo's variables. Those
# suites start while the rest of the build runs, and a `cargo test` would wait for that build's lock.
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

if [[ ${cargo_args[0]:-} == --exe ]]; then
	test=${cargo_args[1]:?--exe names a test binary}
	messages=${CI_FIRST_BUILD:?CI_FIRST_BUILD names the JSON messages of make build-release-first}
	# The executable and package directory of the test target TEST, from cargo's compiler-artifact messages.
	read -r exe package_dir < <(python3 - "$messages" "$test" <<'PY'
import json, os, sys
path, wanted = sys.argv[1], sys.argv[2]
for line in open(path):
    message = json.loads(line)
    target = message.get("target", {})
    if message.get("reason") == "compiler-artifact" and target.get("name") == wanted and "test" in target.get("kind", []):
        print(message["executable"], os.path.dirname(message["manifest_path"]))
        break
else:
    sys.exit(f"{path} lists no test binary named {wanted}")
PY
	)
	[[ -x $exe ]] || { echo "cargo-test.sh: $exe is not an executable" >&2; exit 1; }
	toolchain=$(rustup show active-toolchain | cut -d' ' -f1)
	cd "$package_dir"
	# What the tests read of what `cargo test` sets for a test process; RUSTUP_TOOLCHAIN keeps the cargo a test starts
	# (the plugin scaffolds) on the pinned toolchain.
	export CARGO_MANIFEST_DIR=$package_dir RUSTUP_TOOLCHAIN=$toolchain CARGO=$(rustup which cargo)
	# cargo's header line, which tests/ci/accounting.py reads to tell the binaries apart.
	header="     Running $test (${exe})"
	{ echo "$header"; "$exe" "${test_args[@]}" --list --format terse; } >"$log_dir/$name.list" 2>&1 ||
		{ cat "$log_dir/$name.list"; exit 1; }
	echo "$header"
	exec "$exe" "${test_args[@]}"
fi

cargo test "${cargo_args[@]}" -- "${test_args[@]}" --list --format terse >"$log_dir/$name.list" 2>&1 ||
	{ cat "$log_dir/$name.list"; exit 1; }
exec cargo test "${cargo_args[@]}" -- "${test_args[@]}"
