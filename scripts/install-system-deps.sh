#!/usr/bin/env bash
# Debian packages the tests use: gcc (fake libnvidia-ml), prometheus + promtool, chromium,
# prometheus-pushgateway (advisor metrics pushed for real).
# Installs only what is missing, so a warm machine pays nothing.
set -euo pipefail
need=()
command -v gcc >/dev/null || need+=(gcc libc6-dev)
command -v prometheus >/dev/null || need+=(prometheus)
command -v promtool >/dev/null || need+=(prometheus)
command -v chromium >/dev/null || need+=(chromium)
command -v prometheus-pushgateway >/dev/null || need+=(prometheus-pushgateway)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  echo "missing Debian packages: ${need[*]} (run as root or install them)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
