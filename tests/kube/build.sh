#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager, kubectl, helm and kube-harness from the Go modules pinned in
# tests/kube/go.mod into a cache directory keyed by the Kubernetes version and a hash of go.mod, go.sum and the
# harness sources; does nothing when that directory is complete.
#
#   tests/kube/build.sh                 build if needed; progress on stderr, the bin directory on stdout
#   tests/kube/build.sh --print-bin-dir print the bin directory (built or not) and exit
#
# Cache root: ${WASM_RECONCILER_CACHE:-$HOME/.cache/wasm-reconciler}/kube/<kubernetes-version>-<hash>/bin/
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

say() { printf 'kube-harness build: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

command -v go >/dev/null || die "go is required (Go >= $(sed -n 's/^go //p' go.mod)); install it and put it on PATH"
command -v sha256sum >/dev/null || die "sha256sum (coreutils) is required"
command -v flock >/dev/null || die "flock (util-linux) is required"

# Versions come from go.mod, so that the module graph is the single source of truth.
module_version() { sed -n "s|^[[:space:]]*$1 \(v[^[:space:]]*\).*|\1|p" go.mod | head -n1; }
kubernetes_version="$(module_version k8s.io/kubernetes)"
etcd_version="$(module_version go.etcd.io/etcd/server/v3)"
helm_version="$(module_version helm.sh/helm/v3)"
[[ -n $kubernetes_version && -n $etcd_version && -n $helm_version ]] ||
	die "go.mod must require k8s.io/kubernetes, go.etcd.io/etcd/server/v3 and helm.sh/helm/v3"

# The key covers everything that changes what gets built: the module graph, the harness sources, this script.
inputs_hash="$(
	find . -path ./testdata -prune -o -type f \( -name '*.go' -o -name go.mod -o -name go.sum -o -name build.sh \) -print |
		LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12
)"
cache_root="${WASM_RECONCILER_CACHE:-$HOME/.cache/wasm-reconciler}/kube"
key_dir="$cache_root/$kubernetes_version-$inputs_hash"
bin_dir="$key_dir/bin"
binaries=(etcd kube-apiserver kube-controller-manager kubectl helm kube-harness)

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

kubernetes_minor="$(echo "$kubernetes_version" | cut -d. -f2)"
kubernetes_major="${kubernetes_version#v}"
kubernetes_major="${kubernetes_major%%.*}"
module_time="$(go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)"
# What the Kubernetes release build stamps into its binaries (reported by /version and --version), and helm's
# version and the Kubernetes version `helm template` assumes, as helm's own release build sets them.
ldflags=(-s -w)
for package in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=(
		-X "$package.gitVersion=$kubernetes_version"
		-X "$package.gitMajor=$kubernetes_major"
		-X "$package.gitMinor=$kubernetes_minor"
		-X "$package.gitTreeState=clean"
		-X "$package.buildDate=$module_time"
	)
done
ldflags+=(
	-X "helm.sh/helm/v3/internal/version.version=$helm_version"
	-X "helm.sh/helm/v3/internal/version.gitTreeState=clean"
	-X "helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=$kubernetes_major"
	-X "helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$kubernetes_minor"
	-X "helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=$kubernetes_major"
	-X "helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$kubernetes_minor"
)

staging="$key_dir/bin.partial"
rm -rf "$staging"
mkdir -p "$staging"
say "building kubernetes $kubernetes_version (kube-apiserver, kube-controller-manager, kubectl), etcd $etcd_version, helm $helm_version and kube-harness with $(go env GOVERSION) into $bin_dir"
say "with an empty Go build cache this takes a long while (measured times: docs/real-cluster.md)"
started=$SECONDS
# Static binaries as Kubernetes releases them; -mod=readonly so that go.sum is never rewritten by a build.
CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath -ldflags "${ldflags[*]}" -o "$staging/" \
	./cmd/kube-apiserver ./cmd/kube-controller-manager ./cmd/kube-harness \
	k8s.io/kubernetes/cmd/kubectl go.etcd.io/etcd/server/v3 helm.sh/helm/v3/cmd/helm
# go build names a binary after its import path without the major-version suffix.
mv "$staging/server" "$staging/etcd"
for binary in "${binaries[@]}"; do [[ -x $staging/$binary ]] || die "the build did not produce $binary"; done

rm -rf "$bin_dir"
mv "$staging" "$bin_dir"
{
	echo "kubernetes $kubernetes_version"
	echo "etcd $etcd_version"
	echo "helm $helm_version"
	echo "go $(go env GOVERSION)"
} >"$key_dir/versions"
touch "$key_dir/complete"
say "built in $((SECONDS - started)) s: $(cd "$bin_dir" && echo "${binaries[*]}")"
echo "$bin_dir"
