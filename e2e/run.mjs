// Dashboard end-to-end tests: headless Debian Chromium (playwright-core) against a real
// `phiguard serve --ui` built with `--features fault-injection`. Run with `node e2e/run.mjs`
// after `cargo build --features fault-injection` (or point PHIGUARD_BIN at a binary).
//
// Each case drives the dashboard the way a person would and then checks the server's own
// answer through the admin API, so a UI that only *looks* right fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServer, startHubFixture, openBrowser, signIn, eventually } from './support.mjs';

const SYNTHETIC_NOTE = 'Seen by Dr. Alice Example on 2024-03-01, phone 555-0100.';

let server;
let browser;

before(async () => {
  server = await startServer();
  browser = await openBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

test('sign-in refuses a wrong admin token and accepts the right one', async () => {
  const { page } = browser;
  await page.goto(`${server.base}/ui/`);
  await page.fill('#login-token', 'not-the-token');
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('#login-error:not(:empty)');
  assert.equal(await page.isVisible('#app'), false);
  await signIn(page, server);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('phiguard.adminToken')), server.adminToken);
  const tray = await page.getAttribute('#service', 'data-tray');
  const status = await server.api('GET', '/admin/status');
  assert.equal(status.status, 200);
  assert.equal(tray, status.json.tray);
});

test('a breaker forced open through faults turns its card red with a countdown; tray red', async () => {
  const { page } = browser;
  await signIn(page, server);
  const faults = await server.api('PUT', '/admin/faults', { infer: 'fail' });
  assert.equal(faults.status, 200, `PUT /admin/faults: ${JSON.stringify(faults.json)}`);
  let openKey = null;
  for (let i = 0; i < 40 && !openKey; i += 1) {
    const res = await server.api('POST', '/pii/deidentify', { text: SYNTHETIC_NOTE, method: 'mask' }, server.clientToken);
    assert.ok(res.status >= 500, `a failing backend must not answer ${res.status}`);
    const status = await server.api('GET', '/admin/status');
    openKey = status.json.breakers.find((b) => b.state === 'open')?.key || null;
  }
  assert.ok(openKey, 'no breaker opened after 40 failing requests');
  const card = `[data-breaker="${openKey}"]`;
  await page.waitForSelector(`${card}[data-state="open"][data-color="red"]`, { timeout: 5000 });
  const first = await page.textContent(`${card} .countdown`);
  assert.match(first, /^\d+ s$/);
  // The countdown ticks locally between status events.
  await eventually(async () => (await page.textContent(`${card} .countdown`)) !== first, 'the countdown to move', 4000);
  await page.waitForSelector('#service[data-tray="red"]');
  const status = await server.api('GET', '/admin/status');
  assert.equal(status.json.tray, 'red');
  // Reset from the card closes it again, live.
  await server.api('PUT', '/admin/faults', { infer: 'ok' });
  await page.click(`${card} [data-action="reset"]`);
  await page.waitForSelector(`${card}[data-state="closed"]`, { timeout: 5000 });
  const after = await server.api('GET', '/admin/status');
  assert.equal(after.json.breakers.find((b) => b.key === openKey).state, 'closed');
});

test('changing retry.max_attempts in the form applies it on the server', async () => {
  const { page } = browser;
  await signIn(page, server);
  await page.click('#tab-settings');
  const input = '[data-field="retry.max_attempts"] input';
  await page.waitForSelector(input);
  const before = await server.api('GET', '/admin/settings');
  const current = before.json.settings.find((s) => s.key === 'retry.max_attempts').value;
  const next = current === 5 ? 4 : 5;
  await page.fill(input, String(next));
  await page.click('#settings-save');
  await page.waitForSelector('#settings-status:has-text("Saved")');
  const afterSave = await server.api('GET', '/admin/settings');
  const s = afterSave.json.settings.find((x) => x.key === 'retry.max_attempts');
  assert.equal(s.value, next);
  assert.equal(s.source, 'file');
  assert.equal(await page.inputValue(input), String(next));
});

test('an invalid value is refused inline with the rule and nothing is applied', async () => {
  const { page } = browser;
  await signIn(page, server);
  await page.click('#tab-settings');
  const field = '[data-field="retry.max_attempts"]';
  await page.waitForSelector(`${field} input`);
  const before = await server.api('GET', '/admin/settings');
  const setting = before.json.settings.find((x) => x.key === 'retry.max_attempts');
  await page.fill(`${field} input`, '0');
  await page.click('#settings-save');
  await page.waitForSelector(`${field} .field-error:not(:empty)`);
  const message = await page.textContent(`${field} .field-error`);
  assert.ok(message.includes(setting.rule) || /integer/.test(message), `error "${message}" should state the rule "${setting.rule}"`);
  assert.equal(await page.getAttribute(`${field} input`, 'aria-invalid'), 'true');
  const afterTry = await server.api('GET', '/admin/settings');
  assert.equal(afterTry.json.settings.find((x) => x.key === 'retry.max_attempts').value, setting.value);
});

test('a client token created in Access works, and once revoked the API refuses it', async () => {
  const { page } = browser;
  await signIn(page, server);
  await page.click('#tab-access');
  await page.fill('#token-label', 'e2e script');
  await page.click('#token-form button[type=submit]');
  await page.waitForSelector('#new-token:not([hidden])');
  const token = (await page.textContent('#new-token-value')).trim();
  assert.ok(token.length >= 16, 'a new token is shown once');
  const ok = await server.api('GET', '/models/loaded', undefined, token);
  assert.equal(ok.status, 200, 'the new token is accepted');
  const list = await server.api('GET', '/admin/tokens');
  const created = list.json.tokens.find((t) => t.label === 'e2e script');
  assert.ok(created, 'the token is listed');
  const revoke = `tr[data-token-id="${created.id}"] button`;
  await page.click(revoke);
  await page.click(revoke); // second click confirms
  await page.waitForSelector(`tr[data-token-id="${created.id}"]`, { state: 'detached' });
  const refused = await server.api('GET', '/models/loaded', undefined, token);
  assert.equal(refused.status, 401);
  assert.equal(refused.json.error.code, 'invalid_credentials');
});

test('the Audit view lists admin actions newest first, with actor and old/new value', async () => {
  const { page } = browser;
  await signIn(page, server);
  const changed = await server.api('PUT', '/admin/settings', { 'breaker.failure_threshold': 7 });
  assert.equal(changed.status, 200);
  await page.click('#tab-access');
  await page.fill('#token-label', 'e2e expiring');
  await page.selectOption('#token-expiry', '86400');
  await page.click('#token-form button[type=submit]');
  await page.waitForSelector('#new-token:not([hidden])');
  const list = await server.api('GET', '/admin/tokens');
  const created = list.json.tokens.find((t) => t.label === 'e2e expiring');
  assert.ok(created && created.expires_at && !created.expired, 'created with an expiry');
  await page.waitForSelector(`tr[data-token-id="${created.id}"]`);
  assert.ok(!/never/.test(await page.textContent(`tr[data-token-id="${created.id}"] td:nth-child(5)`)));
  await page.click('#tab-audit');
  await page.waitForSelector('#audit tr[data-action]');
  const rows = await page.$$eval('#audit tr[data-action]', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  const audit = await server.api('GET', '/admin/audit?limit=200');
  assert.equal(rows.length, audit.json.entries.length, 'one row per record');
  assert.equal(rows[0][3], 'token.create', 'newest first');
  assert.equal(rows[0][4], created.id);
  assert.equal(rows[0][1], 'admin');
  const setting = rows.find((r) => r[3] === 'settings.update' && r[4] === 'breaker.failure_threshold');
  assert.ok(setting, 'the settings change is listed');
  assert.match(setting[5], /→ 7$/);
  assert.equal(setting[6], 'ok');
});

test('a model download from the local hub fixture reaches 100 %', async (t) => {
  const hub = await startHubFixture();
  if (!hub) {
    t.skip('pending: tools/hub_fixture.py is not in this checkout yet');
    return;
  }
  const hubServer = await startServer({ env: { HF_ENDPOINT: hub.url, PHIGUARD_CATALOG_EXTRA: hub.catalog } });
  try {
    const { page } = browser;
    await signIn(page, hubServer);
    await page.click('#tab-models');
    const models = await hubServer.api('GET', '/admin/models');
    const entry = models.json.catalog.find((c) => c.id === 'phiguard-test/tiny-bert');
    assert.ok(entry && !entry.installed, 'the fixture model is in the catalog and not installed');
    const row = `#catalog tr[data-model="${entry.id}"]`;
    await page.click(`${row} button:has-text("Download")`);
    const seen = new Set();
    await eventually(async () => {
      const pct = await page.$eval(`${row} .download-cell`, (el) => el.textContent).catch(() => '');
      const m = pct.match(/(\d+) %/);
      if (m) seen.add(Number(m[1]));
      return seen.has(100) || /installed/.test(pct);
    }, 'the download to reach 100 %', 120_000, 50);
    // 100 % is shown while the last file is still being stored and verified; the model is
    // installed once the download entry settles, so wait for that rather than race it.
    let after;
    await eventually(async () => {
      after = await hubServer.api('GET', '/admin/models');
      const d = after.json.downloads.find((x) => x.id === entry.id);
      return !d || d.state !== 'running';
    }, 'the download to settle', 60_000, 50);
    assert.ok(after.json.installed.some((m) => m.id === entry.id), 'the model is installed');
    const dl = after.json.downloads.find((d) => d.id === entry.id);
    assert.ok(!dl || (dl.state === 'done' && dl.percent === 100), `download entry ${JSON.stringify(dl)}`);
  } finally {
    // Leave the stopped server's dashboard first: its polls and event stream would otherwise
    // fail against the closed port and log console errors into the next test.
    await browser.page.goto('about:blank').catch(() => {});
    await hubServer.stop();
    await hub.stop();
  }
});

test('/ renders a page whose link opens /docs, which renders the API reference offline', async () => {
  const { page } = browser;
  const foreign = [];
  const consoleErrors = [];
  const onRequest = (r) => {
    const u = r.url();
    if (!u.startsWith(`${server.base}/`) && !u.startsWith('data:')) foreign.push(u);
  };
  const onConsole = (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); };
  page.on('request', onRequest);
  page.on('console', onConsole);
  try {
    await page.goto(`${server.base}/`);
    await page.click('a[href="/docs"]');
    await page.waitForSelector('.opblock');
    const doc = await server.api('GET', '/openapi.json');
    const documented = Object.values(doc.json.paths).reduce((n, item) => n + Object.keys(item).length, 0);
    assert.equal(await page.locator('.opblock').count(), documented, 'every documented operation is rendered');
    // One operation opens with its request body and its responses, errors included.
    const op = page.locator('.opblock', { has: page.locator('[data-path="/pii/deidentify"]') }).first();
    await op.locator('.opblock-summary').click();
    await page.waitForSelector('.opblock.is-open .responses-table');
    const opened = await page.locator('.opblock.is-open').innerText();
    assert.ok(opened.includes('confidence_threshold'), 'the request body schema is shown');
    assert.ok(/\b422\b/.test(opened) && /\b413\b/.test(opened), 'the error responses are shown');
  } finally {
    page.off('request', onRequest);
    page.off('console', onConsole);
  }
  assert.deepEqual(foreign, [], 'the page loads nothing from another origin');
  assert.deepEqual(consoleErrors, [], 'no console errors (CSP violations included)');
});

const PLAY_NOTE = 'Seen by Dr. Alice Example on 2024-03-01 at Example General Hospital.\nCall her on 555-0100 or mail alice@example.org. MRN 4471-2203.';

test('the Playground highlights exactly the entities the API returns, and keeps nothing in storage', async () => {
  const { page } = browser;
  await signIn(page, server);
  await page.click('#tab-playground');
  await page.fill('#play-input', PLAY_NOTE);
  await page.selectOption('#play-method', 'mask');
  await page.click('#play-run');
  await page.waitForSelector('#play-highlighted mark');
  await page.waitForSelector('#play-status:has-text("ms")');
  const marks = await page.$$eval('#play-highlighted mark', (ms) => ms.map((m) => ({
    start: Number(m.dataset.start), end: Number(m.dataset.end), label: m.dataset.label, text: m.textContent, title: m.title,
  })));
  const api = await server.api('POST', '/pii/deidentify', { text: PLAY_NOTE, method: 'mask' });
  assert.equal(api.status, 200);
  const want = api.json.pii_entities.map((e) => ({ start: e.start, end: e.end, label: e.canonical_label, text: e.text }))
    .sort((a, b) => a.start - b.start);
  assert.ok(want.length >= 3, `the note has PHI the service finds (${want.length})`);
  assert.deepEqual(marks.map(({ title, ...m }) => m), want, 'one mark per entity, same offsets, label and text');
  for (const m of marks) assert.match(m.title, /confidence \d\.\d\d · found by (rules|model)/);
  assert.equal(await page.textContent('#play-output'), api.json.deidentified_text);
  assert.ok((await page.$$('#play-legend .chip')).length >= 2, 'a legend of the categories present');
  assert.equal((await page.$$('#play-entities tr')).length, want.length);
  // The note, its entities and the result are not stored by the page.
  const stored = await page.evaluate(() => JSON.stringify({ ...sessionStorage }) + JSON.stringify({ ...localStorage }));
  for (const piece of ['Alice', '555-0100', '4471', 'Example General', 'play']) {
    assert.ok(!stored.includes(piece), `storage holds "${piece}": ${stored}`);
  }
  assert.deepEqual(await page.evaluate(() => Object.keys(localStorage)), []);
  assert.deepEqual(await page.evaluate(() => Object.keys(sessionStorage)), ['phiguard.adminToken']);
  // Replace with a subject: the same surrogates twice.
  await page.selectOption('#play-method', 'replace');
  await page.fill('#play-subject', 'e2e-patient-1');
  await page.click('#play-run');
  await page.waitForSelector('#play-status:has-text("ms")');
  const first = await page.textContent('#play-output');
  await page.click('#play-run');
  await page.waitForFunction(() => document.querySelector('#play-run').disabled === false);
  assert.equal(await page.textContent('#play-output'), first, 'a subject keeps surrogates stable');
  assert.ok(!first.includes('Alice'), 'the name is replaced');
  await page.click('#play-clear');
  assert.equal(await page.inputValue('#play-input'), '');
  assert.equal(await page.textContent('#play-output'), '');
});

test('the Playground\'s allow and deny lists change what every request removes', async () => {
  const { page } = browser;
  await signIn(page, server);
  await page.click('#tab-playground');
  const deny = '.list-editor[data-setting="deid.deny_terms"]';
  const allow = '.list-editor[data-setting="deid.allow_terms"]';
  await page.waitForSelector(`${deny} input`);
  await page.fill(`${deny} input`, 'Zephyr Ward');
  await page.press(`${deny} input`, 'Enter');
  await page.waitForSelector(`${deny} li.chip:has-text("Zephyr Ward")`);
  await page.fill(`${allow} input`, 'Alice');
  await page.press(`${allow} input`, 'Enter');
  await page.waitForSelector(`${allow} li.chip:has-text("Alice")`);
  const settings = await server.api('GET', '/admin/settings');
  const value = (k) => settings.json.settings.find((x) => x.key === k).value;
  assert.deepEqual(value('deid.deny_terms'), ['Zephyr Ward']);
  assert.deepEqual(value('deid.allow_terms'), ['Alice']);
  // Any client now gets the lists applied, the playground included.
  const note = 'Alice Example was moved to Zephyr Ward on 2024-03-01.';
  const api = await server.api('POST', '/pii/deidentify', { text: note, method: 'mask' }, server.clientToken);
  const found = api.json.pii_entities.map((e) => e.text);
  assert.ok(found.includes('Zephyr Ward'), `the deny term is removed: ${found}`);
  assert.ok(!found.includes('Alice'), `the allow term is kept: ${found}`);
  await page.fill('#play-input', note);
  await page.click('#play-run');
  await page.waitForSelector('#play-highlighted mark:has-text("Zephyr Ward")');
  assert.ok(!(await page.textContent('#play-output')).includes('Zephyr Ward'));
  // Removing the chips empties the settings again.
  await page.click(`${deny} button[aria-label="Remove Zephyr Ward"]`);
  await page.waitForSelector(`${deny} li.chip:has-text("Zephyr Ward")`, { state: 'detached' });
  await page.click(`${allow} button[aria-label="Remove Alice"]`);
  await page.waitForSelector(`${allow} li.chip:has-text("Alice")`, { state: 'detached' });
  const after = await server.api('GET', '/admin/settings');
  assert.deepEqual(after.json.settings.find((x) => x.key === 'deid.deny_terms').value, []);
  assert.deepEqual(after.json.settings.find((x) => x.key === 'deid.allow_terms').value, []);
  await page.click('#play-clear');
});

test('the Logs tab shows the access line of a request the test sent, and filters by search', async () => {
  const { page } = browser;
  await signIn(page, server);
  const requestId = randomUUID();
  const res = await fetch(`${server.base}/pii/extract`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${server.clientToken}`, 'Content-Type': 'application/json', 'x-request-id': requestId },
    body: JSON.stringify({ text: 'Patient Alice Example, seen 2024-03-01.' }),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-request-id'), requestId);
  await page.click('#tab-logs');
  const line = `#logs .log-line[data-request-id="${requestId}"]`;
  await page.waitForSelector(line, { timeout: 10_000 });
  const text = await page.textContent(line);
  assert.match(text, /\/pii\/extract/);
  assert.ok(!text.includes('Alice'), 'the log holds no request text');
  const tail = await server.api('GET', '/admin/logs');
  assert.ok(tail.json.lines.some((l) => l.request_id === requestId), 'the API has the same line');
  assert.ok(!JSON.stringify(tail.json).includes('Alice'), 'no request text anywhere in the log');
  await page.fill('#logs-search', requestId);
  await eventually(async () => {
    const ids = await page.$$eval('#logs .log-line', (ls) => ls.map((l) => l.dataset.requestId));
    return ids.length >= 1 && ids.every((id) => id === requestId);
  }, 'only the matching lines to stay');
  await page.selectOption('#logs-level', 'error');
  await eventually(async () => (await page.$$(line)).length === 0, 'an info line to be hidden at level error');
  await page.fill('#logs-search', '');
  await page.selectOption('#logs-level', 'info');
});

test('the charts get points after model traffic, and the rate tile counts model routes only', async () => {
  const { page } = browser;
  await signIn(page, server);
  const before = await server.api('GET', '/admin/status');
  for (let i = 0; i < 3; i += 1) await server.api('GET', '/health');
  const mid = await server.api('GET', '/admin/status');
  assert.equal(mid.json.totals.model_requests, before.json.totals.model_requests, '/health and admin calls are not model requests');
  for (let i = 0; i < 6; i += 1) {
    const r = await server.api('POST', '/pii/deidentify', { text: SYNTHETIC_NOTE, method: 'mask' }, server.clientToken);
    assert.equal(r.status, 200);
  }
  const after = await server.api('GET', '/admin/status');
  assert.equal(after.json.totals.model_requests, before.json.totals.model_requests + 6);
  await page.click('#tab-status');
  // A sample every 5 s; the one covering this traffic appears within two intervals.
  await eventually(async () => {
    const h = await server.api('GET', '/admin/history');
    return h.json.samples.some((s) => s.requests_per_second > 0 && s.p50_ms > 0);
  }, 'a history sample with the traffic', 15_000, 500);
  await eventually(async () => Number(await page.getAttribute('#chart-rate', 'data-points')) > 0
    && (await page.$$('#chart-rate svg [data-series="requests"]')).length > 0
    && (await page.$$('#chart-latency svg [data-series="p99"]')).length > 0, 'the charts to draw the points', 15_000, 250);
  await page.waitForSelector('#breaker-timeline .timeline-row i[data-state="closed"]');
});

test('Force open asks for confirmation; Unload removes a resident model', async () => {
  const { page } = browser;
  await signIn(page, server);
  const r = await server.api('POST', '/pii/deidentify', { text: SYNTHETIC_NOTE, method: 'mask' }, server.clientToken);
  assert.equal(r.status, 200);
  const status = await server.api('GET', '/admin/status');
  const key = status.json.breakers[0].key;
  const button = `[data-breaker="${key}"] [data-action="force-open"]`;
  await page.waitForSelector(button);
  await page.click(button);
  await page.waitForSelector(`${button}:has-text("Confirm")`);
  const once = await server.api('GET', '/admin/status');
  assert.notEqual(once.json.breakers.find((b) => b.key === key).state, 'forced_open', 'one click does not force it open');
  await page.click(button);
  await page.waitForSelector(`[data-breaker="${key}"][data-state="forced_open"]`);
  await page.click(`[data-breaker="${key}"] [data-action="reset"]`);
  await page.waitForSelector(`[data-breaker="${key}"][data-state="closed"]`);

  await page.click('#tab-models');
  const loaded = await server.api('GET', '/models/loaded');
  const name = Object.keys(loaded.json.models)[0];
  assert.ok(name, 'a model is resident after a request');
  const row = `#resident tr[data-resident="${name}"]`;
  await page.waitForSelector(row);
  assert.match(await page.textContent(`${row} td:nth-child(2)`), /B$/, 'its memory is shown');
  await page.click(`${row} button:has-text("Unload")`);
  await page.waitForSelector(row, { state: 'detached' });
  const after = await server.api('GET', '/models/loaded');
  assert.deepEqual(Object.keys(after.json.models), [], 'the server unloaded it');
  // Installed models list phiguard's labels.
  const labels = await page.textContent('#installed tr td.labels');
  assert.match(labels, /[A-Z_]+/);
});

test('the page raised no script errors', () => {
  assert.deepEqual(browser.problems, []);
});
