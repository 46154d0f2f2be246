// `tern serve` on the bundled demo model (models/demo) through client
// libraries nobody on this project wrote (issue 24): the OpenAI Node SDK, the
// Vercel AI SDK (ai + @ai-sdk/openai-compatible) and LangChain JS
// (@langchain/openai), installed by scripts/fetch-test-data.sh. Each checks
// what a user of the library sees: the text (no special tokens, reasoning kept
// apart), finish reasons, usage, tool calls and their arguments, and the
// message of an error. Structured output (generateObject,
// withStructuredOutput) is left out: tern has no response_format yet.
//
// Usage: TERN=path/to/tern node --test tests/server/clients.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import net from 'node:net';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const require = createRequire(path.join(root, 'third_party/npm/node_modules/'));
const OpenAI = require('openai').default;
const ai = require('ai');
const { createOpenAICompatible } = require('@ai-sdk/openai-compatible');
const { ChatOpenAI } = require('@langchain/openai');
const { HumanMessage, ToolMessage } = require('@langchain/core/messages');
const { z } = require('zod');

const TERN = process.env.TERN;
const SPECIAL = /<\|[a-z_]+\|>|<\/?think>|<\/?tool_call>/;
const WEATHER = 'What is the weather like in Paris right now? Use the get_weather tool.';
const weatherParams = { type: 'object', properties: { location: { type: 'string', description: 'City name, e.g. Paris' },
  unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['location'], additionalProperties: false };
const weatherResult = { location: 'Paris', temperature: 18, unit: 'celsius', condition: 'sunny' };
let server, base, stderr = '';
const noThinking = { chat_template_kwargs: { enable_thinking: false } };

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

before(async () => {
  assert.ok(TERN, 'set TERN');
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  // TERN_LAUNCHER (e.g. "tests/dist/mpirun.sh shm 2") and TERN_SERVE_ARGS (e.g. "--tp 2"): the same
  // clients against a server split over the ranks of an mpirun job (tests/dist).
  const launcher = (process.env.TERN_LAUNCHER || '').split(' ').filter(Boolean);
  const extra = (process.env.TERN_SERVE_ARGS || '').split(' ').filter(Boolean);
  const args = ['serve', '--port', String(port), '--threads', launcher.length ? '1' : '2', '--reasoning-parser', 'qwen3',
    '--tool-call-parser', 'qwen25', ...extra];
  server = launcher.length ? spawn(launcher[0], [...launcher.slice(1), TERN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] })
    : spawn(TERN, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  server.stderr.on('data', (d) => { stderr += d; });
  for (let i = 0; i < 1200; ++i) {
    try { if ((await fetch(base + '/health')).status === 200) return; } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('tern serve did not come up:\n' + stderr);
});
// (mpirun cannot pass on SIGKILL: it gets SIGTERM and ends its ranks itself.)
after(() => { if (server) server.kill(process.env.TERN_LAUNCHER ? 'SIGTERM' : 'SIGKILL'); });

const provider = () => createOpenAICompatible({ name: 'tern', baseURL: base + '/v1', apiKey: 'none' });

test('Vercel AI SDK: generateText and streamText give 323 without special tokens; reasoning apart', async () => {
  const model = provider()('default');
  const plain = await ai.generateText({ model, prompt: 'What is 17*19?', temperature: 0, maxOutputTokens: 200 });
  assert.equal(plain.text.trim(), '323');
  assert.equal(plain.finishReason, 'stop');
  assert.match(plain.reasoningText ?? '', /0323/, 'the demo model reasons before answering');
  assert.ok(plain.usage.inputTokens > 0 && plain.usage.outputTokens > 0, JSON.stringify(plain.usage));
  // With tools on offer (issue 24: <|im_end|> leaked into the text then).
  const tools = { get_weather: ai.tool({ description: 'Get the current weather in a city.',
    inputSchema: ai.jsonSchema(weatherParams), execute: async () => weatherResult }) };
  const withTools = await ai.generateText({ model, prompt: 'What is 17*19?', tools, temperature: 0, maxOutputTokens: 200 });
  assert.equal(withTools.text.trim(), '323');
  assert.doesNotMatch(withTools.text + (withTools.reasoningText ?? ''), SPECIAL);
  const s = ai.streamText({ model, prompt: 'What is 17*19?', tools, temperature: 0, maxOutputTokens: 200 });
  let text = '', reasoning = '';
  for await (const part of s.fullStream) {
    if (part.type === 'text-delta') text += part.text;
    if (part.type === 'reasoning-delta') reasoning += part.text;
  }
  assert.equal(text.trim(), '323');
  assert.doesNotMatch(text + reasoning, SPECIAL);
  assert.equal(await s.finishReason, 'stop');
});

test('Vercel AI SDK: multi-step tool use with stopWhen calls get_weather for Paris, then answers from its result', async () => {
  const calls = [];
  const r = await ai.generateText({ model: provider()('default'), prompt: WEATHER, temperature: 0, maxOutputTokens: 256,
    providerOptions: { tern: noThinking },
    tools: { get_weather: ai.tool({ description: 'Get the current weather in a city.', inputSchema: ai.jsonSchema(weatherParams),
      execute: async (args) => { calls.push(args); return weatherResult; } }) },
    stopWhen: ai.stepCountIs(3) });
  assert.equal(calls.length, 1, JSON.stringify(r.steps.map((s) => s.finishReason)));
  assert.equal(calls[0].location, 'Paris');
  assert.equal(r.steps[0].finishReason, 'tool-calls');
  assert.equal(r.finishReason, 'stop');
  assert.match(r.text, /18/);
  assert.doesNotMatch(r.text, SPECIAL);
});

test('Vercel AI SDK: a bad request shows tern\'s message', async () => {
  const e = await ai.generateText({ model: provider()('default'), prompt: 'hi', maxOutputTokens: 10000000 }).catch((x) => x);
  assert.ok(e instanceof Error, String(e));
  assert.match(e.message, /max_completion_tokens is too large: 10000000/, e.message);
});

test('LangChain JS: invoke, stream and bindTools', async () => {
  const llm = new ChatOpenAI({ model: 'default', temperature: 0, maxTokens: 200, apiKey: 'none',
    configuration: { baseURL: base + '/v1' }, maxRetries: 0 });
  const r = await llm.invoke('What is 17*19?');
  assert.equal(String(r.content).trim(), '323');
  assert.equal(r.response_metadata.finish_reason, 'stop');
  assert.ok(r.usage_metadata.input_tokens > 0 && r.usage_metadata.output_tokens > 0);
  let streamed = '';
  for await (const c of await llm.stream('What is 17*19?')) streamed += c.content;
  assert.equal(streamed.trim(), '323');
  const bound = llm.bindTools([{ type: 'function', function: { name: 'get_weather', description: 'Get the current weather in a city.',
    parameters: weatherParams } }]);
  const arith = await bound.invoke('What is 17*19?');
  assert.equal(String(arith.content).trim(), '323');
  assert.doesNotMatch(String(arith.content), SPECIAL);
  const lc = new ChatOpenAI({ model: 'default', temperature: 0, maxTokens: 256, apiKey: 'none', maxRetries: 0,
    configuration: { baseURL: base + '/v1' }, modelKwargs: noThinking }).bindTools([{ type: 'function',
    function: { name: 'get_weather', description: 'Get the current weather in a city.', parameters: weatherParams } }]);
  const q = new HumanMessage(WEATHER);
  const call = await lc.invoke([q]);
  assert.equal(call.tool_calls.length, 1);
  assert.equal(call.tool_calls[0].name, 'get_weather');
  assert.equal(call.tool_calls[0].args.location, 'Paris');
  assert.equal(call.response_metadata.finish_reason, 'tool_calls');
  const answer = await lc.invoke([q, call, new ToolMessage({ tool_call_id: call.tool_calls[0].id, content: JSON.stringify(weatherResult) })]);
  assert.match(String(answer.content), /18/);
  assert.doesNotMatch(String(answer.content), SPECIAL);
  const e = await llm.invoke([]).catch((x) => x);
  assert.match(String(e.message), /Messages cannot be empty/, String(e.message));
});

test('OpenAI SDK: the error message reaches the user', async () => {
  const client = new OpenAI({ baseURL: base + '/v1', apiKey: 'none', maxRetries: 0 });
  const e = await client.chat.completions.create({ model: 'default', messages: [] }).catch((x) => x);
  assert.equal(e.message, '400 Messages cannot be empty.');
});
