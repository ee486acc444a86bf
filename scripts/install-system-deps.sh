#!/usr/bin/env bash
# Debian packages, installed only when missing so a warm machine pays nothing.
#   demo: prometheus (the demo scrapes the exporters directly without it)
#   test: also gcc (fake libnvidia-ml), promtool, chromium (pages), prometheus-pushgateway,
#         victoria-metrics (a second Prometheus-API store, holding two clusters' series),
#         kubectl (its built-in kustomize builds deploy/base and the overlays; the tests
#         need kustomize v4 or newer, kubectl 1.21+: Debian bookworm's kubernetes-client
#         is 1.20, so there install kubectl from pkgs.k8s.io instead)
set -euo pipefail
mode=${1:-test}
need=()
command -v prometheus >/dev/null || need+=(prometheus)
if [ "$mode" = test ]; then
  command -v gcc >/dev/null || need+=(gcc libc6-dev)
  command -v promtool >/dev/null || need+=(prometheus)
  command -v chromium >/dev/null || need+=(chromium)
  command -v prometheus-pushgateway >/dev/null || need+=(prometheus-pushgateway)
  command -v victoria-metrics >/dev/null || need+=(victoria-metrics)
  command -v openssl >/dev/null || need+=(openssl)  # a test CA for Prometheus over TLS
  command -v kubectl >/dev/null || need+=(kubernetes-client)
fi
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  echo "missing Debian packages: ${need[*]} (run as root or install them)" >&2
  [ "$mode" = demo ] && exit 0  # the demo still runs, without Prometheus
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
