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

{{/* The webhooks of deploy/30-webhook.yaml's configuration of kind K (the
argument: list ROOT K), as this release runs them: no caBundle (gpuq or
cert-manager writes it, never Helm), its namespace in each
service reference and namespaceSelector (for deploy/'s gpuq-system), its
failurePolicy and timeoutSeconds, its gpuq user in not-gpuq-itself, and the
GPU key test of gpuq.gpuKey in every expression. */}}
{{- define "gpuq.webhooks" -}}
{{- $root := index . 0 -}}
{{- $kind := index . 1 -}}
{{- $ns := $root.Release.Namespace -}}
{{- $key := "k.startsWith('nvidia.com/') || k.startsWith('amd.com/')" -}}
{{- $out := list -}}
{{- range $doc := regexSplit "(?m)^---\\s*$" ($root.Files.Get "files/webhook.yaml") -1 }}
{{- $o := fromYaml $doc }}
{{- if eq (get $o "kind") $kind }}
{{- range $w := $o.webhooks }}
{{- $_ := set $w "failurePolicy" $root.Values.webhook.failurePolicy }}
{{- $_ = set $w "timeoutSeconds" $root.Values.webhook.timeoutSeconds }}
{{- $_ = unset $w.clientConfig "caBundle" }}
{{- if $w.clientConfig.service }}
{{- $_ = set $w.clientConfig.service "namespace" $ns }}
{{- end }}
{{- if $w.namespaceSelector }}
{{- range $e := $w.namespaceSelector.matchExpressions }}
{{- $vals := list }}
{{- range $v := $e.values }}{{ $vals = append $vals (ternary $ns $v (eq $v "gpuq-system")) }}{{ end }}
{{- $_ = set $e "values" $vals }}
{{- end }}
{{- end }}
{{- range $m := $w.matchConditions }}
{{- $x := replace $key (include "gpuq.gpuKey" $root) $m.expression }}
{{- $_ = set $m "expression" (replace "system:serviceaccount:gpuq-system:gpuq" (include "gpuq.user" $root) $x) }}
{{- end }}
{{- $out = append $out $w }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end -}}

{{/* The rules of deploy/20-rbac.yaml's ClusterRole gpuq; the one on the
webhook configurations (the caBundle gpuq writes) only with
certificates.mode self. */}}
{{- define "gpuq.clusterRules" -}}
{{- $out := list -}}
{{- range $doc := regexSplit "(?m)^---\\s*$" (.Files.Get "files/rbac.yaml") -1 }}
{{- $o := fromYaml $doc }}
{{- if eq (get $o "kind") "ClusterRole" }}
{{- range $r := $o.rules }}
{{- if or (eq $.Values.certificates.mode "self") (not (has "admissionregistration.k8s.io" $r.apiGroups)) }}
{{- $out = append $out $r }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end -}}

{{/* The `from` entries of 8443: networkPolicy.apiserverCIDRs, or else the
addresses of the `kubernetes` Service's EndpointSlice in the default
namespace (the apiserver's, looked up at install and upgrade) as /32 or
/128. Nothing to name: fail, never an open port (an empty `from` admits every
source). */}}
{{- define "gpuq.apiserverFrom" -}}
{{- $cidrs := .Values.networkPolicy.apiserverCIDRs | default list -}}
{{- if not $cidrs -}}
{{- $slice := lookup "discovery.k8s.io/v1" "EndpointSlice" "default" "kubernetes" -}}
{{- range $ep := ($slice.endpoints | default list) -}}
{{- range $ip := ($ep.addresses | default list) -}}
{{- $cidrs = append $cidrs (printf "%s/%s" $ip (ternary "128" "32" (contains ":" $ip))) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if not $cidrs -}}
{{- fail "networkPolicy: the kube-apiserver's addresses are unknown (no cluster to look them up in, e.g. helm template): set networkPolicy.apiserverCIDRs (docs/install.md, \"Who may reach gpuq\"), or networkPolicy.from to widen 8443" -}}
{{- end -}}
{{- range $cidrs }}
- ipBlock: {cidr: {{ . | quote }}}
{{- end -}}
{{- end -}}
