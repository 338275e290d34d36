#!/usr/bin/env bash
# Builds the OpenTelemetry Collector the trace tests send spans to (main.go: the OTLP receiver and the file exporter)
# from the modules pinned in tests/otelcol/go.mod, into a cache directory keyed by the collector version and a hash of
# main.go, go.mod, go.sum and this script; does nothing when that directory is complete.
#
#   tests/otelcol/build.sh                 build if needed; progress on stderr, the bin directory on stdout
#   tests/otelcol/build.sh --print-bin-dir print the bin directory (built or not) and exit
#
# Cache root: ${WASM_RECONCILER_CACHE:-$HOME/.cache/wasm-reconciler}/otelcol/<collector-version>-<hash>/bin/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

say() { printf 'otelcol build: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

command -v go >/dev/null || die "go is required (Go >= $(sed -n 's/^go //p' go.mod)); install it and put it on PATH"
command -v sha256sum >/dev/null || die "sha256sum (coreutils) is required"
command -v flock >/dev/null || die "flock (util-linux) is required"

# The version comes from go.mod, the single source of truth.
collector_version="$(sed -n 's|^[[:space:]]*go.opentelemetry.io/collector/otelcol \(v[^[:space:]]*\).*|\1|p' go.mod | head -n1)"
[[ -n $collector_version ]] || die "go.mod must require go.opentelemetry.io/collector/otelcol"

inputs_hash="$(sha256sum main.go go.mod go.sum build.sh | sha256sum | cut -c1-12)"
cache_root="${WASM_RECONCILER_CACHE:-$HOME/.cache/wasm-reconciler}/otelcol"
key_dir="$cache_root/$collector_version-$inputs_hash"
bin_dir="$key_dir/bin"

if [[ ${1:-} == --print-bin-dir ]]; then
	echo "$bin_dir"
	exit 0
elif [[ $# -gt 0 ]]; then
	die "unknown argument $1 (usage: build.sh [--print-bin-dir])"
fi

complete() { [[ -f $key_dir/complete && -x $bin_dir/otelcol ]]; }

mkdir -p "$cache_root"
if complete; then
	say "cached: $bin_dir"
	echo "$bin_dir"
	exit 0
fi

# One build at a time per cache root; a second caller waits and then finds the result.
exec {lock_fd}>"$cache_root/.build.lock"
if ! flock -n "$lock_fd"; then
	say "another build is running; waiting for it"
	flock "$lock_fd"
fi
if complete; then
	say "cached: $bin_dir"
	echo "$bin_dir"
	exit 0
fi

staging="$key_dir/bin.partial"
rm -rf "$staging"
mkdir -p "$staging"
say "building the collector $collector_version with $(go env GOVERSION) into $bin_dir"
say "with an empty Go build cache this takes a few minutes (measured times: docs/deploy.md, \"Traces\")"
started=$SECONDS
# A static binary; -mod=readonly so that go.sum is never rewritten by a build.
CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath -ldflags "-s -w" -o "$staging/otelcol" .
[[ -x $staging/otelcol ]] || die "the build did not produce otelcol"

rm -rf "$bin_dir"
mv "$staging" "$bin_dir"
{
	echo "collector $collector_version"
	echo "go $(go env GOVERSION)"
} >"$key_dir/versions"
touch "$key_dir/complete"
say "built in $((SECONDS - started)) s: otelcol"
echo "$bin_dir"
