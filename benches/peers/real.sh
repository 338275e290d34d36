#!/usr/bin/env bash
# The peer benchmarks against a real control plane: starts kube-apiserver, etcd and kube-controller-manager with the
# real-cluster harness (tests/kube, built by `make kube-harness`), runs peers-bench against it, stops it.
#
#   benches/peers/real.sh BIN_DIR PEERS_BENCH [capacity] [PEERS-BENCH ARGS...]
#
# BIN_DIR is the harness's bin directory (tests/kube/build.sh prints it). The peer benchmark's results go to
# docs/benchmarks/peers-real.md unless the arguments give --output; `capacity` runs the capacity benchmark, whose
# results go to docs/benchmarks/capacity.md.
set -euo pipefail
bin_dir=$1 peers_bench=$2
shift 2
say() { printf 'bench-peers-real: %s\n' "$*" >&2; }
work="$(mktemp -d)"
"$bin_dir/kube-harness" up --dir "$work/cluster" >"$work/harness.out" 2>"$work/harness.err" &
harness=$!
trap 'kill "$harness" 2>/dev/null; wait "$harness" 2>/dev/null; rm -rf "$work"' EXIT
deadline=$((SECONDS + 240))
until grep -q '^ready ' "$work/harness.out"; do
	kill -0 "$harness" 2>/dev/null || { cat "$work/harness.err" >&2; say "the harness exited before it was ready"; exit 1; }
	((SECONDS < deadline)) || { say "the control plane was not ready within 240 s"; exit 1; }
	sleep 0.2
done
kubeconfig="$(sed -n 's/.* kubeconfig=\([^ ]*\).*/\1/p' "$work/harness.out")"
say "control plane ready: $kubeconfig"
subcommand=() output=(--output docs/benchmarks/peers-real.md)
if [[ ${1:-} == capacity ]]; then
	subcommand=(capacity) output=()
	shift
fi
for arg in "$@"; do [[ $arg == --output* ]] && output=(); done
"$peers_bench" "${subcommand[@]}" --kubeconfig "$kubeconfig" "${output[@]}" "$@"
