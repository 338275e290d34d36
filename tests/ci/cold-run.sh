#!/usr/bin/env bash
# Measures a cold `make test` as CI runs it: `.ci/run` in a fresh clone of HEAD, in a fresh HOME (empty Go, cargo,
# pip and npm caches, an empty ~/.cache/wasm-reconciler) that keeps only the machine's configuration files, with the
# Rust targets and Debian packages `make test` installs removed first. Appends the run's steps (start, wall and CPU
# seconds, from $CARGO_TARGET_DIR/make-test/steps.tsv) and its total to RESULTS (docs/benchmarks/make-test.md).
#
#   tests/ci/cold-run.sh [--jobs N] [--beside] [--label TEXT] [--results FILE] [--keep]
#
#   --jobs N    TEST_JOBS, the steps run at a time (the Makefile's by default; 1 measures every step alone, one after another)
#   --beside    a second cold build runs beside it, as on a shared machine: `cargo build --workspace --all-targets`
#               of another fresh clone, with a cargo home and target directory of its own; its time is recorded too
#   --keep      keep the work directory (the clone, HOME and logs) instead of removing it
#
# Needs root (it removes and `make test` installs Debian packages) and takes as long as the run.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repository="$(cd "$here/../.." && pwd)"
say() { printf 'cold-run: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

jobs=$(sed -n "s/^TEST_JOBS ?= \\(.*\\)/\\1/p" "$(dirname "$0")/../../Makefile")
beside=false
label=""
results="$repository/docs/benchmarks/make-test.md"
keep=false
while [[ $# -gt 0 ]]; do
	case $1 in
	--jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
	--beside) beside=true; shift ;;
	--label) label=${2:?--label needs a text}; shift 2 ;;
	--results) results=${2:?--results needs a file}; shift 2 ;;
	--keep) keep=true; shift ;;
	*) die "unknown argument $1 (usage: cold-run.sh [--jobs N] [--beside] [--label TEXT] [--results FILE] [--keep])" ;;
	esac
done
[[ $(id -u) == 0 ]] || die "run it as root: it removes the Debian packages make test installs"

work="$(mktemp -d /var/tmp/cold-run.XXXXXX)"
$keep || trap 'rm -rf "$work"' EXIT
say "work directory $work"

# The machine's configuration (git identity, npm and Go settings), never its caches.
home="$work/home"
mkdir -p "$home/.config"
for file in .gitconfig .npmrc .config/go; do
	[[ -e $HOME/$file ]] && cp -r "$HOME/$file" "$home/$file"
done
rustup_home="${RUSTUP_HOME:-$HOME/.rustup}"
# Only rustup and its proxies (cargo, rustc, …) from the machine's cargo bin directory, not the tools installed there
# by `cargo install` (cargo-machete, which `make test` installs itself).
machine_cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
cargo_bin="$work/rustup-bin"
mkdir -p "$cargo_bin"
for tool in "$machine_cargo_bin"/*; do
	[[ $tool -ef $machine_cargo_bin/rustup ]] && ln -s "$tool" "$cargo_bin/"
done

# What `make test` installs: the Rust targets and the Debian packages of `make test-tools` (but the CA bundle and
# curl, which the machine's own tools use; the packages' dependencies stay, as `apt-get remove` leaves them).
toolchain="$(sed -n 's/^channel = "\(.*\)"/\1/p' "$repository/rust-toolchain.toml")"
RUSTUP_HOME="$rustup_home" "$cargo_bin/rustup" target remove --toolchain "$toolchain" wasm32-wasip2 \
	x86_64-unknown-linux-musl >/dev/null 2>&1
packages="$(sed -n '/^TEST_TOOLS :=/,/^[^\t ]/p' "$repository/Makefile" | grep -o ':[a-z0-9.+-]*' | tr -d ':' | sort -u |
	grep -v -e '^ca-certificates$' -e '^curl$')"
# shellcheck disable=SC2086 # one word per package
DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq $packages >/dev/null 2>&1
say "removed the Rust targets and the Debian packages: $(echo $packages | tr '\n' ' ')"

git clone -q "$repository" "$work/clone" || die "cloning $repository"
commit="$(git -C "$work/clone" rev-parse --short HEAD)"

fresh_env=(env -i HOME="$home" USER=root LANG=C.UTF-8 TERM=dumb CI=true TEST_JOBS="$jobs"
	RUSTUP_HOME="$rustup_home" PATH="$cargo_bin:$home/.cargo/bin:/usr/local/go/bin:${PYENV_ROOT:-/root/.pyenv}/shims:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	PYENV_ROOT="${PYENV_ROOT:-/root/.pyenv}" SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt)

beside_pid=""
if $beside; then
	git clone -q "$repository" "$work/beside" || die "cloning $repository for the build beside"
	(
		cd "$work/beside" && started=$(date +%s) &&
			"${fresh_env[@]}" HOME="$work/beside-home" CARGO_HOME="$work/beside-home/.cargo" \
				CARGO_TARGET_DIR="$work/beside-target" cargo build --locked --workspace --all-targets \
				>"$work/beside.log" 2>&1
		echo "$? $(($(date +%s) - started))" >"$work/beside.result"
	) &
	beside_pid=$!
	say "a second cold build runs beside it (cargo build --workspace --all-targets of another clone)"
fi

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
started=$(date +%s)
say "make test in a fresh clone of $commit, TEST_JOBS=$jobs (log: $work/run.log)"
(cd "$work/clone" && "${fresh_env[@]}" .ci/run >"$work/run.log" 2>&1)
status=$?
total=$(($(date +%s) - started))
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -n $beside_pid ]]; then
	wait "$beside_pid"
	read -r beside_status beside_seconds <"$work/beside.result"
fi
say "make test: exit $status after $total s"
tail -n 3 "$work/run.log" >&2

steps="$home/.cache/wasm-reconciler/target/make-test/steps.tsv"
{
	echo
	heading="$(date -u +%Y-%m-%d) at $commit, TEST_JOBS=$jobs"
	$beside && heading="$heading, a second cold build beside it"
	echo "### $heading${label:+: $label}"
	echo
	echo "$(nproc) cores; load average $load_before before, $load_after after; \`make test\` exit $status in" \
		"**$((total / 60)) min $((total % 60)) s**$([[ $status == 0 ]] && echo ", $(grep -o 'tests: [0-9]* passed, [0-9]* failed' "$work/run.log" | tail -n1)")."
	if $beside; then
		echo "The build beside it (\`cargo build --workspace --all-targets\`, cold, dev profile) exit $beside_status in" \
			"$((beside_seconds / 60)) min $((beside_seconds % 60)) s."
	fi
	echo
	echo "| step | start (s) | wall (s) | CPU (s) |"
	echo "|---|---:|---:|---:|"
	if [[ -f $steps ]]; then
		sort -t$'\t' -k2,2n "$steps" |
			awk -F'\t' '{ printf "| %s%s | %d | %.0f | %.0f |\n", $1, ($6 == 0 ? "" : " (failed)"), $2, $3, $4 + $5 }'
	fi
} >>"$results"
say "appended to $results"
exit "$status"
