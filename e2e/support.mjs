// Shared plumbing of the dashboard e2e tests: start a real `phiguard serve --ui` on port 0 in a
// fresh PHIGUARD_HOME, start the local hub fixture, launch headless Debian Chromium through
// playwright-core with a fresh profile, and call the admin API directly to check what the UI did.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { chromium } from 'playwright-core';

export const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

/** The server binary under test: PHIGUARD_BIN, else the debug build of this checkout. */
export function serverBinary() {
  const targetDir = process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target');
  return process.env.PHIGUARD_BIN || path.join(targetDir, 'debug', 'phiguard');
}

export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

const CHROMIUM_FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run',
];

function tempDir(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Waits for a line matching `re` on a child's stdout; resolves with the match. */
function waitForLine(child, re, what, timeoutMs) {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`${what} did not print ${re} within ${timeoutMs} ms; output so far:\n${seen.slice(-2000)}`));
    }, timeoutMs);
    const onData = (chunk) => {
      seen += chunk.toString();
      const m = seen.match(re);
      if (m) { cleanup(); resolve(m); }
    };
    const onExit = (code) => {
      cleanup();
      reject(new Error(`${what} exited with ${code} before printing ${re}; output:\n${seen.slice(-2000)}`));
    };
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout.off('data', onData);
      child.stderr.off('data', onData);
      child.off('exit', onExit);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', onExit);
  });
}

async function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Starts `phiguard serve --ui --port 0` with its own PHIGUARD_HOME and explicit tokens.
 * Returns { base, adminToken, clientToken, home, api(method, path, body, token?), stop() }.
 */
export async function startServer({ env = {} } = {}) {
  const bin = serverBinary();
  if (!fs.existsSync(bin)) {
    throw new Error(`phiguard binary not found at ${bin}: build it with cargo build --features fault-injection`);
  }
  const home = tempDir('phiguard-e2e-home-');
  const adminToken = `adm_${randomBytes(16).toString('hex')}`;
  const clientToken = `cli_${randomBytes(16).toString('hex')}`;
  const child = spawn(bin, ['serve', '--ui', '--port', '0'], {
    env: {
      ...process.env,
      PHIGUARD_HOME: home,
      PHIGUARD_ADMIN_TOKEN: adminToken,
      PHIGUARD_AUTH_TOKEN: clientToken,
      // info: the Logs tab test looks for the access line of a request it sent.
      RUST_LOG: process.env.RUST_LOG || 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const [, base] = await waitForLine(child, /listening on (http:\/\/127\.0\.0\.1:\d+)/, 'phiguard serve', 60_000);
  // Keep draining the pipes so a chatty server never blocks on a full buffer.
  child.stdout.resume();
  child.stderr.resume();
  async function api(method, p, body, token = adminToken) {
    const res = await fetch(base + p, {
      method,
      headers: {
        Authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let json = null;
    try { json = text ? JSON.parse(text) : null; } catch { json = null; }
    return { status: res.status, json, headers: res.headers };
  }
  return {
    base, adminToken, clientToken, home, api,
    async stop() {
      await stopChild(child);
      fs.rmSync(home, { recursive: true, force: true });
    },
  };
}

/**
 * Starts the lead's local Hugging Face–layout hub fixture (`tools/hub_fixture.py`), when this
 * checkout has it. Returns null when it does not (the download case is then reported pending).
 */
export async function startHubFixture() {
  const script = path.join(ROOT, 'tools', 'hub_fixture.py');
  if (!fs.existsSync(script)) return null;
  const python = process.env.PYTHON || 'python3';
  // The fixture exits when its standard input closes, so keep a pipe open until stop().
  const child = spawn(python, [script, '--port', '0', '--throttle', '8000'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  const [, url] = await waitForLine(child, /listening on (http:\/\/127\.0\.0\.1:\d+)/, 'hub fixture', 30_000);
  child.stdout.resume();
  child.stderr.resume();
  return {
    url,
    catalog: path.join(ROOT, 'tests', 'fixtures', 'hub', 'catalog-extra.toml'),
    stop: () => stopChild(child),
  };
}

/** Launches headless Chromium with a fresh profile; returns { page, context, close() }. */
export async function openBrowser() {
  const profile = tempDir('phiguard-e2e-chromium-');
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1280, height: 900 },
  });
  const page = context.pages()[0] || await context.newPage();
  const problems = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  return {
    page,
    context,
    problems,
    async close() {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Signs in at /ui/ with the admin token and waits for the live status view. */
export async function signIn(page, server) {
  await page.goto(`${server.base}/ui/`);
  await page.waitForSelector('#app:not([hidden]), #login:not([hidden])');
  if (await page.isVisible('#login')) {
    await page.fill('#login-token', server.adminToken);
    await page.click('#login-form button[type=submit]');
    await page.waitForSelector('#app:not([hidden])');
  }
  await page.waitForSelector('#live[data-live="on"]');
}

/** Polls `fn` until it returns a truthy value or `timeoutMs` passes. */
export async function eventually(fn, what, timeoutMs = 20_000, everyMs = 100) {
  const until = Date.now() + timeoutMs;
  let last;
  while (Date.now() < until) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}
