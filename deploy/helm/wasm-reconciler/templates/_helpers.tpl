{{/* Names, labels and derived settings shared by the templates. */}}

{{/* The chart's name, or nameOverride. */}}
{{- define "wasm-reconciler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The release's full name: fullnameOverride, else the release name when it already contains the chart's name
(a release "wasm-reconciler" names its objects as deploy/ does), else "<release>-<name>". At most 63 characters.
*/}}
{{- define "wasm-reconciler.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* helm.sh/chart: name and version. */}}
{{- define "wasm-reconciler.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels that select this release's pods (Deployment selector, Service, topology spread). */}}
{{- define "wasm-reconciler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "wasm-reconciler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The labels of every object the chart owns. */}}
{{- define "wasm-reconciler.labels" -}}
{{ include "wasm-reconciler.selectorLabels" . }}
app.kubernetes.io/part-of: wasm-reconciler
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "wasm-reconciler.chart" . }}
{{- end }}

{{/* Only helm's bookkeeping labels: for the generated example objects, which otherwise stay as generated. */}}
{{- define "wasm-reconciler.releaseLabels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "wasm-reconciler.chart" . }}
{{- end }}

{{/* The ServiceAccount the pods run as. */}}
{{- define "wasm-reconciler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "wasm-reconciler.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Where plugin ConfigMaps and the Lease live: pluginNamespace, or the release namespace. */}}
{{- define "wasm-reconciler.pluginNamespace" -}}
{{- default .Release.Namespace .Values.pluginNamespace }}
{{- end }}

{{/* The leader Lease's name. */}}
{{- define "wasm-reconciler.leaseName" -}}
{{- default (include "wasm-reconciler.fullname" .) .Values.leaderElection.leaseName }}
{{- end }}

{{/* image: repository@digest, or repository:tag with the tag defaulting to appVersion. */}}
{{- define "wasm-reconciler.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
Arguments of `wasm-reconciler run`. The lease flags are passed only when they differ from the host's own defaults
(lease "wasm-reconciler", 15 s, renewal every 10 s), so the default rendering runs the same command as deploy/.
*/}}
{{- define "wasm-reconciler.args" -}}
- run
- --namespace
- {{ include "wasm-reconciler.pluginNamespace" . }}
{{- $sharding := and .Values.sharding .Values.sharding.enabled }}
{{- with .Values.leaderElection }}
{{- if or .enabled $sharding }}
{{- if ge (int .renewSeconds) (int .leaseDurationSeconds) }}
{{- fail (printf "leaderElection.renewSeconds (%d) must be shorter than leaderElection.leaseDurationSeconds (%d)" (int .renewSeconds) (int .leaseDurationSeconds)) }}
{{- end }}
{{- if $sharding }}
- --sharding
{{- else }}
- --leader-elect
{{- end }}
{{- $lease := include "wasm-reconciler.leaseName" $ }}
{{- if ne $lease "wasm-reconciler" }}
- --lease-name
- {{ $lease }}
{{- end }}
{{- if ne (int .leaseDurationSeconds) 15 }}
- --lease-duration-seconds
- {{ int .leaseDurationSeconds | toString | quote }}
{{- end }}
{{- if ne (int .renewSeconds) 10 }}
- --lease-renew-seconds
- {{ int .renewSeconds | toString | quote }}
{{- end }}
{{- end }}
{{- end }}
- --metrics-addr
- {{ printf "0.0.0.0:%d" (int .Values.metrics.port) }}
{{- if .Values.artifactCache.enabled }}
- --artifact-cache
- /var/cache/wasm-reconciler
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/*
The example plugins' ClusterRole rules, as in deploy/rbac.yaml: per plugin, the primary kind (with status and
finalizers) and every kind it owns.
*/}}
{{- define "wasm-reconciler.examplePluginRules" -}}
configmapset:
  - apiGroups: ["examples.wasm-reconciler.io"]
    resources: ["configmapsets"]
    verbs: ["get", "list", "watch", "patch", "update"]
  - apiGroups: ["examples.wasm-reconciler.io"]
    resources: ["configmapsets/status"]
    verbs: ["get", "patch", "update"]
  - apiGroups: ["examples.wasm-reconciler.io"]
    resources: ["configmapsets/finalizers"]
    verbs: ["update"]
  - apiGroups: [""]
    resources: ["configmaps"]
    verbs: ["get", "list", "watch", "create", "patch", "update", "delete"]
webapp:
  - apiGroups: ["examples.wasm-reconciler.io"]
    resources: ["webapps"]
    verbs: ["get", "list", "watch", "patch", "update"]
  - apiGroups: ["examples.wasm-reconciler.io"]
    resources: ["webapps/status"]
    verbs: ["get", "patch", "update"]
  - apiGroups: ["examples.wasm-reconciler.io"]
    resources: ["webapps/finalizers"]
    verbs: ["update"]
  - apiGroups: ["apps"]
    resources: ["deployments"]
    verbs: ["get", "list", "watch", "create", "patch", "update", "delete"]
  - apiGroups: [""]
    resources: ["services", "configmaps"]
    verbs: ["get", "list", "watch", "create", "patch", "update", "delete"]
{{- end }}

{{/* The generated example files, or a failure naming how to produce them. Argument: "crds" or "plugins". */}}
{{- define "wasm-reconciler.exampleFiles" -}}
{{- $root := index . 0 }}
{{- $kind := index . 1 }}
{{- $files := $root.Files.Glob (printf "files/examples/%s/*.yaml" $kind) }}
{{- if not $files }}
{{- fail (printf "examples.enabled needs the generated example files in the chart's files/examples/%s/: run `make deploy-files`, then copy deploy/%s/*.yaml there (docs/deploy.md, \"Install with Helm\")" $kind $kind) }}
{{- end }}
{{- $paths := list }}
{{- range $path, $_ := $files }}
{{- $paths = append $paths $path }}
{{- end }}
{{- toYaml $paths }}
{{- end }}
