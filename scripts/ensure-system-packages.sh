#!/usr/bin/env bash
# Installs the Debian packages that `make test` needs when they are missing.
# As root it runs apt-get; anyone else is told what to install, and the script fails.
# Usage: scripts/ensure-system-packages.sh [COMMAND:PACKAGE ...]  (pairs added to the list below)
set -euo pipefail

# COMMAND:PACKAGE pairs: the command on PATH tells whether its package is installed.
wanted=(
  # tests/test_project.py validates docker-compose.yml with it (no Docker engine needed).
  "docker-compose:docker-compose"
  # tests/admin/test_browser.py drives Debian's Chromium with Playwright.
  "chromium:chromium"
)
wanted+=("$@")

missing=()
for pair in "${wanted[@]}"; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "Debian packages: everything needed is installed."
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "Missing Debian packages: ${missing[*]}" >&2
  echo "Install them, then run make again:" >&2
  echo "  sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

echo "Installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# Without --no-install-recommends, docker-compose pulls in a whole Docker engine.
apt-get install -y -q --no-install-recommends "${missing[@]}"
