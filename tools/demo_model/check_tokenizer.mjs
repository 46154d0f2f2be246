// Encodes the JSON array of strings on stdin with the Hugging Face Rust tokenizers (the
// @anush008/tokenizers Node binding in third_party/npm, as tools/tokenizer/make_goldens.mjs uses
// it) and prints a JSON array of {ids, dec} (add_special_tokens=true; decode without skipping
// special tokens). Used by check_tokenizer.py.
//   node tools/demo_model/check_tokenizer.mjs TOKENIZER_JSON < strings.json
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const { Tokenizer } = require(path.join(root, 'third_party/npm/node_modules/@anush008/tokenizers'));

const tok = Tokenizer.fromFile(process.argv[2]);
const texts = JSON.parse(readFileSync(0, 'utf8'));
const out = [];
for (const t of texts) {
  const enc = await tok.encode(t, null, { addSpecialTokens: true });
  const ids = Array.from(enc.getIds());
  out.push({ ids, dec: await tok.decode(ids, false) });
}
process.stdout.write(JSON.stringify(out));
