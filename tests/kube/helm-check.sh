#!/usr/bin/env bash
# Check of the Helm chart deploy/helm/wasm-reconciler with the real helm against a real kube-apiserver (the
# harness of tests/kube): strict lint, schema refusals, rendering with default and non-default values, the
# rendering compared with `kubectl kustomize deploy/` object by object (and, with monitoring on, with `kubectl
# kustomize deploy/monitoring`), then install, upgrade, a second release beside the first, and uninstall on a
# freshly started cluster, each object checked there with kubectl; the monitoring objects dry-run against the
# Prometheus Operator's PrometheusRule CRD (from its Go module, downloaded with go).
#
#   tests/kube/helm-check.sh           (`make helm-check` first runs `make deploy-files`; KEEP=1 keeps the
#                                       temporary directory with the cluster's logs and the normalised objects)
#
# Needs the generated deploy/crds/ and deploy/plugins/ (make deploy-files), which it copies into the chart's
# files/examples/; kubectl, jq and yq (the jq wrapper for YAML) on PATH; go to build the harness. Ends with
# "N passed, N failed" and exits non-zero on any failure.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
chart="$root/deploy/helm/wasm-reconciler"
say() { printf 'helm-check: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
started=$SECONDS

for tool in kubectl jq yq diff; do
	command -v "$tool" >/dev/null || die "$tool is required on PATH"
done
[[ "$(yq --help 2>&1)" == *"jq wrapper"* ]] ||
	die "yq on PATH is not the jq wrapper for YAML this check uses (Debian package yq, or pip install yq)"

# The generated example files (CRD copies, packed plugins), as `kubectl apply -k deploy/` needs them too.
example_plugins=(configmapset webapp)
for plugin in "${example_plugins[@]}"; do
	for file in "$root/deploy/crds/$plugin.yaml" "$root/deploy/plugins/$plugin.yaml"; do
		[[ -f $file ]] || die "${file#"$root"/} is missing: run make deploy-files (make helm-check does)"
	done
done
rm -rf "$chart/files/examples"
mkdir -p "$chart/files/examples/crds" "$chart/files/examples/plugins"
cp "$root"/deploy/crds/*.yaml "$chart/files/examples/crds/"
cp "$root"/deploy/plugins/*.yaml "$chart/files/examples/plugins/"
say "copied deploy/crds and deploy/plugins into ${chart#"$root"/}/files/examples"

bin_dir="$("$here/build.sh" --control-plane)" || die "tests/kube/build.sh --control-plane failed"
helm="$bin_dir/helm"
# kubectl: the harness's own when its build has one (same version as the server), else the one on PATH.
if [[ -x $bin_dir/kubectl ]]; then kubectl="$bin_dir/kubectl"; else kubectl="$(command -v kubectl)"; fi
kubectl() { "$kubectl" "$@"; }
say "helm $("$helm" version --template '{{.Version}}'), kubectl $("$kubectl" version --client -o json | jq -r .clientVersion.gitVersion)"

# shellcheck source=tests/kube/checks.sh
source "$here/checks.sh"
export HELM_CACHE_HOME="$work/helm/cache" HELM_CONFIG_HOME="$work/helm/config" HELM_DATA_HOME="$work/helm/data"
unset KUBECONFIG

# contains WHAT TEXT FRAGMENT
contains() {
	grep -qF -- "$3" <<<"$2" || { printf '%s: %s not found in:\n%s\n' "$1" "$3" "$2"; return 1; }
}

# --- normalised objects --------------------------------------------------------------------------------------------

# Labels that are only helm's bookkeeping: dropped everywhere before comparing. app.kubernetes.io/version, which
# the chart puts on every object and deploy/ only on the Deployment and its pods, is dropped from the others.
# shellcheck disable=SC2016 # a jq program: its $ are jq's
normalise_program='
def without($keys): with_entries(select(.key as $k | $keys | index($k) | not));
def tidy(f; $keys): if (f // null) == null then . else (f |= without($keys)) | if f == {} then delpaths([path(f)]) else . end end;
["helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance"] as $bookkeeping
| select(. != null)
| tidy(.metadata.labels; $bookkeeping + (if .kind == "Deployment" then [] else ["app.kubernetes.io/version"] end))
| if .kind == "Deployment" then
    tidy(.spec.selector.matchLabels; $bookkeeping)
    | tidy(.spec.template.metadata.labels; $bookkeeping)
    | if .spec.template.spec.topologySpreadConstraints then
        .spec.template.spec.topologySpreadConstraints |= map(tidy(.labelSelector.matchLabels; $bookkeeping))
      else . end
  else . end
| if .kind == "Service" then tidy(.spec.selector; $bookkeeping) else . end
| if .kind == "PodDisruptionBudget" then tidy(.spec.selector.matchLabels; $bookkeeping) else . end
| "\(.kind)_\(.metadata.namespace // "cluster")_\(.metadata.name)\t\(tojson)"'

# normalise MANIFEST DIR: one sorted-key JSON file per object, named KIND_NAMESPACE_NAME.json.
normalise() {
	local manifest=$1 out=$2 key object
	mkdir -p "$out"
	yq -c . "$manifest" | jq -r "$normalise_program" | while IFS=$'\t' read -r key object; do
		[[ ! -e $out/$key.json ]] || { echo "two objects named $key in $manifest"; return 1; }
		jq -S . <<<"$object" >"$out/$key.json"
	done
}

# Long strings (packed components) are shortened in diffs, with a checksum so that a difference still shows.
# shellcheck disable=SC2016 # a jq program
shorten_program='walk(if type == "string" and length > 120
  then "\(.[:40])… (\(length) characters, checksum \(explode | reduce .[] as $c (0; (. * 31 + $c) % 4294967291)))"
  else . end)'

# object_keys DIR: the objects normalise wrote there, sorted.
object_keys() { find "$1" -name '*.json' -printf '%f\n' | sed 's/\.json$//' | sort; }

# compare_objects EXPECTED_DIR ACTUAL_DIR ONLY_IN_EXPECTED...: the same objects apart from those listed (which
# must be exactly the objects only the expected side has), and each common object equal; a diff otherwise.
compare_objects() {
	local expected=$1 actual=$2
	shift 2
	local -a allowed=("$@")
	local status=0 key want got file
	want="$(printf '%s\n' "${allowed[@]}" | sort)"
	got="$(comm -23 <(object_keys "$expected") <(object_keys "$actual"))"
	if [[ $got != "$want" ]]; then
		printf 'objects only kustomize has:\n  got:  %s\n  want: %s\n' "${got//$'\n'/ }" "${want//$'\n'/ }"
		status=1
	fi
	got="$(comm -13 <(object_keys "$expected") <(object_keys "$actual"))"
	if [[ -n $got ]]; then
		printf 'objects only the chart has: %s\n' "${got//$'\n'/ }"
		status=1
	fi
	for file in "$actual"/*.json; do
		key="$(basename "$file" .json)"
		[[ -f $expected/$key.json ]] || continue
		if ! cmp -s "$expected/$key.json" "$file"; then
			echo "$key differs (- kubectl kustomize deploy/, + helm template):"
			diff -u --label "kustomize $key" --label "helm $key" \
				<(jq -S "$shorten_program" "$expected/$key.json" | yq -y .) \
				<(jq -S "$shorten_program" "$file" | yq -y .)
			status=1
		fi
	done
	return $status
}

# render OUT ARGS...: helm template into OUT (YAML) and OUT.json (an array of the objects).
render() {
	local out=$1
	shift
	# With the chart's crds/ (the WasmPlugin CRD), which `helm install` applies and deploy/ lists as a resource.
	"$helm" template --include-crds "$@" >"$out" || return 1
	yq -c . "$out" | jq -s 'map(select(. != null))' >"$out.json"
}

# --- intended differences from the kustomize install ---------------------------------------------------------------

# Always: the chart does not create its namespace (helm install --create-namespace, or an existing one; helm keeps
# its release records there, so the namespace cannot be one of the release's objects).
only_in_kustomize_always=(Namespace_cluster_wasm-reconciler)
# With examples.enabled=false (the default): the example plugins' CRDs, packed ConfigMaps and ClusterRoles.
only_in_kustomize_without_examples=(
	CustomResourceDefinition_cluster_configmapsets.examples.wasm-reconciler.io
	CustomResourceDefinition_cluster_webapps.examples.wasm-reconciler.io
	ConfigMap_wasm-reconciler_configmapset
	ConfigMap_wasm-reconciler_webapp
	ClusterRole_cluster_wasm-reconciler-plugin-configmapset
	ClusterRole_cluster_wasm-reconciler-plugin-webapp
	ClusterRoleBinding_cluster_wasm-reconciler-plugin-configmapset
	ClusterRoleBinding_cluster_wasm-reconciler-plugin-webapp
)
# Not visible after normalisation: the chart's selectors (Deployment, Service, topology spread) also match
# app.kubernetes.io/instance, so that two releases never select each other's pods; and every chart object carries
# helm's labels (helm.sh/chart, app.kubernetes.io/managed-by, app.kubernetes.io/instance, app.kubernetes.io/version).

# --- static checks ---------------------------------------------------------------------------------------------------

check_chart_version() {
	local workspace chart_version app_version
	workspace="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' "$root/Cargo.toml")"
	chart_version="$(yq -r .version "$chart/Chart.yaml")"
	app_version="$(yq -r .appVersion "$chart/Chart.yaml")"
	[[ -n $workspace ]] || { echo "no [workspace.package] version in Cargo.toml"; return 1; }
	expect "Chart.yaml version" "$chart_version" "$workspace" && expect "Chart.yaml appVersion" "$app_version" "$workspace"
}

# The values of the non-default rendering, the upgrade and the second release.
cat >"$work/custom-values.yaml" <<'EOF'
image:
  repository: registry.example.com/platform/wasm-reconciler
  tag: 0.1.0-rc.1
  pullPolicy: Always
imagePullSecrets:
  - name: registry-credentials
replicaCount: 3
pluginNamespace: team-a-plugins
leaderElection:
  leaseName: edge-leader
  leaseDurationSeconds: 30
  renewSeconds: 20
logFormat: text
extraArgs: ["-v"]
extraEnv:
  - name: OTEL_EXPORTER_OTLP_ENDPOINT
    value: http://otel-collector.observability:4318
  - name: OTEL_RESOURCE_ATTRIBUTES
    value: k8s.pod.name=$(POD_NAME)
extraVolumes:
  - name: trusted-keys
    configMap: {name: plugin-signing-keys}
extraVolumeMounts:
  - name: trusted-keys
    mountPath: /etc/wasm-reconciler/keys
    readOnly: true
metrics:
  port: 9100
  podAnnotations: false
  service:
    port: 8080
artifactCache:
  enabled: false
resources:
  requests: {cpu: 50m, memory: 64Mi}
  limits: {cpu: "2", memory: 1Gi}
serviceAccount:
  name: edge-host
  annotations:
    iam.example.com/role: wasm-reconciler
rbac:
  extraRules:
    - apiGroups: ["example.com"]
      resources: ["certificates", "certificates/status"]
      verbs: ["get", "list", "watch", "patch", "update"]
    - apiGroups: [""]
      resources: ["secrets"]
      verbs: ["get", "list", "watch", "create", "patch", "update", "delete"]
podAnnotations:
  team: a
podLabels:
  team: a
priorityClassName: system-cluster-critical
nodeSelector:
  kubernetes.io/os: linux
tolerations:
  - key: dedicated
    operator: Equal
    value: controllers
    effect: NoSchedule
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        - matchExpressions:
            - key: kubernetes.io/arch
              operator: In
              values: [amd64, arm64]
topologySpreadConstraints:
  - maxSkew: 2
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
EOF

check_lint() {
	"$helm" lint --strict "$chart" &&
		"$helm" lint --strict "$chart" --set examples.enabled=true &&
		"$helm" lint --strict "$chart" --namespace team-a -f "$work/custom-values.yaml" &&
		"$helm" lint --strict "$chart" --set replicaCount=1,leaderElection.enabled=false,metrics.service.enabled=false,rbac.create=false,serviceAccount.create=false,serviceAccount.name=existing &&
		"$helm" lint --strict "$chart" --set sharding.enabled=true,leaderElection.enabled=false,replicaCount=3 &&
		"$helm" lint --strict "$chart" --set monitoring.prometheusRule.enabled=true,monitoring.dashboard.enabled=true
}

# refused MESSAGE ARGS...: helm template fails with MESSAGE, and helm lint --strict too: values.schema.json refuses
# the values. A template's own `fail` (a rule the schema cannot say, such as one value smaller than another) also
# fails helm template and helm install, but helm lint only reports it as [INFO]; `refused_by_template` checks that.
refused() {
	local message=$1 output
	shift
	refused_by_template "$message" "$@" || return 1
	if output="$("$helm" lint --strict "$chart" "$@" 2>&1)"; then
		echo "helm lint --strict $* succeeded"
		return 1
	fi
	contains "helm lint --strict $*" "$output" "$message"
}

refused_by_template() {
	local message=$1 output
	shift
	if output="$("$helm" template wasm-reconciler "$chart" "$@" 2>&1)"; then
		echo "helm template $* succeeded"
		return 1
	fi
	contains "helm template $*" "$output" "$message"
}

check_bad_values_refused() {
	local without_examples="$work/chart-without-examples"
	refused "at '/replicaCount': minimum: got -1, want 0" --set replicaCount=-1 &&
		refused "at '/image/pullPolicy': value must be one of" --set image.pullPolicy=Sometimes &&
		refused "at '/metrics/port': maximum: got 70,000, want 65,535" --set metrics.port=70000 &&
		refused "additional properties 'replicas' not allowed" --set replicas=3 &&
		refused "at '/pluginNamespace': '_Team' does not match pattern" --set pluginNamespace=_Team &&
		refused "at '/rbac/extraRules/0': missing property 'verbs'" --set 'rbac.extraRules[0].resources[0]=secrets' &&
		refused "at '/logFormat': value must be one of" --set logFormat=yaml &&
		refused "at '/extraEnv/0': missing property 'name'" --set 'extraEnv[0].value=http://collector:4318' &&
		refused "at '/extraVolumeMounts/0': missing property 'mountPath'" --set 'extraVolumeMounts[0].name=keys' &&
		refused "at '/serviceAccount/name': minLength: got 0, want 1" --set serviceAccount.create=false &&
		refused "at '/replicaCount': maximum: got 2, want 1" --set leaderElection.enabled=false &&
		refused "at '/monitoring/dashboard': additional properties 'enable' not allowed" --set monitoring.dashboard.enable=true &&
		refused_by_template "leaderElection.renewSeconds (20) must be shorter than leaderElection.leaseDurationSeconds (15)" \
			--set leaderElection.renewSeconds=20 || return 1
	# examples.enabled without the generated files names the command that makes them.
	cp -r "$chart" "$without_examples" && rm -rf "$without_examples/files/examples" || return 1
	local output
	if output="$("$helm" template wasm-reconciler "$without_examples" --set examples.enabled=true 2>&1)"; then
		echo "examples.enabled rendered without the generated files"
		return 1
	fi
	contains "examples without files" "$output" "run \`make deploy-files\`, then copy deploy/crds/*.yaml there"
}

check_matches_kustomize() {
	kubectl kustomize "$root/deploy" >"$work/kustomize.yaml" || return 1
	normalise "$work/kustomize.yaml" "$work/objects/kustomize" || return 1
	render "$work/examples.yaml" wasm-reconciler "$chart" --namespace wasm-reconciler --set examples.enabled=true &&
		normalise "$work/examples.yaml" "$work/objects/helm-examples" || return 1
	compare_objects "$work/objects/kustomize" "$work/objects/helm-examples" "${only_in_kustomize_always[@]}"
}

check_defaults_match_kustomize() {
	render "$work/defaults.yaml" wasm-reconciler "$chart" --namespace wasm-reconciler &&
		normalise "$work/defaults.yaml" "$work/objects/helm-defaults" || return 1
	compare_objects "$work/objects/kustomize" "$work/objects/helm-defaults" \
		"${only_in_kustomize_always[@]}" "${only_in_kustomize_without_examples[@]}"
}

# Sharded mode: the chart's sharding.enabled matches deploy/'s sharding Component, applied from an overlay.
check_sharding_matches_kustomize() {
	rm -rf "$work/deploy-copy" "$work/sharded" && cp -r "$root/deploy" "$work/deploy-copy" && mkdir -p "$work/sharded" || return 1
	printf 'resources: [../deploy-copy]\ncomponents: [../deploy-copy/sharding]\n' >"$work/sharded/kustomization.yaml"
	kubectl kustomize "$work/sharded" >"$work/kustomize-sharded.yaml" || return 1
	normalise "$work/kustomize-sharded.yaml" "$work/objects/kustomize-sharded" || return 1
	render "$work/sharded.yaml" wasm-reconciler "$chart" --namespace wasm-reconciler --set examples.enabled=true \
		--set sharding.enabled=true --set replicaCount=3 &&
		normalise "$work/sharded.yaml" "$work/objects/helm-sharded" || return 1
	compare_objects "$work/objects/kustomize-sharded" "$work/objects/helm-sharded" "${only_in_kustomize_always[@]}" || return 1
	local args
	args="$(jq -c '.[] | select(.kind == "Deployment") | .spec.template.spec.containers[0].args' "$work/sharded.yaml.json")"
	contains "sharded args" "$args" '"--sharding"' || return 1
	if grep -qF -- '--leader-elect' <<<"$args"; then
		echo "sharded args still elect a leader: $args"
		return 1
	fi
}

# Plugins acting as their own ServiceAccounts: the chart's pluginIdentity.enabled (examples on) matches deploy/ with
# its plugin-identity Component; accounts of pluginIdentity.serviceAccounts get a Role per namespace, by name.
check_plugin_identity_matches_kustomize() {
	rm -rf "$work/deploy-copy" "$work/identity" && cp -r "$root/deploy" "$work/deploy-copy" && mkdir -p "$work/identity" || return 1
	printf 'resources: [../deploy-copy]\ncomponents: [../deploy-copy/plugin-identity]\n' >"$work/identity/kustomization.yaml"
	kubectl kustomize "$work/identity" >"$work/kustomize-identity.yaml" || return 1
	normalise "$work/kustomize-identity.yaml" "$work/objects/kustomize-identity" || return 1
	render "$work/identity.yaml" wasm-reconciler "$chart" --namespace wasm-reconciler --set examples.enabled=true \
		--set pluginIdentity.enabled=true &&
		normalise "$work/identity.yaml" "$work/objects/helm-identity" || return 1
	compare_objects "$work/objects/kustomize-identity" "$work/objects/helm-identity" "${only_in_kustomize_always[@]}" || return 1
	render "$work/accounts.yaml" wasm-reconciler "$chart" --namespace wasm-reconciler \
		--set 'pluginIdentity.serviceAccounts={team-a/dns,team-a/certs,team-b/dns}' || return 1
	local roles
	roles="$(jq -cS '[.[] | select(.kind == "Role" and (.metadata.name | endswith("-impersonate"))) | {namespace: .metadata.namespace, rules}]' "$work/accounts.yaml.json")"
	expect "impersonation Roles" "$roles" \
		'[{"namespace":"team-a","rules":[{"apiGroups":[""],"resourceNames":["dns","certs"],"resources":["serviceaccounts"],"verbs":["impersonate"]}]},{"namespace":"team-b","rules":[{"apiGroups":[""],"resourceNames":["dns"],"resources":["serviceaccounts"],"verbs":["impersonate"]}]}]'
}

# Alerts and dashboard: the chart's monitoring.* match `kubectl kustomize deploy/monitoring` object for object, and
# its files/monitoring/ are what deploy/monitoring/generate.sh writes from deploy/monitoring's sources.
check_monitoring_matches_kustomize() {
	"$root/deploy/monitoring/generate.sh" --check || return 1
	kubectl kustomize "$root/deploy/monitoring" >"$work/kustomize-monitoring.yaml" &&
		normalise "$work/kustomize-monitoring.yaml" "$work/objects/kustomize-monitoring" || return 1
	render "$work/monitoring.yaml" wasm-reconciler "$chart" --namespace wasm-reconciler \
		--set monitoring.prometheusRule.enabled=true,monitoring.dashboard.enabled=true &&
		normalise "$work/monitoring.yaml" "$work/objects/helm-monitoring" || return 1
	# The chart's other objects are compared with deploy/ above; here only what deploy/monitoring has.
	find "$work/objects/helm-monitoring" -name '*.json' ! -name 'PrometheusRule_*' ! -name 'ConfigMap_*-dashboard.json' -delete
	compare_objects "$work/objects/kustomize-monitoring" "$work/objects/helm-monitoring" || return 1
	expect "objects" "$(object_keys "$work/objects/helm-monitoring" | tr '\n' ' ')" \
		"ConfigMap_wasm-reconciler_wasm-reconciler-dashboard PrometheusRule_wasm-reconciler_wasm-reconciler " &&
		expect "PrometheusRule spec = deploy/monitoring/rules.yaml" \
			"$(jq -cS '.[] | select(.kind == "PrometheusRule") | .spec' "$work/monitoring.yaml.json")" "$(yq -cS . "$root/deploy/monitoring/rules.yaml")" &&
		expect "dashboard = deploy/monitoring/dashboard.json" \
			"$(jq -j '.[] | select(.kind == "ConfigMap" and .metadata.name == "wasm-reconciler-dashboard") | .data["wasm-reconciler.json"]' "$work/monitoring.yaml.json" | sha256sum)" \
			"$(sha256sum <"$root/deploy/monitoring/dashboard.json")" || return 1
	# Non-default: another release, the Operator's selector label, the sidecar's namespace and folder annotation.
	render "$work/monitoring-custom.yaml" edge "$chart" --namespace team-a \
		--set monitoring.prometheusRule.enabled=true,monitoring.prometheusRule.labels.release=kube-prometheus-stack \
		--set monitoring.dashboard.enabled=true,monitoring.dashboard.namespace=grafana,monitoring.dashboard.annotations.grafana_folder=Controllers || return 1
	local objects="$work/monitoring-custom.yaml.json"
	expect "PrometheusRule" "$(jq -cS '.[] | select(.kind == "PrometheusRule") | [.metadata.name, .metadata.namespace, .metadata.labels.release]' "$objects")" \
		'["edge-wasm-reconciler","team-a","kube-prometheus-stack"]' &&
		expect "dashboard ConfigMap" "$(jq -cS '.[] | select(.kind == "ConfigMap") | [.metadata.name, .metadata.namespace, .metadata.labels.grafana_dashboard, .metadata.annotations]' "$objects")" \
			'["edge-wasm-reconciler-dashboard","grafana","1",{"grafana_folder":"Controllers"}]' || return 1
	# Off by default.
	expect "monitoring objects by default" "$(jq -c '[.[] | select(.kind == "PrometheusRule" or (.metadata.name | endswith("-dashboard")))] | length' "$work/defaults.yaml.json")" 0
}

check_custom_values_rendered() {
	local objects="$work/custom.yaml.json"
	render "$work/custom.yaml" edge "$chart" --namespace team-a -f "$work/custom-values.yaml" || return 1
	q() { jq -cS "$1" "$objects"; }
	local deployment='.[] | select(.kind == "Deployment")'
	local pod="$deployment | .spec.template"
	local container="$pod | .spec.containers[0]"
	expect "objects" "$(q '[.[] | "\(.kind) \(.metadata.namespace // "-") \(.metadata.name)"] | sort')" \
		'["ClusterRole - edge-wasm-reconciler","ClusterRoleBinding - edge-wasm-reconciler","CustomResourceDefinition - wasmplugins.wasm-reconciler.io","Deployment team-a edge-wasm-reconciler","PodDisruptionBudget team-a edge-wasm-reconciler","Role team-a-plugins edge-wasm-reconciler","RoleBinding team-a-plugins edge-wasm-reconciler","Service team-a edge-wasm-reconciler-metrics","ServiceAccount team-a edge-host"]' &&
		expect "replicas" "$(q "$deployment | .spec.replicas")" 3 &&
		expect "image" "$(q "$container | [.image, .imagePullPolicy]")" '["registry.example.com/platform/wasm-reconciler:0.1.0-rc.1","Always"]' &&
		expect "imagePullSecrets" "$(q "$pod | .spec.imagePullSecrets")" '[{"name":"registry-credentials"}]' &&
		expect "args" "$(q "$container | .args")" \
			'["run","--namespace","team-a-plugins","--leader-elect","--lease-name","edge-leader","--lease-duration-seconds","30","--lease-renew-seconds","20","--metrics-addr","0.0.0.0:9100","-v"]' &&
		expect "log format" "$(q "$container | .env[] | select(.name == \"WASM_RECONCILER_LOG_FORMAT\") | .value")" '"text"' &&
		expect "env (the chart's, then extraEnv)" "$(q "[$container | .env[].name]")" \
			'["POD_NAME","POD_NAMESPACE","WASM_RECONCILER_LOG_FORMAT","OTEL_EXPORTER_OTLP_ENDPOINT","OTEL_RESOURCE_ATTRIBUTES"]' &&
		expect "container port" "$(q "$container | .ports")" '[{"containerPort":9100,"name":"metrics","protocol":"TCP"}]' &&
		expect "volumes and mounts (no artifact cache; then extraVolumes, extraVolumeMounts)" \
			"$(q "[$pod | .spec.volumes[].name] + [$container | .volumeMounts[].name]")" '["tmp","trusted-keys","tmp","trusted-keys"]' &&
		expect "extra volume" "$(q "$pod | .spec.volumes[1]")" '{"configMap":{"name":"plugin-signing-keys"},"name":"trusted-keys"}' &&
		expect "extra mount" "$(q "$container | .volumeMounts[1]")" '{"mountPath":"/etc/wasm-reconciler/keys","name":"trusted-keys","readOnly":true}' &&
		expect "resources" "$(q "$container | .resources")" '{"limits":{"cpu":"2","memory":"1Gi"},"requests":{"cpu":"50m","memory":"64Mi"}}' &&
		expect "pod annotations" "$(q "$pod | .metadata.annotations")" '{"team":"a"}' &&
		expect "pod labels" "$(q "$pod | .metadata.labels.team")" '"a"' &&
		expect "serviceAccountName" "$(q "$pod | .spec.serviceAccountName")" '"edge-host"' &&
		expect "priorityClassName" "$(q "$pod | .spec.priorityClassName")" '"system-cluster-critical"' &&
		expect "nodeSelector" "$(q "$pod | .spec.nodeSelector")" '{"kubernetes.io/os":"linux"}' &&
		expect "tolerations" "$(q "$pod | .spec.tolerations")" '[{"effect":"NoSchedule","key":"dedicated","operator":"Equal","value":"controllers"}]' &&
		expect "affinity" "$(q "$pod | .spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values")" '["amd64","arm64"]' &&
		expect "topology spread" "$(q "$pod | .spec.topologySpreadConstraints")" \
			'[{"labelSelector":{"matchLabels":{"app.kubernetes.io/instance":"edge","app.kubernetes.io/name":"wasm-reconciler"}},"maxSkew":2,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]' &&
		expect "ServiceAccount annotations" "$(q '.[] | select(.kind == "ServiceAccount") | .metadata.annotations')" '{"iam.example.com/role":"wasm-reconciler"}' &&
		expect "ClusterRole rules (2 + extraRules)" "$(q '.[] | select(.kind == "ClusterRole") | .rules | [length, .[2].apiGroups[0], .[3].resources[0]]')" '[4,"example.com","secrets"]' &&
		expect "RoleBinding subject" "$(q '.[] | select(.kind == "RoleBinding") | .subjects')" '[{"kind":"ServiceAccount","name":"edge-host","namespace":"team-a"}]' &&
		expect "Service ports" "$(q '.[] | select(.kind == "Service") | .spec.ports')" '[{"name":"metrics","port":8080,"protocol":"TCP","targetPort":"metrics"}]' &&
		expect "Service selector" "$(q '.[] | select(.kind == "Service") | .spec.selector')" '{"app.kubernetes.io/instance":"edge","app.kubernetes.io/name":"wasm-reconciler"}' || return 1
	# Switched off: leader election, the metrics Service, RBAC and the ServiceAccount (the WasmPlugin CRD of crds/
	# stays: helm installs it unless told --skip-crds).
	render "$work/minimal.yaml" edge "$chart" --namespace team-a \
		--set replicaCount=1,leaderElection.enabled=false,metrics.service.enabled=false,rbac.create=false,serviceAccount.create=false,serviceAccount.name=existing || return 1
	objects="$work/minimal.yaml.json"
	expect "objects" "$(q '[.[] | .kind]')" '["CustomResourceDefinition","Deployment"]' &&
		expect "replicas" "$(q "$deployment | .spec.replicas")" 1 &&
		expect "args" "$(q "$container | .args")" '["run","--namespace","team-a","--metrics-addr","0.0.0.0:9090","--artifact-cache","/var/cache/wasm-reconciler"]' &&
		expect "serviceAccountName" "$(q "$pod | .spec.serviceAccountName")" '"existing"' || return 1
	# A digest wins over the tag.
	render "$work/digest.yaml" edge "$chart" --set image.digest=sha256:"$(printf '%064d' 0)" || return 1
	objects="$work/digest.yaml.json"
	expect "image by digest" "$(q "$container | .image")" "\"ghcr.io/wasm-reconciler/wasm-reconciler@sha256:$(printf '%064d' 0)\""
}

# --- the cluster ---------------------------------------------------------------------------------------------------

start_cluster() {
	: >"$work/harness.out"
	"$bin_dir/kube-harness" up --dir "$dir" >"$work/harness.out" 2>"$work/harness.err" &
	launcher_pid=$!
	local deadline=$((SECONDS + 240)) since=$SECONDS
	until grep -q '^ready ' "$work/harness.out"; do
		if ! kill -0 "$launcher_pid" 2>/dev/null; then
			cat "$work/harness.err" >&2
			die "kube-harness exited before it was ready (logs: $dir/logs; KEEP=1 keeps them)"
		fi
		((SECONDS < deadline)) || die "kube-harness not ready within 240 s (logs: $dir/logs; KEEP=1 keeps them)"
		sleep 0.1
	done
	local ready_line
	ready_line="$(grep '^ready ' "$work/harness.out")"
	say "cluster ready after $((SECONDS - since)) s: $ready_line"
	export KUBECONFIG
	KUBECONFIG="$(sed -n 's/.* kubeconfig=\([^ ]*\).*/\1/p' <<<"$ready_line")"
}

# json KUBECTL_GET_ARGS... -- JQ: one field of a live object, compact.
json() {
	local -a args=()
	while [[ $1 != -- ]]; do args+=("$1"); shift; done
	kubectl get "${args[@]}" -o json | jq -cS "$2"
}

# kustomize_field KEY JQ: a field of the normalised kustomize object KEY.
kustomize_field() { jq -cS "$2" "$work/objects/kustomize/$1.json"; }

# can SA_NAMESPACE:SA_NAME ANSWER ARGS...: kubectl auth can-i as that ServiceAccount answers ANSWER.
can() {
	local answer
	answer="$(kubectl auth can-i --as="system:serviceaccount:$1" "${@:3}" 2>/dev/null)"
	expect "can-i $1 ${*:3}" "$answer" "$2"
}

check_kustomize_accepted() {
	# A server-side dry run cannot create the namespace the other objects need, so that one is applied for real.
	kubectl apply --server-side -f "$root/deploy/namespace.yaml" &&
		kubectl apply -k "$root/deploy" --server-side --dry-run=server
}

# The PrometheusRule CRD of the Prometheus Operator, from its Go module (pinned by version and go.sum hash; the go
# command also checks it against the checksum database): the real schema the Operator's users validate against.
operator_module=github.com/prometheus-operator/prometheus-operator
operator_version=v0.85.0
operator_sum=h1:M5xLCLEoaW2IJfnuCwFzzpL+jSVQu3KGT84Pye+fW8s=
check_monitoring_accepted() {
	local download crd
	download="$(cd "$work" && go mod download -json "$operator_module@$operator_version")" || { echo "$download"; return 1; }
	expect "$operator_module@$operator_version hash" "$(jq -r .Sum <<<"$download")" "$operator_sum" || return 1
	crd="$(jq -r .Dir <<<"$download")/example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml"
	kubectl apply --server-side -f "$crd" &&
		kubectl wait --for=condition=Established crd/prometheusrules.monitoring.coreos.com --timeout=60s &&
		kubectl apply -k "$root/deploy/monitoring" --server-side --dry-run=server &&
		"$helm" template wasm-reconciler "$chart" --namespace wasm-reconciler --show-only templates/monitoring.yaml \
			--set monitoring.prometheusRule.enabled=true,monitoring.dashboard.enabled=true |
		kubectl apply --server-side --dry-run=server -f - || return 1
	# The schema is enforced: a `for` that is no duration is refused.
	local output
	if output="$(yq -y '.spec.groups[0].rules[0].for = "two minutes"' "$root/deploy/monitoring/prometheusrule.yaml" |
		kubectl apply --server-side --dry-run=server -f - 2>&1)"; then
		echo "a PrometheusRule with for: \"two minutes\" was accepted"
		return 1
	fi
	contains "invalid for refused" "$output" "spec.groups[0].rules[0].for"
}

check_install() {
	"$helm" install wasm-reconciler "$chart" --namespace wasm-reconciler --create-namespace \
		--set examples.enabled=true --timeout 2m >"$work/install.out" 2>&1 || { cat "$work/install.out"; return 1; }
	contains "NOTES" "$(cat "$work/install.out")" "Plugins are loaded from ConfigMaps labelled wasm-reconciler.io/plugin=true in namespace wasm-reconciler" &&
		expect "release status" "$("$helm" status wasm-reconciler -n wasm-reconciler -o json | jq -r .info.status)" deployed
}

check_installed_objects() {
	local ns=(-n wasm-reconciler) deployment=Deployment_wasm-reconciler_wasm-reconciler
	local container='.spec.template.spec.containers[0]'
	# The Deployment: what deploy/ runs (args, ports, probes, security), as the server stored it.
	expect "replicas" "$(json deployment wasm-reconciler "${ns[@]}" -- .spec.replicas)" 2 &&
		expect "args" "$(json deployment wasm-reconciler "${ns[@]}" -- "$container.args")" "$(kustomize_field $deployment "$container.args")" &&
		expect "image" "$(json deployment wasm-reconciler "${ns[@]}" -- "$container.image")" "$(kustomize_field $deployment "$container.image")" &&
		expect "ports" "$(json deployment wasm-reconciler "${ns[@]}" -- "$container.ports")" "$(kustomize_field $deployment "$container.ports")" &&
		expect "readiness probe path" "$(json deployment wasm-reconciler "${ns[@]}" -- "$container.readinessProbe.httpGet")" '{"path":"/readyz","port":"metrics","scheme":"HTTP"}' &&
		expect "liveness probe path" "$(json deployment wasm-reconciler "${ns[@]}" -- "$container.livenessProbe.httpGet")" '{"path":"/healthz","port":"metrics","scheme":"HTTP"}' &&
		expect "container securityContext" "$(json deployment wasm-reconciler "${ns[@]}" -- "$container.securityContext")" "$(kustomize_field $deployment "$container.securityContext")" &&
		expect "pod securityContext" "$(json deployment wasm-reconciler "${ns[@]}" -- .spec.template.spec.securityContext)" "$(kustomize_field $deployment .spec.template.spec.securityContext)" &&
		expect "serviceAccountName" "$(json deployment wasm-reconciler "${ns[@]}" -- .spec.template.spec.serviceAccountName)" '"wasm-reconciler"' &&
		expect "selector" "$(json deployment wasm-reconciler "${ns[@]}" -- .spec.selector.matchLabels)" '{"app.kubernetes.io/instance":"wasm-reconciler","app.kubernetes.io/name":"wasm-reconciler"}' || return 1
	# The ServiceAccount, the RBAC objects, the Service.
	kubectl get serviceaccount wasm-reconciler "${ns[@]}" -o name || return 1
	expect "Role rules" "$(json role wasm-reconciler "${ns[@]}" -- .rules)" "$(kustomize_field Role_wasm-reconciler_wasm-reconciler .rules)" &&
		expect "RoleBinding" "$(json rolebinding wasm-reconciler "${ns[@]}" -- '[.roleRef.name, .subjects]')" '["wasm-reconciler",[{"kind":"ServiceAccount","name":"wasm-reconciler","namespace":"wasm-reconciler"}]]' &&
		expect "ClusterRole rules" "$(json clusterrole wasm-reconciler -- .rules)" "$(kustomize_field ClusterRole_cluster_wasm-reconciler .rules)" &&
		expect "ClusterRoleBinding" "$(json clusterrolebinding wasm-reconciler -- '[.roleRef.name, .subjects]')" '["wasm-reconciler",[{"kind":"ServiceAccount","name":"wasm-reconciler","namespace":"wasm-reconciler"}]]' || return 1
	local plugin
	for plugin in "${example_plugins[@]}"; do
		expect "ClusterRole wasm-reconciler-plugin-$plugin rules" "$(json clusterrole "wasm-reconciler-plugin-$plugin" -- .rules)" \
			"$(kustomize_field "ClusterRole_cluster_wasm-reconciler-plugin-$plugin" .rules)" &&
			expect "ClusterRoleBinding wasm-reconciler-plugin-$plugin subjects" "$(json clusterrolebinding "wasm-reconciler-plugin-$plugin" -- .subjects)" \
				'[{"kind":"ServiceAccount","name":"wasm-reconciler","namespace":"wasm-reconciler"}]' &&
			expect "ConfigMap $plugin" "$(json configmap "$plugin" "${ns[@]}" -- '[.metadata.labels["wasm-reconciler.io/plugin"], (.binaryData | keys), (.metadata.annotations["wasm-reconciler.io/sha256"] | length)]')" \
				'["true",["plugin.wasm.gz"],64]' || return 1
	done
	expect "Service" "$(json service wasm-reconciler-metrics "${ns[@]}" -- '[.spec.ports, .spec.publishNotReadyAddresses, (.spec.clusterIP | startswith("10.96."))]')" \
		'[[{"name":"metrics","port":9090,"protocol":"TCP","targetPort":"metrics"}],true,true]' &&
		kubectl wait --for=condition=Established crd/configmapsets.examples.wasm-reconciler.io crd/webapps.examples.wasm-reconciler.io --timeout=60s
}

check_pod_security() {
	# Pods never run here (no kubelet, no Deployment controller), but Pod Security admission judges a pod created
	# from the Deployment's template in the namespace deploy/namespace.yaml labels `enforce: restricted`.
	json deployment wasm-reconciler -n wasm-reconciler -- \
		'{apiVersion: "v1", kind: "Pod", metadata: {name: "pod-security-probe", namespace: "wasm-reconciler"}, spec: .spec.template.spec}' |
		kubectl create --dry-run=server -f - &&
		expect "namespace enforce label" "$(json namespace wasm-reconciler -- '.metadata.labels["pod-security.kubernetes.io/enforce"]')" '"restricted"'
}

check_granted() {
	local sa=wasm-reconciler:wasm-reconciler
	can $sa yes watch configmaps -n wasm-reconciler &&
		can $sa yes update leases.coordination.k8s.io -n wasm-reconciler &&
		can $sa no update leases.coordination.k8s.io -n default &&
		can $sa no delete leases.coordination.k8s.io -n wasm-reconciler &&
		can $sa yes create events.events.k8s.io -n default &&
		can $sa yes watch configmapsets.examples.wasm-reconciler.io -A &&
		can $sa yes update configmapsets.examples.wasm-reconciler.io --subresource=finalizers -n default &&
		can $sa yes patch webapps.examples.wasm-reconciler.io --subresource=status -n default &&
		can $sa yes create deployments.apps -n default &&
		can $sa yes patch wasmplugins.wasm-reconciler.io --subresource=status -n wasm-reconciler &&
		can $sa no patch wasmplugins.wasm-reconciler.io -n default &&
		can $sa no get secrets -n default
}

# allowed SA_NAMESPACE SA_NAME GROUP RESOURCE VERB: the API server's answer to a SubjectAccessReview, for kinds it
# does not serve (kubectl auth can-i resolves a resource through discovery first).
allowed() {
	jq -n --arg ns "$1" --arg sa "$2" --arg group "$3" --arg resource "$4" --arg verb "$5" '{
		apiVersion: "authorization.k8s.io/v1", kind: "SubjectAccessReview",
		spec: {
			user: "system:serviceaccount:\($ns):\($sa)",
			groups: ["system:serviceaccounts", "system:serviceaccounts:\($ns)", "system:authenticated"],
			resourceAttributes: {group: $group, resource: $resource, verb: $verb, namespace: "default"}
		}}' | kubectl create -f - -o json | jq .status.allowed
}

# release_bytes NAMESPACE RELEASE: size of the largest record (Secret data) helm keeps of the release.
release_bytes() { kubectl get secrets -n "$1" -l "owner=helm,name=$2" -o json | jq '[.items[].data.release | @base64d | length] | max'; }

check_upgrade() {
	"$helm" upgrade wasm-reconciler "$chart" --namespace wasm-reconciler --timeout 2m \
		--set examples.enabled=true,replicaCount=3,leaderElection.leaseName=host-leader,metrics.service.port=9100 \
		--set 'rbac.extraRules[0].apiGroups[0]=,rbac.extraRules[0].resources[0]=secrets,rbac.extraRules[0].verbs={get,list,watch}' \
		>"$work/upgrade.out" 2>&1 || { cat "$work/upgrade.out"; return 1; }
	expect "revision" "$("$helm" status wasm-reconciler -n wasm-reconciler -o json | jq .version)" 2 &&
		expect "replicas" "$(json deployment wasm-reconciler -n wasm-reconciler -- .spec.replicas)" 3 &&
		expect "generation" "$(json deployment wasm-reconciler -n wasm-reconciler -- .metadata.generation)" 2 &&
		expect "args" "$(json deployment wasm-reconciler -n wasm-reconciler -- '.spec.template.spec.containers[0].args')" \
			'["run","--namespace","wasm-reconciler","--leader-elect","--lease-name","host-leader","--metrics-addr","0.0.0.0:9090","--artifact-cache","/var/cache/wasm-reconciler"]' &&
		expect "ClusterRole's last rule" "$(json clusterrole wasm-reconciler -- '.rules[-1]')" '{"apiGroups":[""],"resources":["secrets"],"verbs":["get","list","watch"]}' &&
		expect "Service port" "$(json service wasm-reconciler-metrics -n wasm-reconciler -- '.spec.ports[0].port')" 9100 &&
		quietly_eventually 30 can wasm-reconciler:wasm-reconciler yes list secrets -n default || return 1
	# Switched off in a second upgrade: leader election (one replica then) and the metrics Service, which goes away.
	"$helm" upgrade wasm-reconciler "$chart" --namespace wasm-reconciler --reuse-values --timeout 2m \
		--set replicaCount=1,leaderElection.enabled=false,metrics.service.enabled=false >"$work/upgrade.out" 2>&1 || { cat "$work/upgrade.out"; return 1; }
	expect "args" "$(json deployment wasm-reconciler -n wasm-reconciler -- '.spec.template.spec.containers[0].args')" \
		'["run","--namespace","wasm-reconciler","--metrics-addr","0.0.0.0:9090","--artifact-cache","/var/cache/wasm-reconciler"]' &&
		expect "replicas" "$(json deployment wasm-reconciler -n wasm-reconciler -- .spec.replicas)" 1 &&
		expect "extra rule kept by --reuse-values" "$(json clusterrole wasm-reconciler -- '.rules[-1].resources')" '["secrets"]' &&
		quietly_eventually 30 bash -c "! '$kubectl' get service wasm-reconciler-metrics -n wasm-reconciler -o name 2>/dev/null | grep -q ."
}

check_second_release() {
	# A release with the non-default values beside the first: no cluster-scoped name clashes, its Role in the
	# plugin namespace, which must exist first.
	kubectl create namespace team-a-plugins || return 1
	"$helm" install edge "$chart" --namespace team-a --create-namespace -f "$work/custom-values.yaml" --timeout 2m \
		>"$work/edge.out" 2>&1 || { cat "$work/edge.out"; return 1; }
	expect "Deployment" "$(json deployment edge-wasm-reconciler -n team-a -- '[.spec.replicas, .spec.template.spec.containers[0].args[2], .spec.template.spec.tolerations[0].key, .spec.template.spec.nodeSelector]')" \
		'[3,"team-a-plugins","dedicated",{"kubernetes.io/os":"linux"}]' &&
		expect "ServiceAccount annotation" "$(json serviceaccount edge-host -n team-a -- '.metadata.annotations["iam.example.com/role"]')" '"wasm-reconciler"' &&
		expect "Role namespace" "$(json role edge-wasm-reconciler -n team-a-plugins -- .metadata.namespace)" '"team-a-plugins"' &&
		expect "Service port" "$(json service edge-wasm-reconciler-metrics -n team-a -- '.spec.ports[0].port')" 8080 &&
		can team-a:edge-host yes watch configmaps -n team-a-plugins &&
		can team-a:edge-host no watch configmaps -n team-a &&
		can team-a:edge-host yes delete secrets -n default &&
		expect "SubjectAccessReview: edge-host patches example.com certificates" "$(allowed team-a edge-host example.com certificates patch)" true &&
		expect "first release's ClusterRole untouched" "$(json clusterrole wasm-reconciler -- '.metadata.labels["app.kubernetes.io/instance"]')" '"wasm-reconciler"' || return 1
	"$helm" uninstall edge --namespace team-a --wait --timeout 2m || return 1
	expect "objects of edge left" "$(kubectl get deployments,serviceaccounts,services,roles,rolebindings -A -l app.kubernetes.io/instance=edge -o name)" "" &&
		expect "cluster objects of edge left" "$(kubectl get clusterroles,clusterrolebindings -l app.kubernetes.io/instance=edge -o name)" ""
}

check_install_refuses_bad_values() {
	local output
	if output="$("$helm" install bad "$chart" --namespace bad --create-namespace --set replicaCount=-1 2>&1)"; then
		echo "helm install accepted replicaCount=-1"
		return 1
	fi
	contains "helm install" "$output" "at '/replicaCount': minimum: got -1, want 0" &&
		expect "releases named bad" "$("$helm" list -A -q --filter '^bad$')" "" &&
		expect "objects of bad" "$(kubectl get deployments,serviceaccounts -A -l app.kubernetes.io/instance=bad -o name)" ""
}

check_uninstall() {
	"$helm" uninstall wasm-reconciler --namespace wasm-reconciler --wait --timeout 2m || return 1
	local left name
	left="$(kubectl get deployments,serviceaccounts,services,configmaps,roles,rolebindings,secrets -n wasm-reconciler \
		-l 'app.kubernetes.io/instance=wasm-reconciler' -o name)"
	expect "namespaced objects left" "$left" "" || return 1
	left="$(kubectl get clusterroles,clusterrolebindings,customresourcedefinitions -l 'app.kubernetes.io/instance=wasm-reconciler' -o name)"
	expect "cluster objects left" "$left" "" || return 1
	for name in wasm-reconciler wasm-reconciler-plugin-configmapset wasm-reconciler-plugin-webapp; do
		if kubectl get clusterrole "$name" -o name 2>/dev/null; then echo "ClusterRole $name left"; return 1; fi
	done
	if kubectl get crd configmapsets.examples.wasm-reconciler.io -o name 2>/dev/null; then echo "CRD left"; return 1; fi
	expect "helm release records left" "$(kubectl get secrets -n wasm-reconciler -l owner=helm -o name)" "" &&
		expect "releases" "$("$helm" list -A -q)" "" &&
		expect "plugin ConfigMaps left" "$(kubectl get configmaps -n wasm-reconciler -l wasm-reconciler.io/plugin=true -o name)" ""
}

# --- run -------------------------------------------------------------------------------------------------------------

check "Chart.yaml version and appVersion are the workspace version" check_chart_version
check "helm lint --strict (defaults, examples, non-default values, all switched off, sharded)" check_lint
check "bad values refused by helm lint --strict and helm template, with the reason" check_bad_values_refused
check "helm template --set examples.enabled=true matches kubectl kustomize deploy/ (but the Namespace)" check_matches_kustomize
check "helm template with defaults matches kubectl kustomize deploy/ (but the Namespace and the examples)" check_defaults_match_kustomize
check "helm template --set sharding.enabled=true matches deploy/ with its sharding Component" check_sharding_matches_kustomize
check "helm template --set pluginIdentity.enabled=true matches deploy/ with its plugin-identity Component" check_plugin_identity_matches_kustomize
check "helm template --set monitoring.{prometheusRule,dashboard}.enabled=true matches kubectl kustomize deploy/monitoring" check_monitoring_matches_kustomize
check "helm template with non-default values" check_custom_values_rendered
start_cluster
check "kubectl apply -k deploy/ accepted by the API server (server-side dry run)" check_kustomize_accepted
check "deploy/monitoring and the chart's monitoring objects accepted with the Prometheus Operator's PrometheusRule CRD (dry run)" check_monitoring_accepted
check "helm install (examples on) accepted by the API server" check_install
check "installed objects carry deploy/'s fields" check_installed_objects
check "the pod template passes Pod Security restricted" check_pod_security
check "the ServiceAccount can do what the host needs, and not more" check_granted
say "helm's release record: $(release_bytes wasm-reconciler wasm-reconciler) bytes with the examples (a Secret holds at most 1048576)"
check "helm upgrade: replicas, lease name, extra RBAC rule, Service port; then one replica without leader election, no Service" check_upgrade
check "a second release with non-default values beside the first, then uninstalled" check_second_release
check "helm install refuses bad values and creates nothing" check_install_refuses_bad_values
check "helm uninstall removes every object" check_uninstall

echo "helm-check: $passed passed, $failed failed in $((SECONDS - started)) s"
((failed == 0))
