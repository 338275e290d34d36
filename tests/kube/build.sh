#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl, helm and
# kube-harness from the Go modules pinned in tests/kube/go.mod, containerd and its runc shim from
# tests/kube/containerd/go.mod, a pause program, and two small OCI images for the node (pause and busybox, with
# buildah), into a cache directory keyed by the Kubernetes version and a hash of the go.mod and go.sum files, the
# harness sources and this script; does nothing when that directory is complete.
#
#   tests/kube/build.sh                 build if needed; progress on stderr, the bin directory on stdout
#   tests/kube/build.sh --control-plane only the control plane's part (etcd, kube-apiserver, kube-controller-manager,
#                                       kubectl, helm, kube-harness): what `kube-harness up` without --node runs
#   tests/kube/build.sh --print-bin-dir print the bin directory (built or not) and exit
#
# The control plane is built first, and the node's part (kube-scheduler, kubelet, kube-proxy, containerd, pause and
# the images) is added to the same directory later, so that `make test` starts the suites on a real control plane
# before the node is built.
#
# Cache root: ${WASM_RECONCILER_CACHE:-$HOME/.cache/wasm-reconciler}/kube/<kubernetes-version>-<hash>/bin/ (and
# images/ beside bin/).
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
containerd_version="$(sed -n 's|^[[:space:]]*github.com/containerd/containerd/v2 \(v[^[:space:]]*\).*|\1|p' containerd/go.mod | head -n1)"
[[ -n $containerd_version ]] || die "containerd/go.mod must require github.com/containerd/containerd/v2"

# The key covers everything that changes what gets built: the module graph, the harness sources, this script.
inputs_hash="$(
	find . -path ./testdata -prune -o -type f \( -name '*.go' -o -name go.mod -o -name go.sum -o -name build.sh \) -print |
		LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12
)"
cache_root="${WASM_RECONCILER_CACHE:-$HOME/.cache/wasm-reconciler}/kube"
key_dir="$cache_root/$kubernetes_version-$inputs_hash"
bin_dir="$key_dir/bin"
control_plane_binaries=(etcd kube-apiserver kube-controller-manager kubectl helm kube-harness)
node_binaries=(kube-scheduler kubelet kube-proxy containerd containerd-shim-runc-v2 pause)
images=(pause busybox)
# The tag of both images (cluster.ImageTag in the launcher, which pushes them as localhost:5000/<name>:<tag>).
image_tag=kube-harness

want=all
case ${1:-} in
--print-bin-dir)
	echo "$bin_dir"
	exit 0
	;;
--control-plane) want=control-plane ;;
"") ;;
*) die "unknown argument $1 (usage: build.sh [--control-plane | --print-bin-dir])" ;;
esac
[[ $# -le 1 ]] || die "one argument at most (usage: build.sh [--control-plane | --print-bin-dir])"

# Each part is complete when its marker and every file it makes are there.
control_plane_complete() {
	[[ -f $key_dir/control-plane.complete ]] || return 1
	for binary in "${control_plane_binaries[@]}"; do [[ -x $bin_dir/$binary ]] || return 1; done
}
node_complete() {
	[[ -f $key_dir/complete ]] || return 1
	for binary in "${node_binaries[@]}"; do [[ -x $bin_dir/$binary ]] || return 1; done
	for image in "${images[@]}"; do [[ -f $key_dir/images/$image/index.json ]] || return 1; done
}
complete() {
	control_plane_complete || return 1
	[[ $want == control-plane ]] || node_complete
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

started=$SECONDS
go_build() { CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath "$@"; }

# The control plane: into bin.partial, which becomes bin/ whole.
if ! control_plane_complete; then
	staging="$key_dir/bin.partial"
	rm -rf "$staging" "$key_dir/complete" "$key_dir/control-plane.complete"
	mkdir -p "$staging"
	say "building kubernetes $kubernetes_version (kube-apiserver, kube-controller-manager, kubectl), etcd $etcd_version, helm $helm_version and kube-harness with $(go env GOVERSION) into $bin_dir"
	say "with an empty Go build cache this takes a long while (measured times: docs/real-cluster.md)"
	# Static binaries as Kubernetes releases them; -mod=readonly so that go.sum is never rewritten by a build.
	go_build -ldflags "${ldflags[*]}" -o "$staging/" ./cmd/kube-apiserver ./cmd/kube-controller-manager \
		./cmd/kube-harness k8s.io/kubernetes/cmd/kubectl go.etcd.io/etcd/server/v3 helm.sh/helm/v3/cmd/helm
	# go build names a binary after its import path without the major-version suffix.
	mv "$staging/server" "$staging/etcd"
	for binary in "${control_plane_binaries[@]}"; do [[ -x $staging/$binary ]] || die "the build did not produce $binary"; done
	rm -rf "$bin_dir" "$key_dir/images"
	mv "$staging" "$bin_dir"
	{
		echo "kubernetes $kubernetes_version"
		echo "etcd $etcd_version"
		echo "helm $helm_version"
		echo "go $(go env GOVERSION)"
	} >"$key_dir/versions"
	touch "$key_dir/control-plane.complete"
	say "control plane built in $((SECONDS - started)) s: $(cd "$bin_dir" && echo "${control_plane_binaries[*]}")"
fi
if [[ $want == control-plane ]]; then
	echo "$bin_dir"
	exit 0
fi

# The node: its binaries into node.partial, then each moved into bin/ beside the control plane's.
staging="$key_dir/node.partial"
rm -rf "$staging"
mkdir -p "$staging"
say "building kubernetes $kubernetes_version (kube-scheduler, kubelet, kube-proxy), containerd $containerd_version and pause with $(go env GOVERSION) into $bin_dir"
go_build -ldflags "${ldflags[*]}" -o "$staging/" ./cmd/kube-scheduler ./cmd/kubelet ./cmd/kube-proxy ./cmd/pause
# containerd in a module of its own: its dependency graph (OpenTelemetry, gRPC, …) is newer than Kubernetes', and
# one module would move Kubernetes' dependencies. Static, as containerd's release builds its shim; without cgo the
# btrfs snapshotter (the only part that needs it) is left out.
(
	cd containerd
	containerd_ldflags=(-s -w
		-X "github.com/containerd/containerd/v2/version.Version=$containerd_version"
		-X "github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2")
	go_build -tags no_btrfs -ldflags "${containerd_ldflags[*]}" -o "$staging/" \
		github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
)
for binary in "${node_binaries[@]}"; do [[ -x $staging/$binary ]] || die "the build did not produce $binary"; done

# The images of the node: buildah makes them; busybox-static is the busybox image's only file (Debian's other
# busybox package installs a dynamically linked /bin/busybox, which a FROM scratch image cannot run).
command -v buildah >/dev/null || die "buildah is required for the node's images (Debian package buildah)"
busybox_binary=/bin/busybox
[[ "$(dpkg-query -W -f='${Status}' busybox-static 2>/dev/null)" == "install ok installed" && -x $busybox_binary ]] ||
	die "a static busybox is required for the node's busybox image (Debian package busybox-static)"

# The node's images, FROM scratch with buildah (vfs storage and chroot isolation: no daemon, no overlay mounts, all
# below the cache directory), with every timestamp at 0 so that a rebuild gives the same layers. pause: the pause
# program as the entrypoint. busybox: Debian's static busybox with a symlink for each applet (sh, wget, nc, sleep, …).
images_staging="$key_dir/images.partial"
buildah_dir="$key_dir/buildah"
rm -rf "$images_staging" "$buildah_dir"
mkdir -p "$images_staging" "$buildah_dir/tmp"
bah() {
	TMPDIR="$buildah_dir/tmp" buildah --root "$buildah_dir/root" --runroot "$buildah_dir/runroot" --storage-driver vfs "$@"
}
busybox_root="$buildah_dir/busybox-root"
mkdir -p "$busybox_root/bin" "$busybox_root/tmp"
chmod 1777 "$busybox_root/tmp"
cp "$busybox_binary" "$busybox_root/bin/busybox"
"$busybox_binary" --list-full | while read -r applet; do
	[[ $applet == bin/busybox ]] && continue
	mkdir -p "$busybox_root/$(dirname "$applet")"
	ln -sf /bin/busybox "$busybox_root/$applet"
done
for image in "${images[@]}"; do
	container="$(bah from --quiet --isolation chroot scratch)"
	case $image in
	pause)
		bah copy --quiet "$container" "$staging/pause" /pause >/dev/null
		bah config --entrypoint '["/pause"]' --cmd '' "$container"
		;;
	busybox)
		bah copy --quiet "$container" "$busybox_root/" / >/dev/null
		bah config --cmd '["sh"]' --env PATH=/usr/sbin:/usr/bin:/sbin:/bin "$container"
		;;
	esac
	bah config --os linux --arch amd64 "$container"
	bah commit --quiet --timestamp 0 --format oci --rm "$container" "oci:$images_staging/$image:$image_tag" >/dev/null
done
rm -rf "$buildah_dir"

rm -rf "$key_dir/images"
for binary in "${node_binaries[@]}"; do mv "$staging/$binary" "$bin_dir/$binary"; done
rmdir "$staging"
mv "$images_staging" "$key_dir/images"
sed -i '/^containerd /d; /^busybox /d' "$key_dir/versions"
{
	echo "containerd $containerd_version"
	echo "busybox $("$busybox_binary" 2>&1 | sed -n '1s/^BusyBox \(v[^ ]*\).*/\1/p')"
} >>"$key_dir/versions"
touch "$key_dir/complete"
say "node built in $((SECONDS - started)) s: $(cd "$bin_dir" && echo "${node_binaries[*]}"); images: ${images[*]}"
echo "$bin_dir"
