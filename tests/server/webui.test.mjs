// The chat page at / (issue 21 item 4) in a real browser: Debian's Chromium,
// headless, driven by puppeteer-core (scripts/fetch-test-data.sh), against
// `tern serve` on the bundled demo model. It asks 17*19 with thinking on and
// reads 323 in the answer and the reasoning in its own block; stops a long
// reply and watches /metrics until the server has freed the request; and
// works with --api-key once the key is typed in. A screenshot goes to
// $WEBUI_OUT (its path is printed). A missing Chromium fails the test.
//
// Usage: TERN=path/to/tern [CHROMIUM=/usr/bin/chromium] [WEBUI_OUT=dir] node --test tests/server/webui.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const require = createRequire(path.join(root, 'third_party/npm/node_modules/'));
const puppeteer = require('puppeteer-core');

const TERN = process.env.TERN;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const OUT = process.env.WEBUI_OUT || fs.mkdtempSync(path.join(os.tmpdir(), 'tern-webui-'));
fs.mkdirSync(OUT, { recursive: true });
const KEY = 'page-test-key';
let browser;
const servers = [];

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

async function serve(args, env = {}) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = spawn(TERN, ['serve', '--port', String(port), '--threads', '2', '--enable-metrics', ...args],
                     { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  servers.push(proc);
  for (let i = 0; i < 1200; ++i) {
    try { if ((await fetch(base + '/health')).status === 200) return { base, log: () => stderr }; } catch {}
    if (proc.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('tern serve did not come up:\n' + stderr);
}

async function runningRequests(base) {
  const text = await (await fetch(base + '/metrics')).text();
  const m = text.match(/^sglang:num_running_reqs\{[^}]*\} (\S+)$/m);
  assert.ok(m, 'no sglang:num_running_reqs in /metrics');
  return Number(m[1]);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, fn, timeoutMs) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error('timed out waiting for ' + what);
    await sleep(50);
  }
}

async function setField(page, selector, value) {
  await page.$eval(selector, (el, v) => {
    if (el.type === 'checkbox') el.checked = v; else el.value = v;
    el.dispatchEvent(new Event('change', { bubbles: true }));
  }, value);
}

// Types `text`, sends it, and returns the last reply once its stream has ended.
async function ask(page, text) {
  await page.type('#prompt', text);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#stop:not([hidden])', { timeout: 10000 }).catch(() => {});
  await page.waitForSelector('#send:not([hidden])', { timeout: 120000 });
  return lastReply(page);
}

function lastReply(page) {
  return page.$$eval('.msg.assistant', (all) => {
    const m = all[all.length - 1];
    const d = m.querySelector('details.reasoning');
    return { answer: m.querySelector('.answer').textContent, reasoning: m.querySelector('.reasoning-text').textContent,
             reasoningShown: !d.hidden, meta: m.querySelector('.meta').textContent };
  });
}

before(async () => {
  assert.ok(TERN, 'set TERN');
  assert.ok(fs.existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: run scripts/install-deps.sh (Debian's chromium)`);
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true,
                                     args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
});
after(async () => {
  if (browser) await browser.close();
  for (const p of servers) p.kill('SIGKILL');
});

test('the page answers 17*19 with the reasoning apart, and Stop frees the request', async () => {
  // A context long enough that a reply told to ignore EOS runs for many seconds: 8 times the demo
  // model's max_position_embeddings, which `tern serve` allows only where asked (as SGLang).
  const srv = await serve(['--context-length', '32768'], { SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: '1' });
  const info = await (await fetch(srv.base + '/model_info')).json();
  const page = await browser.newPage();
  await page.setViewport({ width: 1000, height: 760 });
  const external = [];
  page.on('request', (r) => { if (!r.url().startsWith(srv.base) && !r.url().startsWith('data:')) external.push(r.url()); });
  const res = await page.goto(srv.base + '/', { waitUntil: 'load' });
  assert.equal(res.status(), 200);
  assert.match(res.headers()['content-type'], /^text\/html/);
  const header = await waitFor('the model line', () =>
    page.$eval('#model', (el) => (el.textContent.includes('context') ? el.textContent : '')), 10000);
  assert.ok(header.includes(info.served_model_name), header);
  assert.ok(header.includes(Number(info.context_length).toLocaleString('en')), header);

  await setField(page, '#thinking', true);
  await setField(page, '#temperature', '0');
  await setField(page, '#max_tokens', '400');
  const reply = await ask(page, 'What is 17*19?');
  assert.ok(reply.answer.includes('323'), JSON.stringify(reply));
  assert.ok(reply.reasoningShown && reply.reasoning.trim().length > 0, JSON.stringify(reply));
  assert.ok(!reply.answer.includes('<think>') && !reply.answer.includes(reply.reasoning.trim()), JSON.stringify(reply));
  await page.$eval('details.reasoning', (d) => { d.open = true; });  // unfolded for the screenshot
  const shot = path.join(OUT, 'webui.png');
  await page.screenshot({ path: shot, fullPage: true });
  console.log('screenshot: ' + shot);

  // A reply that would run to 30,000 tokens (EOS ignored: the page has no such switch, so the test adds
  // it to the page's own fetch). Until the server refused a context longer than the model's without the
  // switch above, such a reply failed at the model's 4096 positions, and on a fast machine it had failed
  // before the test pressed Stop.
  await page.evaluate(() => {
    const pageFetch = window.fetch;
    window.fetch = (url, init) => {
      if (init && init.method === 'POST' && String(url).endsWith('/v1/chat/completions')) {
        init = { ...init, body: JSON.stringify({ ...JSON.parse(init.body), ignore_eos: true }) };
        window.ternIgnoredEos = (window.ternIgnoredEos || 0) + 1;
      }
      return pageFetch(url, init);
    };
  });
  await setField(page, '#max_tokens', '30000');
  await page.type('#prompt', 'Tell me a very long story.');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#stop:not([hidden])', { timeout: 10000 });
  await waitFor('the reply to start', async () => (await lastReply(page)).reasoning.length + (await lastReply(page)).answer.length > 20, 20000);
  assert.equal(await page.evaluate(() => window.ternIgnoredEos), 1, 'the request went out without ignore_eos');
  // Once the reply is taller than the window, the conversation scrolls inside its own pane and the
  // composer, Stop with it, stays in view (a flex pane without min-height: 0 grew with its content and
  // pushed Stop below the window, where a click first had to scroll the page to it).
  await waitFor('a reply taller than the window', () =>
    page.$$eval('.msg.assistant', (all) => all[all.length - 1].offsetHeight > 1200), 60000);
  const stopBox = await (await page.$('#stop')).boundingBox();
  assert.ok(stopBox && stopBox.y >= 0 && stopBox.y + stopBox.height <= 760, `Stop out of view: ${JSON.stringify(stopBox)}`);
  assert.ok(await page.$eval('#log', (log) => log.scrollHeight - log.scrollTop - log.clientHeight < 40),
            'the conversation is not scrolled to its newest text');
  const stillRunning = await lastReply(page);
  assert.equal(stillRunning.meta, '', `the reply ended before Stop: ${JSON.stringify(stillRunning).slice(0, 2000)}`);
  assert.equal(await runningRequests(srv.base), 1);
  await page.click('#stop');
  const t0 = Date.now();
  await waitFor('the server to free the request', async () => (await runningRequests(srv.base)) === 0, 5000);
  console.log(`running requests back to 0 ${Date.now() - t0} ms after Stop`);
  await page.waitForSelector('#send:not([hidden])', { timeout: 5000 });
  assert.equal((await lastReply(page)).meta, 'stopped');
  assert.deepEqual(external, [], 'the page fetched from elsewhere');
  await page.close();
});

test('with --api-key: the page asks for the key, then works', async () => {
  const srv = await serve(['--api-key', KEY]);
  const page = await browser.newPage();
  const res = await page.goto(srv.base + '/', { waitUntil: 'load' });
  assert.equal(res.status(), 200);  // the page itself needs no key
  await page.evaluate(() => localStorage.clear());
  await page.reload({ waitUntil: 'load' });
  const warn = await waitFor('the 401 note', () =>
    page.$eval('#model', (el) => (el.classList.contains('warn') ? el.textContent : '')), 10000);
  assert.match(warn, /Unauthorized/);
  const refused = await ask(page, 'What is 17*19?');
  assert.match(refused.meta, /Unauthorized/);
  await setField(page, '#api_key', KEY);
  await waitFor('the model line', () => page.$eval('#model', (el) => el.textContent.includes('context')), 10000);
  await setField(page, '#temperature', '0');
  await setField(page, '#thinking', false);
  const reply = await ask(page, 'What is 17*19?');
  assert.ok(reply.answer.includes('323'), JSON.stringify(reply));
  await page.close();
});
