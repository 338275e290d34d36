#!/usr/bin/env bash
# Builds the host image from the repository's Dockerfile, without a Docker engine, and publishes it. The binary is the
# static release build of `make test` (Makefile, CI_CARGO), the one the tests run; `make image` builds it first and
# passes it here.
#
#   deploy/image/build.sh --binary BIN --context   only stage the build context: dist/image/wasm-reconciler (BIN,
#                                                  stripped) and dist/image/ca-certificates.crt (Debian's
#                                                  ca-certificates); then `docker build .` builds the same image
#   deploy/image/build.sh --binary BIN             stage, build with buildah (vfs storage, no daemon), push to the
#                                                  loopback registry, print the digest
#   deploy/image/build.sh --binary BIN --push REF  stage, build, push to REF (e.g.
#                                                  registry.example.com/team/wasm-reconciler:0.1.0, with buildah's
#                                                  usual credentials: `buildah login`, REGISTRY_AUTH_FILE)
#
# The loopback registry is CNCF Distribution (Debian's docker-registry) on a free 127.0.0.1 port, started for the
# push and stopped after it; its storage stays in ${WASM_RECONCILER_CACHE:-~/.cache/wasm-reconciler}/registry,
# which the real node of tests/kube serves to its container runtime as localhost:5000 (docs/real-cluster.md). The
# image is reproducible (`--timestamp 0`): the same sources give the same digest.
#
# Writes, beside the registry storage, image/wasm-reconciler.ref (the pushed repository and tag) and
# image/wasm-reconciler.digest. The last line on stdout is the pushed reference by digest.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
say() { printf 'image: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

mode=publish
push_ref=""
binary=""
usage="usage: build.sh --binary BIN [--context | --push REF]"
while [[ $# -gt 0 ]]; do
	case $1 in
	--binary)
		[[ -n ${2:-} ]] || die "--binary needs the path of the static host binary ($usage)"
		binary=$2
		shift 2
		;;
	--context)
		mode=context
		shift
		;;
	--push)
		[[ -n ${2:-} ]] || die "--push needs an image reference"
		push_ref=$2
		shift 2
		;;
	*) die "unknown argument $1 ($usage)" ;;
	esac
done
[[ -n $binary ]] || die "no --binary: \`make image\` builds the static host binary and passes it ($usage)"
[[ -x $binary ]] || die "$binary is not an executable: build it with \`make image\`"

version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
[[ -n $version ]] || die "no workspace version in Cargo.toml"
cache="${WASM_RECONCILER_CACHE:-$HOME/.cache/wasm-reconciler}"
context="$root/dist/image"
ca_bundle=/etc/ssl/certs/ca-certificates.crt

[[ -f $ca_bundle ]] || die "$ca_bundle is missing (Debian package ca-certificates)"

# --- the build context -----------------------------------------------------------------------------------------
mkdir -p "$context"
cp "$binary" "$context/wasm-reconciler.tmp"
strip "$context/wasm-reconciler.tmp"
mv "$context/wasm-reconciler.tmp" "$context/wasm-reconciler"
cp "$ca_bundle" "$context/ca-certificates.crt"
if readelf -d "$context/wasm-reconciler" | grep -q NEEDED; then
	die "the binary needs shared libraries ($(readelf -d "$context/wasm-reconciler" | grep NEEDED | tr -s ' ')); the image has none"
fi
say "context: dist/image ($(du -sh "$context" | cut -f1): wasm-reconciler $(du -h "$context/wasm-reconciler" | cut -f1), CA bundle $(du -h "$context/ca-certificates.crt" | cut -f1))"
[[ $mode == context ]] && exit 0

# --- the image -------------------------------------------------------------------------------------------------
command -v buildah >/dev/null || die "buildah is required to build the image without a Docker engine (Debian package buildah)"
storage="$cache/image/buildah"
mkdir -p "$storage"
buildah_() { buildah --root "$storage/root" --runroot "$storage/run" --storage-driver vfs "$@"; }
local_name="localhost/wasm-reconciler:$version"
say "building $local_name from the Dockerfile (buildah $(buildah --version | awk '{print $3}'))"
buildah_ bud --quiet --isolation chroot --timestamp 0 --layers=false -f Dockerfile -t "$local_name" . >/dev/null
# Images of earlier builds under the same name are left dangling: remove them.
buildah_ images --quiet --filter dangling=true | xargs -r buildah_ rmi >/dev/null 2>&1 || true

mkdir -p "$cache/image"
digest_file="$cache/image/wasm-reconciler.digest"
if [[ -n $push_ref ]]; then
	buildah_ push --quiet --digestfile "$digest_file" "$local_name" "docker://$push_ref"
	digest="$(cat "$digest_file")"
	say "pushed $push_ref ($digest)"
	echo "${push_ref%:*}@$digest"
	exit 0
fi

# The loopback registry, for this push only.
command -v docker-registry >/dev/null || die "docker-registry is required for the loopback registry (Debian package docker-registry)"
registry_dir="$cache/registry"
mkdir -p "$registry_dir"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
config="$(mktemp)"
log="$(mktemp)"
cat >"$config" <<YAML
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $registry_dir
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
YAML
docker-registry serve "$config" >"$log" 2>&1 &
registry_pid=$!
stop_registry() {
	kill "$registry_pid" 2>/dev/null && wait "$registry_pid" 2>/dev/null || true
	rm -f "$config" "$log"
}
trap stop_registry EXIT
for _ in $(seq 100); do
	curl -fsS "http://127.0.0.1:$port/v2/" >/dev/null 2>&1 && break
	kill -0 "$registry_pid" 2>/dev/null || die "the registry did not start: $(cat "$log")"
	sleep 0.1
done
repository="wasm-reconciler/wasm-reconciler"
buildah_ push --quiet --tls-verify=false --digestfile "$digest_file" "$local_name" \
	"docker://127.0.0.1:$port/$repository:$version"
digest="$(cat "$digest_file")"
echo "$repository:$version" >"$cache/image/wasm-reconciler.ref"
size="$(curl -fsS -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
	"http://127.0.0.1:$port/v2/$repository/manifests/$digest" | jq '[.layers[].size] | add')"
say "pushed $repository:$version to the loopback registry ($registry_dir): $digest, $((size / 1024)) KiB compressed"
echo "$repository@$digest"
