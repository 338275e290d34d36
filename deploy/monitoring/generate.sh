#!/usr/bin/env bash
# Writes the files generated from deploy/monitoring/rules.yaml and dashboard.json, the sources of the alerts and
# the dashboard:
#   deploy/monitoring/prometheusrule.yaml                        the rules as a PrometheusRule (Prometheus Operator)
#   deploy/helm/wasm-reconciler/files/monitoring/rules.yaml      copies the chart embeds (.Files.Get; a chart can
#   deploy/helm/wasm-reconciler/files/monitoring/dashboard.json  read no file outside its directory)
#
#   deploy/monitoring/generate.sh          (re)write them (`make monitoring-files`)
#   deploy/monitoring/generate.sh --check  write nothing; fail, naming the file, when one differs from what would be
#                                          written (`make monitoring-check` runs this)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
chart_files="$root/deploy/helm/wasm-reconciler/files/monitoring"
check=false
case ${1:-} in
--check) check=true ;;
"") ;;
*) echo "usage: generate.sh [--check]" >&2; exit 2 ;;
esac

# The PrometheusRule: rules.yaml's groups as its spec, text for text (comments kept), after its opening comment.
prometheus_rule() {
	cat <<'HEADER'
# Generated from rules.yaml by generate.sh: edit rules.yaml, then run `make monitoring-files`.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: wasm-reconciler
  namespace: wasm-reconciler
  labels:
    app.kubernetes.io/name: wasm-reconciler
    app.kubernetes.io/part-of: wasm-reconciler
    app.kubernetes.io/component: monitoring
spec:
HEADER
	sed -n '/^groups:/,$p' "$here/rules.yaml" | sed 's/^\(.\)/  \1/'
}

status=0
# emit TARGET: the generated content on stdin written to TARGET, or compared with it.
emit() {
	local target=$1 content
	content="$(cat; echo .)"
	content="${content%.}"
	if $check; then
		if [[ ! -f $target ]] || [[ "$(cat "$target"; echo .)" != "$content." ]]; then
			echo "${target#"$root"/} is not what deploy/monitoring/generate.sh writes: run make monitoring-files" >&2
			status=1
		fi
	else
		mkdir -p "$(dirname "$target")"
		printf '%s' "$content" >"$target"
	fi
}

prometheus_rule | emit "$here/prometheusrule.yaml"
emit "$chart_files/rules.yaml" <"$here/rules.yaml"
emit "$chart_files/dashboard.json" <"$here/dashboard.json"
exit $status
