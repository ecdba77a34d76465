// Generated from the OpenAPI document by src/server/ui_types.rs: do not edit.
// Regenerate with `PHIGUARD_UPDATE_UI_TYPES=1 cargo test --lib ui_types`.
//
// JSDoc types of the admin API's answers, for editors checking app.js (`// @ts-check`);
// the page never loads this file.

/**
 * `GET /admin/status` and the `status` event: what the dashboard and the tray show.
 * @typedef {object} Status
 * @property {Phase} state `starting`, `serving`, `draining`.
 * @property {string} address Bound address (empty before the listener is bound).
 * @property {number} uptime_seconds Seconds since start.
 * @property {string} version Version.
 * @property {TrayState} tray Tray colour.
 * @property {boolean} degraded_fallback Degraded mode on by default.
 * @property {Array<BreakerStatus>} breakers One entry per model breaker.
 * @property {AdmissionStatus} admission Admission queue.
 * @property {Totals} totals Totals (the dashboard derives rates).
 * @property {null | ClusterStatus} cluster The cluster-wide limit: `null` when per process.
 */

/**
 * Service lifecycle.
 * @typedef {"starting" | "serving" | "draining"} Phase
 */

/**
 * Tray colour, computed once here so the tray, the dashboard and tests agree.
 * @typedef {"green" | "amber" | "red"} TrayState
 */

/**
 * One model breaker, in `/admin/status` and as `POST /admin/breakers/{key}/{action}`'s answer.
 * @typedef {object} BreakerStatus
 * @property {string} key The breaker's key: the model id.
 * @property {string} model_id The model id (the same as `key`).
 * @property {BreakerStateName} state Its state now (an elapsed open breaker shows as half-open).
 * @property {number} consecutive_failures Consecutive failed logical requests in the closed state.
 * @property {number} retry_after_seconds Whole seconds before a call can be admitted; 0 when calls flow now.
 * @property {number | null} failure_rate Failure rate in percent over the window; `null` until it holds enough calls.
 */

/**
 * A breaker's state on the wire (`half_open`).
 * @typedef {"closed" | "open" | "half_open" | "disabled" | "forced_open"} BreakerStateName
 */

/**
 * The admission queue.
 * @typedef {object} AdmissionStatus
 * @property {QueueDepth} depth Queued plus running, by priority.
 * @property {boolean} shedding Whether the high-watermark hysteresis is shedding.
 * @property {number} high_watermark Shedding starts at this depth.
 * @property {number} low_watermark Shedding stops below this depth.
 */

/**
 * Requests queued or running, by priority.
 * @typedef {object} QueueDepth
 * @property {number} interactive `interactive` priority.
 * @property {number} bulk `bulk` priority.
 */

/**
 * Counters since start.
 * @typedef {object} Totals
 * @property {number} requests Requests answered.
 * @property {number} errors Requests answered with an error.
 * @property {number} shed Requests shed by admission, every priority and reason.
 * @property {number} retries Backend retries.
 * @property {number} attempts Backend attempts (first attempts plus retries).
 */

/**
 * The cluster-wide admission limit of this replica.
 * @typedef {object} ClusterStatus
 * @property {ClusterMode} mode `shared` (through Redis) or `local_fallback`.
 * @property {ClusterStats} stats Counters since start.
 */

/**
 * Where admission decisions are made right now.
 * @typedef {"shared" | "local_fallback"} ClusterMode
 */

/**
 * Counters of one limiter since start (also exported as Prometheus series).
 * @typedef {object} ClusterStats
 * @property {number} admitted Calls admitted (shared or local).
 * @property {number} rejected Calls rejected (shared or local).
 * @property {number} fallbacks Times the limiter entered local fallback (including a start without Redis).
 * @property {number} redis_errors Redis calls that failed or timed out (admissions and probes; an unusable URL counts once).
 */

/**
 * The `breaker` event: a breaker changed state.
 * @typedef {object} BreakerEvent
 * @property {string} key The breaker's key: the model id.
 * @property {BreakerStateName} from The state it left.
 * @property {BreakerStateName} to The state it entered.
 */

/**
 * `GET /admin/settings` and `PUT /admin/settings`'s answer: every setting, in table order.
 * @typedef {object} SettingsList
 * @property {Array<SettingInfo>} settings One row per key of the settings table.
 */

/**
 * One setting as the dashboard edits it.
 * @typedef {object} SettingInfo
 * @property {string} key Dotted key, `group.name`.
 * @property {string} group The part of `key` before the dot.
 * @property {string} env The `PHIGUARD_*` environment variable.
 * @property {string | null} alias OpenMed's variable for the same setting; `null` when there is none.
 * @property {string} type `int`, `float`, `bool`, `enum`, `string` or `list`.
 * @property {Array<string> | null} choices The fixed choices of an enum; `null` for the other types.
 * @property {any} default The default as its typed value; `null` when unset or secret.
 * @property {any} value The effective value; `null` when unset or secret.
 * @property {SettingSource} source Where the value came from.
 * @property {boolean} locked Set by the environment, or secret: the dashboard cannot change it.
 * @property {string} rule What a valid value looks like, in words.
 * @property {string} description What the setting does.
 * @property {boolean} secret Never shown, never written to `settings.toml`.
 * @property {boolean} restart_required Takes effect only after a restart.
 */

/**
 * Where a value came from.
 * @typedef {"default" | "file" | "env"} SettingSource
 */

/**
 * `GET /admin/tokens`.
 * @typedef {object} TokenList
 * @property {Array<TokenInfo>} tokens The primary client token first, then the issued ones.
 */

/**
 * A token as listed by the admin API (never the token itself, nor its digest).
 * @typedef {object} TokenInfo
 * @property {string} id Stable id (`tok_…`, or `client` for the primary client token).
 * @property {string} label Admin-chosen label.
 * @property {Scope} scope Scope.
 * @property {string | null} created_at RFC 3339 creation time; `null` when unknown (a token pinned by the environment).
 * @property {string} prefix First characters, to recognise it.
 * @property {boolean} primary True for the primary client token: revoking it replaces it with a fresh one.
 * @property {string | null} expires_at RFC 3339 expiry; `null` for a token that does not expire.
 * @property {boolean} expired True once `expires_at` has passed: the token is refused.
 */

/**
 * What a token may do.
 * @typedef {"client" | "admin"} Scope
 */

/**
 * `GET /admin/models`: the installed models, the catalog and this process's downloads.
 * @typedef {object} ModelsList
 * @property {string} default The default model id.
 * @property {Array<InstalledModel>} installed Models that can be loaded now.
 * @property {Array<CatalogModel>} catalog Models that can be downloaded.
 * @property {Array<DownloadInfo>} downloads Downloads known to this process, running or finished.
 */

/**
 * An installed model (its folder is not shown: absolute paths are the user's business).
 * @typedef {object} InstalledModel
 * @property {string} id Model id.
 * @property {string} family `model_type` of its `config.json`.
 * @property {number} size_bytes Total size of its files.
 * @property {Array<string>} labels Entity types from `id2label` (BIO prefixes removed).
 * @property {string | null} license SPDX licence id; `null` when unknown.
 * @property {ModelSource} source Where it came from.
 */

/**
 * Where an installed model came from.
 * @typedef {"bundled" | "imported" | "downloaded"} ModelSource
 */

/**
 * A catalog entry as the dashboard lists it.
 * @typedef {object} CatalogModel
 * @property {string} id Catalog id.
 * @property {Array<string>} aliases Other names that resolve to it.
 * @property {string} family `model_type` of its `config.json` (`bert`, `deberta-v2`, …).
 * @property {number} params_millions Parameter count in millions, as the model's name gives it.
 * @property {number} size_bytes Approximate download size.
 * @property {Array<string>} labels Canonical (UPPER_SNAKE) labels the model emits.
 * @property {string} license SPDX licence id.
 * @property {boolean} verified True when the repository id was checked against the hub's listing.
 * @property {boolean} installed Installed in the model store.
 */

/**
 * One download as the dashboard shows it, in `GET /admin/models` and as a `download` event.
 * @typedef {object} DownloadInfo
 * @property {string} id Catalog id.
 * @property {DownloadState} state Where it stands.
 * @property {number} bytes Bytes fetched.
 * @property {number} total_bytes Bytes in all; 0 until known.
 * @property {number} percent 0..100.
 */

/**
 * Where a download stands.
 * @typedef {"running" | "done" | "failed" | "cancelled"} DownloadState
 */

/**
 * `POST /admin/models/pull`'s 202: the download started.
 * @typedef {object} PullStarted
 * @property {string} id Catalog id (the one the requested name resolved to).
 * @property {DownloadState} state Always `running`.
 */

/**
 * `POST /admin/models/verify`'s answer.
 * @typedef {object} ModelVerification
 * @property {string} id Model id.
 * @property {boolean} ok Whether every file matches its recorded digest.
 */

/**
 * `POST /admin/models/default`'s answer.
 * @typedef {object} DefaultModel
 * @property {string} default The new default model id.
 */

/**
 * `GET /admin/audit`: the latest audit records, newest first.
 * @typedef {object} AuditList
 * @property {Array<AuditEntry>} entries Newest first.
 */

/**
 * One audit record, as written and as `GET /admin/audit` returns it. Never request text or a token; a secret setting's value is masked.
 * @typedef {object} AuditEntry
 * @property {string} time RFC 3339 UTC, milliseconds.
 * @property {string} actor Token id of the caller (`admin`, `tok_…`, `anonymous` with auth off, `cli`).
 * @property {string} action What was done: `settings.update`, `token.create`, `token.revoke`, `breaker.reset`, `breaker.force_open`, `breaker.disable`, `faults.set`, `model.pull`, `model.cancel`, `model.delete`, `model.default`, `model.unload`.
 * @property {string} result `ok`, or the error code it was refused with (`docs/errors.md`).
 * @property {any} [details] Closed facts of the action (a token's label, scope and expiry).
 * @property {any} [new] The value after.
 * @property {any} [old] The value before (settings, breaker state, default model, faults).
 * @property {string | null} [peer] The caller's address; `null` for the CLI.
 * @property {string | null} [target] On what: a setting key, token id, model id; `null` when refused for an unknown one.
 */

export {};
