{{/* Labels every object carries: deploy/'s, plus Helm's. */}}
{{- define "gpuq.labels" -}}
app.kubernetes.io/name: gpuq
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* gpuq's ServiceAccount as the apiserver names it in a request. */}}
{{- define "gpuq.user" -}}
system:serviceaccount:{{ .Release.Namespace }}:gpuq
{{- end -}}

{{/* The CEL test "resource name k is GPU work" of every requests-gpu
matchCondition: nvidia.com/ and amd.com/, plus each serve.gpuResources
name outside them. */}}
{{- define "gpuq.gpuKey" -}}
k.startsWith('nvidia.com/') || k.startsWith('amd.com/')
{{- range .Values.serve.gpuResources }}
{{- if not (or (hasPrefix "nvidia.com/" .) (hasPrefix "amd.com/" .)) }} || k == '{{ . }}'{{ end }}
{{- end }}
{{- end -}}

{{/* The image reference: repository@digest, or repository:tag. */}}
{{- define "gpuq.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}
