#!/usr/bin/env bash
# Check of the alerts and the dashboard of deploy/monitoring (`make monitoring-check`): the generated copies up to
# date, `promtool check rules` and `promtool test rules` (tests/monitoring/rules.test.yaml), every metric they use
# documented in docs/metrics.md; then a real Prometheus scraping real hosts under load, through which every panel
# query of the dashboard and every alert expression is evaluated (/api/v1/query), each selector in them must select
# a series the hosts export, the rules must load healthy (/api/v1/rules) and the alerts the load provokes must be
# active, the others not (/api/v1/alerts).
#
# The hosts under load, on the embedded API server (`wasm-reconciler apiserver`), everything on 127.0.0.1:
#   host A  `run --leader-elect`, plugins from ConfigMaps: configmapset (300 ConfigMapSets, then edits), dnsrecord
#           (contract 0.2; its configuration names a server its settings do not allow, so every request is denied
#           and every reconcile fails), and `broken`, a ConfigMap whose component is not one (refused);
#   host B  `run --sharding`, webapp (30 WebApps): shard roles, shard objects and moves.
#
#   tests/monitoring/check.sh   (KEEP=1 keeps the temporary directory: logs, Prometheus's config and data)
#
# HOST_BIN: the host binary (default $CARGO_TARGET_DIR/debug/wasm-reconciler, what `make build` writes);
# PLUGINS_WASM_DIR: the example components (default $CARGO_TARGET_DIR/wasm32-wasip2/wasm-release, `make plugins`).
# promtool and prometheus come from tests/monitoring/build.sh (built from Go modules, cached). Needs kubectl, jq,
# yq (the jq wrapper for YAML), curl and python3 on PATH. Ends with "N passed, N failed" and exits non-zero on any
# failure; a missing tool or input fails it at once, naming what is missing.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
monitoring="$root/deploy/monitoring"
say() { printf 'monitoring-check: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
started=$SECONDS

for tool in kubectl jq yq curl python3; do
	command -v "$tool" >/dev/null || die "$tool is required on PATH"
done
[[ "$(yq --help 2>&1)" == *"jq wrapper"* ]] ||
	die "yq on PATH is not the jq wrapper for YAML this check uses (Debian package yq, or pip install yq)"

target_dir="${CARGO_TARGET_DIR:-$root/target}"
host_bin="${HOST_BIN:-$target_dir/debug/wasm-reconciler}"
wasm_dir="${PLUGINS_WASM_DIR:-$target_dir/wasm32-wasip2/wasm-release}"
[[ -x $host_bin ]] || die "the host binary $host_bin is missing: run make build (or set HOST_BIN)"
for plugin in configmapset dnsrecord webapp; do
	[[ -f $wasm_dir/$plugin.wasm ]] || die "$wasm_dir/$plugin.wasm is missing: run make plugins (or set PLUGINS_WASM_DIR)"
done

bin_dir="$("$here/build.sh")" || die "tests/monitoring/build.sh failed"
promtool="$bin_dir/promtool"
prometheus="$bin_dir/prometheus"
say "$("$promtool" --version 2>&1 | head -n1); host $("$host_bin" --version)"

# shellcheck source=tests/kube/checks.sh
source "$root/tests/kube/checks.sh"
# Every process this script starts, stopped at exit (before checks.sh's cleanup removes the work directory).
pids=()
# Stopped in reverse order (Prometheus, the hosts, then the API server they release their Leases on).
stop_processes() {
	local i
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill -TERM "${pids[i]}" 2>/dev/null && wait "${pids[i]}" 2>/dev/null
	done
}
trap 'stop_processes; cleanup' EXIT
unset KUBECONFIG

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# --- static checks ---------------------------------------------------------------------------------------------------

check_generated() {
	"$monitoring/generate.sh" --check &&
		expect "PrometheusRule spec = rules.yaml" "$(yq -cS .spec "$monitoring/prometheusrule.yaml")" "$(yq -cS . "$monitoring/rules.yaml")" || return 1
	kubectl kustomize "$monitoring" >"$work/kustomize.yaml" || return 1
	expect "objects of kubectl kustomize deploy/monitoring" \
		"$(yq -c '"\(.kind) \(.metadata.namespace) \(.metadata.name) \(.metadata.labels.grafana_dashboard // "-")"' "$work/kustomize.yaml" | jq -sc 'sort')" \
		'["ConfigMap wasm-reconciler wasm-reconciler-dashboard 1","PrometheusRule wasm-reconciler wasm-reconciler -"]' &&
		expect "dashboard in the ConfigMap" \
			"$(yq -r 'select(.kind == "ConfigMap") | .data["wasm-reconciler.json"]' "$work/kustomize.yaml" | jq -cS .)" "$(jq -cS . "$monitoring/dashboard.json")"
}

check_promtool_check() {
	yq -y .spec "$monitoring/prometheusrule.yaml" >"$work/prometheusrule-spec.yaml" &&
		"$promtool" check rules --lint=all --lint-fatal "$monitoring/rules.yaml" "$work/prometheusrule-spec.yaml"
}

check_promtool_test() {
	"$promtool" test rules "$here/rules.test.yaml"
}

# The names the dashboard and the rules use, each documented in a table of docs/metrics.md (which the end-to-end
# tests hold the host to): a histogram's _bucket series under the histogram's name.
check_documented() {
	local documented used name status=0
	# shellcheck disable=SC2016 # backquotes of Markdown
	documented="$(grep -o '^| `wasm_reconciler_[a-z_]*`' "$root/docs/metrics.md" | tr -d '|` ' | sort -u)"
	used="$(cat "$monitoring/rules.yaml" "$monitoring/dashboard.json" | grep -o 'wasm_reconciler_[a-z_]*' |
		sed -E 's/_(bucket|sum|count)$//' | sort -u)"
	[[ -n $documented && -n $used ]] || { echo "no metric names found"; return 1; }
	for name in $used; do
		grep -qx "$name" <<<"$documented" || { echo "$name is used but not documented in docs/metrics.md"; status=1; }
	done
	return $status
}

# shellcheck disable=SC2016 # jq programs and a Grafana variable
check_dashboard_shape() {
	# Every panel but rows has a description, queries through the datasource variable, and unique ids.
	expect "panels without targets or description" \
		"$(jq -c '[.panels[] | select(.type != "row") | select((.targets | length) == 0 or (.description // "") == "" or ([.targets[].expr] | any(. == null))) | .title]' "$monitoring/dashboard.json")" '[]' &&
		expect "datasources other than \${datasource}" \
			"$(jq -c '[.. | objects | select(has("datasource")) | .datasource | select(type == "object") | .uid] | unique' "$monitoring/dashboard.json")" '["${datasource}"]' &&
		expect "duplicate panel ids" "$(jq -c '[.panels[].id] | group_by(.) | map(select(length > 1)) | length' "$monitoring/dashboard.json")" 0
}

check "deploy/monitoring: generated files up to date, kubectl kustomize gives the PrometheusRule and the dashboard ConfigMap" check_generated
check "promtool check rules (rules.yaml and the PrometheusRule's spec, linted)" check_promtool_check
check "promtool test rules: each alert fires on the host's series shapes and stays silent otherwise" check_promtool_test
check "every metric the rules and the dashboard use is documented in docs/metrics.md" check_documented
check "the dashboard's panels: descriptions, queries, the datasource variable, unique ids" check_dashboard_shape

# --- hosts under load ------------------------------------------------------------------------------------------------

kubeconfig="$work/kubeconfig"
kc() { kubectl --kubeconfig "$kubeconfig" "$@"; }

# start NAME COMMAND...: runs COMMAND in the background, output in $work/NAME.log.
start() {
	local name=$1
	shift
	"$@" >"$work/$name.log" 2>&1 &
	pids+=($!)
}

# alive NAME: the last process started is still running; otherwise its log, and the run ends.
alive() {
	kill -0 "${pids[-1]}" 2>/dev/null || { say "$1 exited:"; tail -n 30 "$work/$1.log" >&2; die "$1 did not start"; }
}

start apiserver "$host_bin" apiserver --port 0 --kubeconfig-out "$kubeconfig"
quietly_eventually 30 kc get --raw /readyz || { alive apiserver; die "the API server is not ready after 30 s"; }

manifests="$work/manifests"
mkdir -p "$manifests"
pack() { "$host_bin" plugin pack "$@"; }
{
	for namespace in wasm-reconciler wasm-reconciler-sharded load; do
		printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n---\n' "$namespace"
	done
	printf 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: pdns-api\n  namespace: wasm-reconciler\nstringData:\n  api-key: unused\n'
} >"$manifests/base.yaml"
# dnsrecord (its API key from a Secret named without a namespace: read in the host's namespace): the server in its
# configuration is not among the hosts its settings allow, so each of its requests is
# denied inside the sandbox and nothing is sent.
printf 'server: http://127.0.0.1:9\n' >"$manifests/dnsrecord-config.yaml"
printf 'allowedOutboundHosts: ["http://127.0.0.1:8081"]\nvariables:\n  pdns_api_key: pdns-api/api-key\n' >"$manifests/dnsrecord-settings.yaml"
printf 'not a WebAssembly component\n' >"$manifests/broken.wasm"
setup() {
	kc apply -f "$manifests/base.yaml" &&
		kc apply --server-side -f "$root/plugins/configmapset/crd.yaml" -f "$root/plugins/webapp/crd.yaml" -f "$root/plugins/dnsrecord/crd.yaml" &&
		kc wait --for=condition=Established crd --all --timeout=60s || return 1
	pack "$wasm_dir/configmapset.wasm" --name configmapset --gzip | kc apply -n wasm-reconciler -f - &&
		pack "$wasm_dir/dnsrecord.wasm" --name dnsrecord --gzip --config "$manifests/dnsrecord-config.yaml" \
			--settings "$manifests/dnsrecord-settings.yaml" | kc apply -n wasm-reconciler -f - &&
		pack "$wasm_dir/webapp.wasm" --name webapp --gzip --namespace wasm-reconciler-sharded | kc apply -f - || return 1
	# A ConfigMap that claims to be a plugin but holds no component: refused.
	kc create configmap broken -n wasm-reconciler --from-file=plugin.wasm="$manifests/broken.wasm" &&
		kc label configmap broken -n wasm-reconciler wasm-reconciler.io/plugin=true
}
setup >"$work/setup.log" 2>&1 || { cat "$work/setup.log" >&2; die "setting up the API server failed"; }

port_a="$(free_port)"
port_b="$(free_port)"
port_prometheus="$(free_port)"
start host-a "$host_bin" run --kubeconfig "$kubeconfig" --namespace wasm-reconciler --leader-elect --identity host-a \
	--metrics-addr "127.0.0.1:$port_a" --log-format json
start host-b "$host_bin" run --kubeconfig "$kubeconfig" --namespace wasm-reconciler-sharded --sharding \
	--lease-name sharded --identity host-b --metrics-addr "127.0.0.1:$port_b" --log-format json
quietly_eventually 60 curl -sf "http://127.0.0.1:$port_a/readyz" || { alive host-a; die "host A is not ready after 60 s"; }
quietly_eventually 60 curl -sf "http://127.0.0.1:$port_b/readyz" || { alive host-b; die "host B is not ready after 60 s"; }

mkdir -p "$work/prometheus"
cat >"$work/prometheus/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $monitoring/rules.yaml
scrape_configs:
  - job_name: wasm-reconciler
    static_configs: [{targets: ["127.0.0.1:$port_a"]}]
  - job_name: wasm-reconciler-sharded
    static_configs: [{targets: ["127.0.0.1:$port_b"]}]
EOF
start prometheus "$prometheus" --config.file="$work/prometheus/prometheus.yml" --storage.tsdb.path="$work/prometheus/data" \
	--web.listen-address="127.0.0.1:$port_prometheus" --log.level=warn
api="http://127.0.0.1:$port_prometheus/api/v1"
quietly_eventually 30 curl -sf "http://127.0.0.1:$port_prometheus/-/ready" || { alive prometheus; die "Prometheus is not ready after 30 s"; }
say "API server, hosts A (:$port_a) and B (:$port_b), Prometheus (:$port_prometheus) up after $((SECONDS - started)) s"

# The load: 300 ConfigMapSets of 2 ConfigMaps each, 10 DNSRecords, 30 WebApps; then 100 of the sets edited.
{
	for i in $(seq 1 300); do
		printf 'apiVersion: examples.wasm-reconciler.io/v1alpha1\nkind: ConfigMapSet\nmetadata:\n  name: set-%s\n  namespace: load\nspec:\n  replicas: 2\n  burst: 2\n  template:\n    data:\n      index: "%s"\n---\n' "$i" "$i"
	done
	for i in $(seq 1 10); do
		printf 'apiVersion: examples.wasm-reconciler.io/v1alpha1\nkind: DNSRecord\nmetadata:\n  name: record-%s\n  namespace: load\nspec:\n  zone: example.org.\n  name: host-%s\n  type: A\n  ttl: 300\n  records: ["192.0.2.%s"]\n---\n' "$i" "$i" "$i"
	done
	for i in $(seq 1 30); do
		printf 'apiVersion: examples.wasm-reconciler.io/v1alpha1\nkind: WebApp\nmetadata:\n  name: app-%s\n  namespace: load\nspec:\n  image: registry.example/app:1.0\n  replicas: 1\n  port: 8080\n---\n' "$i"
	done
} >"$manifests/load.yaml"
kc apply -f "$manifests/load.yaml" >"$work/load.log" 2>&1 || { cat "$work/load.log" >&2; die "creating the load failed"; }

# query PROMQL: an instant query's result (a JSON array of series); fails on an error status.
query() {
	curl -sfG "$api/query" --data-urlencode "query=$1" | jq -ce 'select(.status == "success") | .data.result'
}
# has_series PROMQL: the query returns at least one series.
has_series() { query "$1" | jq -e 'length > 0' >/dev/null; }

converged() { [[ "$(query 'sum(wasm_reconciler_reconcile_total{job="wasm-reconciler", plugin="configmapset", result="success"})' | jq -r '.[0].value[1] // 0')" -ge 300 ]]; }
quietly_eventually 120 converged || die "host A did not report 300 successful configmapset reconciles to Prometheus within 120 s"
for i in $(seq 1 100); do
	printf 'apiVersion: examples.wasm-reconciler.io/v1alpha1\nkind: ConfigMapSet\nmetadata:\n  name: set-%s\n  namespace: load\nspec:\n  replicas: 3\n  burst: 2\n  template:\n    data:\n      index: "%s"\n---\n' "$i" "$i"
done | kc apply -f - >>"$work/load.log" 2>&1 || die "editing the load failed"
say "load created and converging after $((SECONDS - started)) s"

# --- every panel and every alert through Prometheus -------------------------------------------------------------------

# The dashboard's queries with Grafana's variables as "All" and a rate interval that covers a few 1 s scrapes.
# shellcheck disable=SC2016 # Grafana's variables
jq -r '.panels[] | select(.type != "row") | .title as $title | .targets[] | [$title, .refId, .expr] | @tsv' \
	"$monitoring/dashboard.json" |
	sed -e 's/\$__rate_interval/30s/g' -e 's/\$job/.+/g' -e 's/\$plugin/.*/g' >"$work/panel-queries.tsv"
yq -r '.groups[].rules[] | [.alert, (.expr | gsub("\n"; " "))] | @tsv' "$monitoring/rules.yaml" >"$work/alert-queries.tsv"

check_panel_queries() {
	local title ref expr status=0
	grep -q '\$' "$work/panel-queries.tsv" && { echo "a dashboard variable left unsubstituted:"; grep '\$' "$work/panel-queries.tsv"; return 1; }
	while IFS=$'\t' read -r title ref expr; do
		if quietly_eventually 60 has_series "$expr" >/dev/null; then
			printf '%-48s %s  %s series\n' "$title" "$ref" "$(query "$expr" | jq length)"
		else
			printf 'NO DATA: %s %s: %s\n' "$title" "$ref" "$expr"
			status=1
		fi
	done <"$work/panel-queries.tsv"
	return $status
}

# selectors PROMQL: each vector or range selector of the expression, without range and offset, one a line.
# shellcheck disable=SC2016 # a jq program
selectors_program='[.. | objects | select(.type == "vectorSelector" or .type == "matrixSelector")
	| "{" + ([.matchers[] | "\(.name)\(.type)\(.value | tojson)"] | join(", ")) + "}"] | unique[]'
selectors() {
	curl -sfG "$api/parse_query" --data-urlencode "query=$1" | jq -r ".data | $selectors_program"
}

check_selectors() {
	local name expr selector status=0 count=0
	while IFS=$'\t' read -r name _ expr; do
		while read -r selector; do
			[[ -n $selector ]] || continue
			count=$((count + 1))
			has_series "$selector" || { echo "$name: $selector selects no series"; status=1; }
		done < <(selectors "$expr")
	done < <(cat "$work/panel-queries.tsv" <(sed 's/\t/\tA\t/' "$work/alert-queries.tsv"))
	echo "$count selectors checked"
	((count > 0)) && return $status
}

check_rules_healthy() {
	local rules
	rules="$(curl -sf "$api/rules?type=alert" | jq -c '[.data.groups[].rules[] | {name, health, lastError}]')" || return 1
	expect "alert rules loaded" "$(jq -c '[.[].name] | sort' <<<"$rules")" "$(yq -c '[.groups[].rules[].alert] | sort' "$monitoring/rules.yaml")" &&
		expect "rules not healthy" "$(jq -c '[.[] | select(.health != "ok")]' <<<"$rules")" '[]'
}

# The alerts the load provokes, and no other: a refused plugin, denied requests (both at once), dnsrecord failing
# every reconcile (pending: it must last 15 minutes to fire). Host A leads and host B is its ring's sharder, so
# neither NoLeader (host B reports leader 0, as every sharded replica) nor NoSharder is active.
active_alerts() {
	curl -sf "$api/alerts" | jq -c '[.data.alerts[] | "\(.labels.alertname) \(.labels.job) \(.labels.plugin // "-") \(.state)"] | sort'
}
expected_alerts='["WasmReconcilerOutboundDenied wasm-reconciler dnsrecord firing","WasmReconcilerPluginRefused wasm-reconciler broken firing","WasmReconcilerReconcileErrors wasm-reconciler dnsrecord pending"]'
alerts_as_expected() { [[ "$(active_alerts)" == "$expected_alerts" ]]; }
check_alerts() {
	quietly_eventually 60 alerts_as_expected || { expect "active alerts" "$(active_alerts)" "$expected_alerts"; return 1; }
	# Each alert expression evaluated directly: those of the active alerts return their series, the others none.
	local name expr
	while IFS=$'\t' read -r name expr; do
		case $name in
		WasmReconcilerPluginRefused | WasmReconcilerOutboundDenied | WasmReconcilerReconcileErrors)
			has_series "$expr" || { echo "$name: no series"; return 1; } ;;
		WasmReconcilerNoLeader | WasmReconcilerNoSharder)
			expect "$name" "$(query "$expr")" '[]' || return 1 ;;
		*) query "$expr" >/dev/null || { echo "$name: the query failed"; return 1; } ;;
		esac
	done <"$work/alert-queries.tsv"
}

check "every dashboard panel query returns data from the hosts under load" check_panel_queries
check "every selector of every panel query and alert expression selects a series the hosts export" check_selectors
check "Prometheus loads every alert rule, all healthy" check_rules_healthy
check "the alerts the load provokes are active (refused plugin, denied requests, failing reconciles), the others not" check_alerts

echo "monitoring-check: $passed passed, $failed failed in $((SECONDS - started)) s"
((failed == 0))
