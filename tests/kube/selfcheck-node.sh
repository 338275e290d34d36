#!/usr/bin/env bash
# Self-check of the node: builds the harness (cached), starts `kube-harness up --node --registry-dir …` on a
# temporary directory and runs pods on it — a Deployment of the registry's busybox image behind a Service, reached
# from a client pod; kubectl logs and exec; liveness and readiness probes; graceful deletion; a pod calling the API
# server with its ServiceAccount token; the audit log — then checks that a stop leaves nothing behind, and that the
# leftovers of a launcher killed with SIGKILL are swept by the next start.
#
#   tests/kube/selfcheck-node.sh       (as root; KEEP=1 keeps the temporary directory with the logs)
#
# Ends with "N passed, N failed" and exits non-zero on any failure.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
say() { printf 'kube-harness selfcheck-node: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

[[ $(id -u) == 0 ]] || die "a node needs root (network namespaces, cgroups, mounts)"
bin_dir="$("$here/build.sh")" || die "tests/kube/build.sh failed"
export PATH="$bin_dir:$PATH"

# shellcheck source=tests/kube/checks.sh
source "$here/checks.sh"
registry_dir="$work/registry"


# The host settings the kubelet changes, as they are before any node runs; they must be back after each stop. When
# another node run is alive on this machine (a test beside this check), the kubelet's values are in place and the
# machine's own are in the record the first run wrote; they come back when the last run stops.
sysctl_names=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops)
sysctl_record=/run/kube-harness/host-sysctls.json
host_sysctls() { sysctl -n "${sysctl_names[@]}" | tr '\n' ' '; }
recorded_sysctls() {
	python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print("".join(r[n] + " " for n in sys.argv[2:]), end="")' \
		"$sysctl_record" "${sysctl_names[@]}"
}
other_runs_alive() { [[ -n "$(find /run/kube-harness -mindepth 1 -maxdepth 1 -type d 2>/dev/null)" ]]; }
if [[ -f $sysctl_record ]]; then sysctls_before="$(recorded_sysctls)"; else sysctls_before="$(host_sysctls)"; fi
# The root namespace's links and iptables rules: a node must add none (everything is in its own namespace).
root_network() {
	ip -o link show | awk -F': ' '{print $2}' | sort
	for table in filter nat mangle raw; do iptables -t "$table" -S 2>/dev/null; done
}
root_network_before="$(root_network)"

start_launcher() {
	: >"$work/harness.out"
	"$bin_dir/kube-harness" up --dir "$dir" --node --registry-dir "$registry_dir" \
		>"$work/harness.out" 2>>"$work/harness.err" &
	launcher_pid=$!
	local deadline=$((SECONDS + 300)) started=$SECONDS
	until grep -q '^ready ' "$work/harness.out"; do
		if ! kill -0 "$launcher_pid" 2>/dev/null; then
			tail -40 "$work/harness.err" >&2
			die "kube-harness exited before it was ready (logs: $dir/logs)"
		fi
		((SECONDS < deadline)) || die "kube-harness not ready within 300 s (logs: $dir/logs)"
		sleep 0.2
	done
	ready_line="$(grep '^ready ' "$work/harness.out")"
	say "ready after $((SECONDS - started)) s: $ready_line"
	field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$ready_line"; }
	export KUBECONFIG="$(field kubeconfig)"
	node="$(field node)"
	registry="$(field registry)"
	logs="$(field logs)"
	# The run's ID names its network namespace and its cgroup.
	run_id="$(grep -l "\"dir\": \"$dir\"" /run/kube-harness/kh-*/run.json 2>/dev/null | head -n1 | xargs -r dirname | xargs -r basename)"
	[[ -n $run_id ]] || die "no run record for $dir in /run/kube-harness"
}

# run_leftovers RUN_ID: prints whatever of that run is still on the machine; empty when nothing is.
run_leftovers() {
	local id=$1
	[[ -e /run/netns/$id ]] && echo "network namespace /run/netns/$id"
	ls -d /sys/fs/cgroup/*/"$id" 2>/dev/null | sed 's/^/cgroup /'
	[[ -e /run/kube-harness/$id ]] && echo "run record /run/kube-harness/$id"
	ls /var/lib/cni/results 2>/dev/null | grep "^$id-" | sed 's/^/CNI result /'
}

# dir_leftovers: mounts below the directory, processes started from it (components, shims) and container log links
# into it; empty when there are none.
dir_leftovers() {
	grep -F " $dir/" /proc/self/mountinfo | awk '{print "mount " $5}'
	pgrep -f -- "$dir/" | while read -r pid; do echo "process $pid: $(tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null)"; done
	find /var/log/containers -maxdepth 1 -lname "$dir/*" 2>/dev/null | sed 's/^/log link /'
}

# alive PID...: prints the PIDs that still run.
alive() {
	local pid
	for pid in "$@"; do kill -0 "$pid" 2>/dev/null && echo "process $pid still runs"; done
}

# --- the checks ----------------------------------------------------------------------------------------------------

check_node_ready() {
	[[ $node == kube-harness-node ]] || { echo "ready line names node '$node'"; return 1; }
	[[ "$(kubectl get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]] || return 1
	local taints
	taints="$(kubectl get node "$node" -o jsonpath='{.spec.taints}')"
	[[ -z $taints ]] || { echo "node tainted: $taints"; return 1; }
	[[ $registry == 127.0.0.1:* ]] || { echo "ready line names registry '$registry'"; return 1; }
	# The registry answers on the launcher's loopback and holds the images.
	curl -fsS "http://$registry/v2/busybox/tags/list" | grep -q kube-harness || return 1
	# Nothing of the node is in the root namespace: no link (no veth, no bridge), no iptables rule.
	[[ "$(root_network)" == "$root_network_before" ]] ||
		{ echo "the node changed the root namespace:"; diff <(echo "$root_network_before") <(root_network); return 1; }
}

check_deployment_available() {
	kubectl apply -f - <<-'EOF' || return 1
	apiVersion: apps/v1
	kind: Deployment
	metadata: {name: web}
	spec:
	  replicas: 2
	  selector: {matchLabels: {app: web}}
	  template:
	    metadata: {labels: {app: web}}
	    spec:
	      containers:
	      - name: httpd
	        image: localhost:5000/busybox:kube-harness
	        command: ["sh", "-c", "mkdir -p /www && echo hello from $(hostname) > /www/index.html && echo web started && exec httpd -f -p 8080 -h /www"]
	        ports: [{containerPort: 8080}]
	        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
	EOF
	kubectl wait --for=condition=Available deployment/web --timeout=180s || {
		kubectl describe pods -l app=web | tail -30
		return 1
	}
	# Pulled by containerd from the run's registry, not side-loaded (the kubelet posts its events a moment later).
	pulled() {
		kubectl get events --field-selector reason=Pulled -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' |
			grep -q 'Successfully pulled image "localhost:5000/busybox:kube-harness"'
	}
	eventually 30 pulled || { echo "no Pulled event for the registry's image"; return 1; }
	grep -q 'localhost:5000/pause:kube-harness' "$logs/containerd.log" || { echo "containerd did not pull the pause image"; return 1; }
}

check_service_from_pod() {
	kubectl expose deployment web --port=80 --target-port=8080 || return 1
	kubectl run client --image=localhost:5000/busybox:kube-harness --restart=Never -- sleep 3600 || return 1
	kubectl wait --for=condition=Ready pod/client --timeout=120s || return 1
	local ip
	ip="$(kubectl get service web -o jsonpath='{.spec.clusterIP}')"
	[[ $ip == 10.96.* ]] || { echo "cluster IP $ip"; return 1; }
	eventually 30 kubectl exec client -- timeout 5 wget -qO- "http://$ip/" >"$work/answer" || return 1
	grep -q '^hello from web-' "$work/answer" || { cat "$work/answer"; return 1; }
}

check_service_backend_on_same_bridge_from_itself() {
	# A pod reaching its own Service (its own IP behind the ClusterIP): hairpin on the bridge.
	local pod ip
	pod="$(kubectl get pods -l app=web -o jsonpath='{.items[0].metadata.name}')"
	ip="$(kubectl get service web -o jsonpath='{.spec.clusterIP}')"
	for _ in 1 2 3 4 5 6; do
		kubectl exec "$pod" -- timeout 5 wget -qO- "http://$ip/" | grep -q '^hello from web-' || return 1
	done
}

check_logs_and_exec() {
	kubectl logs deployment/web | grep -q 'web started' || { kubectl logs deployment/web; return 1; }
	[[ "$(kubectl exec client -- sh -c 'echo $((6 * 7))')" == 42 ]]
}

check_liveness_restarts() {
	kubectl apply -f - <<-'EOF' || return 1
	apiVersion: v1
	kind: Pod
	metadata: {name: liveness}
	spec:
	  containers:
	  - name: main
	    image: localhost:5000/busybox:kube-harness
	    command: ["sh", "-c", "touch /tmp/healthy; sleep 2; rm /tmp/healthy; sleep 3600"]
	    livenessProbe: {exec: {command: ["cat", "/tmp/healthy"]}, periodSeconds: 1, failureThreshold: 1}
	EOF
	restarted() { (($(kubectl get pod liveness -o jsonpath='{.status.containerStatuses[0].restartCount}') >= 1)); }
	eventually 90 restarted || { kubectl describe pod liveness | tail -20; return 1; }
}

check_readiness_keeps_out_of_endpoints() {
	kubectl apply -f - <<-'EOF' || return 1
	apiVersion: v1
	kind: Pod
	metadata: {name: unready, labels: {app: web}}
	spec:
	  containers:
	  - name: main
	    image: localhost:5000/busybox:kube-harness
	    command: ["sh", "-c", "mkdir -p /www && echo hello from unready > /www/index.html && exec httpd -f -p 8080 -h /www"]
	    readinessProbe: {exec: {command: ["cat", "/tmp/ready"]}, periodSeconds: 1}
	EOF
	kubectl wait --for=jsonpath='{.status.phase}'=Running pod/unready --timeout=120s || return 1
	local ip
	ip="$(kubectl get pod unready -o jsonpath='{.status.podIP}')"
	endpoint_ready() {
		kubectl get endpointslices -l kubernetes.io/service-name=web \
			-o jsonpath="{range .items[*].endpoints[?(@.addresses[0]==\"$ip\")]}{.conditions.ready}{end}"
	}
	endpoint_is() { [[ "$(endpoint_ready)" == "$1" ]]; }
	eventually 30 endpoint_is false || { echo "endpoint of $ip: $(endpoint_ready)"; return 1; }
	# It serves, but the Service never sends it a request.
	local service_ip
	service_ip="$(kubectl get service web -o jsonpath='{.spec.clusterIP}')"
	for _ in $(seq 10); do
		kubectl exec client -- timeout 5 wget -qO- "http://$service_ip/" | grep -q unready && { echo "an unready pod got a request"; return 1; }
	done
	kubectl exec unready -- touch /tmp/ready || return 1
	eventually 30 endpoint_is true || { echo "endpoint of $ip after readiness: $(endpoint_ready)"; return 1; }
	kubectl delete pod unready --grace-period=1 --wait=false
}

check_graceful_delete() {
	kubectl apply -f - <<-'EOF' || return 1
	apiVersion: v1
	kind: Pod
	metadata: {name: graceful}
	spec:
	  terminationGracePeriodSeconds: 60
	  containers:
	  - name: main
	    image: localhost:5000/busybox:kube-harness
	    command: ["sh", "-c", "trap 'echo got SIGTERM; sleep 3; echo exiting; exit 0' TERM; echo waiting; while true; do sleep 0.2; done"]
	EOF
	kubectl wait --for=condition=Ready pod/graceful --timeout=120s || return 1
	local deleted=$SECONDS
	kubectl delete pod graceful --wait=false || return 1
	# Still there while the process handles SIGTERM within its grace period.
	eventually 20 sh -c 'kubectl logs graceful 2>/dev/null | grep -q "got SIGTERM"' || return 1
	kubectl wait --for=delete pod/graceful --timeout=60s || return 1
	local took=$((SECONDS - deleted))
	((took >= 3 && took < 60)) || { echo "the pod was gone $took s after the delete (its handler takes 3 s, grace 60 s)"; return 1; }
}

check_in_cluster_config() {
	# busybox's wget does not check the certificate; the token is the pod's bound ServiceAccount token. (Its -T
	# option crashes Debian's busybox 1.35: timeout bounds it instead.)
	local answer
	answer="$(kubectl exec client -- sh -c 'timeout 5 wget -qO- --no-check-certificate \
		--header "Authorization: Bearer $(cat /var/run/secrets/kubernetes.io/serviceaccount/token)" \
		https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/api')" || return 1
	grep -q '"kind": *"APIVersions"' <<<"$answer" || { echo "$answer"; return 1; }
	grep -q '10.244.0.1:6443' <<<"$answer" || { echo "the API server does not advertise the node's address: $answer"; return 1; }
	[[ "$(kubectl exec client -- sh -c 'echo $KUBERNETES_SERVICE_HOST')" == 10.96.0.1 ]]
}

check_audit_log() {
	local audit="$logs/audit.log"
	[[ -s $audit ]] || { echo "no audit log at $audit"; return 1; }
	# A write by the admin.
	grep '"verb":"create"' "$audit" | grep '"resource":"deployments"' | grep -q '"username":"kube-harness-admin"' ||
		{ echo "the Deployment's create is not in the audit log"; return 1; }
	# A write from a pod with its token (refused: the default ServiceAccount may not create ConfigMaps), recorded
	# with the pod's name.
	kubectl exec client -- sh -c 'timeout 5 wget -qO- --no-check-certificate \
		--header "Authorization: Bearer $(cat /var/run/secrets/kubernetes.io/serviceaccount/token)" \
		--header "Content-Type: application/json" \
		--post-data "{\"metadata\":{\"name\":\"from-pod\"}}" \
		https://$KUBERNETES_SERVICE_HOST/api/v1/namespaces/default/configmaps' >/dev/null 2>&1
	from_pod() {
		grep '"verb":"create"' "$audit" | grep '"resource":"configmaps"' |
			grep '"username":"system:serviceaccount:default:default"' |
			grep -q '"authentication.kubernetes.io/pod-name":\["client"\]'
	}
	eventually 10 from_pod || { grep serviceaccount:default:default "$audit" | tail -2; return 1; }
	# Reads are not recorded.
	! grep -q '"verb":"get"' "$audit" || { echo "a read is in the audit log"; return 1; }
}

check_clean_stop() {
	local id=$run_id status
	kill -TERM "$launcher_pid"
	wait "$launcher_pid"
	status=$?
	launcher_pid=""
	[[ $status == 0 ]] || { echo "kube-harness exited $status after SIGTERM"; tail -20 "$work/harness.err"; return 1; }
	local left
	left="$(run_leftovers "$id"; dir_leftovers)"
	[[ -z $left ]] || { echo "left after the stop:"; echo "$left"; return 1; }
	if other_runs_alive; then
		[[ -f $sysctl_record && "$(recorded_sysctls)" == "$sysctls_before" ]] ||
			{ echo "another node run is alive but the machine's own sysctls ($sysctls_before) are no longer recorded"; return 1; }
	else
		[[ "$(host_sysctls)" == "$sysctls_before" ]] || { echo "host sysctls $(host_sysctls), before: $sysctls_before"; return 1; }
	fi
	[[ "$(root_network)" == "$root_network_before" ]] ||
		{ echo "the root namespace's links or iptables rules changed:"; diff <(echo "$root_network_before") <(root_network); return 1; }
}

check_killed_launcher_swept() {
	local killed_id=$run_id
	# A running pod, so that there are shims, containers and mounts to leave behind.
	kubectl run sleeper --image=localhost:5000/busybox:kube-harness --restart=Never -- sleep 3600 || return 1
	kubectl wait --for=condition=Ready pod/sleeper --timeout=120s || return 1
	kill -KILL "$launcher_pid"
	wait "$launcher_pid" 2>/dev/null
	launcher_pid=""
	# The components die with the launcher; the shims and containers (in the run's cgroup) do not.
	local pids
	read -ra pids <<<"$(find /sys/fs/cgroup/pids/"$killed_id" -name cgroup.procs -exec cat {} + 2>/dev/null | tr '\n' ' ')"
	((${#pids[@]} > 0)) || { echo "a killed launcher left no process in its cgroup (the check checks nothing)"; return 1; }
	[[ -n "$(run_leftovers "$killed_id")" ]] || { echo "a killed launcher left nothing to sweep"; return 1; }
	start_launcher
	local left
	left="$(run_leftovers "$killed_id"; alive "${pids[@]}")"
	[[ -z $left ]] || { echo "left by the killed run $killed_id after the next start:"; echo "$left"; return 1; }
	# The new kubelet finds the pod bound to its node from before (its container gone with the killed run; with
	# restartPolicy Never it is not started again) and confirms its deletion; a new pod runs.
	kubectl delete pod sleeper --timeout=60s || return 1
	kubectl run after --image=localhost:5000/busybox:kube-harness --restart=Never -- sleep 3600 || return 1
	kubectl wait --for=condition=Ready pod/after --timeout=120s
}

# --- run -------------------------------------------------------------------------------------------------------------

start_launcher
check "node Ready, untainted; registry serves the images; root namespace untouched" check_node_ready
check "Deployment of localhost:5000/busybox Available (pulled from the registry)" check_deployment_available
check "Service answers a client pod through its ClusterIP" check_service_from_pod
check "a pod reaches its own Service (hairpin)" check_service_backend_on_same_bridge_from_itself
check "kubectl logs and exec" check_logs_and_exec
check "failing liveness probe restarts the container" check_liveness_restarts
check "readiness probe keeps a pod out of the endpoints" check_readiness_keeps_out_of_endpoints
check "kubectl delete pod: SIGTERM within the grace period" check_graceful_delete
check "a pod calls the API server with in-cluster config" check_in_cluster_config
check "audit log records writes, with a pod token's pod name" check_audit_log
check "SIGTERM stops everything; nothing left; host sysctls and root namespace as before" check_clean_stop
start_launcher
check "a killed launcher's leftovers are swept by the next start" check_killed_launcher_swept
check "SIGTERM after a sweep leaves nothing either" check_clean_stop

echo "kube-harness selfcheck-node: $passed passed, $failed failed"
((failed == 0))
