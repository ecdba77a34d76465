// phiguard dashboard: renders the admin API (status, settings, models, tokens, the audit log) and keeps the
// Status view live through the `GET /admin/events` server-sent events stream.
//
// Why no framework and no build step: the same three files are bundled into the desktop shell
// and served by a headless server at /ui/; anything that needs a toolchain to run would be one
// more thing to break offline. Everything is rendered with DOM calls and `textContent`, never
// `innerHTML`, so no value coming from the server is ever interpreted as markup.
//
// Where the API base and admin token come from:
//   - inside the Tauri shell: `invoke('dashboard_bootstrap')` → `{ api_base, admin_token }`;
//   - in a browser at /ui/: the page's own origin, and a token typed into the sign-in form,
//     kept in sessionStorage (gone when the tab closes).
//
// Types: `// @ts-check` below lets an editor running TypeScript check what this file reads
// from the admin API against `types.js`, JSDoc typedefs generated from the server's OpenAPI
// schemas (regenerate with `PHIGUARD_UPDATE_UI_TYPES=1 cargo test --lib ui_types`). They are
// comments only: the page does not load types.js and nothing is compiled.
// @ts-check
'use strict';

/** @typedef {import('./types.js').Status} Status */
/** @typedef {import('./types.js').BreakerStatus} BreakerStatus */
/** @typedef {import('./types.js').Totals} Totals */
/** @typedef {import('./types.js').ModelsList} ModelsList */
/** @typedef {import('./types.js').CatalogModel} CatalogModel */
/** @typedef {import('./types.js').DownloadInfo} DownloadInfo */
/** @typedef {import('./types.js').HistoryResponse} HistoryResponse */
/** @typedef {import('./types.js').Sample} Sample */
/** @typedef {import('./types.js').LogTail} LogTail */
/** @typedef {import('./types.js').LogLine} LogLine */
/** @typedef {import('./types.js').ModelsLoadedResponse} ModelsLoadedResponse */
/** @typedef {import('./types.js').DeidentifyResponse} DeidentifyResponse */
/** @typedef {import('./types.js').PiiEntity} PiiEntity */

(() => {
  const TOKEN_KEY = 'phiguard.adminToken';
  const GROUP_ORDER = ['server', 'security', 'retry', 'breaker', 'limits', 'admission', 'timeouts', 'models'];
  const STATE_COLOR = {
    closed: 'green',
    half_open: 'amber',
    open: 'red',
    forced_open: 'red',
    disabled: 'grey',
  };
  const STATE_TEXT = {
    closed: 'closed',
    half_open: 'half-open',
    open: 'open',
    forced_open: 'forced open',
    disabled: 'disabled',
  };

  const app = {
    apiBase: '',
    token: '',
    rebootstrapping: false,
    tauri: null,
    events: null,
    /** @type {Status | null} */
    status: null,
    statusAt: 0,
    settings: [],
    /** @type {ModelsList | null} */
    models: null,
    /** @type {Map<string, DownloadInfo>} */
    downloads: new Map(),
    transitions: [],
    rateSamples: [],
    /** @type {ModelsLoadedResponse | null} */
    loaded: null,
    /** Log lines held by the page (the server's numbers), and the last number seen. */
    /** @type {LogLine[]} */
    logLines: [],
    logLast: 0,
    /** The playground's last answer: in memory only, dropped on Clear and sign-out. */
    /** @type {DeidentifyResponse | null} */
    play: null,
    timers: /** @type {Record<string, number>} */ ({}),
  };

  /** The element with this id; `any`, since each caller knows which kind of element it is. */
  const $ = (/** @type {string} */ id) => /** @type {any} */ (document.getElementById(id));

  /** Builds an element: h('button', {type: 'button', onclick}, 'text', child…). */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
      else if (name === 'dataset') Object.assign(el.dataset, value);
      else if (name in el && typeof value !== 'string') el[name] = value;
      else el.setAttribute(name, value === true ? '' : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  function toast(message, kind = 'info') {
    const el = h('div', { class: 'toast', 'data-kind': kind }, message);
    $('toasts').append(el);
    setTimeout(() => el.remove(), kind === 'error' ? 8000 : 4000);
  }

  // ---------------------------------------------------------------- API

  class ApiError extends Error {
    constructor(status, body) {
      const err = (body && body.error) || {};
      super(err.message || `request failed (${status})`);
      this.status = status;
      this.code = err.code || `http_${status}`;
      this.details = err.details;
    }
  }

  async function api(method, path, body) {
    const headers = { Authorization: `Bearer ${app.token}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let res;
    try {
      res = await fetch(app.apiBase + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: 'no-store',
      });
    } catch (e) {
      throw new ApiError(0, { error: { code: 'unreachable', message: 'the phiguard server cannot be reached' } });
    }
    if (res.status === 204) return null;
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch { data = null; }
    if (!res.ok) {
      const err = new ApiError(res.status, data);
      if (res.status === 401) signOut('The admin token was refused.');
      throw err;
    }
    return data;
  }

  const enc = (id) => encodeURIComponent(id);

  // ---------------------------------------------------------------- formatting

  function fmtRate(x) {
    if (typeof x !== 'number' || !Number.isFinite(x)) return '–';
    return x >= 100 ? x.toFixed(0) : x.toFixed(2);
  }

  function fmtBytes(n) {
    if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0) return n === 0 ? '0 B' : '–';
    const units = ['B', 'KB', 'MB', 'GB', 'TB'];
    let i = 0;
    while (n >= 1000 && i < units.length - 1) { n /= 1000; i += 1; }
    return `${n >= 100 || i === 0 ? n.toFixed(0) : n.toFixed(1)} ${units[i]}`;
  }

  function fmtDuration(seconds) {
    const s = Math.max(0, Math.floor(seconds));
    const d = Math.floor(s / 86400);
    const hh = Math.floor((s % 86400) / 3600);
    const mm = Math.floor((s % 3600) / 60);
    const ss = s % 60;
    if (d) return `${d}d ${hh}h`;
    if (hh) return `${hh}h ${mm}m`;
    if (mm) return `${mm}m ${ss}s`;
    return `${ss}s`;
  }

  function fmtValue(v) {
    if (v === null || v === undefined) return 'none';
    if (Array.isArray(v)) return v.length ? v.join(', ') : '(empty list)';
    return String(v);
  }

  function fmtParams(n) {
    if (typeof n !== 'number') return n ? String(n) : '–';
    if (n >= 1e9) return `${(n / 1e9).toFixed(1)}B`;
    if (n >= 1e6) return `${(n / 1e6).toFixed(0)}M`;
    return String(n);
  }

  // ---------------------------------------------------------------- status view

  /** Seconds left before an open breaker may half-open, counted down locally between events.
      @param {BreakerStatus} breaker */
  function remaining(breaker) {
    const elapsed = (performance.now() - app.statusAt) / 1000;
    return Math.max(0, (breaker.retry_after_seconds || 0) - elapsed);
  }

  /** @param {Status} status `GET /admin/status` or a `status` event */
  function renderStatus(status) {
    app.status = status;
    app.statusAt = performance.now();
    const service = $('service');
    service.dataset.tray = status.tray || 'unknown';
    service.dataset.state = status.state || '';
    $('service-state').textContent = `${status.state || 'unknown'} · tray ${status.tray || '?'}`;
    $('service-address').textContent = status.address ? `on ${status.address}` : '';
    $('service-uptime').textContent = '';

    const rates = deriveRates(status);
    $('rate-requests').textContent = fmtRate(rates.requests_per_second);
    $('rate-errors').textContent = fmtRate(rates.errors_per_second);
    $('rate-shed').textContent = fmtRate(rates.shed_per_second);
    const totals = /** @type {Partial<Totals>} */ (status.totals || {});
    $('total-requests').textContent = totals.model_requests !== undefined ? `${totals.model_requests} in total` : '';
    $('total-errors').textContent = totals.model_errors !== undefined ? `${totals.model_errors} in total` : '';
    $('total-shed').textContent = totals.shed !== undefined ? `${totals.shed} in total` : '';

    const adm = /** @type {Partial<import('./types.js').AdmissionStatus>} */ (status.admission || {});
    const depth = /** @type {Partial<import('./types.js').QueueDepth>} */ (adm.depth || {});
    $('queue-depth').textContent = `${depth.interactive ?? 0} / ${depth.bulk ?? 0}`;
    $('queue-watermarks').textContent = adm.high_watermark !== undefined
      ? `watermarks ${adm.low_watermark} – ${adm.high_watermark}` : '';
    $('admission-state').textContent = adm.shedding ? 'shedding' : 'accepting';
    $('degraded-state').textContent = status.degraded_fallback ? 'degraded fallback: rules only' : '';

    renderBreakers(status.breakers || []);
    tick();
  }

  /** Per-second rates from the cumulative `totals` of two status snapshots, over a window of
      at least two seconds (the server sends totals; a rate from one event pair would jitter).
      @param {Status} status
      @returns {{requests_per_second?: number, errors_per_second?: number, shed_per_second?: number}} */
  function deriveRates(status) {
    const t = status.uptime_seconds;
    const totals = status.totals || {};
    const samples = app.rateSamples;
    if (typeof t !== 'number') return {};
    while (samples.length && samples[samples.length - 1].t > t) samples.pop(); // server restarted
    samples.push({ t, totals });
    while (samples.length > 2 && t - samples[1].t >= 2) samples.shift();
    const first = samples[0];
    const dt = t - first.t;
    if (dt <= 0) return {};
    const rate = (/** @type {keyof Totals} */ k) => (typeof totals[k] === 'number' && typeof first.totals[k] === 'number'
      ? Math.max(0, totals[k] - first.totals[k]) / dt : undefined);
    return {
      requests_per_second: rate('model_requests'),
      errors_per_second: rate('model_errors'),
      shed_per_second: rate('shed'),
    };
  }

  /** @param {BreakerStatus[]} breakers */
  function renderBreakers(breakers) {
    const root = $('breakers');
    const seen = new Set();
    for (const b of breakers) {
      seen.add(b.key);
      let card = root.querySelector(`[data-breaker="${CSS.escape(b.key)}"]`);
      if (!card) {
        card = breakerCard(b.key);
        root.append(card);
      }
      const color = STATE_COLOR[b.state] || 'grey';
      card.dataset.state = b.state;
      card.dataset.color = color;
      const badge = card.querySelector('.badge');
      badge.dataset.color = color;
      badge.textContent = STATE_TEXT[b.state] || b.state;
      card.querySelector('.failures').textContent = String(b.consecutive_failures ?? 0);
      card.querySelector('.failure-rate').textContent =
        typeof b.failure_rate === 'number' ? `${(b.failure_rate * (b.failure_rate <= 1 ? 100 : 1)).toFixed(0)} %` : '–';
      card.querySelector('[data-action="reset"]').disabled = b.state === 'closed';
      card.querySelector('[data-action="force-open"]').disabled = b.state === 'forced_open';
      card.querySelector('[data-action="disable"]').disabled = b.state === 'disabled';
    }
    for (const card of [...root.children]) {
      if (!seen.has(card.dataset.breaker)) card.remove();
    }
    if (!breakers.length && !root.querySelector('.muted')) {
      root.append(h('p', { class: 'muted' }, 'No model is loaded yet.'));
    } else if (breakers.length) {
      root.querySelector('p.muted')?.remove();
    }
  }

  function breakerCard(key) {
    const action = (name, label, cls) => {
      const button = h('button', {
        type: 'button', class: cls, 'data-action': name,
        'aria-label': `${label} breaker ${key}`,
      }, label);
      // Forcing a breaker open fails every request to that model: a second click confirms.
      button.addEventListener('click', () => (name === 'force-open'
        ? confirmThen(button, 'Confirm: fail every request', () => breakerAction(key, name).finally(() => { button.textContent = label; }))
        : breakerAction(key, name)));
      return button;
    };
    return h('article', { class: 'breaker', 'data-breaker': key, 'aria-label': `breaker ${key}` },
      h('div', { class: 'breaker-head' },
        h('h3', { class: 'breaker-key' }, key),
        h('span', { class: 'badge' })),
      h('dl', {},
        h('dt', {}, 'Consecutive failures'), h('dd', { class: 'failures' }),
        h('dt', {}, 'Failure rate'), h('dd', { class: 'failure-rate' }),
        h('dt', {}, 'Half-open in'), h('dd', { class: 'countdown', 'aria-live': 'off' }, '–')),
      h('div', { class: 'breaker-actions' },
        action('reset', 'Reset'),
        action('force-open', 'Force open', 'danger'),
        action('disable', 'Disable')));
  }

  async function breakerAction(key, action) {
    try {
      await api('POST', `/admin/breakers/${enc(key)}/${action}`);
      toast(`Breaker ${key}: ${action.replace('-', ' ')} done`);
      refreshStatus();
    } catch (e) {
      toast(`Breaker ${key}: ${e.message}`, 'error');
    }
  }

  /** @param {import('./types.js').BreakerEvent} ev a `breaker` event */
  function recordTransition(ev) {
    app.transitions.unshift({ at: new Date(), ...ev });
    app.transitions.length = Math.min(app.transitions.length, 12);
    const list = $('transitions');
    list.replaceChildren(...app.transitions.map((t) => h('li', {},
      `${t.at.toLocaleTimeString()} — ${t.key}: ${STATE_TEXT[t.from] || t.from} → ${STATE_TEXT[t.to] || t.to}`)));
  }

  /** Local one-second clock: uptime and breaker countdowns move between status events. */
  function tick() {
    const status = app.status;
    if (!status) return;
    const elapsed = (performance.now() - app.statusAt) / 1000;
    if (typeof status.uptime_seconds === 'number') {
      $('service-uptime').textContent = `up ${fmtDuration(status.uptime_seconds + elapsed)}`;
    }
    for (const b of status.breakers || []) {
      const card = $('breakers').querySelector(`[data-breaker="${CSS.escape(b.key)}"]`);
      if (!card) continue;
      const cd = card.querySelector('.countdown');
      if (b.state === 'open') {
        const left = remaining(b);
        cd.textContent = left > 0 ? `${Math.ceil(left)} s` : 'probing…';
      } else if (b.state === 'forced_open') {
        cd.textContent = 'held open until reset';
      } else {
        cd.textContent = '–';
      }
    }
  }

  async function refreshStatus() {
    try {
      renderStatus(await api('GET', '/admin/status'));
    } catch (e) {
      if (e.status !== 401) toast(`Status: ${e.message}`, 'error');
    }
  }

  // ---------------------------------------------------------------- live events

  function connectEvents() {
    if (app.events) app.events.close();
    const url = `${app.apiBase}/admin/events?token=${enc(app.token)}`;
    const es = new EventSource(url);
    app.events = es;
    const live = $('live');
    es.onopen = () => { live.dataset.live = 'on'; live.textContent = 'live'; };
    es.onerror = () => {
      // The event stream dropped; the server may still answer (a proxy that cuts long
      // requests, a restart under way). Ask it before saying it is gone.
      live.dataset.live = 'retry';
      live.textContent = 'reconnecting…';
      api('GET', '/admin/status').then((status) => {
        renderStatus(status);
        if (es.readyState !== EventSource.OPEN) { live.dataset.live = 'polling'; live.textContent = 'polling'; }
      }).catch(() => {
        live.dataset.live = 'off';
        live.textContent = 'offline';
        $('service').dataset.tray = 'red';
        $('service-state').textContent = 'unreachable · tray red';
      });
    };
    es.addEventListener('status', (ev) => {
      const status = /** @type {Status | null} */ (parseEvent(ev));
      if (status) renderStatus(status);
    });
    es.addEventListener('breaker', (ev) => {
      const change = /** @type {import('./types.js').BreakerEvent | null} */ (parseEvent(ev));
      if (change) recordTransition(change);
    });
    es.addEventListener('download', (ev) => {
      const dl = /** @type {DownloadInfo | null} */ (parseEvent(ev));
      if (dl) onDownload(dl);
    });
  }

  function parseEvent(ev) {
    try { return JSON.parse(ev.data); } catch { return null; }
  }

  // ---------------------------------------------------------------- settings

  function sortedGroups(settings) {
    const groups = new Map();
    for (const s of settings) {
      if (!groups.has(s.group)) groups.set(s.group, []);
      groups.get(s.group).push(s);
    }
    const rank = (g) => { const i = GROUP_ORDER.indexOf(g); return i < 0 ? GROUP_ORDER.length : i; };
    return [...groups.entries()].sort((a, b) => rank(a[0]) - rank(b[0]) || a[0].localeCompare(b[0]));
  }

  const fieldId = (key) => `setting-${key.replace(/[^a-zA-Z0-9_-]/g, '-')}`;

  /** The text an input shows for a setting value (lists: one item per line). */
  function inputText(s, value) {
    if (s.type === 'list') return Array.isArray(value) ? value.join('\n') : '';
    if (value === null || value === undefined) return '';
    return String(value);
  }

  function controlFor(s) {
    const id = fieldId(s.key);
    const common = {
      id, name: s.key, disabled: s.locked,
      'aria-describedby': `${id}-meta ${id}-error`,
      'data-key': s.key,
    };
    let control;
    if (s.type === 'bool') {
      control = h('input', { ...common, type: 'checkbox', checked: s.value === true });
    } else if (s.type === 'enum' && Array.isArray(s.choices)) {
      control = h('select', common, s.choices.map((c) => h('option', { value: String(c), selected: String(c) === String(s.value) }, String(c))));
    } else if (s.type === 'list') {
      control = h('textarea', { ...common, rows: Math.max(2, (s.value || []).length + 1), spellcheck: 'false', placeholder: 'one per line' });
      control.value = inputText(s, s.value);
    } else {
      const inputmode = s.type === 'int' ? 'numeric' : s.type === 'float' ? 'decimal' : undefined;
      control = h('input', {
        ...common, type: s.secret ? 'password' : 'text', inputmode, spellcheck: 'false', autocomplete: 'off',
        placeholder: s.secret ? '(unchanged)' : '',
      });
      control.value = s.secret ? '' : inputText(s, s.value);
    }
    control.addEventListener(s.type === 'bool' || s.type === 'enum' ? 'change' : 'input', () => markDirty(s.key));
    return control;
  }

  function renderSettings(settings) {
    app.settings = settings;
    const root = $('settings-groups');
    root.replaceChildren(...sortedGroups(settings).map(([group, items]) =>
      h('fieldset', { class: 'group', 'data-group': group },
        h('legend', {}, group),
        items.map((s) => {
          const id = fieldId(s.key);
          const meta = h('div', { class: 'meta', id: `${id}-meta` },
            h('span', {}, 'env ', h('code', {}, s.env)),
            s.alias ? h('span', {}, 'alias ', h('code', {}, s.alias)) : null,
            h('span', {}, 'default ', h('code', {}, s.secret ? '(secret)' : fmtValue(s.default))),
            h('span', { class: 'source', 'data-source': s.source }, s.source === 'env' ? `set by ${s.env}` : `from ${s.source}`),
            s.rule ? h('span', { class: 'rule' }, `rule: ${s.rule}`) : null,
            s.restart_required ? h('span', { class: 'restart' }, 'applies after a restart') : null);
          return h('div', { class: 'field', 'data-field': s.key, 'data-locked': String(!!s.locked) },
            h('label', { for: id }, s.key),
            h('div', { class: 'desc' }, s.description || ''),
            h('div', { class: 'control' },
              controlFor(s),
              meta,
              h('div', { class: 'field-error', id: `${id}-error`, role: 'alert' })));
        }))));
    updateSaveState();
    renderListEditors();
  }

  function settingByKey(key) {
    return app.settings.find((s) => s.key === key);
  }

  function controlValue(s) {
    const el = $(fieldId(s.key));
    if (!el) return undefined;
    if (s.type === 'bool') return el.checked;
    return el.value;
  }

  function isDirty(s) {
    if (s.locked) return false;
    const v = controlValue(s);
    if (s.type === 'bool') return v !== (s.value === true);
    if (s.secret) return v !== '';
    return v !== inputText(s, s.value);
  }

  /** Turns a control's text into the JSON value sent; malformed numbers go as typed so the
      server, which owns the rules, refuses them with its own message. */
  function parseValue(s, raw) {
    switch (s.type) {
      case 'bool': return raw;
      case 'int': return /^\s*-?\d+\s*$/.test(raw) ? Number.parseInt(raw, 10) : raw;
      case 'float': return /^\s*-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(raw) ? Number.parseFloat(raw) : raw;
      case 'list': return raw.split(/[\n,]/).map((x) => x.trim()).filter(Boolean);
      default: return raw;
    }
  }

  function markDirty(key) {
    const s = settingByKey(key);
    const field = /** @type {HTMLElement | null} */ (document.querySelector(`[data-field="${CSS.escape(key)}"]`));
    if (s && field) {
      field.dataset.dirty = String(isDirty(s));
      setFieldError(key, '');
    }
    updateSaveState();
  }

  function dirtySettings() {
    return app.settings.filter(isDirty);
  }

  function updateSaveState() {
    const n = dirtySettings().length;
    $('settings-save').disabled = n === 0;
    $('settings-revert').disabled = n === 0;
    $('settings-save').textContent = n ? `Save ${n} change${n === 1 ? '' : 's'}` : 'Save changes';
  }

  function setFieldError(key, message) {
    const el = $(`${fieldId(key)}-error`);
    const control = $(fieldId(key));
    if (el) el.textContent = message;
    if (control) control.setAttribute('aria-invalid', message ? 'true' : 'false');
  }

  function clearFieldErrors() {
    for (const s of app.settings) setFieldError(s.key, '');
  }

  /** Applies `changes` ({key: value}) with PUT /admin/settings; shows per-field errors inline. */
  async function putSettings(changes, statusEl) {
    try {
      const res = await api('PUT', '/admin/settings', changes);
      renderSettings(res.settings || []);
      statusEl.textContent = `Saved ${Object.keys(changes).join(', ')}`;
      return true;
    } catch (e) {
      statusEl.textContent = '';
      if (e.code === 'validation_error' && Array.isArray(e.details) && e.details.length) {
        for (const d of e.details) {
          const s = settingByKey(d.field);
          const rule = s && s.rule && !String(d.message).includes(s.rule) ? ` (rule: ${s.rule})` : '';
          setFieldError(d.field, `${d.message}${rule}`);
          listEditorError(d.field, `${d.message}${rule}`);
        }
        statusEl.textContent = 'Nothing was saved: fix the highlighted fields.';
      } else {
        toast(`Settings: ${e.message}`, 'error');
      }
      return false;
    }
  }

  async function saveSettings(ev) {
    ev.preventDefault();
    clearFieldErrors();
    const changes = {};
    for (const s of dirtySettings()) changes[s.key] = parseValue(s, controlValue(s));
    if (!Object.keys(changes).length) return;
    const ok = await putSettings(changes, $('settings-status'));
    if (ok) toast('Settings saved and applied');
  }

  async function loadSettings() {
    try {
      const res = await api('GET', '/admin/settings');
      renderSettings(res.settings || []);
    } catch (e) {
      if (e.status !== 401) toast(`Settings: ${e.message}`, 'error');
    }
  }

  // ---------------------------------------------------------------- access: list settings

  function renderListEditors() {
    for (const box of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll('.list-editor'))) {
      const key = box.dataset.setting;
      const s = settingByKey(key);
      box.querySelector('.list-body')?.remove();
      if (!s) continue;
      const items = Array.isArray(s.value) ? s.value : [];
      const inputId = `${fieldId(key)}-add`;
      const save = (next) => putSettings({ [key]: next }, box.querySelector('.status-text'));
      const body = h('div', { class: 'list-body' },
        h('ul', { 'aria-label': `${key} entries` }, items.length
          ? items.map((item) => h('li', { class: 'chip' }, h('span', {}, item),
            h('button', {
              type: 'button', disabled: s.locked, 'aria-label': `Remove ${item}`,
              onclick: () => save(items.filter((x) => x !== item)),
            }, '×')))
          : h('li', { class: 'muted' }, 'none')),
        h('form', {
          class: 'inline',
          onsubmit: (ev) => {
            ev.preventDefault();
            const input = $(inputId);
            const value = input.value.trim();
            if (value && !items.includes(value)) save([...items, value]);
          },
        },
        h('label', { class: 'sr-only', for: inputId }, `Add to ${key}`),
        h('input', {
          id: inputId, disabled: s.locked, spellcheck: 'false', autocomplete: 'off',
          placeholder: key.endsWith('origins') ? 'http://localhost:3000' : key.endsWith('_terms') ? 'Keppra, or /Site [A-Z]+/' : 'localhost',
        }),
        h('button', { type: 'submit', disabled: s.locked }, 'Add')),
        h('p', { class: 'error list-error', role: 'alert' }),
        h('p', { class: 'muted' }, s.locked ? `Locked: set by ${s.env}.` : h('span', {}, 'env ', h('code', {}, s.env))),
        h('span', { class: 'status-text', role: 'status' }));
      box.append(body);
    }
  }

  function listEditorError(key, message) {
    const box = document.querySelector(`.list-editor[data-setting="${CSS.escape(key)}"]`);
    const el = box && box.querySelector('.list-error');
    if (el) el.textContent = message;
  }

  // ---------------------------------------------------------------- access: tokens

  async function loadTokens() {
    try {
      const res = /** @type {import('./types.js').TokenList} */ (await api('GET', '/admin/tokens'));
      renderTokens(res.tokens || []);
    } catch (e) {
      if (e.status !== 401) toast(`Tokens: ${e.message}`, 'error');
    }
  }

  /** @param {import('./types.js').TokenInfo[]} tokens */
  function renderTokens(tokens) {
    const body = $('tokens');
    if (!tokens.length) {
      body.replaceChildren(h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'No tokens.')));
      return;
    }
    body.replaceChildren(...tokens.map((t) => {
      // Revoking the primary client token replaces it: the server refuses the old one and
      // `phiguard token show` (or the tray's "Copy API token") gives the new one.
      const revoke = h('button', { type: 'button', class: 'danger', 'aria-label': `Revoke token ${t.label}` }, 'Revoke');
      revoke.addEventListener('click', () => confirmThen(revoke, t.primary ? 'Confirm: replace it' : 'Confirm revoke', async () => {
        try {
          await api('DELETE', `/admin/tokens/${enc(t.id)}`);
          toast(t.primary
            ? 'Primary client token revoked; a new one replaces it (phiguard token show, or “Copy API token”)'
            : `Token “${t.label}” revoked`);
          loadTokens();
        } catch (e) {
          toast(`Revoke: ${e.message}`, 'error');
          revoke.disabled = false;
        }
      }));
      return h('tr', { 'data-token-id': t.id },
        h('td', {}, t.label),
        h('td', {}, t.scope),
        h('td', { class: 'mono' }, t.prefix ? `${t.prefix}…` : ''),
        h('td', {}, t.created_at ? new Date(t.created_at).toLocaleString() : ''),
        h('td', { class: t.expired ? 'expired' : '' },
          t.expires_at ? `${t.expired ? 'expired ' : ''}${new Date(t.expires_at).toLocaleString()}` : 'never'),
        h('td', { class: 'actions' }, revoke));
    }));
  }

  /** Two-step confirmation on the button itself (no modal dialogs: they block the webview). */
  function confirmThen(button, label, action) {
    if (button.dataset.armed === 'true') {
      button.dataset.armed = 'false';
      button.disabled = true;
      action();
      return;
    }
    const original = button.textContent;
    button.dataset.armed = 'true';
    button.textContent = label;
    setTimeout(() => {
      if (button.isConnected && button.dataset.armed === 'true') {
        button.dataset.armed = 'false';
        button.textContent = original;
      }
    }, 5000);
  }

  async function createToken(ev) {
    ev.preventDefault();
    const label = $('token-label').value.trim();
    if (!label) return;
    try {
      const body = { label, scope: $('token-scope').value };
      const expiry = $('token-expiry').value;
      if (expiry) body.expires_in_seconds = Number(expiry);
      const res = await api('POST', '/admin/tokens', body);
      $('new-token-label').textContent = res.label;
      $('new-token-value').textContent = res.token;
      $('new-token').hidden = false;
      $('token-label').value = '';
      loadTokens();
    } catch (e) {
      toast(`Create token: ${e.message}`, 'error');
    }
  }

  /** Copies `text`; where the clipboard is refused, selects `from` for Ctrl+C instead. */
  async function copyText(text, from = $('new-token-value')) {
    try {
      await navigator.clipboard.writeText(text);
      toast('Copied to the clipboard');
    } catch {
      const range = document.createRange();
      range.selectNodeContents(from);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      toast('Press Ctrl+C (⌘C) to copy the selection');
    }
  }

  // ---------------------------------------------------------------- models

  async function loadModels() {
    try {
      const res = /** @type {ModelsList} */ (await api('GET', '/admin/models'));
      app.models = res;
      for (const dl of res.downloads || []) app.downloads.set(dl.id, dl);
      renderModels();
    } catch (e) {
      if (e.status !== 401) toast(`Models: ${e.message}`, 'error');
    }
  }

  function renderModels() {
    const m = app.models;
    if (!m) return;
    const installed = m.installed || [];
    $('default-model').replaceChildren(...installed.map((x) =>
      h('option', { value: x.id, selected: x.id === m.default }, x.id)));
    $('installed').replaceChildren(...(installed.length ? installed.map((x) => {
      const del = h('button', { type: 'button', class: 'danger', disabled: x.id === m.default || x.source === 'bundled', 'aria-label': `Delete ${x.id}` }, 'Delete');
      del.addEventListener('click', () => confirmThen(del, 'Confirm delete', () => modelAction('DELETE', `/admin/models/${enc(x.id)}`, undefined, `Deleted ${x.id}`)));
      return h('tr', { 'data-model': x.id },
        h('td', {}, x.id, x.id === m.default ? h('span', { class: 'badge', 'data-color': 'green' }, ' default') : null),
        h('td', {}, x.family || ''),
        h('td', {}, fmtBytes(x.size_bytes)),
        h('td', { class: 'labels', title: `as the model names them: ${(x.labels || []).join(', ')}` },
          (x.canonical_labels || x.labels || []).join(', ')),
        h('td', {}, x.license || ''),
        h('td', {}, x.source || ''),
        h('td', { class: 'actions' },
          h('button', { type: 'button', 'aria-label': `Verify ${x.id}`, onclick: () => verifyModel(x.id) }, 'Verify'),
          del));
    }) : [h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No model installed.'))]));

    const catalog = m.catalog || [];
    $('catalog').replaceChildren(...(catalog.length ? catalog.map((c) => h('tr', { 'data-model': c.id },
      h('td', {}, c.id),
      h('td', {}, c.family || ''),
      h('td', {}, fmtParams(c.params_millions * 1e6)),
      h('td', {}, fmtBytes(c.size_bytes)),
      h('td', {}, c.license || ''),
      h('td', { class: 'download-cell' }, downloadCell(c)))) : [h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'The catalog is empty.'))]));
  }

  /** @param {CatalogModel} c */
  function downloadCell(c) {
    const dl = app.downloads.get(c.id);
    if (dl && dl.state === 'running') {
      const pct = Math.max(0, Math.min(100, dl.percent || 0));
      return h('div', { class: 'progress', 'data-download': c.id, 'data-state': 'running' },
        h('progress', { max: 100, value: pct, 'aria-label': `Download of ${c.id}` }),
        h('span', { class: 'pct' }, `${pct.toFixed(0)} %`),
        h('span', { class: 'muted' }, dl.total_bytes ? `${fmtBytes(dl.bytes)} of ${fmtBytes(dl.total_bytes)}` : fmtBytes(dl.bytes)),
        h('button', { type: 'button', 'aria-label': `Cancel download of ${c.id}`, onclick: () => modelAction('DELETE', `/admin/models/pull/${enc(c.id)}`, undefined, `Cancelled ${c.id}`) }, 'Cancel'));
    }
    const note = dl && dl.state !== 'running'
      ? h('span', { class: 'muted', 'data-download': c.id, 'data-state': dl.state },
        dl.state === 'done' ? '100 % · done' : dl.state)
      : null;
    if (c.installed) return h('span', { class: 'inline' }, h('span', { class: 'badge', 'data-color': 'green' }, 'installed'), note);
    return h('span', { class: 'inline' },
      h('button', { type: 'button', class: 'primary', 'aria-label': `Download ${c.id}`, onclick: () => pullModel(c.id) }, dl && dl.state === 'failed' ? 'Retry' : 'Download'),
      note);
  }

  /** @param {DownloadInfo} dl a `download` event, or the pull just started */
  function onDownload(dl) {
    const before = app.downloads.get(dl.id);
    app.downloads.set(dl.id, dl);
    if (dl.state !== 'running' && (!before || before.state === 'running')) {
      if (dl.state === 'done') toast(`Downloaded ${dl.id}`);
      else if (dl.state === 'failed') toast(`Download of ${dl.id} failed`, 'error');
      loadModels();
      return;
    }
    const cell = document.querySelector(`#catalog tr[data-model="${CSS.escape(dl.id)}"] .download-cell`);
    const entry = app.models && (app.models.catalog || []).find((c) => c.id === dl.id);
    if (cell && entry) cell.replaceChildren(downloadCell(entry));
  }

  async function pullModel(id) {
    try {
      await api('POST', '/admin/models/pull', { id });
      if (!app.downloads.has(id) || app.downloads.get(id).state !== 'running') {
        onDownload({ id, state: 'running', bytes: 0, total_bytes: 0, percent: 0 });
      }
    } catch (e) {
      toast(`Download ${id}: ${e.message}`, 'error');
    }
  }

  async function verifyModel(id) {
    try {
      const res = await api('POST', '/admin/models/verify', { id });
      const bad = ((res && res.files) || []).filter((f) => f.status !== 'ok').map((f) => `${f.name} ${f.status}`);
      toast(res && res.ok ? `${id}: checksums match` : `${id}: verification FAILED${bad.length ? ` (${bad.join(', ')})` : ''}`, res && res.ok ? 'info' : 'error');
    } catch (e) {
      toast(`Verify ${id}: ${e.message}`, 'error');
    }
  }

  async function modelAction(method, path, body, done) {
    try {
      await api(method, path, body);
      toast(done);
      loadModels();
    } catch (e) {
      toast(e.message, 'error');
    }
  }

  async function setDefault(ev) {
    ev.preventDefault();
    const id = $('default-model').value;
    if (!id) return;
    try {
      await api('POST', '/admin/models/default', { id });
      $('models-status').textContent = `${id} is now the default`;
      loadModels();
    } catch (e) {
      toast(`Default model: ${e.message}`, 'error');
    }
  }

  // ---------------------------------------------------------------- audit

  /** A value of an audit record's change, short: lists joined, objects as k=v. */
  function fmtAuditValue(v) {
    if (v === null || v === undefined) return '–';
    if (Array.isArray(v)) return v.join(', ') || '(empty)';
    if (typeof v === 'object') return Object.entries(v).map(([k, x]) => `${k}=${x}`).join(', ') || '(none)';
    return String(v);
  }

  function auditChange(e) {
    if (e.old !== undefined || e.new !== undefined) return `${fmtAuditValue(e.old)} → ${fmtAuditValue(e.new)}`;
    if (e.details) {
      const d = e.details;
      const parts = [d.label ? `“${d.label}”` : null, d.scope, d.expires_at ? `expires ${new Date(d.expires_at).toLocaleString()}` : null];
      return parts.filter(Boolean).join(', ');
    }
    return '';
  }

  async function loadAudit() {
    $('audit-status').textContent = 'loading…';
    try {
      const res = await api('GET', '/admin/audit?limit=200');
      renderAudit(res.entries || []);
      $('audit-status').textContent = '';
    } catch (e) {
      $('audit-status').textContent = '';
      if (e.status !== 401) toast(`Audit: ${e.message}`, 'error');
    }
  }

  function renderAudit(entries) {
    const body = $('audit');
    if (!entries.length) {
      body.replaceChildren(h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No admin actions recorded yet.')));
      return;
    }
    body.replaceChildren(...entries.map((e) => h('tr', { 'data-action': e.action, 'data-result': e.result },
      h('td', {}, new Date(e.time).toLocaleString()),
      h('td', { class: 'mono' }, e.actor),
      h('td', { class: 'mono' }, e.peer || ''),
      h('td', { class: 'mono' }, e.action),
      h('td', { class: 'mono' }, e.target || '–'),
      h('td', {}, auditChange(e)),
      h('td', { class: e.result === 'ok' ? 'ok' : 'refused' }, e.result))));
  }

  // ---------------------------------------------------------------- charts (status view)

  const SVG_NS = 'http://www.w3.org/2000/svg';
  const CHART_W = 360;
  const CHART_H = 120;

  /** An SVG element: s('polyline', {points: '…'}). */
  function svg(tag, attrs) {
    const el = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    return el;
  }

  /** A round upper bound for a chart's y axis (1, 2, 5 × 10^n). */
  function niceMax(x) {
    if (!(x > 0)) return 1;
    const p = 10 ** Math.floor(Math.log10(x));
    for (const m of [1, 2, 5, 10]) if (x <= m * p) return m * p;
    return 10 * p;
  }

  /** Draws lines of `samples` into the figure `id`: one per [series name, value of a sample].
      Time runs left to right over the history's whole window; a gap (null) breaks a line.
      @param {string} id @param {Sample[]} samples @param {number} windowMs
      @param {[string, (s: Sample) => (number | null | undefined)][]} series @param {string} unit */
  function drawLines(id, samples, windowMs, series, unit) {
    const fig = $(id);
    const plot = fig.querySelector('svg');
    const end = samples.length ? samples[samples.length - 1].at_ms : Date.now();
    const start = end - windowMs;
    let max = 0;
    for (const smp of samples) for (const [, f] of series) { const v = f(smp); if (typeof v === 'number') max = Math.max(max, v); }
    const top = niceMax(max);
    const x = (t) => ((t - start) / windowMs) * CHART_W;
    const y = (v) => CHART_H - (v / top) * (CHART_H - 4);
    const children = [svg('line', { x1: 0, y1: CHART_H - 0.5, x2: CHART_W, y2: CHART_H - 0.5, class: 'axis' })];
    for (const [name, f] of series) {
      let run = [];
      const flush = () => {
        if (run.length === 1) children.push(svg('circle', { cx: run[0][0], cy: run[0][1], r: 1.8, 'data-series': name }));
        else if (run.length) children.push(svg('polyline', { points: run.map((p) => p.join(',')).join(' '), 'data-series': name }));
        run = [];
      };
      for (const smp of samples) {
        const v = f(smp);
        if (typeof v === 'number' && Number.isFinite(v)) run.push([x(smp.at_ms).toFixed(1), y(v).toFixed(1)]);
        else flush();
      }
      flush();
    }
    plot.replaceChildren(...children);
    fig.dataset.points = String(samples.length);
    fig.querySelector('.chart-scale').textContent = samples.length
      ? `0 – ${top} ${unit} · ${samples.length} points` : 'no points yet: they appear every 5 s';
  }

  /** The breaker timeline: one row per breaker, one cell per sample, coloured by state.
      @param {Sample[]} samples */
  function drawBreakerTimeline(samples) {
    const keys = [...new Set(samples.flatMap((smp) => Object.keys(smp.breakers || {})))].sort();
    const root = $('breaker-timeline');
    $('chart-breakers').dataset.points = String(samples.length);
    if (!keys.length) {
      root.replaceChildren(h('p', { class: 'muted' }, 'No breaker yet: one appears when a model first serves.'));
      return;
    }
    root.replaceChildren(...keys.map((key) => h('div', { class: 'timeline-row', 'data-breaker': key },
      h('span', { class: 'timeline-key' }, key),
      h('span', { class: 'timeline-cells' }, samples.map((smp) => {
        const state = (smp.breakers || {})[key];
        return h('i', {
          'data-state': state || 'none',
          title: `${new Date(smp.at_ms).toLocaleTimeString()}: ${state ? STATE_TEXT[state] || state : 'not loaded'}`,
        });
      })))));
  }

  async function loadHistory() {
    try {
      const res = /** @type {HistoryResponse} */ (await api('GET', '/admin/history'));
      const samples = res.samples || [];
      const windowMs = (res.capacity || 180) * (res.interval_seconds || 5) * 1000;
      drawLines('chart-rate', samples, windowMs, [
        ['requests', (smp) => smp.requests_per_second],
        ['errors', (smp) => smp.errors_per_second],
        ['shed', (smp) => smp.shed_per_second],
        ['limited', (smp) => smp.rate_limited_per_second],
      ], 'req/s');
      drawLines('chart-latency', samples, windowMs, [
        ['p50', (smp) => smp.p50_ms],
        ['p99', (smp) => smp.p99_ms],
      ], 'ms');
      drawBreakerTimeline(samples);
    } catch (e) {
      if (e.status !== 401) $('chart-rate').querySelector('.chart-scale').textContent = `history: ${e.message}`;
    }
  }

  // ---------------------------------------------------------------- playground

  /** Highlight colour groups by canonical label (the legend shows those present). */
  const CATEGORY = {
    names: ['PERSON', 'FIRST_NAME', 'LAST_NAME', 'MIDDLE_NAME', 'USERNAME'],
    places: ['STREET_ADDRESS', 'CITY', 'STATE', 'COUNTRY', 'LOCATION', 'ZIPCODE'],
    organisations: ['ORGANIZATION'],
    identifiers: ['SSN', 'MEDICAL_RECORD_NUMBER', 'HEALTH_PLAN_NUMBER', 'ACCOUNT_NUMBER', 'LICENSE_NUMBER',
      'VEHICLE_ID', 'DEVICE_ID', 'ID_NUM', 'CREDIT_CARD', 'IP_ADDRESS', 'PASSWORD'],
    'dates and ages': ['DATE', 'DATE_OF_BIRTH', 'TIME', 'AGE'],
    contacts: ['PHONE', 'FAX', 'EMAIL', 'URL'],
  };
  const categoryOf = (label) => Object.keys(CATEGORY).find((c) => CATEGORY[c].includes(label)) || 'other';
  const SOURCE_TEXT = { rule: 'rules', ml: 'model' };

  /** @param {PiiEntity} e */
  function entityTitle(e) {
    const by = (e.sources || []).map((x) => SOURCE_TEXT[x] || x).join(' + ') || 'unknown';
    return `${e.canonical_label} · confidence ${Number(e.confidence).toFixed(2)} · found by ${by}`;
  }

  /** The note with each entity marked; offsets count code points, as the API does.
      @param {DeidentifyResponse} res */
  function renderHighlights(res) {
    const chars = Array.from(res.original_text || '');
    const entities = [...(res.pii_entities || [])].sort((a, b) => a.start - b.start || b.end - a.end);
    const out = [];
    let at = 0;
    for (const e of entities) {
      if (e.start < at || e.end > chars.length) continue; // overlaps are merged server-side
      if (e.start > at) out.push(chars.slice(at, e.start).join(''));
      out.push(h('mark', {
        'data-category': categoryOf(e.canonical_label),
        'data-label': e.canonical_label,
        'data-start': e.start,
        'data-end': e.end,
        title: entityTitle(e),
      }, chars.slice(e.start, e.end).join('')));
      at = e.end;
    }
    if (at < chars.length) out.push(chars.slice(at).join(''));
    $('play-highlighted').replaceChildren(...(out.length ? out : [h('span', { class: 'muted' }, '(empty)')]));
    const present = [...new Set(entities.map((e) => categoryOf(e.canonical_label)))];
    $('play-legend').replaceChildren(...present.map((c) => h('span', { class: 'chip', 'data-category': c }, c)));
    $('play-output').textContent = res.deidentified_text || '';
    $('play-copy').disabled = !res.deidentified_text;
    $('play-entities').replaceChildren(...(entities.length ? entities.map((e) => h('tr', { 'data-category': categoryOf(e.canonical_label) },
      h('td', {}, h('span', { class: 'swatch', 'data-category': categoryOf(e.canonical_label) }), e.canonical_label),
      h('td', {}, Number(e.confidence).toFixed(2)),
      h('td', {}, (e.sources || []).map((x) => SOURCE_TEXT[x] || x).join(' + ')),
      h('td', { class: 'mono' }, e.redacted_text))) : [h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No PHI found.'))]));
  }

  async function runPlayground(ev) {
    ev.preventDefault();
    const text = $('play-input').value;
    if (!text.trim()) { $('play-status').textContent = 'Paste a note first.'; return; }
    const body = { text, method: $('play-method').value };
    const policy = $('play-policy').value;
    if (policy) body.policy = policy;
    const subject = $('play-subject').value.trim();
    if (subject) body.subject = subject;
    $('play-run').disabled = true;
    $('play-status').textContent = 'working…';
    const started = performance.now();
    try {
      const res = /** @type {DeidentifyResponse} */ (await api('POST', '/pii/deidentify', body));
      const ms = performance.now() - started;
      app.play = res;
      renderHighlights(res);
      const n = (res.pii_entities || []).length;
      $('play-status').textContent = `${n} ${n === 1 ? 'entity' : 'entities'} · ${ms.toFixed(0)} ms · ${res.model_name}${res.degraded ? ' (rules only: degraded)' : ''}`;
    } catch (e) {
      $('play-status').textContent = '';
      toast(`Playground: ${e.message}`, 'error');
    } finally {
      $('play-run').disabled = false;
    }
  }

  function clearPlayground() {
    app.play = null;
    $('play-input').value = '';
    $('play-subject').value = '';
    $('play-output').textContent = '';
    $('play-copy').disabled = true;
    $('play-status').textContent = '';
    $('play-legend').replaceChildren();
    $('play-entities').replaceChildren();
    $('play-highlighted').replaceChildren(h('span', { class: 'muted' }, 'Nothing yet.'));
  }

  /** A dropped text file fills the note (read here; nothing is uploaded until De-identify). */
  function wirePlaygroundDrop() {
    const input = $('play-input');
    // Ctrl+Enter (⌘Enter) runs it from the note.
    input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); $('play-form').requestSubmit(); }
    });
    input.addEventListener('dragover', (ev) => { ev.preventDefault(); input.dataset.drop = 'on'; });
    input.addEventListener('dragleave', () => { delete input.dataset.drop; });
    input.addEventListener('drop', async (ev) => {
      ev.preventDefault();
      delete input.dataset.drop;
      const file = ev.dataTransfer && ev.dataTransfer.files && ev.dataTransfer.files[0];
      if (!file) return;
      if (file.size > 4 * 1024 * 1024) { toast('That file is over 4 MB: paste a note instead', 'error'); return; }
      input.value = await file.text();
    });
  }

  // ---------------------------------------------------------------- logs

  const LEVELS = ['trace', 'debug', 'info', 'warn', 'error'];
  const LOG_KEEP = 2000;

  /** A field's value as the log view shows it: numbers to three decimals at most.
      @param {any} v */
  const fieldText = (v) => (typeof v === 'string' ? v
    : typeof v === 'number' && !Number.isInteger(v) ? String(Math.round(v * 1000) / 1000) : JSON.stringify(v));

  /** The fields worth showing: empty values left out. @param {LogLine} l */
  const shownFields = (l) => Object.entries(l.fields || {}).filter(([, v]) => v !== '' && v !== null);

  /** @param {LogLine} l */
  function logText(l) {
    const fields = shownFields(l).map(([k, v]) => `${k}=${fieldText(v)}`);
    return [l.timestamp, l.level.toUpperCase(), l.target, l.message, ...fields, l.request_id ? `request_id=${l.request_id}` : ''].join(' ');
  }

  /** @param {LogLine} l */
  function logVisible(l) {
    const min = LEVELS.indexOf($('logs-level').value);
    if (LEVELS.indexOf(l.level) < min) return false;
    const q = $('logs-search').value.trim().toLowerCase();
    return !q || logText(l).toLowerCase().includes(q);
  }

  /** @param {LogLine} l */
  function logRow(l) {
    return h('div', { class: 'log-line', 'data-level': l.level, 'data-seq': l.seq, 'data-request-id': l.request_id || undefined },
      h('span', { class: 'log-time' }, l.timestamp ? new Date(l.timestamp).toLocaleTimeString() : ''),
      h('span', { class: 'log-level' }, l.level),
      h('span', { class: 'log-target' }, l.target),
      h('span', { class: 'log-message' }, l.message),
      h('span', { class: 'log-fields' }, shownFields(l).map(([k, v]) => h('span', {}, h('b', {}, k), '=', fieldText(v)))),
      l.request_id ? h('span', { class: 'log-request' }, l.request_id) : null);
  }

  function renderLogs() {
    const visible = app.logLines.filter(logVisible);
    $('logs').replaceChildren(...(visible.length ? visible.map(logRow) : [h('p', { class: 'muted' }, 'No line matches.')]));
    $('logs-status').textContent = `${visible.length} of ${app.logLines.length} lines`;
    if ($('logs-follow').checked) $('logs').scrollTop = $('logs').scrollHeight;
  }

  async function pollLogs() {
    try {
      const res = /** @type {LogTail} */ (await api('GET', `/admin/logs?after=${app.logLast}`));
      app.logLast = res.last;
      if (res.lines && res.lines.length) {
        app.logLines.push(...res.lines);
        if (app.logLines.length > LOG_KEEP) app.logLines.splice(0, app.logLines.length - LOG_KEEP);
        renderLogs();
      } else if (!$('logs').children.length) {
        renderLogs();
      }
    } catch (e) {
      if (e.status !== 401) $('logs-status').textContent = `log: ${e.message}`;
    }
  }

  // ---------------------------------------------------------------- models: resident

  async function loadResident() {
    try {
      const res = /** @type {ModelsLoadedResponse} */ (await api('GET', '/models/loaded'));
      app.loaded = res;
      renderResident();
    } catch (e) {
      if (e.status !== 401) toast(`Loaded models: ${e.message}`, 'error');
    }
  }

  function renderResident() {
    const res = app.loaded;
    if (!res) return;
    const names = Object.keys(res.models || {}).sort();
    const max = res.max_resident_models;
    $('resident-summary').textContent = `${names.length} loaded${typeof max === 'number' ? ` (at most ${max})` : ''} · ${fmtBytes(res.resident_memory_bytes)} resident`
      + ` · default ${res.default_model}` + (typeof res.default_keep_alive_seconds === 'number'
      ? ` · unloaded after ${fmtDuration(res.default_keep_alive_seconds)} idle` : ' · kept loaded');
    $('resident').replaceChildren(...(names.length ? names.map((name) => {
      const m = res.models[name];
      return h('tr', { 'data-resident': name },
        h('td', {}, name, name === res.default_model ? h('span', { class: 'badge', 'data-color': 'green' }, 'default') : null),
        h('td', {}, fmtBytes(m.footprint_bytes)),
        h('td', {}, m.active_requests ? `${m.active_requests} request${m.active_requests === 1 ? '' : 's'}` : 'idle'),
        h('td', {}, typeof m.idle_seconds === 'number' ? fmtDuration(m.idle_seconds) : '–'),
        h('td', {}, typeof m.keep_alive_seconds_remaining === 'number' ? fmtDuration(m.keep_alive_seconds_remaining) : 'stays'),
        h('td', { class: 'actions' }, h('button', {
          type: 'button', 'aria-label': `Unload ${name}`,
          onclick: () => unloadModel(name),
        }, 'Unload')));
    }) : [h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'No model is loaded: the first request loads the default.'))]));
  }

  async function unloadModel(name) {
    try {
      const res = await api('POST', '/models/unload', { model_name: name });
      toast(res && res.unloaded ? `Unloaded ${name}`
        : `${name} was not unloaded${res && res.active_requests ? `: ${res.active_requests} requests are using it` : ''}`,
      res && res.unloaded ? 'info' : 'error');
    } catch (e) {
      toast(`Unload ${name}: ${e.message}`, 'error');
    }
    loadResident();
  }

  // ---------------------------------------------------------------- tabs

  function selectTab(tab) {
    const tabs = /** @type {HTMLElement[]} */ ([...document.querySelectorAll('[role="tab"]')]);
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute('aria-selected', String(on));
      t.tabIndex = on ? 0 : -1;
      $(t.getAttribute('aria-controls')).hidden = !on;
    }
    const name = tab.id.replace('tab-', '');
    history.replaceState(null, '', `#${name}`);
    if (name === 'settings' || name === 'access' || name === 'playground') loadSettings();
    if (name === 'models') { loadModels(); loadResident(); }
    if (name === 'access') loadTokens();
    if (name === 'audit') loadAudit();
    if (name === 'status') loadHistory();
    if (name === 'logs') pollLogs();
    if (name === 'playground') $('play-input').focus();
    // Only the view on screen polls: charts every 5 s (a sample's interval), the log
    // every 1.5 s, resident models every 5 s.
    for (const t of Object.values(app.timers)) clearInterval(t);
    app.timers = {};
    if (name === 'status') app.timers.history = setInterval(loadHistory, 5000);
    if (name === 'logs') app.timers.logs = setInterval(pollLogs, 1500);
    if (name === 'models') app.timers.resident = setInterval(loadResident, 5000);
  }

  /** A tab named in the address (`#logs`): the tray's "View logs" and "Open playground". */
  function tabFromHash() {
    const tab = document.getElementById(`tab-${location.hash.slice(1)}`);
    if (tab && tab.getAttribute('aria-selected') !== 'true' && !$('app').hidden) selectTab(tab);
  }

  function wireTabs() {
    const tabs = /** @type {HTMLElement[]} */ ([...document.querySelectorAll('[role="tab"]')]);
    for (const tab of tabs) {
      tab.addEventListener('click', () => selectTab(tab));
      tab.addEventListener('keydown', (ev) => {
        const i = tabs.indexOf(tab);
        let next = null;
        if (ev.key === 'ArrowRight') next = tabs[(i + 1) % tabs.length];
        if (ev.key === 'ArrowLeft') next = tabs[(i - 1 + tabs.length) % tabs.length];
        if (ev.key === 'Home') next = tabs[0];
        if (ev.key === 'End') next = tabs[tabs.length - 1];
        if (next) { ev.preventDefault(); next.focus(); selectTab(next); }
      });
    }
  }

  // ---------------------------------------------------------------- start-up and sign-in

  function showBanner(message, canStart) {
    $('banner-text').textContent = message;
    $('banner-action').hidden = !canStart;
    $('banner').hidden = !message;
  }

  function signOut(message) {
    if (app.tauri) {
      // The admin token may have been rotated (`phiguard token rotate --admin`): the shell
      // hands over the one the server uses now. Asked once; a second refusal shows the banner.
      if (!app.rebootstrapping) {
        app.rebootstrapping = true;
        bootstrapTauri().finally(() => { app.rebootstrapping = false; });
        return;
      }
      showBanner(message || 'The shell handed over a token the server refused.', false);
      return;
    }
    sessionStorage.removeItem(TOKEN_KEY);
    clearPlayground();
    app.logLines = [];
    app.logLast = 0;
    for (const t of Object.values(app.timers)) clearInterval(t);
    app.timers = {};
    if (app.events) app.events.close();
    app.events = null;
    app.token = '';
    $('app').hidden = true;
    $('logout').hidden = true;
    $('login').hidden = false;
    $('login-error').textContent = message || '';
    $('login-token').focus();
  }

  async function enter() {
    const status = await api('GET', '/admin/status');
    $('login').hidden = true;
    $('app').hidden = false;
    $('logout').hidden = !!app.tauri;
    showBanner('', false);
    renderStatus(status);
    connectEvents();
    const initial = document.getElementById(`tab-${location.hash.slice(1)}`) || $('tab-status');
    selectTab(initial);
  }

  async function bootstrapTauri() {
    try {
      const boot = await app.tauri.core.invoke('dashboard_bootstrap');
      app.apiBase = boot.api_base.replace(/\/$/, '');
      app.token = boot.admin_token;
      await enter();
    } catch (e) {
      // A ShellError from the shell: {kind, message}; the service is off or its port is taken.
      const message = (e && e.message) || String(e);
      $('app').hidden = true;
      showBanner(message, true);
    }
  }

  async function startServiceFromBanner() {
    $('banner-action').disabled = true;
    try {
      await app.tauri.core.invoke('service_start');
      await bootstrapTauri();
    } catch (e) {
      showBanner((e && e.message) || String(e), true);
    } finally {
      $('banner-action').disabled = false;
    }
  }

  async function init() {
    wireTabs();
    $('settings-form').addEventListener('submit', saveSettings);
    $('settings-revert').addEventListener('click', () => { clearFieldErrors(); renderSettings(app.settings); $('settings-status').textContent = ''; });
    $('default-form').addEventListener('submit', setDefault);
    $('token-form').addEventListener('submit', createToken);
    $('audit-refresh').addEventListener('click', loadAudit);
    $('new-token-copy').addEventListener('click', () => copyText($('new-token-value').textContent));
    $('new-token-dismiss').addEventListener('click', () => { $('new-token').hidden = true; $('new-token-value').textContent = ''; });
    $('logout').addEventListener('click', () => signOut(''));
    $('banner-action').addEventListener('click', startServiceFromBanner);
    $('play-form').addEventListener('submit', runPlayground);
    $('play-clear').addEventListener('click', clearPlayground);
    $('play-copy').addEventListener('click', () => copyText($('play-output').textContent, $('play-output')));
    wirePlaygroundDrop();
    $('logs-level').addEventListener('change', renderLogs);
    $('logs-search').addEventListener('input', renderLogs);
    window.addEventListener('hashchange', tabFromHash);
    setInterval(tick, 250);

    const tauri = /** @type {any} */ (window).__TAURI__;
    app.tauri = tauri && tauri.core ? tauri : null;
    if (app.tauri) {
      app.tauri.event?.listen?.('service-changed', () => bootstrapTauri());
      await bootstrapTauri();
      return;
    }

    app.apiBase = location.origin;
    $('login-form').addEventListener('submit', async (ev) => {
      ev.preventDefault();
      app.token = $('login-token').value.trim();
      $('login-error').textContent = '';
      try {
        await enter();
        sessionStorage.setItem(TOKEN_KEY, app.token);
        $('login-token').value = '';
      } catch (e) {
        if (e.status !== 401) $('login-error').textContent = e.message;
      }
    });
    const saved = sessionStorage.getItem(TOKEN_KEY);
    if (saved) {
      app.token = saved;
      try { await enter(); return; } catch (e) { if (e.status !== 401) signOut(e.message); return; }
    }
    signOut('');
  }

  document.addEventListener('DOMContentLoaded', init);
})();
