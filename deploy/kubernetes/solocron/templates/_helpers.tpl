{{/* The objects' name: the release name, with "-solocron" unless it already says so. */}}
{{- define "solocron.fullname" -}}
{{- if contains "solocron" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-solocron" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "solocron.selectorLabels" -}}
app.kubernetes.io/name: solocron
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "solocron.labels" -}}
{{ include "solocron.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "solocron.secretName" -}}
{{- .Values.secret.existingSecret | default (include "solocron.fullname" .) -}}
{{- end -}}

{{/* Refuse settings that would break the scheduler's guarantees or leak a secret. */}}
{{- define "solocron.checks" -}}
{{- if le (int .Values.terminationGracePeriodSeconds) (add (int .Values.shutdownGraceSeconds) 25 | int) -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed shutdownGraceSeconds (%d) + 25: the kubelet would SIGKILL runs in flight before they drain and their records close" (int .Values.terminationGracePeriodSeconds) (int .Values.shutdownGraceSeconds)) -}}
{{- end -}}
{{- if not (contains "${SOLOCRON_ADMIN_TOKEN}" .Values.table) -}}
{{- fail "table: admin.token must be ${SOLOCRON_ADMIN_TOKEN} (from the chart's Secret): the admin API listens on the pod's address, which the scheduler refuses without a token, and the table lands in a ConfigMap, which must hold no secret" -}}
{{- end -}}
{{- if and (gt (int .Values.replicaCount) 1) (not (regexMatch "(?m)^store:" .Values.table)) -}}
{{- fail "table: no store section: without store.url every replica runs an embedded store of its own and every run starts once per replica; name a Redis shared by all replicas" -}}
{{- end -}}
{{- if and (not .Values.secret.existingSecret) (not .Values.secret.adminToken) -}}
{{- fail "secret.adminToken is required (or secret.existingSecret naming a Secret with the keys admin-token and store-password)" -}}
{{- end -}}
{{- end -}}
