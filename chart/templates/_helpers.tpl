{{/* Chart name, at most 63 characters (a DNS-1123 label). */}}
{{- define "gpu-slots.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Object name prefix: the release name, plus the chart name unless one contains the other. */}}
{{- define "gpu-slots.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if eq .Release.Name $name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Prefix of the names that get a suffix (-agent, -read-cluster, ...): short enough that the
longest suffix still fits a 63-character name.
*/}}
{{- define "gpu-slots.prefix" -}}
{{- include "gpu-slots.fullname" . | trunc 50 | trimSuffix "-" }}
{{- end }}

{{/* Chart name and version, for the helm.sh/chart label. */}}
{{- define "gpu-slots.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "gpu-slots.labels" -}}
helm.sh/chart: {{ include "gpu-slots.chart" . }}
{{ include "gpu-slots.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gpu-slots
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels that select this release's pods; a component label is added per workload. */}}
{{- define "gpu-slots.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpu-slots.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The dashboard's ServiceAccount name. */}}
{{- define "gpu-slots.serviceAccountName" -}}
{{- if .Values.dashboard.serviceAccount.create }}
{{- default (printf "%s-dashboard" (include "gpu-slots.prefix" .)) .Values.dashboard.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.dashboard.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The agent's ServiceAccount name. */}}
{{- define "gpu-slots.agentServiceAccountName" -}}
{{- if .Values.agent.serviceAccount.create }}
{{- default (printf "%s-agent" (include "gpu-slots.prefix" .)) .Values.agent.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.agent.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference: [registry/]repository:tag, the tag defaulting to appVersion. */}}
{{- define "gpu-slots.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.registry }}
{{- printf "%s/%s:%s" .Values.image.registry .Values.image.repository $tag }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* Names of the two Secrets: admin (admin token, session key) and agent (agent token). */}}
{{- define "gpu-slots.adminSecretName" -}}
{{- printf "%s-admin" (include "gpu-slots.prefix" .) }}
{{- end }}
{{- define "gpu-slots.agentSecretName" -}}
{{- printf "%s-agent-token" (include "gpu-slots.prefix" .) }}
{{- end }}

{{/*
A secret value: the given one, else the one already in the cluster (so `helm upgrade`
keeps generated tokens), else a new random one. Call with
(dict "given" VALUE "secret" SECRET-NAME "key" KEY "namespace" NS).
*/}}
{{- define "gpu-slots.secretValue" -}}
{{- if .given }}
{{- .given }}
{{- else }}
{{- $existing := lookup "v1" "Secret" .namespace .secret }}
{{- $current := dig "data" .key "" $existing }}
{{- if $current }}
{{- $current | b64dec }}
{{- else }}
{{- randAlphaNum 40 }}
{{- end }}
{{- end }}
{{- end }}

{{/* The headless Service naming every dashboard replica (replicas > 1). */}}
{{- define "gpu-slots.peersName" -}}
{{- printf "%s-peers" (include "gpu-slots.fullname" . | trunc 57 | trimSuffix "-") }}
{{- end }}

{{/* The URL the agents post their reports to: every replica's address when there are several. */}}
{{- define "gpu-slots.dashboardUrl" -}}
{{- if .Values.agent.dashboardUrl }}
{{- .Values.agent.dashboardUrl }}
{{- else if gt (int .Values.dashboard.replicas) 1 }}
{{- printf "http://%s.%s.svc:8000" (include "gpu-slots.peersName" .) .Release.Namespace }}
{{- else }}
{{- printf "http://%s.%s.svc:%v" (include "gpu-slots.fullname" .) .Release.Namespace .Values.service.port }}
{{- end }}
{{- end }}
