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
 * @property {number} requests Requests answered, every route.
 * @property {number} errors Requests answered with a 5xx, every route.
 * @property {number} model_requests Requests to the model routes (`/pii/*`, `/analyze`) answered: the work users send, without probes or admin calls.
 * @property {number} model_errors Of those, answered with a 5xx.
 * @property {number} rate_limited Of those, answered 429 by a rate limit.
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
 * @property {Array<string>} canonical_labels The phiguard labels those become (what the API answers), each once, in order.
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
 * @property {Array<VerifiedFile>} files Each recorded file and what was found, as `phiguard models verify` lists them.
 */

/**
 * One file of a [`ModelVerification`].
 * @typedef {object} VerifiedFile
 * @property {string} name The file's name in the model folder (`model.safetensors`).
 * @property {string} status `ok`, `changed` (its digest is not the recorded one) or `missing`.
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

/**
 * `GET /admin/history`.
 * @typedef {object} HistoryResponse
 * @property {number} interval_seconds Seconds between samples.
 * @property {number} capacity The most samples kept.
 * @property {Array<Sample>} samples Oldest first.
 */

/**
 * One interval of model-route traffic.
 * @typedef {object} Sample
 * @property {number} at_ms The end of the interval, Unix time in milliseconds.
 * @property {number} seconds The interval's length in seconds.
 * @property {number} requests_per_second Model-route requests answered per second.
 * @property {number} errors_per_second Of those, answered 5xx, per second.
 * @property {number} shed_per_second Requests shed by admission per second.
 * @property {number} rate_limited_per_second Model-route requests answered 429 (rate limits) per second.
 * @property {number | null} p50_ms Median model-route latency over the interval in milliseconds; `null` when no request finished in it.
 * @property {number | null} p99_ms 99th-percentile latency in milliseconds; `null` when no request finished.
 * @property {Object<string, BreakerStateName>} breakers Each breaker's state at the end of the interval, by breaker key.
 */

/**
 * `GET /admin/logs`'s answer.
 * @typedef {object} LogTail
 * @property {number} last The number to pass as `after` next time.
 * @property {number} missed Lines after `after` that had already left the ring (it keeps the last 2000).
 * @property {Array<LogLine>} lines Oldest first.
 */

/**
 * One log line.
 * @typedef {object} LogLine
 * @property {number} seq Its number: lines are numbered from 1 in the order they were written.
 * @property {string} timestamp When it was written (RFC 3339).
 * @property {string} level `error`, `warn`, `info`, `debug` or `trace`.
 * @property {string} target The module that logged it (`phiguard::access`, …).
 * @property {string} message The message.
 * @property {string | null} request_id The request it belongs to, when it was logged inside one.
 * @property {Object<string, any>} fields The event's other fields (status, route, elapsed time, …).
 */

/**
 * `GET /models/loaded`.
 * @typedef {object} ModelsLoadedResponse
 * @property {number} resident_memory_bytes Memory the resident models take.
 * @property {number} pending_memory_bytes Always 0.
 * @property {number} memory_admission_wait_seconds OpenMed's figure.
 * @property {Array<string>} warm_models Always empty.
 * @property {Object<string, LoadedModel>} models Resident models by id.
 * @property {Array<string>} served_models Names a request may use.
 * @property {string} default_model The default model.
 * @property {ModelPolicy} model_policy How the served list was chosen.
 * @property {number | null} [default_keep_alive_seconds] `models.keep_alive`.
 * @property {number | null} [max_resident_models] `models.max_resident`.
 * @property {number | null} [memory_budget_bytes] Always null.
 */

/**
 * One resident model in `/models/loaded`.
 * @typedef {object} LoadedModel
 * @property {number} models Model objects held (1).
 * @property {number} tokenizers Tokenizers held (1).
 * @property {number} pipelines Pipelines held (0: there are none).
 * @property {number} active_requests Requests using it now.
 * @property {boolean} resident Always true in this list.
 * @property {boolean} loading Always false in this list.
 * @property {number} footprint_bytes Memory it takes.
 * @property {number} pending_footprint_bytes Memory being reserved (0).
 * @property {number} idle_seconds Seconds since a request last used it (phiguard's; the dashboard shows it).
 * @property {number | null} [keep_alive_seconds_remaining] Seconds until it is unloaded when idle; null when it stays.
 */

/**
 * The model policy of `/models/loaded`.
 * @typedef {object} ModelPolicy
 * @property {boolean} explicit Whether `models.served` is set.
 * @property {Array<string>} findings Always empty.
 */

/**
 * `/pii/deidentify` answer (OpenMed's `DeidentificationResult.to_dict()`).
 * @typedef {object} DeidentifyResponse
 * @property {string} original_text The (stripped) text.
 * @property {string} deidentified_text The text with every entity replaced.
 * @property {Array<PiiEntity>} pii_entities What was replaced.
 * @property {string} method The method applied.
 * @property {string} timestamp Naive local ISO-8601 with microseconds.
 * @property {number} num_entities_redacted How many entities were replaced.
 * @property {DeidentifyMetadata} metadata How it was made.
 * @property {string} model_name The installed model that answered.
 * @property {boolean} degraded Answered by the rules alone.
 * @property {any} [audit_report] Always null over REST.
 * @property {Object<string, string> | null} [mapping] Replacement → original, only with `keep_mapping` (or a policy that keeps it).
 * @property {string | null} [sealed_mapping] With `seal_mapping`: the mapping sealed with this install's mapping key (only `POST /admin/reidentify` opens it).
 */

/**
 * One entity of `/pii/deidentify` (OpenMed's `PIIEntity`).
 * @typedef {object} PiiEntity
 * @property {string} text The entity text.
 * @property {string} label OpenMed's wire label.
 * @property {string} entity_type The same label.
 * @property {number} start Code-point offset.
 * @property {number} end One past the last code point.
 * @property {number} confidence Confidence, four decimals.
 * @property {string} redacted_text What the entity became.
 * @property {string} canonical_label The canonical label.
 * @property {Array<string>} sources Every detector that found it (`ml`, `rule`; the model first).
 * @property {Evidence} evidence Where it came from.
 * @property {number} threshold The request's threshold.
 * @property {string} action What was done (`mask`, `shift_dates`, `year_only`, …).
 * @property {string} surrogate The replacement again (OpenMed's field).
 * @property {SpanValid} metadata Span metadata.
 */

/**
 * Where a de-identified entity came from.
 * @typedef {object} Evidence
 * @property {string} raw_label The label as detected.
 * @property {string} language The request's language.
 * @property {SpanValid} metadata Span metadata.
 * @property {string} model_id The installed model of the request.
 * @property {string | null} [detector] `rule` when a rule found it.
 */

/**
 * Entity metadata on `/pii/deidentify`.
 * @typedef {object} SpanValid
 * @property {boolean} span_valid Always true.
 */

/**
 * What a de-identification says of how it was made.
 * @typedef {object} DeidentifyMetadata
 * @property {boolean} degraded Answered by the rules alone.
 * @property {string} lang The request's language.
 * @property {number | null} [date_shift_days] With `shift_dates`: the days dates moved by.
 * @property {null | AppliedPolicy} [policy] The policy applied, when one was asked for.
 */

/**
 * The policy a de-identification applied.
 * @typedef {object} AppliedPolicy
 * @property {string} name Canonical name.
 * @property {number} schema_version Version of the policy format.
 * @property {boolean} keep_mapping Whether the mapping is returned.
 */

export {};
