#!/usr/bin/env bash
# Self-check of the real control plane: builds it (cached), starts kube-harness on a temporary directory and drives
# it with kubectl and helm — CRDs, server-side apply conflicts, garbage collection by the controller manager,
# namespace deletion, service-account tokens under RBAC, helm — then checks a clean stop, a restart on the same
# directory and that killing the launcher leaves no component running.
#
#   tests/kube/selfcheck.sh            (KEEP=1 keeps the temporary directory with the logs)
#
# Needs curl on PATH (kubectl is the one build.sh builds); ends with "N passed, N failed" and exits non-zero on any failure.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
say() { printf 'kube-harness selfcheck: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

command -v curl >/dev/null || die "curl is required on PATH"
bin_dir="$("$here/build.sh" --control-plane)" || die "tests/kube/build.sh --control-plane failed"
# The kubectl built beside the control plane, of the server's version.
export PATH="$bin_dir:$PATH"
kubernetes_version="$(sed -n 's/^kubernetes //p' "$bin_dir/../versions")"

# shellcheck source=tests/kube/checks.sh
source "$here/checks.sh"
export HELM_CACHE_HOME="$work/helm/cache" HELM_CONFIG_HOME="$work/helm/config" HELM_DATA_HOME="$work/helm/data"


# start_launcher: runs kube-harness up in the background and waits for its ready line.
start_launcher() {
	: >"$work/harness.out"
	"$bin_dir/kube-harness" up --dir "$dir" >"$work/harness.out" 2>>"$work/harness.err" &
	launcher_pid=$!
	local deadline=$((SECONDS + 240)) started=$SECONDS
	until grep -q '^ready ' "$work/harness.out"; do
		if ! kill -0 "$launcher_pid" 2>/dev/null; then
			cat "$work/harness.err" >&2
			die "kube-harness exited before it was ready (logs: $dir/logs)"
		fi
		((SECONDS < deadline)) || die "kube-harness not ready within 240 s (logs: $dir/logs)"
		sleep 0.1
	done
	ready_line="$(grep '^ready ' "$work/harness.out")"
	say "ready after $((SECONDS - started)) s: $ready_line"
	kubeconfig="$(sed -n 's/.* kubeconfig=\([^ ]*\).*/\1/p' <<<"$ready_line")"
	server="$(sed -n 's/.* server=\([^ ]*\).*/\1/p' <<<"$ready_line")"
	ca="$(sed -n 's/.* ca=\([^ ]*\).*/\1/p' <<<"$ready_line")"
	export KUBECONFIG="$kubeconfig"
}

# components: the launcher's child processes (etcd, kube-apiserver, kube-controller-manager).
components() { pgrep -P "$launcher_pid" | tr '\n' ' '; }

none_alive() {
	local pid
	for pid in "$@"; do
		if kill -0 "$pid" 2>/dev/null; then return 1; fi
	done
}

# --- the checks ----------------------------------------------------------------------------------------------------

check_namespaces() {
	local names
	names="$(kubectl get namespaces -o jsonpath='{.items[*].metadata.name}')" || return 1
	for ns in default kube-system kube-public kube-node-lease; do
		grep -qw "$ns" <<<"$names" || { echo "namespace $ns missing from: $names"; return 1; }
	done
}

check_version() {
	local version
	version="$(kubectl get --raw /version | sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p')"
	[[ $version == "$kubernetes_version" ]] || { echo "server reports $version, built $kubernetes_version"; return 1; }
}

check_crd() {
	kubectl apply -f "$here/testdata/widget-crd.yaml" &&
		kubectl wait --for=condition=Established crd/widgets.selfcheck.example.com --timeout=60s &&
		kubectl apply -f - <<<'{"apiVersion":"selfcheck.example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":3}}' &&
		[[ "$(kubectl get widget w1 -o jsonpath='{.spec.size}')" == 3 ]] || return 1
	# The schema is enforced: size must be at least 1.
	local output
	if output="$(kubectl apply -f - <<<'{"apiVersion":"selfcheck.example.com/v1","kind":"Widget","metadata":{"name":"w2"},"spec":{"size":0}}' 2>&1)"; then
		echo "an invalid Widget was accepted"
		return 1
	fi
	grep -q 'should be greater than or equal to 1' <<<"$output" || { echo "$output"; return 1; }
}

configmap_owned_by() { printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ssa"},"data":{"owner":"%s"}}' "$1"; }

check_server_side_apply_conflict() {
	local output
	configmap_owned_by alice | kubectl apply --server-side --field-manager=alice -f - || return 1
	if output="$(configmap_owned_by bob | kubectl apply --server-side --field-manager=bob -f - 2>&1)"; then
		echo "bob's apply did not conflict with alice's field"
		return 1
	fi
	grep -q 'conflict with "alice"' <<<"$output" || { echo "$output"; return 1; }
	configmap_owned_by bob | kubectl apply --server-side --field-manager=bob --force-conflicts -f - || return 1
	[[ "$(kubectl get configmap ssa -o jsonpath='{.data.owner}')" == bob ]] || return 1
	kubectl get configmap ssa -o jsonpath='{.metadata.managedFields[*].manager}' | grep -qw bob
}

check_garbage_collection() {
	local uid
	kubectl create configmap gc-owner --from-literal=role=owner || return 1
	uid="$(kubectl get configmap gc-owner -o jsonpath='{.metadata.uid}')"
	kubectl apply -f - <<<"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"gc-child\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"gc-owner\",\"uid\":\"$uid\"}]}}" || return 1
	kubectl delete configmap gc-owner --wait=true || return 1
	kubectl wait --for=delete configmap/gc-child --timeout=60s
}

check_namespace_lifecycle() {
	kubectl create namespace doomed || return 1
	# The service-account and root-CA controllers fill every new namespace.
	eventually 60 kubectl get serviceaccount default -n doomed -o name || return 1
	eventually 60 kubectl get configmap kube-root-ca.crt -n doomed -o name || return 1
	kubectl create configmap inside -n doomed --from-literal=a=b || return 1
	kubectl delete namespace doomed --wait=false || return 1
	kubectl wait --for=delete namespace/doomed --timeout=120s
}

# as_token TOKEN ARGS...: kubectl with only the bearer token (no client certificate, which would win).
as_token() {
	local token=$1
	shift
	kubectl --kubeconfig=/dev/null --server="$server" --certificate-authority="$ca" --token="$token" "$@"
}

http_status() { curl -s -o /dev/null -w '%{http_code}' --cacert "$ca" -H "Authorization: Bearer $1" "$server$2"; }

check_rbac() {
	local token answer status
	kubectl create namespace rbac-check && kubectl create serviceaccount reader -n rbac-check || return 1
	token="$(kubectl create token reader -n rbac-check --duration=10m)" || return 1
	[[ "$(as_token "$token" auth whoami -o jsonpath='{.status.userInfo.username}')" == system:serviceaccount:rbac-check:reader ]] ||
		{ echo "the token does not authenticate as the ServiceAccount"; return 1; }
	answer="$(as_token "$token" auth can-i list configmaps -n rbac-check)"
	[[ $answer == no ]] || { echo "can-i before any binding: $answer"; return 1; }
	status="$(http_status "$token" /api/v1/namespaces/rbac-check/configmaps)"
	[[ $status == 403 ]] || { echo "list configmaps without a binding: HTTP $status, want 403"; return 1; }
	kubectl create rolebinding reader-view -n rbac-check --clusterrole=view --serviceaccount=rbac-check:reader || return 1
	eventually 30 test "$(as_token "$token" auth can-i list configmaps -n rbac-check)" == yes || return 1
	status="$(http_status "$token" /api/v1/namespaces/rbac-check/configmaps)"
	[[ $status == 200 ]] || { echo "list configmaps with view: HTTP $status, want 200"; return 1; }
	# view grants no secrets, and nothing outside its namespace.
	status="$(http_status "$token" /api/v1/namespaces/rbac-check/secrets)"
	[[ $status == 403 ]] || { echo "list secrets with view: HTTP $status, want 403"; return 1; }
	answer="$(as_token "$token" auth can-i list configmaps -n default)"
	[[ $answer == no ]] || { echo "can-i in another namespace: $answer"; return 1; }
}

check_helm_template() {
	local output
	output="$("$bin_dir/helm" template demo "$here/testdata/chart" --set greeting=hi)" || return 1
	if ! grep -q 'name: demo-greeting' <<<"$output" || ! grep -q 'greeting: "hi"' <<<"$output"; then
		echo "$output"
		return 1
	fi
}

check_helm_dry_run_server() {
	local output
	output="$("$bin_dir/helm" install demo "$here/testdata/chart" --dry-run=server)" || return 1
	# The server's version, not helm's default, reaches the templates.
	grep -q "kubeVersion: \"$kubernetes_version\"" <<<"$output" || { echo "$output"; return 1; }
	if kubectl get configmap demo-greeting -o name 2>/dev/null; then
		echo "a server-side dry run created the ConfigMap"
		return 1
	fi
}

check_helm_install() {
	"$bin_dir/helm" install demo "$here/testdata/chart" --wait --timeout 60s &&
		[[ "$(kubectl get configmap demo-greeting -o jsonpath='{.data.greeting}')" == hello ]] &&
		"$bin_dir/helm" uninstall demo --wait &&
		! kubectl get configmap demo-greeting -o name 2>/dev/null
}

check_clean_stop() {
	local pids status
	read -ra pids <<<"$(components)"
	[[ ${#pids[@]} == 3 ]] || { echo "expected 3 components, found: ${pids[*]}"; return 1; }
	kill -TERM "$launcher_pid"
	wait "$launcher_pid"
	status=$?
	launcher_pid=""
	[[ $status == 0 ]] || { echo "kube-harness exited $status after SIGTERM"; tail -20 "$work/harness.err"; return 1; }
	none_alive "${pids[@]}" || { echo "components still running after the launcher exited: ${pids[*]}"; return 1; }
}

check_restart_keeps_data() {
	[[ "$(kubectl get widget w1 -o jsonpath='{.spec.size}')" == 3 ]]
}

check_killed_launcher_leaves_nothing() {
	local pids
	read -ra pids <<<"$(components)"
	[[ ${#pids[@]} == 3 ]] || { echo "expected 3 components, found: ${pids[*]}"; return 1; }
	kill -KILL "$launcher_pid"
	wait "$launcher_pid" 2>/dev/null
	launcher_pid=""
	eventually 10 none_alive "${pids[@]}" || { echo "components outlived a killed launcher: ${pids[*]}"; return 1; }
}

# --- run -------------------------------------------------------------------------------------------------------------

start_launcher
check "kubectl get namespaces" check_namespaces
check "server version is $kubernetes_version" check_version
check "CRD and a custom object (schema enforced)" check_crd
check "server-side apply field conflict" check_server_side_apply_conflict
check "garbage collector deletes a dependent" check_garbage_collection
check "namespace filled by controllers, then deleted" check_namespace_lifecycle
check "ServiceAccount token under RBAC (403, then allowed)" check_rbac
check "helm template" check_helm_template
check "helm install --dry-run=server" check_helm_dry_run_server
check "helm install and uninstall" check_helm_install
check "SIGTERM stops everything, exit 0" check_clean_stop
start_launcher
check "restart on the same directory keeps the data" check_restart_keeps_data
check "SIGKILL of the launcher leaves no component running" check_killed_launcher_leaves_nothing

echo "kube-harness selfcheck: $passed passed, $failed failed"
((failed == 0))
