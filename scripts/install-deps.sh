#!/usr/bin/env bash
# Installs tern's build and test dependencies from Debian's packages. Idempotent:
# packages already present are left alone and nothing is downloaded when none is missing.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libhwy-dev libpcre2-dev libutf8proc-dev nlohmann-json3-dev libcli11-dev
  libfmt-dev libcpp-httplib-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  chromium  # headless, for the chat page's browser test (tests/server/webui.test.mjs)
  clang libclang-rt-14-dev
  python3 python3-numpy python3-jinja2 python3-regex  # regex: tools/demo_model/bpe.py (demo_qwen35)
  curl ca-certificates iproute2
  openmpi-bin libopenmpi-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm (test-only tools: tokenizer and template oracles, the OpenAI client).
# A machine may carry its own Node build; only install Debian's when there is none.
if ! command -v npm >/dev/null 2>&1; then missing+=(nodejs npm); fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "tern: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
