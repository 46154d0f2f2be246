// A scripted OpenAI-compatible server for testing `tern check` (test code only).
//
//   node mock_server.mjs --mode sglang[,flag,...] [--port 0] [--api-key KEY]
//                        [--slow-health-ms 1500] [--lifetime-s 300]
//
// Listens on 127.0.0.1 only and prints "PORT <n>" on stdout once listening.
// Exits when stdin closes (so a crashed test leaves no server behind), on
// SIGTERM, or after --lifetime-s.
//
// Dialects (one of): sglang, vllm, llamacpp.
//   sglang:   /health (empty 200), /model_info + /get_model_info, /v1/models
//             owned_by "sglang" with max_model_len; reasoning_content; content
//             "" not null; flat errors {"object":"error",...}; streams with the
//             old null delta fields and a usage chunk with "choices": [].
//   vllm:     no /model_info; owned_by "vllm"; "reasoning" (the new name);
//             content null when empty; nested errors; rejects
//             reasoning_effort "none" with 400 (vLLM before "none" existed).
//   llamacpp: /health {"status":"ok"} (503 "Loading model" while loading);
//             /props with n_ctx; owned_by "llamacpp" with meta.n_ctx_train;
//             reasoning_content; nested errors with int code; no usage chunk
//             in streams (older llama.cpp).
// Failure modes (any number):
//   nan-logprobs          logprobs are bare NaN / -Infinity (Python json style)
//   bang-output           every answer is "!!!!!!!!..." (broken FP4 GEMM)
//   reasoning-in-content  no reasoning parser: <think>...</think> stays in content
//   null-content-thinking with thinking on, content is null and the answer is
//                         left inside the reasoning
//   slow-health           /health answers 503 for --slow-health-ms after start
//   no-health             no /health at all (404): readiness via /v1/models
//   drop-mid-stream       streams are cut off after two events, no [DONE]
//   nonsense              fluent-looking but wrong words (a random-weight model)
//   nondeterministic      greedy replies alternate between two texts
//   error-500             malformed requests get 500 instead of 400
//   hang                  chat requests are never answered (client timeouts)
//   trickle               chat replies send a byte every 200 ms, without end (a whole-request timeout)
//   special-tokens        with tools, content ends in "<|im_end|>" (tern before issue 24)
//   flat-errors           the sglang dialect's errors without OpenAI's error object
//                         (SGLang's own form; by default it sends both, as tern does)
//   untrimmed-stop        a stop string ends the reply but stays in the text
// Numerics (tern check --suite numerics): token ids in, logprobs out, from
// the toy model of numerics_integration_test.cc (change both together): 64
// tokens, logit(t | previous token q) = -((7 t + 13 q) mod 61) / 8. sglang:
// /generate with input/output logprobs; vllm: /v1/completions with
// prompt_logprobs and token_id:<id> names; llamacpp: /completion n_probs.
//   numerics-skew         from output token 5 on, the second choice gets +1.5 (a subtly wrong kernel)
//   numerics-skew-prompt  the same at every prompt position (a wrong reference deployment)
//   numerics-flips        the same at output tokens 5 and 9 only (near-ties a rounding flipped)
//   bf16-activations      /get_server_info says "activations": "bf16" (tern on a BF16 path);
//   f32-activations       ... "f32"; without either there is no /get_server_info
//   w4a4-activations      ... "w4a4" (tern --quant-numerics w4a4)
//   w4a8-activations      ... "w4a8" (tern --quant-numerics w4a8), and "kv_cache_dtype": "fp16"
//   anonymous             /v1/models owned_by "someone" (an unknown OpenAI-compatible server)
//   with nan-logprobs     output token 3's logprobs are NaN
//   nan-prompt-logprobs   vllm: prompt_logprobs of prompt position 4 are NaN (a reference that fails)
//   no-top-logprobs       sglang: /generate sends no input/output_top_logprobs, asked or not
//   held-back             llamacpp: no completion_probabilities entry for an output id = 1 mod 4, as
//                         llama.cpp sends none for a token that ends inside a UTF-8 character
// Stop strings ("stop") cut the content before the first one, finish "stop".
// Mode "correct" answers are built from the prompts of src/check/checks_common.h
// (change both together). GET /_mock/requests returns the request bodies seen.
import http from 'node:http';

const argv = process.argv.slice(2);
function arg(name, def) {
  const i = argv.indexOf(name);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : def;
}
const flags = new Set(arg('--mode', 'sglang').split(',').map((s) => s.trim()).filter(Boolean));
const dialect = ['sglang', 'vllm', 'llamacpp'].find((d) => flags.has(d)) || 'sglang';
const apiKey = arg('--api-key', '');
const slowHealthMs = Number(arg('--slow-health-ms', '1500'));
const lifetimeS = Number(arg('--lifetime-s', '300'));
const started = Date.now();
const MODEL = 'mock/Qwen3-8B';
const requests = [];
let counter = 0;

// ---------------------------------------------------------------- answers

const NUMBER_WORDS = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven',
  'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen', 'twenty'];
const NONSENSE = ['lantern', 'quietly', 'ember', 'harvest', 'obliquely', 'marble', 'whisper', 'cobalt', 'meander',
  'thistle', 'rapidly', 'granite', 'velvet', 'orbit', 'fable', 'tundra', 'saffron', 'ripple', 'beacon', 'drift'];

function textOf(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p.text === 'string' ? p.text : '')).join('');
  return '';
}

function hash(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
  return h;
}

function nonsense(seed, n) {
  const words = [];
  let h = seed;
  for (let i = 0; i < n; i++) {
    h = Math.imul(h ^ (h >>> 13), 1103515245) + 12345 >>> 0;
    words.push(NONSENSE[h % NONSENSE.length]);
  }
  return words.join(' ') + '.';
}

// The scripted model: {reasoning, content, toolCalls} for a conversation.
function answer(messages, thinking, tools) {
  const last = messages[messages.length - 1] || {};
  const users = messages.filter((m) => m && m.role === 'user').map((m) => textOf(m.content));
  const q = textOf(last.content);
  const ql = q.toLowerCase();
  if (flags.has('nonsense')) {
    const text = nonsense(hash(JSON.stringify(messages)), 8);
    return thinking ? { reasoning: text, content: '' } : { reasoning: '', content: text };
  }
  if (flags.has('bang-output')) {
    return { reasoning: thinking ? '!'.repeat(24) : '', content: '!'.repeat(24) };
  }
  let reasoning = thinking ? 'The user asks a question; I will answer it directly.' : '';
  let content = 'I am a scripted test server.';
  let toolCalls = null;
  if (last.role === 'tool') {
    let r = {};
    try { r = JSON.parse(textOf(last.content)); } catch { /* keep {} */ }
    content = `It is ${r.temperature} degrees ${r.unit || ''} and ${r.condition || 'clear'} in ${r.location || 'the city'}.`;
  } else if (Array.isArray(tools) && tools.length && ql.includes('weather')) {
    content = '';
    toolCalls = [{ id: 'call_' + '0123456789abcdef01234567', name: 'get_weather',
      arguments: JSON.stringify({ location: 'Paris', unit: 'celsius' }) }];
  } else if (ql.includes('reply with exactly the word ok')) {
    content = 'OK';
  } else if (ql.includes('17 × 19') || ql.includes('17 * 19')) {
    reasoning = thinking ? '17 × 20 is 340, and 340 minus 17 gives 323.' : '';
    content = thinking ? 'The answer is 323.' : '323';
  } else if (ql.includes('one sentence about the sea')) {
    content = 'The sea stretches quietly toward the horizon under a pale sky.';
  } else if (ql.includes('primary colors of light')) {
    content = 'Red, green, blue.';
  } else if (ql.includes('remember this code word')) {
    content = 'Noted.';
  } else if (ql.includes('capital of france')) {
    content = 'Paris.';
  } else if (ql.includes('what was the code word')) {
    const m = users.map((u) => u.match(/code word: ([A-Z]+)/)).find(Boolean);
    content = m ? m[1] : 'I do not remember.';
  } else if (ql.includes('access code for the blue vault')) {
    const m = q.match(/access code for the blue vault is (\d+)/);
    content = m ? m[1] : 'I could not find it.';
  } else if (ql.includes('three sentences about the ocean')) {
    content = 'The ocean covers most of the planet. Its depths hold countless creatures. Waves carry energy across it.';
  } else if (ql.includes('count from one to twenty')) {
    content = NUMBER_WORDS.join(' ');
  }
  if (flags.has('nondeterministic')) content += (counter++ % 2 ? ' Indeed.' : ' Truly.');
  if (flags.has('special-tokens') && Array.isArray(tools) && tools.length) content += '<|im_end|>';
  return { reasoning, content, toolCalls };
}

// Cuts content at the first stop string (kept with untrimmed-stop); true when one matched.
function applyStop(a, stop) {
  const stops = typeof stop === 'string' ? [stop] : Array.isArray(stop) ? stop : [];
  let at = -1, len = 0;
  for (const s of stops) {
    const i = s ? a.content.indexOf(s) : -1;
    if (i >= 0 && (at < 0 || i < at)) { at = i; len = s.length; }
  }
  if (at < 0) return false;
  a.content = a.content.slice(0, flags.has('untrimmed-stop') ? at + len : at);
  return true;
}

// Pseudo tokens: each word with its leading space.
function tokens(text) { return text ? text.match(/\s*\S+|\s+$/g) || [] : []; }

// ---------------------------------------------------------------- wire format

// JSON text; the placeholder strings become bare NaN / -Infinity (Python's json does that).
function dumps(obj) {
  return JSON.stringify(obj).replaceAll('"__NaN__"', 'NaN').replaceAll('"__-Infinity__"', '-Infinity');
}

function logprobEntries(toks) {
  return toks.map((t, i) => ({
    token: t,
    logprob: flags.has('nan-logprobs') ? (i % 2 ? '__-Infinity__' : '__NaN__') : -0.01 * (1 + (i % 5)),
    bytes: [...Buffer.from(t, 'utf8')],
    top_logprobs: [],
  }));
}

function errorBody(status, message) {
  if (dialect === 'sglang') {
    const flat = { object: 'error', message, type: 'Bad Request', param: null, code: status };
    return flags.has('flat-errors') ? flat : { ...flat, error: { message, type: 'Bad Request', param: null, code: status } };
  }
  if (dialect === 'vllm') return { error: { message, type: 'BadRequestError', param: null, code: status } };
  return { error: { code: status, message, type: 'invalid_request_error' } };
}

function send(res, status, body, headers = {}) {
  const text = typeof body === 'string' ? body : dumps(body);
  res.writeHead(status, { 'Content-Type': typeof body === 'string' ? 'text/plain' : 'application/json', ...headers });
  res.end(text);
}

function notFound(res) {
  if (dialect === 'llamacpp') return send(res, 404, { error: { code: 404, message: 'File Not Found', type: 'not_found_error' } });
  return send(res, 404, { detail: 'Not Found' });
}

// How a dialect shapes the assistant message.
function message(a, thinking) {
  const calls = a.toolCalls ? a.toolCalls.map((c, i) => ({ id: c.id, index: i, type: 'function',
    function: { name: c.name, arguments: c.arguments } })) : null;
  let content = a.content;
  let reasoning = a.reasoning;
  if (flags.has('reasoning-in-content') && thinking) {
    content = `<think>\n${reasoning}\n</think>\n\n${content}`;
    reasoning = '';
  }
  if (flags.has('null-content-thinking') && thinking) {
    reasoning = `${reasoning}\n\n${content}`;
    content = null;
  }
  if (dialect === 'sglang') {
    return { role: 'assistant', content: content === null ? null : content, reasoning_content: reasoning || null,
      tool_calls: calls };
  }
  if (dialect === 'vllm') {
    return { role: 'assistant', content: content || null, refusal: null, tool_calls: calls || [], reasoning: reasoning || null };
  }
  const m = { role: 'assistant', content };
  if (reasoning) m.reasoning_content = reasoning;
  if (calls) m.tool_calls = calls;
  return m;
}

function completion(req, thinking) {
  const a = answer(req.messages, thinking, req.tools);
  applyStop(a, req.stop);
  const msg = message(a, thinking);
  const rTok = tokens(msg.reasoning_content || msg.reasoning || '');
  const cTok = tokens(msg.content || '');
  const callTok = a.toolCalls ? tokens(a.toolCalls[0].arguments) : [];
  const finish = a.toolCalls ? 'tool_calls' : 'stop';
  return { a, msg, rTok, cTok, callTok, finish,
    usage: { prompt_tokens: Math.ceil(JSON.stringify(req.messages).length / 4),
      completion_tokens: rTok.length + cTok.length + callTok.length } };
}

function chat(req, res, body) {
  let parsed;
  try { parsed = JSON.parse(body); } catch (e) {
    if (flags.has('error-500')) return send(res, 500, { object: 'error', message: 'Internal Server Error', type: 'InternalServerError', param: null, code: 500 });
    return send(res, 400, errorBody(400, `JSON decode error: ${e.message}`));
  }
  requests.push(parsed);
  if (!parsed || !Array.isArray(parsed.messages) || parsed.messages.length === 0) {
    if (flags.has('error-500')) return send(res, 500, { object: 'error', message: 'Internal Server Error', type: 'InternalServerError', param: null, code: 500 });
    return send(res, 400, errorBody(400, 'messages: Input should be a valid list'));
  }
  if (dialect === 'vllm' && parsed.reasoning_effort !== undefined && !['low', 'medium', 'high'].includes(parsed.reasoning_effort)) {
    return send(res, 400, errorBody(400, "reasoning_effort: Input should be 'low', 'medium' or 'high'"));
  }
  const kwargs = parsed.chat_template_kwargs || {};
  const thinking = dialect === 'sglang'
    ? !(kwargs.enable_thinking === false || parsed.reasoning_effort === 'none')
    : kwargs.enable_thinking !== false;
  if (parsed.return_prompt_token_ids) {  // the numerics suite's tokenizer on a reference deployment
    const text = textOf(parsed.messages[parsed.messages.length - 1].content);
    const ids = [1, ...[...text].map((ch) => ch.charCodeAt(0) % 60 + 2)].slice(0, 40);
    return send(res, 200, { id: 'chatcmpl-tok', object: 'chat.completion', created: 0, model: parsed.model,
      choices: [{ index: 0, message: { role: 'assistant', content: '' }, finish_reason: 'length', prompt_token_ids: ids }] });
  }
  const c = completion(parsed, thinking);
  const id = `chatcmpl-${requests.length}`;
  const created = Math.floor(Date.now() / 1000);
  if (!parsed.stream) {
    const choice = { index: 0, message: c.msg, logprobs: parsed.logprobs ? { content: logprobEntries([...c.rTok, ...c.cTok]) } : null,
      finish_reason: c.finish };
    if (dialect === 'sglang') choice.matched_stop = c.a.toolCalls ? null : 151645;
    const reply = { id, object: 'chat.completion', created, model: parsed.model, choices: [choice], usage: c.usage };
    if (dialect === 'sglang') reply.usage.reasoning_tokens = c.rTok.length;
    if (dialect === 'llamacpp') reply.timings = { prompt_n: c.usage.prompt_tokens, predicted_n: c.usage.completion_tokens };
    return send(res, 200, reply);
  }
  streamReply(res, parsed, c, id, created);
}

function streamReply(res, parsed, c, id, created) {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  const chunk = (delta, extra = {}) => ({ id, object: 'chat.completion.chunk', created, model: parsed.model,
    choices: [{ index: 0, delta, logprobs: extra.logprobs || null, finish_reason: extra.finish || null }] });
  const events = [];
  const old = dialect === 'sglang';  // older SGLang sends every delta field, null when unused
  const rField = dialect === 'vllm' ? 'reasoning' : 'reasoning_content';
  events.push(chunk(old ? { role: 'assistant', content: '', reasoning_content: null, tool_calls: null } : { role: 'assistant', content: '' }));
  const lp = (t) => (parsed.logprobs ? { logprobs: { content: logprobEntries([t]) } } : {});
  const rText = c.msg.reasoning_content || c.msg.reasoning || '';
  for (const t of tokens(rText)) events.push(chunk(old ? { role: null, content: null, reasoning_content: t, tool_calls: null } : { [rField]: t }, lp(t)));
  for (const t of tokens(c.msg.content || '')) events.push(chunk(old ? { role: null, content: t, reasoning_content: null, tool_calls: null } : { content: t }, lp(t)));
  if (c.a.toolCalls) {
    const call = c.a.toolCalls[0];
    events.push(chunk({ tool_calls: [{ index: 0, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const t of tokens(call.arguments)) events.push(chunk({ tool_calls: [{ index: 0, function: { arguments: t } }] }));
  }
  events.push(chunk(old ? { role: null, content: null, reasoning_content: null, tool_calls: null } : {}, { finish: c.finish }));
  const wantUsage = parsed.stream_options && parsed.stream_options.include_usage;
  if (wantUsage && dialect !== 'llamacpp') {
    const usage = { ...c.usage };
    if (dialect === 'sglang') usage.reasoning_tokens = c.rTok.length;
    events.push({ id, object: 'chat.completion.chunk', created, model: parsed.model, choices: [], usage });
  }
  const lines = events.map((e) => `data: ${dumps(e)}\n\n`);
  lines.push('data: [DONE]\n\n');
  if (flags.has('drop-mid-stream')) {
    res.write(lines[0]);
    res.write(lines[1]);
    res.write('data: {"id":"cut');  // half an event, then the connection goes
    setTimeout(() => res.socket && res.socket.destroy(), 20);
    return;
  }
  let i = 0;
  const next = () => {  // one event per tick, like a server decoding token by token
    if (i < lines.length) {
      res.write(lines[i++]);
      setTimeout(next, 1);
    } else {
      res.end();
    }
  };
  next();
}

// ---------------------------------------------------------------- numerics

const TOY_VOCAB = 64;
function toyLogprobs(prev, skew) {
  const logits = [];
  for (let t = 0; t < TOY_VOCAB; t++) logits.push(-((7 * t + 13 * prev) % 61) / 8);
  if (skew) {
    const order = [...logits.keys()].sort((a, b) => logits[b] - logits[a] || a - b);
    logits[order[1]] += 1.5;
  }
  const mx = Math.max(...logits);
  const lse = mx + Math.log(logits.reduce((a, v) => a + Math.exp(v - mx), 0));
  return logits.map((v) => v - lse);
}
function topOf(lps, k) {
  return [...lps.keys()].sort((a, b) => lps[b] - lps[a] || a - b).slice(0, k).map((id) => [id, lps[id]]);
}
// Greedy continuation: for each scored position, {id, lp, top: [[id, lp]...]}.
function toyRun(ids, maxNew, k) {
  const seq = [...ids];
  const prompt = [];
  for (let p = 1; p < ids.length; p++) {
    const lps = toyLogprobs(ids[p - 1], flags.has('numerics-skew-prompt'));
    prompt.push({ id: ids[p], lp: lps[ids[p]], top: topOf(lps, k), rank: 1 + lps.filter((v) => v > lps[ids[p]]).length });
  }
  const out = [];
  for (let i = 0; i < maxNew; i++) {
    const lps = toyLogprobs(seq[seq.length - 1],
      (flags.has('numerics-skew') && i >= 5) || (flags.has('numerics-flips') && (i === 5 || i === 9)));
    const top = topOf(lps, k);
    const id = top[0][0];
    const nan = flags.has('nan-logprobs') && i === 3;
    out.push({ id, lp: nan ? '__NaN__' : lps[id], top: nan ? top.map(([t]) => [t, '__NaN__']) : top });
    seq.push(id);
  }
  return { prompt, out };
}
function numericsGenerate(req, res) {
  const ids = req.input_ids;
  const k = req.top_logprobs_num || 0;
  const r = toyRun(ids, req.sampling_params.max_new_tokens, k);
  const start = req.logprob_start_len >= 0 ? req.logprob_start_len : ids.length - 1;
  const inTok = [[null, ids[start], null]], inTop = [null];
  for (let p = start + 1; p < ids.length; p++) {
    const e = r.prompt[p - 1];
    inTok.push([e.lp, e.id, null]);
    inTop.push(e.top.map(([t, lp]) => [lp, t, null]));
  }
  const meta = { id: 'gen-1', finish_reason: { type: 'length', length: r.out.length }, prompt_tokens: ids.length,
    completion_tokens: r.out.length, cached_tokens: 0, input_token_logprobs: inTok,
    output_token_logprobs: r.out.map((e) => [e.lp, e.id, null]) };
  if (k > 0 && !flags.has('no-top-logprobs')) {
    meta.input_top_logprobs = inTop;
    meta.output_top_logprobs = r.out.map((e) => e.top.map(([t, lp]) => [lp, t, null]));
  }
  send(res, 200, { text: '', output_ids: r.out.map((e) => e.id), meta_info: meta });
}
function numericsCompletions(req, res) {
  const ids = req.prompt;
  const k = req.logprobs || 0;
  const r = toyRun(ids, req.max_tokens, Math.max(k, req.prompt_logprobs || 0));
  const name = (t) => `token_id:${t}`;
  const choice = { index: 0, text: '', finish_reason: 'length', stop_reason: null,
    logprobs: { text_offset: r.out.map(() => 0), token_logprobs: r.out.map((e) => e.lp), tokens: r.out.map((e) => name(e.id)),
      top_logprobs: r.out.map((e) => Object.fromEntries(e.top.slice(0, k).map(([t, lp]) => [name(t), lp]))) } };
  if (req.prompt_logprobs !== undefined) {
    choice.prompt_logprobs = [null, ...r.prompt.map((e, p) => {
      const nan = flags.has('nan-prompt-logprobs') && p === 3;
      const d = { [e.id]: { logprob: nan ? '__NaN__' : e.lp, rank: e.rank, decoded_token: name(e.id) } };
      e.top.slice(0, req.prompt_logprobs).forEach(([t, lp], i) => { d[t] = { logprob: nan ? '__NaN__' : lp, rank: i + 1, decoded_token: name(t) }; });
      return d;
    })];
  }
  send(res, 200, { id: 'cmpl-1', object: 'text_completion', created: 0, model: MODEL, choices: [choice] });
}
function numericsLlamacpp(req, res) {
  const r = toyRun(req.prompt, req.n_predict, req.n_probs || 0);
  const sent = flags.has('held-back') ? r.out.filter((e) => e.id % 4 !== 1) : r.out;
  send(res, 200, { content: '', tokens: r.out.map((e) => e.id), completion_probabilities: sent.map((e) => ({
    id: e.id, token: `<${e.id}>`, logprob: e.lp, bytes: [],
    top_logprobs: e.top.map(([t, lp]) => ({ id: t, token: `<${t}>`, logprob: lp, bytes: [] })) })) });
}
function numerics(path, res, body) {
  let req;
  try { req = JSON.parse(body); } catch { return send(res, 400, errorBody(400, 'JSON decode error')); }
  requests.push(req);
  if (path === '/generate' && dialect === 'sglang') return numericsGenerate(req, res);
  if (path === '/v1/completions' && dialect === 'vllm') return numericsCompletions(req, res);
  if (path === '/completion' && dialect === 'llamacpp') return numericsLlamacpp(req, res);
  return notFound(res);
}

// ---------------------------------------------------------------- routes

function healthy() { return !flags.has('slow-health') || Date.now() - started >= slowHealthMs; }

function route(req, res, body) {
  const path = req.url.split('?')[0];
  if (path === '/_mock/requests') return send(res, 200, requests);
  if (path === '/health' || path === '/health_generate') {
    if (flags.has('no-health')) return notFound(res);
    if (!healthy()) {
      if (dialect === 'llamacpp') return send(res, 503, { error: { code: 503, message: 'Loading model', type: 'unavailable_error' } });
      res.writeHead(503);
      return res.end();
    }
    if (dialect === 'llamacpp') return send(res, 200, { status: 'ok' });
    res.writeHead(200);
    return res.end();
  }
  if (apiKey && req.headers.authorization !== `Bearer ${apiKey}`) {
    if (dialect === 'sglang') return send(res, 401, { error: 'Unauthorized' });
    return send(res, 401, { error: { message: 'Invalid API key', type: 'invalid_request_error', code: 401 } });
  }
  if (path === '/get_server_info' && (flags.has('bf16-activations') || flags.has('f32-activations') || flags.has('w4a4-activations') ||
                                        flags.has('w4a8-activations'))) {
    return send(res, 200, { model_path: MODEL,
      activations: flags.has('bf16-activations') ? 'bf16' : flags.has('w4a4-activations') ? 'w4a4'
        : flags.has('w4a8-activations') ? 'w4a8' : 'f32',
      ...(flags.has('w4a8-activations') ? { kv_cache_dtype: 'fp16' } : {}) });
  }
  if ((path === '/model_info' || path === '/get_model_info') && dialect === 'sglang') {
    return send(res, 200, { model_path: MODEL, tokenizer_path: MODEL, is_generation: true, preferred_sampling_params: null,
      weight_version: 'default', has_image_understanding: false, has_audio_understanding: false });
  }
  if (path === '/props' && dialect === 'llamacpp') {
    return send(res, 200, { default_generation_settings: { n_ctx: 8192 }, total_slots: 4, model_path: '/models/qwen3-8b-q4_k_m.gguf' });
  }
  if (path === '/v1/models') {
    const card = { id: MODEL, object: 'model', created: 1767225600,
      owned_by: flags.has('anonymous') ? 'someone' : { sglang: 'sglang', vllm: 'vllm', llamacpp: 'llamacpp' }[dialect] };
    if (dialect === 'llamacpp') card.meta = { n_ctx_train: 40960, n_vocab: 151936 };
    else card.max_model_len = 32768;
    if (dialect === 'sglang') Object.assign(card, { root: MODEL, parent: null });
    return send(res, 200, { object: 'list', data: [card] });
  }
  if (['/generate', '/v1/completions', '/completion'].includes(path) && req.method === 'POST') return numerics(path, res, body);
  if (path === '/v1/chat/completions' && req.method === 'POST') {
    if (flags.has('hang')) return;  // never answer; the socket stays open until the client gives up
    if (flags.has('trickle')) {  // each read gets a byte in time; the reply never ends
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': 1 << 30 });
      const timer = setInterval(() => res.write(' '), 200);
      res.on('close', () => clearInterval(timer));
      return;
    }
    return chat(req, res, body);
  }
  return notFound(res);
}

const server = http.createServer((req, res) => {
  const parts = [];
  req.on('data', (d) => parts.push(d));
  req.on('end', () => {
    try {
      route(req, res, Buffer.concat(parts).toString('utf8'));
    } catch (e) {
      send(res, 500, { object: 'error', message: String(e), type: 'InternalServerError', code: 500 });
    }
  });
});
server.listen(Number(arg('--port', '0')), '127.0.0.1', () => {
  process.stdout.write(`PORT ${server.address().port}\n`);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));
setTimeout(() => process.exit(0), lifetimeS * 1000).unref();
