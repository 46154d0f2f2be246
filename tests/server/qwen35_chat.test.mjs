// The Qwen3.5 chat template end to end in `tern serve` (issue 7): a synthetic
// qwen3.5-tiny checkpoint (random weights) carrying the real Qwen3.5 template,
// served with --reasoning-parser qwen3 --tool-call-parser qwen3_coder.
//
// The model's text is noise, so nothing here depends on what it says:
// - prompts: the token ids tern generates from (return_prompt_token_ids) equal
//   the template rendered by an independent engine (@huggingface/jinja) and
//   tokenized by Hugging Face tokenizers (@anush008/tokenizers);
// - reasoning: the split of the reply is derived from the same reply fetched
//   raw (separate_reasoning: false) and checked against the rules of SGLang's
//   qwen3 parser, stream and non-stream alike;
// - tool calls: a named tool_choice forces the call's start, logit_bias makes
//   the first generated token </tool_call>, so the whole reply is known.
//
// Usage: TERN=path/to/tern MODEL_DIR=dir node --test tests/server/qwen35_chat.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import net from 'node:net';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const npm = path.join(root, 'third_party/npm/node_modules');
const OpenAI = require(path.join(npm, 'openai')).default;
const { Tokenizer } = require(path.join(npm, '@anush008/tokenizers'));
const { Template } = await import(path.join(npm, '@huggingface/jinja/dist/index.js'));

const TERN = process.env.TERN;
const MODEL = process.env.MODEL_DIR;
let server, base, client, tokenizer, template, stderr = '';

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

async function post(p, body) {
  const res = await fetch(base + p, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: res.status, text, json };
}

// A streamed chat reply: the SSE payloads (asserting the [DONE] end).
async function stream(body) {
  const r = await post('/v1/chat/completions', { ...body, stream: true, stream_options: { include_usage: true } });
  assert.equal(r.status, 200, r.text);
  const events = r.text.split('\n\n').filter((e) => e.length > 0);
  assert.equal(events.at(-1), 'data: [DONE]');
  return events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)));
}

// What a stream adds up to, per field.
function joinStream(chunks) {
  const deltas = chunks.flatMap((c) => c.choices).map((c) => c.delta ?? {});
  const calls = [];
  for (const d of deltas) {
    for (const t of d.tool_calls ?? []) {
      if (t.id) calls[t.index] = { id: t.id, name: t.function.name, arguments: '' };
      calls[t.index].arguments += t.function?.arguments ?? '';
    }
  }
  return {
    reasoning: deltas.map((d) => d.reasoning_content ?? '').join(''),
    content: deltas.map((d) => d.content ?? '').join(''),
    calls,
    finish: chunks.flatMap((c) => c.choices).map((c) => c.finish_reason).filter(Boolean),
    usage: chunks.at(-1).usage,
  };
}

// The reference prompt: the checkpoint's template rendered by @huggingface/jinja
// with the inputs SGLang hands it (tools as Tool.model_dump(), history tool-call
// arguments parsed into objects), encoded without added special tokens.
async function referenceIds(messages, { tools, kwargs = {} } = {}) {
  const text = template.render({ messages, tools, add_generation_prompt: true, ...kwargs });
  return { text, ids: (await tokenizer.encode(text, null, { addSpecialTokens: false })).getIds() };
}

// SGLang's tool dict for the template: {type, function: {description, name, parameters, strict}}.
function templateTool(t) {
  const f = t.function;
  return { type: 'function', function: { description: f.description ?? null, name: f.name, parameters: f.parameters ?? null, strict: f.strict ?? false } };
}

const weather = { type: 'function', function: { name: 'get_weather', description: 'Current weather for a city',
  parameters: { type: 'object', properties: { location: { type: 'string', description: 'City' },
    days: { type: 'integer' }, metric: { type: 'boolean' } }, required: ['location'] } } };
const time = { type: 'function', function: { name: 'get_time', description: 'Local time',
  parameters: { type: 'object', properties: { timezone: { type: 'string' } } } } };

// qwen3 reasoning parser rules for a reply that starts inside reasoning
// (forced) or not: reasoning ends at the first </think> (dropped) or, for
// qwen3, at <tool_call> (kept as content); a reply that never leaves it is all
// reasoning. Leading <think>s of the reasoning are dropped.
function splitReasoning(raw, forced) {
  let rest = raw;
  if (!forced) {
    const open = raw.indexOf('<think>');
    if (open < 0) return { reasoning: '', content: raw };
    return ((r) => ({ reasoning: r.reasoning, content: raw.slice(0, open) + r.content }))(splitReasoning(raw.slice(open), true));
  }
  while (rest.startsWith('<think>')) rest = rest.slice('<think>'.length);
  const close = rest.indexOf('</think>'), call = rest.indexOf('<tool_call>');
  if (close >= 0 && (call < 0 || close < call)) return { reasoning: rest.slice(0, close), content: rest.slice(close + '</think>'.length) };
  if (call >= 0) return { reasoning: rest.slice(0, call), content: rest.slice(call) };
  return { reasoning: rest, content: '' };
}

before(async () => {
  assert.ok(TERN && MODEL, 'set TERN and MODEL_DIR');
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  server = spawn(TERN, ['serve', '--model', MODEL, '--port', String(port), '--threads', '2',
    '--reasoning-parser', 'qwen3', '--tool-call-parser', 'qwen3_coder', '--max-running-requests', '4'],
  { stdio: ['ignore', 'ignore', 'pipe'] });
  server.stderr.on('data', (d) => { stderr += d; });
  const t0 = Date.now();
  for (;;) {
    try { if ((await fetch(base + '/health')).status === 200) break; } catch {}
    if (Date.now() - t0 > 120000) throw new Error('server did not become healthy; stderr:\n' + stderr);
    await new Promise((r) => setTimeout(r, 100));
  }
  client = new OpenAI({ baseURL: base + '/v1', apiKey: 'none', maxRetries: 0 });
  tokenizer = Tokenizer.fromFile(path.join(MODEL, 'tokenizer.json'));
  const config = JSON.parse(fs.readFileSync(path.join(MODEL, 'tokenizer_config.json'), 'utf8'));
  template = new Template(config.chat_template);
});

after(() => { if (server && server.exitCode === null) server.kill('SIGKILL'); });

test('tern synth writes the real Qwen3.5 template into a qwen3_5_moe checkpoint', () => {
  const config = JSON.parse(fs.readFileSync(path.join(MODEL, 'tokenizer_config.json'), 'utf8'));
  const golden = fs.readFileSync(path.join(root, 'tests/golden/template/templates/qwen3_5.jinja'), 'utf8');
  assert.equal(config.chat_template, golden);
});

test('prompt token ids equal the reference rendering and tokenization', async () => {
  const history = [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Weather in Paris and the time in Tokyo?' },
    { role: 'assistant', content: 'Checking both.', reasoning_content: 'Two lookups.',
      // (No boolean argument: the template writes it with `| string`, "True" in
      // Python's Jinja2 and tern, "true" in @huggingface/jinja.)
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"location": "Paris", "days": 2}' } },
        { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{"timezone": "Asia/Tokyo"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: 'Sunny, 21 °C' },
    { role: 'tool', tool_call_id: 'call_2', content: '09:30' },
  ];
  // The template's view of the history: arguments parsed into objects.
  const historyForTemplate = history.map((m) => (m.tool_calls
    ? { ...m, tool_calls: m.tool_calls.map((c) => ({ ...c, function: { ...c.function, arguments: JSON.parse(c.function.arguments) } })) }
    : m));
  const cases = [
    { name: 'thinking (default)', body: { messages: [{ role: 'user', content: 'Hello there' }] },
      ref: [[{ role: 'user', content: 'Hello there' }]], opens: '<|im_start|>assistant\n<think>\n' },
    { name: 'enable_thinking false',
      body: { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }],
        chat_template_kwargs: { enable_thinking: false } },
      ref: [[{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }], { kwargs: { enable_thinking: false } }],
      opens: '<|im_start|>assistant\n<think>\n\n</think>\n\n' },
    { name: 'reasoning_effort none', body: { messages: [{ role: 'user', content: 'Hi' }], reasoning_effort: 'none' },
      ref: [[{ role: 'user', content: 'Hi' }], { kwargs: { reasoning_effort: 'none', thinking: false, enable_thinking: false } }],
      opens: '</think>\n\n' },
    { name: 'tools and a tool-call history', body: { messages: history, tools: [weather, time] },
      ref: [historyForTemplate, { tools: [weather, time].map(templateTool) }], opens: '<think>\n' },
    { name: 'tool_choice none hides the tools', body: { messages: history, tools: [weather, time], tool_choice: 'none' },
      ref: [historyForTemplate], opens: '<think>\n' },
  ];
  for (const c of cases) {
    const r = await post('/v1/chat/completions', { ...c.body, max_tokens: 1, temperature: 0, return_prompt_token_ids: true });
    assert.equal(r.status, 200, `${c.name}: ${r.text}`);
    const want = await referenceIds(...c.ref);
    assert.ok(want.text.endsWith(c.opens), `${c.name}: reference prompt ends ${JSON.stringify(want.text.slice(-40))}`);
    assert.deepEqual(r.json.choices[0].prompt_token_ids, want.ids, c.name);
    assert.equal(r.json.usage.prompt_tokens, want.ids.length, c.name);
  }
  // A named tool_choice renders only that tool; the prompt then closes the
  // thinking block (as thinking off renders it) and opens the call.
  const r = await post('/v1/chat/completions', { messages: history.slice(0, 2), tools: [weather, time], max_tokens: 1,
    tool_choice: { type: 'function', function: { name: 'get_time' } }, return_prompt_token_ids: true });
  assert.equal(r.status, 200, r.text);
  const { text } = await referenceIds(history.slice(0, 2), { tools: [templateTool(time)] });
  const forced = text + '\n</think>\n\n<tool_call>\n<function=get_time>\n';
  assert.deepEqual(r.json.choices[0].prompt_token_ids, (await tokenizer.encode(forced, null, { addSpecialTokens: false })).getIds());
  // Not in streams (SGLang's error).
  const s = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], stream: true, return_prompt_token_ids: true });
  assert.equal(s.status, 400);
  assert.match(s.json.message, /return_prompt_token_ids is not supported with streaming/);
});

// One reply three ways: raw (no reasoning split), parsed, and streamed.
async function threeWays(body) {
  const req = { max_tokens: 12, temperature: 0, ignore_eos: true, ...body };
  const raw = await post('/v1/chat/completions', { ...req, separate_reasoning: false });
  assert.equal(raw.status, 200, raw.text);
  const parsed = await client.chat.completions.create(req);
  const streamed = joinStream(await stream(req));
  return { raw: raw.json.choices[0].message.content, parsed, streamed };
}

test('thinking on: the reply starts inside reasoning (no <think> of its own)', async () => {
  for (const tools of [undefined, [weather, time]]) {
    const { raw, parsed, streamed } = await threeWays({ messages: [{ role: 'user', content: 'Why is the sky blue?' }], tools });
    assert.ok(raw.length > 0);
    const want = splitReasoning(raw, true);
    const msg = parsed.choices[0].message;
    assert.equal(msg.reasoning_content ?? '', want.reasoning);
    // (Content after a <tool_call> goes on to the tool parser.)
    if (!tools || !want.content.includes('<tool_call>')) assert.equal(msg.content, want.content);
    if (!raw.includes('</think>') && !raw.includes('<tool_call>')) {
      // The usual case for a random model: everything is reasoning.
      assert.equal(msg.content, '');
      assert.equal(msg.reasoning_content, raw);
      assert.equal(parsed.usage.reasoning_tokens, parsed.usage.completion_tokens);
    }
    assert.ok(parsed.usage.reasoning_tokens > 0 && parsed.usage.reasoning_tokens <= parsed.usage.completion_tokens);
    // The stream agrees, usage included.
    assert.equal(streamed.reasoning, msg.reasoning_content ?? '');
    assert.equal(streamed.content, msg.content);
    assert.equal(streamed.usage.reasoning_tokens, parsed.usage.reasoning_tokens);
    assert.equal(streamed.usage.completion_tokens, parsed.usage.completion_tokens);
  }
});

test('thinking off: the reply is content', async () => {
  for (const extra of [{ chat_template_kwargs: { enable_thinking: false } }, { reasoning_effort: 'none' }]) {
    const { raw, parsed, streamed } = await threeWays({ messages: [{ role: 'user', content: 'Why is the sky blue?' }], ...extra });
    assert.ok(raw.length > 0);
    const want = splitReasoning(raw, false);
    const msg = parsed.choices[0].message;
    assert.equal(msg.content, want.content);
    assert.equal(msg.reasoning_content ?? '', want.reasoning);
    if (!raw.includes('<think>')) {
      assert.equal(msg.content, raw);
      assert.equal(msg.reasoning_content ?? null, null);
      assert.equal(parsed.usage.reasoning_tokens, 0);
    }
    assert.equal(streamed.content, msg.content);
    assert.equal(streamed.reasoning, msg.reasoning_content ?? '');
    assert.equal(streamed.usage.reasoning_tokens, parsed.usage.reasoning_tokens);
  }
});

test('named tool_choice: a Qwen3-Coder call, thinking skipped, stream and non-stream alike', async () => {
  const end = tokenizer.tokenToId('</tool_call>');
  assert.ok(Number.isInteger(end));
  // The call is held to the tool's parameters schema (structured output): after the forced
  // '<function=get_time>' the grammar allows only a parameter or '</function>'; the bias makes
  // the model close at once, so the call has no arguments.
  const closers = (await tokenizer.encode('</function>\n</tool_call>', null, { addSpecialTokens: false })).getIds();
  for (const kwargs of [{}, { enable_thinking: false }]) {
    // The first generated token is </tool_call>, which also stops the reply.
    const req = { messages: [{ role: 'user', content: 'Time in Tokyo?' }], tools: [weather, time], temperature: 0,
      tool_choice: { type: 'function', function: { name: 'get_time' } }, chat_template_kwargs: kwargs,
      logit_bias: Object.fromEntries(closers.map((t) => [t, 100])), stop_token_ids: [end], max_tokens: 64 };
    const r = await client.chat.completions.create(req);
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.content, '');
    assert.equal(choice.message.reasoning_content ?? null, null);
    assert.equal(choice.message.tool_calls.length, 1);
    const call = choice.message.tool_calls[0];
    assert.match(call.id, /^call_[0-9a-f]{24}$/);
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'get_time');
    assert.equal(call.function.arguments, '{}');
    assert.equal(r.usage.reasoning_tokens, 0);
    assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens < req.max_tokens, String(r.usage.completion_tokens));

    const s = joinStream(await stream(req));
    assert.equal(s.reasoning, '');
    assert.equal(s.content, '');
    assert.equal(s.calls.length, 1);
    assert.match(s.calls[0].id, /^call_[0-9a-f]{24}$/);
    assert.equal(s.calls[0].name, 'get_time');
    assert.equal(s.calls[0].arguments, '{}');
    assert.deepEqual(s.finish, ['tool_calls']);
    assert.equal(s.usage.reasoning_tokens, 0);
  }
});
