#!/usr/bin/env bash
# Set up jobgauge on a fresh Debian machine with Python 3.11, then act:
#   ./setup.sh serve [jobgauge serve options]   install, then start the web service
#   ./setup.sh test  [pytest options]           install, then run the whole test suite
# Debian packages it needs and lacks are installed with apt-get (as root, or via sudo):
# a Java 17 JDK always; for the tests also PostgreSQL and Chromium.
set -euo pipefail
cd "$(dirname "$0")"
mode=${1:-}
case "$mode" in
  serve|test) shift ;;
  *) echo "usage: ./setup.sh serve|test [options]" >&2; exit 1 ;;
esac

packages=()
command -v javac >/dev/null 2>&1 || packages+=(openjdk-17-jdk-headless)
if [ "$mode" = test ]; then
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || packages+=(postgresql)
  command -v chromium >/dev/null 2>&1 || packages+=(chromium)
fi
if [ ${#packages[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "installing Debian packages: ${packages[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${packages[@]}" >/dev/null
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check --upgrade pip
# The CPU build of torch first: a bare torch requirement would pull the CUDA build.
.venv/bin/pip install -q --disable-pip-version-check torch==2.13.0
.venv/bin/pip install -q --disable-pip-version-check -e ".[test]"

if [ "$mode" = serve ]; then
  exec .venv/bin/jobgauge serve "$@"
fi
exec .venv/bin/python -m pytest "$@"
