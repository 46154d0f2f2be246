// Request logs of `tern serve` on the bundled demo model (issue 21 item 6):
// one line per finished request, JSON lines with --log-requests-format json
// whose fields agree with what the client itself saw (status, the response's
// id or its own X-Request-Id, usage), probes left to debug, and no prompt or
// completion text unless --log-requests asks for it.
//
// Usage: TERN=path/to/tern node --test tests/server/request_log.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';

const TERN = process.env.TERN;
const MARKER = 'quokka51873';  // in every prompt; must never reach a log unasked
const chat = (extra = {}) => ({
  model: 'demo', messages: [{ role: 'user', content: `Reply with the word ${MARKER}.` }], max_tokens: 16,
  temperature: 0, chat_template_kwargs: { enable_thinking: false }, ...extra,
});

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

// Starts tern serve with `args`; returns { base, stop() -> stderr }.
async function serve(args) {
  assert.ok(TERN, 'set TERN');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = spawn(TERN, ['serve', '--port', String(port), '--threads', '2', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  for (let i = 0; i < 1200; ++i) {
    try { if ((await fetch(base + '/health')).status === 200) break; } catch {}
    if (proc.exitCode !== null) throw new Error('tern serve exited:\n' + stderr);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    base,
    async stop() { proc.kill('SIGTERM'); await exited; return stderr; },
  };
}

const post = (base, path, body, headers = {}) =>
  fetch(base + path, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body });

// The usage and text of an SSE chat stream.
async function readStream(r) {
  const text = await r.text();
  let usage = null, content = '', id = null;
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const j = JSON.parse(line.slice(6));
    if (j.usage) usage = j.usage;
    id = j.id;
    if (j.choices?.[0]?.delta?.content) content += j.choices[0].delta.content;
  }
  return { usage, content, id };
}

test('JSON request lines agree with what the client saw; no prompt text', async () => {
  const srv = await serve(['--log-requests-format', 'json', '--enable-metrics']);
  const r1 = await post(srv.base, '/v1/chat/completions', JSON.stringify(chat()));
  assert.equal(r1.status, 200);
  const j1 = await r1.json();
  assert.equal(r1.headers.get('x-request-id'), j1.id);  // the response's id names it
  const r2 = await post(srv.base, '/v1/chat/completions',
    JSON.stringify(chat({ stream: true, stream_options: { include_usage: true } })), { 'X-Request-Id': 'gw-req-42' });
  assert.equal(r2.headers.get('x-request-id'), 'gw-req-42');  // a gateway's id comes back as sent
  const s2 = await readStream(r2);
  assert.ok(s2.usage && s2.usage.completion_tokens > 0);
  const r3 = await fetch(srv.base + '/v1/models');
  assert.match(r3.headers.get('x-request-id'), /^[0-9a-f]{32}$/);  // none given, not a generation: a fresh one
  await r3.text();
  const r4 = await post(srv.base, '/v1/completions', `{"prompt": "${MARKER}", `);
  assert.equal(r4.status, 400);
  await r4.text();
  const r5 = await fetch(srv.base + '/no/such/path', { headers: { 'X-Request-Id': 'bad id with spaces' } });
  assert.equal(r5.status, 404);
  assert.notEqual(r5.headers.get('x-request-id'), 'bad id with spaces');
  await r5.text();
  // A rid that is no header value (a control character) is not sent back as
  // one: the response stays well-formed (fetch's parser refuses such a header
  // line) with a fresh id, and the log names the rid as the response's id.
  const r6 = await post(srv.base, '/v1/chat/completions', JSON.stringify(chat({ rid: 'rid\u0001x' })));
  assert.equal(r6.status, 200);
  assert.match(r6.headers.get('x-request-id'), /^[0-9a-f]{32}$/);
  await r6.text();
  await (await fetch(srv.base + '/metrics')).text();
  const stderr = await srv.stop();

  assert.ok(!stderr.includes(MARKER), 'the prompt reached the log:\n' + stderr);
  const lines = stderr.split('\n').filter((l) => l.startsWith('{'));
  const logged = lines.map((l) => JSON.parse(l));  // every such line is one JSON object
  const requests = logged.filter((e) => e.event === 'request');
  for (const e of requests) {
    for (const k of ['time', 'method', 'path', 'status', 'latency_ms', 'request_id', 'remote_addr'])
      assert.ok(k in e, `${k} missing from ${JSON.stringify(e)}`);
    assert.ok(!Number.isNaN(Date.parse(e.time)));
    assert.ok(e.latency_ms >= 0);
    assert.equal(e.remote_addr, '127.0.0.1');
  }
  const byId = (id) => requests.find((e) => e.request_id === id);
  const e1 = byId(j1.id);
  assert.ok(e1, 'no line for the chat completion:\n' + stderr);
  assert.deepEqual([e1.method, e1.path, e1.status], ['POST', '/v1/chat/completions', 200]);
  assert.equal(e1.prompt_tokens, j1.usage.prompt_tokens);
  assert.equal(e1.completion_tokens, j1.usage.completion_tokens);
  assert.ok(!('prompt' in e1) && !('completion' in e1));
  const e2 = byId('gw-req-42');
  assert.ok(e2, 'no line for the streamed chat:\n' + stderr);
  assert.equal(e2.status, 200);
  assert.equal(e2.response_id, s2.id);  // the id in the stream's chunks
  assert.equal(e2.prompt_tokens, s2.usage.prompt_tokens);
  assert.equal(e2.completion_tokens, s2.usage.completion_tokens);
  assert.equal(byId(r3.headers.get('x-request-id'))?.path, '/v1/models');
  const e4 = requests.find((e) => e.path === '/v1/completions');
  assert.equal(e4?.status, 400);
  const e5 = requests.find((e) => e.path === '/no/such/path');
  assert.equal(e5?.status, 404);
  assert.equal(e5.request_id, r5.headers.get('x-request-id'));
  // Load balancers' probes stay out of the info log.
  assert.ok(!requests.some((e) => e.path === '/health' || e.path === '/metrics'), stderr);
  const e6 = byId(r6.headers.get('x-request-id'));
  assert.equal(e6?.response_id, 'rid\u0001x', stderr);
  assert.equal(requests.length, 6, stderr);
});

test('text lines by default, one per request', async () => {
  const srv = await serve([]);
  const r = await post(srv.base, '/v1/chat/completions', JSON.stringify(chat()));
  const j = await r.json();
  const stderr = await srv.stop();
  assert.ok(!stderr.includes(MARKER));
  const line = stderr.split('\n').find((l) => l.includes(j.id));
  assert.ok(line, stderr);
  assert.match(line, new RegExp(`^tern serve: POST /v1/chat/completions 200 [0-9.]+ ms id=${j.id} ` +
    `prompt_tokens=${j.usage.prompt_tokens} completion_tokens=${j.usage.completion_tokens} remote=127\\.0\\.0\\.1$`));
});

test('--log-requests --log-requests-level 3 puts the texts in, with a warning', async () => {
  const srv = await serve(['--log-requests', '--log-requests-level', '3', '--log-requests-format', 'json']);
  const r = await post(srv.base, '/v1/chat/completions', JSON.stringify(chat()));
  const j = await r.json();
  const stderr = await srv.stop();
  assert.match(stderr, /warning: --log-requests: request log lines carry prompt and completion text/);
  const e = stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).find((x) => x.request_id === j.id);
  assert.ok(e, stderr);
  assert.ok(e.prompt.includes(MARKER), e.prompt);  // the rendered prompt
  assert.ok(e.completion.includes(j.choices[0].message.content.trim()), JSON.stringify([e.completion, j.choices[0].message]));
  assert.equal(e.sampling.top_k, 1);  // temperature 0 is greedy: SGLang's top_k 1
  assert.equal(e.sampling.max_new_tokens, 16);
});

test('a bad --log-requests-format or level is a startup error', async () => {
  for (const [args, message] of [[['--log-requests-format', 'yaml'], '--log-requests-format yaml: expected text or json'],
                                 [['--log-requests-level', '7'], '--log-requests-level 7: expected 0, 1, 2 or 3']]) {
    const proc = spawn(TERN, ['serve', '--port', '1', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (d) => { stderr += d; });
    const code = await new Promise((resolve) => proc.on('exit', resolve));
    assert.equal(code, 1, stderr);
    assert.ok(stderr.includes(message), stderr);
  }
});
