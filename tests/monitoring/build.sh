#!/usr/bin/env bash
# Builds promtool and the Prometheus server from the Go module pinned in tests/monitoring/go.mod
# (github.com/prometheus/prometheus), into a cache directory keyed by the Prometheus version and a hash of go.mod,
# go.sum and this script; does nothing when that directory is complete.
#
#   tests/monitoring/build.sh                 build if needed; progress on stderr, the bin directory on stdout
#   tests/monitoring/build.sh --print-bin-dir print the bin directory (built or not) and exit
#
# Cache root: ${WASM_RECONCILER_CACHE:-$HOME/.cache/wasm-reconciler}/monitoring/<prometheus-version>-<hash>/bin/.
# Built with the tag remove_all_sd: no service-discovery plugin but the file and HTTP ones (the checks scrape static
# targets), which leaves the server 1,044 packages to compile instead of 1,518 (remote write's cloud authentication
# still brings some SDKs). Without builtinassets the server has no web UI; its HTTP API (/api/v1/...) is all the
# checks use.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

say() { printf 'monitoring build: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

command -v go >/dev/null || die "go is required (Go >= $(sed -n 's/^go //p' go.mod)); install it and put it on PATH"
command -v sha256sum >/dev/null || die "sha256sum (coreutils) is required"
command -v flock >/dev/null || die "flock (util-linux) is required"

# The version comes from go.mod (module v0.3XX.Y is Prometheus 3.XX.Y), the single source of truth.
module_version="$(sed -n 's|^[[:space:]]*github.com/prometheus/prometheus \(v[^[:space:]]*\).*|\1|p' go.mod | head -n1)"
[[ $module_version =~ ^v0\.([0-9]+)([0-9][0-9])\.([0-9]+)$ ]] ||
	die "go.mod must require github.com/prometheus/prometheus v0.3XX.Y (got '$module_version')"
prometheus_version="${BASH_REMATCH[1]}.$((10#${BASH_REMATCH[2]})).${BASH_REMATCH[3]}"

inputs_hash="$(sha256sum go.mod go.sum build.sh | sha256sum | cut -c1-12)"
cache_root="${WASM_RECONCILER_CACHE:-$HOME/.cache/wasm-reconciler}/monitoring"
key_dir="$cache_root/$prometheus_version-$inputs_hash"
bin_dir="$key_dir/bin"
binaries=(promtool prometheus)

if [[ ${1:-} == --print-bin-dir ]]; then
	echo "$bin_dir"
	exit 0
elif [[ $# -gt 0 ]]; then
	die "unknown argument $1 (usage: build.sh [--print-bin-dir])"
fi

complete() {
	[[ -f $key_dir/complete ]] || return 1
	for binary in "${binaries[@]}"; do [[ -x $bin_dir/$binary ]] || return 1; done
}

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

module_time="$(go list -m -f '{{.Time.UTC.Format "20060102-15:04:05"}}' github.com/prometheus/prometheus)"
# What Prometheus's release build (promu) stamps into its binaries, reported by --version and /api/v1/status/buildinfo.
ldflags=(-s -w
	-X "github.com/prometheus/common/version.Version=$prometheus_version"
	-X "github.com/prometheus/common/version.Revision=$module_version"
	-X "github.com/prometheus/common/version.Branch=module"
	-X "github.com/prometheus/common/version.BuildUser=wasm-reconciler"
	-X "github.com/prometheus/common/version.BuildDate=$module_time")

staging="$key_dir/bin.partial"
rm -rf "$staging"
mkdir -p "$staging"
say "building promtool and prometheus $prometheus_version ($module_version) with $(go env GOVERSION) into $bin_dir"
say "with an empty Go build cache this takes several minutes (measured times: docs/deploy.md, \"Dashboards and alerts\")"
started=$SECONDS
# Static binaries; -mod=readonly so that go.sum is never rewritten by a build.
CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath -tags remove_all_sd -ldflags "${ldflags[*]}" \
	-o "$staging/" github.com/prometheus/prometheus/cmd/promtool github.com/prometheus/prometheus/cmd/prometheus
for binary in "${binaries[@]}"; do [[ -x $staging/$binary ]] || die "the build did not produce $binary"; done

rm -rf "$bin_dir"
mv "$staging" "$bin_dir"
{
	echo "prometheus $prometheus_version ($module_version)"
	echo "go $(go env GOVERSION)"
} >"$key_dir/versions"
touch "$key_dir/complete"
say "built in $((SECONDS - started)) s: ${binaries[*]}"
echo "$bin_dir"
