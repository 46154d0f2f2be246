// End-to-end tests of `tern serve` on a small synthetic checkpoint, through the
// official OpenAI Node client (v6) and raw HTTP. Random weights: the text is
// noise, so these tests check the protocol, determinism, errors, load and
// resource accounting — not answers.
//
// Usage: TERN=path/to/tern MODEL_DIR=dir node --test tests/server/server_e2e.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import net from 'node:net';
import http from 'node:http';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const OpenAI = require(path.join(root, 'third_party/npm/node_modules/openai')).default;

const TERN = process.env.TERN;
const MODEL = process.env.MODEL_DIR;
const KEY = 'test-key-123';
let server, port, base, client, stderr = '';

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

async function raw(method, p, { body, headers = {}, auth = true } = {}) {
  const h = { ...headers };
  if (auth) h.authorization = `Bearer ${KEY}`;
  if (body !== undefined && !('content-type' in h)) h['content-type'] = 'application/json';
  const res = await fetch(base + p, { method, headers: h, body: typeof body === 'string' ? body : body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: res.status, text, json, headers: res.headers };
}

// Waits for /health to answer 200 (the 503s of warm-up are checked by their
// own test, on a model slow enough to see them).
async function waitHealthy(ms) {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    try {
      if ((await fetch(base + '/health')).status === 200) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('server did not become healthy; stderr:\n' + stderr);
}

// Parses an SSE body into JSON payloads; asserts the [DONE] terminator.
function sse(text) {
  const events = text.split('\n\n').filter((e) => e.length > 0);
  assert.equal(events.at(-1), 'data: [DONE]', 'stream must end with data: [DONE]');
  return events.slice(0, -1).map((e) => { assert.ok(e.startsWith('data: '), e); return JSON.parse(e.slice(6)); });
}

before(async () => {
  assert.ok(TERN && MODEL, 'set TERN and MODEL_DIR');
  port = await freePort();
  base = `http://127.0.0.1:${port}`;
  // TERN_LAUNCHER (e.g. "tests/dist/mpirun.sh shm 2") and TERN_SERVE_ARGS (e.g. "--tp 2"): this server is
  // split over the ranks of an mpirun job (tests/dist), one thread a rank. The servers the shutdown and
  // warm-up tests start and end stay single processes (a --tp job's shutdown: tests/dist/faults.sh).
  const launcher = (process.env.TERN_LAUNCHER || '').split(' ').filter(Boolean);
  const extra = (process.env.TERN_SERVE_ARGS || '').split(' ').filter(Boolean);
  const args = ['serve', '--model', MODEL, '--port', String(port), '--api-key', KEY, '--enable-metrics',
    '--served-model-name', 'tiny', '--max-running-requests', '16', '--max-total-tokens', '8192',
    '--reasoning-parser', 'qwen3', '--tool-call-parser', 'qwen25', '--threads', launcher.length ? '1' : '2',
    '--shutdown-grace', '20', '--enable-cache-report', '--http-read-timeout', '3', '--max-connections', '200', ...extra];
  server = launcher.length ? spawn(launcher[0], [...launcher.slice(1), TERN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] })
    : spawn(TERN, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  server.stderr.on('data', (d) => { stderr += d; });
  await waitHealthy(120000);
  client = new OpenAI({ baseURL: base + '/v1', apiKey: KEY, maxRetries: 0 });
});

// The pid of rank 0 of the mpirun job `launcherPid`: a descendant whose environment has
// OMPI_COMM_WORLD_RANK=0 (Open MPI) or PMI_RANK=0 (MPICH).
function rankZeroPid(launcherPid) {
  const parentOf = (pid) => {
    try { return Number(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[1]); } catch { return 0; }
  };
  for (const name of fs.readdirSync('/proc')) {
    const pid = Number(name);
    if (!pid) continue;
    let env;
    try { env = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0'); } catch { continue; }
    if (!env.includes('OMPI_COMM_WORLD_RANK=0') && !env.includes('PMI_RANK=0')) continue;
    for (let p = parentOf(pid); p > 1; p = parentOf(p)) if (p === launcherPid) return pid;
  }
  throw new Error(`no rank 0 under mpirun pid ${launcherPid}`);
}

// Another tern serve on the same model, for tests that end it.
async function startServer(extra) {
  const p = await freePort();
  let err = '';
  const proc = spawn(TERN, ['serve', '--model', MODEL, '--port', String(p), '--threads', '1', '--skip-server-warmup',
    '--max-total-tokens', '1024', ...extra], { stdio: ['ignore', 'ignore', 'pipe'] });
  proc.stderr.on('data', (d) => { err += d; });
  for (let i = 0; i < 600; ++i) {
    try { if ((await fetch(`http://127.0.0.1:${p}/health`)).status === 200) break; } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  return { proc, port: p, stderr: () => err };
}

// (mpirun cannot pass on SIGKILL: it gets SIGTERM and ends its ranks itself.)
after(async () => {
  if (server && server.exitCode === null) server.kill(process.env.TERN_LAUNCHER ? 'SIGTERM' : 'SIGKILL');
});

test('models list, model info, server info', async () => {
  const models = await client.models.list();
  assert.equal(models.data[0].id, 'tiny');
  assert.equal(models.data[0].owned_by, 'sglang');
  assert.ok(models.data[0].max_model_len > 0);
  const info = await raw('GET', '/model_info');
  assert.equal(info.status, 200);
  assert.equal(info.json.is_generation, true);
  assert.equal((await raw('GET', '/get_model_info')).status, 200);
  assert.equal((await raw('GET', '/server_info')).status, 200);
  const missing = await raw('GET', '/v1/models/nope');
  assert.equal(missing.status, 404);
  assert.equal(missing.json.error.code, 'model_not_found');
});

test('chat non-stream: content is a string, usage adds up', async () => {
  const r = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hello' }],
    max_tokens: 12, temperature: 0, chat_template_kwargs: { enable_thinking: false } });
  assert.equal(r.object, 'chat.completion');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.ok(r.usage.completion_tokens <= 12 && r.usage.completion_tokens > 0);
});

test('chat stream equals non-stream under greedy; role first, usage chunk, [DONE]', async () => {
  const req = { model: 'tiny', messages: [{ role: 'user', content: 'Count to five' }], max_tokens: 16, temperature: 0,
    chat_template_kwargs: { enable_thinking: false }, separate_reasoning: false };
  const whole = await raw('POST', '/v1/chat/completions', { body: req });
  assert.equal(whole.status, 200, whole.text);
  const streamed = await raw('POST', '/v1/chat/completions', { body: { ...req, stream: true, stream_options: { include_usage: true } },
    headers: { accept: 'application/json' } });
  assert.equal(streamed.status, 200, streamed.text);
  const chunks = sse(streamed.text);
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  const text = chunks.flatMap((c) => c.choices).map((c) => c.delta?.content ?? '').join('');
  assert.equal(text, whole.json.choices[0].message.content);
  const usage = chunks.at(-1);
  assert.deepEqual(usage.choices, []);
  assert.equal(usage.usage.completion_tokens, whole.json.usage.completion_tokens);
  // Through the SDK as well (it sends accept: application/json with stream: true).
  const stream = await client.chat.completions.create({ ...req, stream: true });
  let sdkText = '';
  for await (const c of stream) sdkText += c.choices[0]?.delta?.content ?? '';
  assert.equal(sdkText, text);
});

test('streamed chat logprobs: every token\'s, as in the whole reply, also where a stop string holds text back', async () => {
  const req = { model: 'tiny', messages: [{ role: 'user', content: 'Count to five' }], max_tokens: 16, temperature: 0,
    logprobs: true, top_logprobs: 2, chat_template_kwargs: { enable_thinking: false }, separate_reasoning: false };
  const entries = (r) => r.map((e) => [e.token, e.logprob, e.top_logprobs.map((t) => t.token)]);
  const streamedEntries = async (body) => {
    const st = await raw('POST', '/v1/chat/completions', { body: { ...body, stream: true } });
    assert.equal(st.status, 200, st.text);
    const chunks = sse(st.text);
    return { lps: chunks.flatMap((c) => c.choices).flatMap((c) => c.logprobs?.content ?? []),
      text: chunks.flatMap((c) => c.choices).map((c) => c.delta?.content ?? '').join('') };
  };
  const whole = await raw('POST', '/v1/chat/completions', { body: req });
  assert.equal(whole.status, 200, whole.text);
  const all = whole.json.choices[0].logprobs.content;
  assert.equal(all.length, whole.json.usage.completion_tokens);
  const s1 = await streamedEntries(req);
  assert.deepEqual(entries(s1.lps), entries(all));
  // A stop string from the text: the tokens of its first characters are held
  // back while it may still match, and those up to the match never appear as text.
  const text = whole.json.choices[0].message.content;
  const chars = [...text];
  const at = chars.findIndex((_, i) => i >= 2 && i + 3 <= chars.length && !chars.slice(i, i + 3).includes('\ufffd'));
  assert.ok(at >= 2, `no stop string candidate in ${JSON.stringify(text)}`);
  const stop = chars.slice(at, at + 3).join('');
  const cut = await raw('POST', '/v1/chat/completions', { body: { ...req, stop: [stop] } });
  assert.equal(cut.status, 200, cut.text);
  assert.equal(cut.json.choices[0].finish_reason, 'stop');
  const s2 = await streamedEntries({ ...req, stop: [stop] });
  assert.equal(s2.text, cut.json.choices[0].message.content);
  assert.deepEqual(entries(s2.lps), entries(cut.json.choices[0].logprobs.content));
  assert.equal(s2.lps.length, cut.json.usage.completion_tokens);
});

test('continue_final_message: the assistant text follows the assistant turn header, as SGLang renders it', async () => {
  const messages = [{ role: 'user', content: 'Name a season.' }];
  const base = { model: 'tiny', max_tokens: 1, temperature: 0, chat_template_kwargs: { enable_thinking: false } };
  const plain = await raw('POST', '/v1/chat/completions', { body: { ...base, messages } });
  const cont = await raw('POST', '/v1/chat/completions', { body: { ...base, continue_final_message: true,
    messages: [...messages, { role: 'assistant', content: 'Autumn' }] } });
  assert.equal(cont.status, 200, cont.text);
  const prefix = await raw('POST', '/v1/tokenize', { body: { prompt: 'Autumn', add_special_tokens: false } });
  // The generation prompt (the assistant header) is kept, and the prefix added after it.
  assert.equal(cont.json.usage.prompt_tokens, plain.json.usage.prompt_tokens + prefix.json.count);
});

test('completions, native /generate and tokenize agree', async () => {
  const prompt = 'The capital city of France is';
  const c = await client.completions.create({ model: 'tiny', prompt, max_tokens: 8, temperature: 0 });
  const g = await raw('POST', '/generate', { body: { text: prompt, sampling_params: { max_new_tokens: 8, temperature: 0 } } });
  assert.equal(g.status, 200, g.text);
  assert.equal(g.json.text, c.choices[0].text);
  assert.equal(g.json.meta_info.completion_tokens, c.usage.completion_tokens);
  assert.equal(g.json.output_ids.length, g.json.meta_info.completion_tokens);
  const tok = await raw('POST', '/v1/tokenize', { body: { prompt } });
  assert.equal(tok.json.count, c.usage.prompt_tokens);
  const detok = await raw('POST', '/v1/detokenize', { body: { tokens: tok.json.tokens } });
  assert.equal(detok.json.text, prompt);
  const gs = await raw('POST', '/generate', { body: { input_ids: tok.json.tokens, stream: true, sampling_params: { max_new_tokens: 8, temperature: 0 } } });
  const events = sse(gs.text);
  assert.equal(events.at(-1).text, g.json.text, 'native stream chunks carry the whole text so far');
  // A batch of one prompt (a list) is answered as a batch: a list of one, chunks with their index (SGLang).
  for (const body of [{ text: [prompt] }, { input_ids: [tok.json.tokens] }]) {
    const b = await raw('POST', '/generate', { body: { ...body, sampling_params: { max_new_tokens: 8, temperature: 0 } } });
    assert.equal(b.status, 200, b.text);
    assert.ok(Array.isArray(b.json) && b.json.length === 1, b.text);
    assert.equal(b.json[0].text, g.json.text);
    const bs = await raw('POST', '/generate', { body: { ...body, stream: true, sampling_params: { max_new_tokens: 8, temperature: 0 } } });
    const ev = sse(bs.text);
    assert.ok(ev.every((e) => e.index === 0), bs.text);
    assert.equal(ev.at(-1).text, g.json.text);
  }
});

test('seed determinism and stop strings', async () => {
  const req = { model: 'tiny', prompt: 'Once upon a time', max_tokens: 24, temperature: 1.0, seed: 42 };
  const a = await client.completions.create(req);
  const b = await client.completions.create(req);
  assert.equal(a.choices[0].text, b.choices[0].text);
  const full = await client.completions.create({ ...req, temperature: 0 });
  const text = full.choices[0].text;
  // A stop string from the greedy text itself: three characters after the
  // first, none a replacement character (a piece of a split UTF-8 sequence).
  const chars = [...text];
  const at = chars.findIndex((_, i) => i >= 1 && i + 3 <= chars.length && !chars.slice(i, i + 3).includes('\ufffd'));
  assert.ok(at >= 1, `no stop string candidate in ${JSON.stringify(text)}`);
  const cut = chars.slice(at, at + 3).join('');
  const want = text.slice(0, text.indexOf(cut));
  const s = await client.completions.create({ ...req, temperature: 0, stop: [cut] });
  assert.equal(s.choices[0].finish_reason, 'stop');
  assert.equal(s.choices[0].text, want);
  // Streamed: the same cut, the held-back text never sent.
  const st = await raw('POST', '/v1/completions', { body: { ...req, temperature: 0, stop: [cut], stream: true } });
  const chunks = sse(st.text);
  assert.equal(chunks.map((c) => c.choices[0]?.text ?? '').join(''), want);
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'stop');
});

test('errors: statuses and SGLang bodies; the server stays healthy', async () => {
  const bad = await raw('POST', '/v1/chat/completions', { body: '{"messages": [' });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.object, 'error');
  const ct = await raw('POST', '/v1/chat/completions', { body: '{}', headers: { 'content-type': 'text/plain' } });
  assert.equal(ct.status, 400);
  // Every route that acts takes JSON bodies only, as SGLang's FastAPI does: a text/plain POST is what any
  // web page may send to a local server without asking (it aborted every request through /abort_request).
  for (const [p, b] of [['/abort_request', '{"abort_all":true}'], ['/generate', '{"text":"x"}'], ['/v1/tokenize', '{"prompt":"x"}'],
    ['/v1/detokenize', '{"tokens":[1]}']]) {
    const r = await raw('POST', p, { body: b, headers: { 'content-type': 'text/plain' } });
    assert.equal(r.status, 400, `${p}: ${r.text}`);
    assert.match(r.text, /Only 'application\/json' is allowed/);
  }
  const cased = await raw('POST', '/v1/tokenize', { body: '{"prompt":"x"}', headers: { 'content-type': 'Application/JSON; charset=utf-8' } });
  assert.equal(cased.status, 200, cased.text);
  const plusJson = await raw('POST', '/v1/tokenize', { body: '{"prompt":"x"}', headers: { 'content-type': 'application/vnd.api+json' } });
  assert.equal(plusJson.status, 200, plusJson.text);
  const empty = await raw('POST', '/v1/chat/completions', { body: { model: 'tiny', messages: [] } });
  assert.equal(empty.status, 400);
  assert.equal(empty.json.message, 'Messages cannot be empty.');
  const temp = await raw('POST', '/v1/completions', { body: { prompt: 'x', temperature: -1 } });
  assert.equal(temp.status, 400);
  const long = await raw('POST', '/v1/completions', { body: { prompt: 'x', max_tokens: 10000000 } });
  assert.equal(long.status, 400);
  assert.match(long.json.message, /context length/);
  const big = await raw('POST', '/v1/completions', { body: JSON.stringify({ prompt: 'a'.repeat(40 << 20) }) });
  assert.equal(big.status, 413);
  const noauth = await raw('GET', '/v1/models', { auth: false });
  assert.equal(noauth.status, 401);
  assert.equal(noauth.json.error.message, 'Unauthorized');
  assert.equal((await raw('GET', '/health', { auth: false })).status, 200);
  assert.equal((await raw('GET', '/metrics', { auth: false })).status, 200);
  const viaSdk = await client.chat.completions.create({ model: 'tiny', messages: [] }).catch((e) => e);
  assert.equal(viaSdk.status, 400);
});

// Issue 24: the Node SDK reads only body.error; SGLang's flat body alone gave
// users "400 status code (no body)". Every error status carries both forms.
test('errors: every error body has SGLang\'s fields and OpenAI\'s error object; the SDK shows the message', async () => {
  const cases = [
    [await raw('POST', '/v1/chat/completions', { body: '{"messages": [' }), 400],
    [await raw('POST', '/v1/chat/completions', { body: { model: 'tiny', messages: [] } }), 400],
    [await raw('POST', '/v1/completions', { body: { prompt: 'x', max_tokens: 10000000 } }), 400],
    [await raw('POST', '/v1/completions', { body: JSON.stringify({ prompt: 'a'.repeat(40 << 20) }) }), 413],
    [await raw('GET', '/v1/models', { auth: false }), 401],
    [await raw('GET', '/v1/models/nope'), 404],
    [await raw('GET', '/no/such/route'), 404],
    [await raw('POST', '/generate', { body: { input_ids: [] } }), 400],
  ];
  for (const [r, status] of cases) {
    assert.equal(r.status, status, r.text);
    assert.equal(typeof r.json?.error?.message, 'string', `no error.message: ${r.text}`);
    assert.ok(r.json.error.message.length > 0 && 'type' in r.json.error && 'param' in r.json.error && 'code' in r.json.error, r.text);
  }
  for (const [r] of cases.slice(0, -1)) {  // /generate keeps SGLang's native form (the error object only)
    assert.equal(r.json.object, 'error', r.text);
    assert.equal(r.json.message, r.json.error.message, r.text);
    assert.equal(r.json.code, r.status, r.text);
  }
  const empty = await client.chat.completions.create({ model: 'tiny', messages: [] }).catch((e) => e);
  assert.equal(empty.message, '400 Messages cannot be empty.');
  assert.equal(empty.type, 'BadRequestError');
  const long = await client.completions.create({ model: 'tiny', prompt: 'x', max_tokens: 10000000 }).catch((e) => e);
  assert.match(long.message, /^400 .*context length/);
  const noKey = await new OpenAI({ baseURL: base + '/v1', apiKey: 'wrong', maxRetries: 0 }).models.list().catch((e) => e);
  assert.equal(noKey.status, 401);
  assert.equal(noKey.message, '401 Unauthorized');
  const streamed = await client.chat.completions.create({ model: 'tiny', messages: [], stream: true }).catch((e) => e);
  assert.equal(streamed.message, '400 Messages cannot be empty.');
});

// Issue 24: special tokens never reach the text a user sees unless asked for.
// Random weights, so logit_bias makes the model emit them: <|im_end|> (a stop
// token: trimmed always, as SGLang trims the matched stop) and <|im_start|>
// (special, not a stop: dropped unless skip_special_tokens is false).
test('special tokens: not in content, reasoning or deltas; with and without tools and parsers, stream or not', async () => {
  const id = async (t) => (await raw('POST', '/v1/tokenize', { body: { prompt: t, add_special_tokens: false } })).json.tokens[0];
  const imEnd = await id('<|im_end|>'), imStart = await id('<|im_start|>');
  assert.notEqual(imEnd, imStart);
  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
  const messages = [{ role: 'user', content: 'What is 17*19?' }];
  const chatText = async (body) => {
    if (!body.stream) {
      const r = await raw('POST', '/v1/chat/completions', { body });
      assert.equal(r.status, 200, r.text);
      const m = r.json.choices[0].message;
      return { text: (m.content ?? '') + '|' + (m.reasoning_content ?? ''), finish: r.json.choices[0].finish_reason };
    }
    const r = await raw('POST', '/v1/chat/completions', { body });
    const chunks = sse(r.text);
    const ch = chunks.flatMap((c) => c.choices);
    return { text: ch.map((c) => c.delta?.content ?? '').join('') + '|' + ch.map((c) => c.delta?.reasoning_content ?? '').join(''),
      finish: ch.map((c) => c.finish_reason).filter(Boolean).at(-1) };
  };
  for (const stream of [false, true])
    for (const withTools of [false, true])
      for (const separate of [true, false]) {
        const base = { model: 'tiny', messages, temperature: 0, stream, separate_reasoning: separate,
          chat_template_kwargs: { enable_thinking: false }, ...(withTools ? { tools } : {}) };
        const what = JSON.stringify({ stream, withTools, separate });
        const stop = await chatText({ ...base, max_tokens: 4, logit_bias: { [imEnd]: 100 } });
        assert.deepEqual(stop, { text: '|', finish: 'stop' }, what);
        const kept = await chatText({ ...base, max_tokens: 3, logit_bias: { [imStart]: 100 } });
        assert.deepEqual(kept, { text: '|', finish: 'length' }, what);
        const asked = await chatText({ ...base, max_tokens: 3, logit_bias: { [imStart]: 100, [imEnd]: 50 }, skip_special_tokens: false });
        assert.equal(asked.text, '<|im_start|>'.repeat(3) + '|', what);
      }
  // Through the SDK, the turn after a tool result (the agent loop's second request).
  const followUp = await client.chat.completions.create({ model: 'tiny', tools, max_tokens: 4, temperature: 0, logit_bias: { [imEnd]: 100 },
    messages: [...messages, { role: 'assistant', content: '', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temperature": 24}' }] });
  assert.equal(followUp.choices[0].message.content, '');
  assert.equal(followUp.choices[0].finish_reason, 'stop');
  // Completions and /generate: the matched stop token is trimmed even with skip_special_tokens false.
  for (const stream of [false, true]) {
    const r = await raw('POST', '/v1/completions', { body: { prompt: 'Hi', max_tokens: 4, temperature: 0, stream, skip_special_tokens: false, logit_bias: { [imEnd]: 100 } } });
    const text = stream ? sse(r.text).map((c) => c.choices[0]?.text ?? '').join('') : r.json.choices[0].text;
    assert.equal(text, '', r.text);
    const k = await raw('POST', '/v1/completions', { body: { prompt: 'Hi', max_tokens: 3, temperature: 0, stream, logit_bias: { [imStart]: 100 } } });
    assert.equal(stream ? sse(k.text).map((c) => c.choices[0]?.text ?? '').join('') : k.json.choices[0].text, '', k.text);
  }
  const g = await raw('POST', '/generate', { body: { text: 'Hi', sampling_params: { max_new_tokens: 4, temperature: 0, skip_special_tokens: false, logit_bias: { [imEnd]: 100 } } } });
  assert.equal(g.json.text, '', g.text);
  assert.deepEqual(g.json.output_ids, [imEnd], 'the stop token stays in output_ids');
});

// /health answers 503 until the warm-up generation has succeeded (SGLang's
// server_status Starting). The warm-up of the tiny model lasts a few ms, too
// short to see; a 0.6B-shaped NVFP4 checkpoint warms up for about a second.
test('/health is 503 while warming up, then 200', async () => {
  const slow = process.env.SLOW_MODEL_DIR;
  assert.ok(slow, 'set SLOW_MODEL_DIR (run_server_e2e.sh synthesizes it)');
  const p = await freePort();
  let err = '';
  const proc = spawn(TERN, ['serve', '--model', slow, '--port', String(p), '--threads', '1'], { stdio: ['ignore', 'ignore', 'pipe'] });
  proc.stderr.on('data', (d) => { err += d; });
  try {
    const seen = [];
    for (let i = 0; i < 6000 && seen.at(-1) !== 200; ++i) {
      try {
        const r = await fetch(`http://127.0.0.1:${p}/health`);
        seen.push(r.status);
        if (r.status === 503) assert.ok(!err.includes('listening on'), 'a 503 after warm-up succeeded');
      } catch {}
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(seen.at(-1), 200, 'never healthy; stderr:\n' + err);
    assert.ok(seen.includes(503), `no 503 before warm-up finished: ${JSON.stringify([...new Set(seen)])}; stderr:\n${err}`);
    assert.ok(seen.slice(0, seen.indexOf(200)).every((s) => s === 503), JSON.stringify(seen));
    assert.match(err, /warming up/);
    const after = await fetch(`http://127.0.0.1:${p}/health`);
    assert.equal(after.status, 200);
  } finally {
    proc.kill('SIGKILL');
  }
});


async function metric(name) {
  const m = await raw('GET', '/metrics', { auth: false });
  const line = m.text.split('\n').find((l) => l.startsWith(name + '{'));
  return Number(line.split(' ').at(-1));
}

// One request written by hand on a socket (for shapes fetch never sends); returns the status line.
function rawRequest(text) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => sock.write(text));
    let got = '';
    sock.on('data', (d) => { got += d; if (got.includes('\r\n')) { resolve(got.split('\r\n')[0]); sock.destroy(); } });
    sock.on('error', reject);
  });
}

async function waitMetric(name, want) {
  let v = -1;
  for (let i = 0; i < 100; ++i) {
    v = await metric(name);
    if (v === want) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return v;
}

// Joins each choice's streamed content by index; checks every index opens with the role and closes with a finish.
function streamedChoices(chunks, n) {
  const texts = Array(n).fill(''), roles = Array(n).fill(0), finishes = Array(n).fill(0);
  for (const c of chunks)
    for (const ch of c.choices ?? []) {
      assert.ok(ch.index >= 0 && ch.index < n, `index ${ch.index}`);
      if (ch.delta?.role) { assert.equal(finishes[ch.index], 0); roles[ch.index]++; }
      texts[ch.index] += ch.delta?.content ?? ch.text ?? '';
      if (ch.finish_reason) finishes[ch.index]++;
    }
  return { texts, roles, finishes };
}

test('n > 1: chat, completions and /generate give n choices; the prompt is counted and computed once', async () => {
  const messages = [{ role: 'user', content: 'Tell me about prefix caching' }];
  const one = await client.chat.completions.create({ model: 'tiny', messages, max_tokens: 10, temperature: 0,
    chat_template_kwargs: { enable_thinking: false }, separate_reasoning: false });
  const three = await client.chat.completions.create({ model: 'tiny', messages, max_tokens: 10, temperature: 0, n: 3,
    chat_template_kwargs: { enable_thinking: false }, separate_reasoning: false });
  assert.deepEqual(three.choices.map((c) => c.index), [0, 1, 2]);
  for (const c of three.choices) assert.equal(c.message.content, one.choices[0].message.content, 'greedy choices agree');
  assert.equal(three.usage.prompt_tokens, one.usage.prompt_tokens, 'the prompt counted once');
  assert.equal(three.usage.completion_tokens, 3 * one.usage.completion_tokens, 'completions summed');

  // Streamed, sampled: every choice has its role chunk, its content and its finish; usage sums.
  const req = { model: 'tiny', messages, max_tokens: 8, temperature: 1, seed: 7, n: 2, stream: true,
    stream_options: { include_usage: true }, chat_template_kwargs: { enable_thinking: false }, separate_reasoning: false };
  const s = await raw('POST', '/v1/chat/completions', { body: req });
  assert.equal(s.status, 200, s.text);
  const chunks = sse(s.text);
  const got = streamedChoices(chunks, 2);
  assert.deepEqual(got.roles, [1, 1]);
  assert.deepEqual(got.finishes, [1, 1]);
  const usage = chunks.at(-1).usage;
  assert.equal(usage.prompt_tokens, one.usage.prompt_tokens);
  const whole = await raw('POST', '/v1/chat/completions', { body: { ...req, stream: false } });
  assert.deepEqual(got.texts, whole.json.choices.map((c) => c.message.content), 'stream equals non-stream per choice (same seeds)');
  assert.equal(usage.completion_tokens, whole.json.usage.completion_tokens);

  const cmp = await client.completions.create({ model: 'tiny', prompt: 'Once upon', max_tokens: 6, n: 2, temperature: 0 });
  assert.equal(cmp.choices.length, 2);
  assert.equal(cmp.choices[0].text, cmp.choices[1].text);
  const cs = await raw('POST', '/v1/completions', { body: { prompt: 'Once upon', max_tokens: 6, n: 2, temperature: 0, stream: true } });
  const cgot = streamedChoices(sse(cs.text), 2);
  assert.deepEqual(cgot.texts, cmp.choices.map((c) => c.text));

  const g = await raw('POST', '/generate', { body: { text: 'Once upon', sampling_params: { max_new_tokens: 6, temperature: 0, n: 2 } } });
  assert.equal(g.status, 200, g.text);
  assert.ok(Array.isArray(g.json) && g.json.length === 2, g.text);
  assert.equal(g.json[0].text, cmp.choices[0].text);
  assert.notEqual(g.json[0].meta_info.id, g.json[1].meta_info.id);
  // A fresh prompt of several pages: the first choice computes it, the others find its whole pages cached.
  const fresh = await raw('POST', '/generate', { body: { text: 'A prompt nobody sent before, long enough for pages. '.repeat(4),
    sampling_params: { max_new_tokens: 2, temperature: 0, n: 3 } } });
  const p = fresh.json[0].meta_info.prompt_tokens;
  assert.ok(p > 32, `prompt of ${p} tokens`);
  assert.deepEqual(fresh.json.map((o) => o.meta_info.cached_tokens), [0, Math.floor((p - 1) / 16) * 16, Math.floor((p - 1) / 16) * 16]);
  const gs = await raw('POST', '/generate', { body: { text: 'Once upon', stream: true, sampling_params: { max_new_tokens: 6, temperature: 0, n: 2 } } });
  const ev = sse(gs.text);
  assert.deepEqual([...new Set(ev.map((e) => e.index))].sort(), [0, 1]);
  for (const i of [0, 1]) assert.equal(ev.filter((e) => e.index === i).at(-1).text, g.json[i].text);
});

test('health probes of an idle server stay out of the request and token metrics', async () => {
  await new Promise((r) => setTimeout(r, 1200));  // idle: /health now runs a one-token probe
  const before = [await metric('sglang:num_requests_total'), await metric('sglang:generation_tokens_total')];
  for (let i = 0; i < 3; ++i) {
    const h = await raw('GET', '/health_generate', { auth: false });
    assert.equal(h.status, 200, h.text);
    await new Promise((r) => setTimeout(r, 1100));
  }
  const after = [await metric('sglang:num_requests_total'), await metric('sglang:generation_tokens_total')];
  assert.deepEqual(after, before);
  const g = await raw('POST', '/generate', { body: { text: 'Hi', sampling_params: { max_new_tokens: 2, temperature: 0 } } });
  assert.equal(g.status, 200, g.text);
  assert.equal(await metric('sglang:num_requests_total'), before[0] + 1, 'a real request is counted');
});

test('prefix cache: a repeated prompt is served from cache, reported, and /flush_cache gives every block back', async () => {
  const text = 'A long shared system prompt. '.repeat(12);
  const body = { text, sampling_params: { max_new_tokens: 4, temperature: 0 } };
  const first = await raw('POST', '/generate', { body });
  const second = await raw('POST', '/generate', { body });
  assert.equal(second.json.text, first.json.text, 'cached KV gives the same greedy text');
  const p = second.json.meta_info.prompt_tokens;
  // Whole 16-token pages, at least one prompt token left to compute.
  assert.equal(second.json.meta_info.cached_tokens, Math.floor((p - 1) / 16) * 16);
  assert.ok(await metric('sglang:cache_hit_rate') > 0);
  assert.ok(await metric('sglang:cached_tokens_total') >= second.json.meta_info.cached_tokens);

  // OpenAI usage with --enable-cache-report.
  const msgs = [{ role: 'system', content: text }, { role: 'user', content: 'hi' }];
  const a = await client.chat.completions.create({ model: 'tiny', messages: msgs, max_tokens: 3, temperature: 0 });
  const b = await client.chat.completions.create({ model: 'tiny', messages: msgs, max_tokens: 3, temperature: 0 });
  assert.equal(b.choices[0].message.content, a.choices[0].message.content);
  assert.ok(b.usage.prompt_tokens_details.cached_tokens >= 16, JSON.stringify(b.usage));

  // Idle: the flush succeeds and every block is free again; the next request computes everything.
  assert.equal(await waitMetric('sglang:num_running_reqs', 0), 0);
  const f = await raw('POST', '/flush_cache', { body: {} });
  assert.equal(f.status, 200, f.text);
  assert.match(f.text, /^Cache flushed/);
  // As `curl -X POST /flush_cache` sends it: no body, no Content-Length.
  assert.equal(await rawRequest(`POST /flush_cache HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\n\r\n`), 'HTTP/1.1 200 OK');
  assert.equal(await metric('sglang:kv_free_blocks'), await metric('sglang:kv_total_blocks'));
  assert.equal(await metric('sglang:kv_cached_blocks'), 0);
  const third = await raw('POST', '/generate', { body });
  assert.equal(third.json.meta_info.cached_tokens, 0);
  assert.equal(third.json.text, first.json.text);
});

test('logit_bias and min_tokens / min_new_tokens steer sampling', async () => {
  const tok = await raw('POST', '/v1/tokenize', { body: { prompt: '}', add_special_tokens: false } });
  const brace = tok.json.tokens[0];
  const biased = await raw('POST', '/generate', { body: { text: 'Hello', sampling_params: { max_new_tokens: 5, temperature: 0, logit_bias: { [brace]: 100 } } } });
  assert.deepEqual(biased.json.output_ids, Array(5).fill(brace));
  const viaOpenAI = await client.completions.create({ model: 'tiny', prompt: 'Hello', max_tokens: 5, temperature: 0.8, logit_bias: { [brace]: 100 } });
  assert.equal(viaOpenAI.choices[0].text, '}}}}}');

  const plain = await raw('POST', '/generate', { body: { text: 'Hello', sampling_params: { max_new_tokens: 8, temperature: 0 } } });
  const first = plain.json.output_ids[0];
  const stopped = await raw('POST', '/generate', { body: { text: 'Hello', sampling_params: { max_new_tokens: 8, temperature: 0, stop_token_ids: [first] } } });
  assert.equal(stopped.json.meta_info.completion_tokens, 1);
  assert.deepEqual(stopped.json.meta_info.finish_reason, { type: 'stop', matched: first });
  const held = await raw('POST', '/generate', { body: { text: 'Hello', sampling_params: { max_new_tokens: 8, temperature: 0, stop_token_ids: [first], min_new_tokens: 4 } } });
  assert.ok(held.json.meta_info.completion_tokens >= 4, held.text);
  assert.ok(!held.json.output_ids.slice(0, 4).includes(first), 'the stop token is suppressed until min_new_tokens');
  const vllm = await raw('POST', '/v1/completions', { body: { prompt: 'Hello', max_tokens: 8, temperature: 0, stop_token_ids: [first], min_tokens: 4 } });
  assert.ok(vllm.json.usage.completion_tokens >= 4, vllm.text);
  // ignore_eos turns every token stop off, stop_token_ids too (SGLang's check_finished).
  const ignored = await raw('POST', '/generate', { body: { text: 'Hello', sampling_params: { max_new_tokens: 8, temperature: 0, stop_token_ids: [first], ignore_eos: true } } });
  assert.equal(ignored.json.meta_info.completion_tokens, 8, ignored.text);
  assert.deepEqual(ignored.json.output_ids, plain.json.output_ids);
  assert.equal(ignored.json.meta_info.finish_reason.type, 'length');
  // stop_regex is refused on every route, never ignored.
  const sr = await raw('POST', '/v1/completions', { body: { prompt: 'Hello', max_tokens: 8, stop_regex: '\\s4' } });
  assert.equal(sr.status, 400, sr.text);
  assert.match(sr.text, /stop_regex/);
});

test('tool_choice: none renders no tools; a named function forces its call; unknown names are 400', async () => {
  const messages = [{ role: 'user', content: 'weather in Paris?' }];
  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
    { type: 'function', function: { name: 'get_time' } }];
  const base = { model: 'tiny', messages, max_tokens: 1, temperature: 0, chat_template_kwargs: { enable_thinking: false } };
  const bare = await client.chat.completions.create(base);
  const none = await client.chat.completions.create({ ...base, tools, tool_choice: 'none' });
  const auto = await client.chat.completions.create({ ...base, tools });
  assert.equal(none.usage.prompt_tokens, bare.usage.prompt_tokens, 'tool_choice none: the template sees no tools (SGLang)');
  assert.ok(auto.usage.prompt_tokens > bare.usage.prompt_tokens, 'tools rendered for auto');
  assert.equal(none.choices[0].message.tool_calls ?? null, null);

  // Named: the reply starts inside a call of get_weather. Random weights write no valid
  // arguments, so '{' is forced with logit_bias and the call is cut after it.
  const lb = (await raw('POST', '/v1/tokenize', { body: { prompt: '{', add_special_tokens: false } })).json.tokens[0];
  const named = { ...base, tools, tool_choice: { type: 'function', function: { name: 'get_weather' } }, logit_bias: { [lb]: 100 } };
  const r = await client.chat.completions.create(named);
  assert.equal(r.choices[0].message.tool_calls.length, 1, JSON.stringify(r));
  assert.equal(r.choices[0].message.tool_calls[0].function.name, 'get_weather');
  assert.match(r.choices[0].message.tool_calls[0].id, /^call_[0-9a-f]{24}$/);
  assert.equal(r.choices[0].message.content, '');
  // Only the named tool is rendered (SGLang), and the forced start of its call follows the prompt.
  const autoOne = await client.chat.completions.create({ ...base, tools: [tools[0]] });
  assert.ok(r.usage.prompt_tokens > autoOne.usage.prompt_tokens, 'the forced call start is part of the prompt');
  const st = await raw('POST', '/v1/chat/completions', { body: { ...named, stream: true } });
  const calls = sse(st.text).flatMap((c) => c.choices).flatMap((c) => c.delta?.tool_calls ?? []);
  assert.equal(calls[0].function.name, 'get_weather');
  assert.match(calls[0].id, /^call_/);

  // With thinking on (the qwen3 parser's default), the forced call is still held to the tools' schemas:
  // the grammar once waited for a </think> that the forced prompt had already written.
  const unitTool = [{ type: 'function', function: { name: 'set_unit', parameters: { type: 'object',
    properties: { unit: { enum: ['c', 'f'] } }, required: ['unit'], additionalProperties: false } } }];
  const thinking = await raw('POST', '/v1/chat/completions', { body: { model: 'tiny', messages, max_tokens: 48, temperature: 0,
    tools: unitTool, tool_choice: 'required' } });
  assert.equal(thinking.status, 200, thinking.text);
  const tcs = thinking.json.choices[0].message.tool_calls ?? [];
  assert.ok(tcs.length >= 1, thinking.text);
  for (const c of tcs) {
    assert.equal(c.function.name, 'set_unit');
    assert.ok(['c', 'f'].includes(JSON.parse(c.function.arguments).unit), c.function.arguments);
    assert.deepEqual(Object.keys(JSON.parse(c.function.arguments)), ['unit']);
  }
  assert.equal(thinking.json.choices[0].message.reasoning_content ?? null, null);
  // deepseek-r1 reasons by default: a forced call is still the reply, not reasoning.
  const r1 = await startServer(['--reasoning-parser', 'deepseek-r1', '--tool-call-parser', 'qwen25']);
  try {
    const res = await fetch(`http://127.0.0.1:${r1.port}/v1/chat/completions`, { method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', messages, max_tokens: 48, temperature: 0, tools: unitTool, tool_choice: 'required' }) });
    const j = await res.json();
    assert.equal(res.status, 200, JSON.stringify(j));
    assert.ok((j.choices[0].message.tool_calls ?? []).length >= 1, JSON.stringify(j));
    assert.equal(j.choices[0].message.tool_calls[0].function.name, 'set_unit');
    assert.equal(j.choices[0].message.reasoning_content ?? null, null, JSON.stringify(j));
  } finally {
    r1.proc.kill('SIGKILL');
  }

  const unknown = await raw('POST', '/v1/chat/completions', { body: { ...base, tools, tool_choice: { type: 'function', function: { name: 'nope' } } } });
  assert.equal(unknown.status, 400);
  assert.equal(unknown.json.message, "Tool 'nope' not found in tools list.");
  const required = await raw('POST', '/v1/chat/completions', { body: { ...base, tool_choice: 'required' } });
  assert.equal(required.status, 400);
  assert.equal(required.json.message, 'Tools cannot be empty if tool choice is set to required.');
});

test('64 concurrent streams complete well-formed', async () => {
  const reqs = Array.from({ length: 64 }, (_, i) => raw('POST', '/v1/completions', {
    body: { prompt: `Request ${i}`, max_tokens: 8, temperature: 0, stream: true } }));
  const results = await Promise.all(reqs);
  for (const r of results) {
    assert.equal(r.status, 200, r.text);
    const chunks = sse(r.text);
    assert.ok(chunks.some((c) => c.choices?.[0]?.finish_reason), 'a finish chunk');
  }
});

test('clients that vanish mid-stream give back every KV block', async () => {
  const aborts = [];
  for (let i = 0; i < 32; ++i) {
    aborts.push(new Promise((resolve) => {
      const req = http.request(base + '/v1/completions', { method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` } }, (res) => {
        res.once('data', () => { req.destroy(); resolve(); });
      });
      req.on('error', () => resolve());
      req.end(JSON.stringify({ prompt: `Story ${i}`, max_tokens: 2000, stream: true, ignore_eos: true }));
    }));
  }
  await Promise.all(aborts);
  assert.equal(await waitMetric('sglang:kv_used_blocks', 0), 0, 'no request holds a KV block');
  assert.ok(await metric('sglang:num_aborted_requests_total') >= 32);
  // What the prefix cache kept goes back on a flush: the whole pool is free.
  assert.equal(await waitMetric('sglang:num_running_reqs', 0), 0);
  assert.equal((await raw('POST', '/flush_cache', { body: {} })).status, 200);
  assert.equal(await metric('sglang:kv_free_blocks'), await metric('sglang:kv_total_blocks'));
});

// Bytes written by hand; resolves with everything the server sent once it closes (or after `ms`).
function rawExchange(chunks, ms = 10000) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let got = '';
    const done = () => { clearTimeout(timer); sock.destroy(); resolve(got); };
    const timer = setTimeout(done, ms);
    sock.on('data', (d) => { got += d; });
    sock.on('close', done);
    sock.on('error', done);
    sock.on('connect', async () => {
      for (const c of chunks) { if (!sock.write(c)) await new Promise((r) => sock.once('drain', r)); }
    });
  });
}

function serverRssMb() {
  const status = require('node:fs').readFileSync(`/proc/${server.pid}/status`, 'utf8');
  return Number(status.match(/VmRSS:\s+(\d+)/)[1]) / 1024;
}

test('bodies past the limit are 413 whatever their encoding; the server stays healthy and small', async () => {
  const zlib = require('node:zlib');
  const head = `POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\n`;
  const rss0 = serverRssMb();
  // 400 MB chunked: refused after 32 MiB, not buffered.
  const chunk = 'a'.repeat(1 << 20);
  const chunks = [head + 'Transfer-Encoding: chunked\r\n\r\n'];
  for (let i = 0; i < 400; ++i) chunks.push(`${(1 << 20).toString(16)}\r\n${chunk}\r\n`);
  chunks.push('0\r\n\r\n');
  const chunked = await rawExchange(chunks);
  assert.match(chunked, /^HTTP\/1.1 413/, chunked.slice(0, 200));
  // A 256 KB gzip body that would inflate to 256 MB.
  const bomb = zlib.gzipSync(Buffer.alloc(256 << 20, 0x20), { level: 9 });
  assert.ok(bomb.length < 1 << 20);
  const gz = await rawExchange([head + `Content-Encoding: gzip\r\nContent-Length: ${bomb.length}\r\n\r\n`, bomb]);
  assert.match(gz, /^HTTP\/1.1 (413|415)/, gz.slice(0, 200));
  // Content-Length: -5 is refused at once.
  const t0 = Date.now();
  const neg = await rawExchange([head + 'Content-Length: -5\r\n\r\n{}']);
  assert.match(neg, /^HTTP\/1.1 400/, neg);
  assert.ok(Date.now() - t0 < 3000, 'the connection is closed, not held');
  assert.ok(serverRssMb() - rss0 < 400, `RSS grew from ${rss0} to ${serverRssMb()} MB`);
  assert.equal((await raw('GET', '/health', { auth: false })).status, 200);
});

test('a half-sent request does not hold its connection past --http-read-timeout', async () => {
  const t0 = Date.now();
  const got = await rawExchange([`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le`], 20000);
  const s = (Date.now() - t0) / 1000;
  assert.ok(s < 6, `held for ${s} s (read timeout 3 s)`);
  assert.ok(!got.startsWith('HTTP/1.1 2'), got);
});

test('connections past --max-connections are answered 503; service resumes when they go', async () => {
  // The server runs with --max-connections 200; 200 half-sent requests hold every worker.
  const socks = [];
  for (let i = 0; i < 200; ++i) {
    socks.push(await new Promise((resolve) => { const s = net.connect(port, '127.0.0.1', () => { s.write('GET /health HTTP/1.1\r\n'); resolve(s); }); s.on('error', () => {}); }));
  }
  await new Promise((r) => setTimeout(r, 200));
  const over = await rawExchange(['GET /health HTTP/1.1\r\nHost: x\r\n\r\n'], 3000);
  assert.match(over, /^HTTP\/1.1 503/, over);
  for (const s of socks) s.destroy();
  let ok = 0;
  for (let i = 0; i < 50 && ok !== 200; ++i) {
    await new Promise((r) => setTimeout(r, 50));
    ok = (await raw('GET', '/health', { auth: false }).catch(() => ({ status: 0 }))).status;
  }
  assert.equal(ok, 200);
});

test('non-stream clients that vanish give back every KV block', async () => {
  await waitMetric('sglang:num_running_reqs', 0);
  const reqs = [];
  for (let i = 0; i < 16; ++i) {
    const req = http.request(base + (i % 2 ? '/v1/completions' : '/generate'), { method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` } });
    req.on('error', () => {});
    req.end(JSON.stringify(i % 2 ? { prompt: `Story ${i}`, max_tokens: 2000, ignore_eos: true }
      : { text: `Story ${i}`, sampling_params: { max_new_tokens: 2000, ignore_eos: true } }));
    reqs.push(req);
  }
  // Wait until they run, then hang up.
  for (let i = 0; i < 100 && await metric('sglang:num_running_reqs') < 16; ++i) await new Promise((r) => setTimeout(r, 50));
  assert.ok(await metric('sglang:kv_used_blocks') > 0);
  for (const r of reqs) r.destroy();
  const t0 = Date.now();
  let used = -1;
  for (let i = 0; i < 60 && used !== 0; ++i) { used = await metric('sglang:kv_used_blocks'); if (used) await new Promise((r) => setTimeout(r, 50)); }
  assert.equal(used, 0, 'no request holds a KV block');
  assert.ok(Date.now() - t0 < 3000, `blocks back after ${Date.now() - t0} ms`);
  assert.equal(await waitMetric('sglang:num_running_reqs', 0), 0);
});

test('bounds: n, logprobs, token ids and max_tokens are checked, never truncated', async () => {
  const n = await raw('POST', '/v1/completions', { body: { prompt: 'x', n: 2 ** 40, max_tokens: 1 } });
  assert.equal(n.status, 400, n.text);
  assert.match(n.json.message, /n must be at most 128/);
  const n2 = await raw('POST', '/generate', { body: { text: 'x', sampling_params: { n: 20000, max_new_tokens: 1 } } });
  assert.equal(n2.status, 400, n2.text);
  const lp = await raw('POST', '/v1/chat/completions', { body: { messages: [{ role: 'user', content: 'x' }], logprobs: true, top_logprobs: 2 ** 32 + 5, max_tokens: 1 } });
  assert.equal(lp.status, 400, lp.text);
  assert.match(lp.json.message, /top_logprobs/);
  const clp = await raw('POST', '/v1/completions', { body: { prompt: 'x', logprobs: 2 ** 32 + 5, max_tokens: 1 } });
  assert.equal(clp.status, 400, clp.text);
  const big = await raw('POST', '/v1/completions', { body: '{"prompt": "x", "max_tokens": 9223372036854775000}' });
  assert.equal(big.status, 400, big.text);
  assert.match(big.json.message, /context length/);
  const detok = await raw('POST', '/v1/detokenize', { body: { tokens: [1, 2 ** 32 + 5] } });
  assert.equal(detok.status, 400, detok.text);
  const oov = await raw('POST', '/v1/detokenize', { body: { tokens: [1, 10000000] } });
  assert.equal(oov.status, 400, oov.text);
  assert.match(oov.json.message, /index 1 .*\[0, \d+\)/);
  for (const [p, body] of [['/abort_request', { rid: 5 }], ['/abort_request', { abort_all: 'maybe' }],
    ['/v1/tokenize', { prompt: 7 }], ['/v1/tokenize', { prompt: 'x', add_special_tokens: [] }],
    ['/v1/detokenize', { tokens: 'x' }], ['/v1/detokenize', { tokens: [1], skip_special_tokens: {} }]]) {
    const r = await raw('POST', p, { body });
    assert.equal(r.status, 400, `${p} ${JSON.stringify(body)}: ${r.status} ${r.text}`);
  }
  assert.equal((await raw('GET', '/health', { auth: false })).status, 200);
});

test('SIGTERM with an idle half-open connection exits 0 within the grace period', async () => {
  const second = await startServer(['--shutdown-grace', '3']);
  const sock = net.connect(second.port, '127.0.0.1', () => sock.write('POST /generate HTTP/1.1\r\nHost: x\r\nContent-Len'));
  sock.on('error', () => {});
  const idle = net.connect(second.port, '127.0.0.1');
  idle.on('error', () => {});
  await new Promise((r) => setTimeout(r, 300));
  const t0 = Date.now();
  const exited = new Promise((resolve) => second.proc.on('exit', (code) => resolve(code)));
  second.proc.kill('SIGTERM');
  const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), 8000))]);
  if (code === 'timeout') second.proc.kill('SIGKILL');
  sock.destroy();
  idle.destroy();
  assert.equal(code, 0, second.stderr());
  assert.ok(Date.now() - t0 < 8000);
});

test('SIGTERM drains: a running request finishes, then the server exits 0', async () => {
  const running = raw('POST', '/v1/completions', { body: { prompt: 'Drain me', max_tokens: 24, temperature: 0 } });
  // A stream drains to its end too: its last chunks, usage and [DONE] (the server's listening socket
  // once closed at SIGTERM, which ended every stream's writes at once).
  const streaming = raw('POST', '/v1/completions', { body: { prompt: 'Drain me too', max_tokens: 3000, temperature: 0,
                                                           ignore_eos: true, stream: true,
                                                           stream_options: { include_usage: true } } });
  await new Promise((r) => setTimeout(r, 100));
  const exited = new Promise((resolve) => server.on('exit', (code) => resolve(code)));
  // Under mpirun the drain is SIGTERM to rank 0 (the server); mpirun itself cuts the job (tests/dist/faults.sh).
  if (process.env.TERN_LAUNCHER) process.kill(rankZeroPid(server.pid), 'SIGTERM');
  else server.kill('SIGTERM');
  const r = await running;
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.usage.completion_tokens, 24);
  const s = await streaming;
  assert.equal(s.status, 200, s.text.slice(0, 300));
  const events = sse(s.text);
  assert.equal(events.at(-1).usage.completion_tokens, 3000, s.text.slice(-300));
  assert.equal(events.at(-2).choices[0].finish_reason, 'length');
  assert.equal(await exited, 0);
});
