#!/usr/bin/env bash
# Prometheus for the test suite (issue 31 item 5), from Debian's package only, no registry:
# test/supervisor-metrics-id.test.ts lints a scrape with `promtool check metrics` and runs a real
# `prometheus` server (its own config, data folder and port under the test's temp folder, stopped by
# pid after the test) that scrapes a real endpoint. Without these programs those tests skip.
# Idempotent: nothing to do when both programs are there. Installs no service of its own: the
# package's unit is not started where there is no systemd, and the tests never use it.
# Usage: scripts/prometheus/setup.sh   (as root, or with sudo available)
set -euo pipefail
if command -v promtool >/dev/null && command -v prometheus >/dev/null; then
  echo "prometheus/setup: promtool and prometheus are there" >&2
  exit 0
fi
SUDO=$([ "$(id -u)" = 0 ] && echo || echo sudo)
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends prometheus >&2
promtool --version >&2
