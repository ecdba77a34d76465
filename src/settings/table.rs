//! The one table of settings: key, environment variable, OpenMed alias, kind, default,
//! rule, description and what an empty value means. The env parser, `settings.toml`,
//! `GET /admin/settings`, the dashboard form, `phiguard settings list` and the reference page
//! `docs/settings.md` (rendered by `phiguard settings docs`) are all driven from [`TABLE`].

use super::key::settings;
use super::value::Kind;

/// One row of the settings table.
#[derive(Debug)]
pub struct Def {
    /// Dotted key, `group.name`, with the unit in the name where there is one.
    pub key: &'static str,
    /// The `PHIGUARD_*` environment variable.
    pub env: &'static str,
    /// OpenMed's variable for the same setting, accepted with the same default and rule.
    pub alias: Option<&'static str>,
    /// Type and rule.
    pub kind: Kind,
    /// Default, in the same textual form the environment uses (`""` means unset).
    pub default: &'static str,
    /// One line for `--help`, the docs and the dashboard.
    pub description: &'static str,
    /// Secrets are never persisted to the file, never echoed, shown redacted.
    pub secret: bool,
    /// Takes effect only after a restart (bind address, auth mode).
    pub restart: bool,
    /// What an empty value means; every row whose default is empty says it.
    pub empty: Option<Empty>,
}

/// What an empty value of a setting means (its default is empty).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Empty {
    /// Worked out when the service starts; the words say from what (`one per core`).
    Auto(&'static str),
    /// Nothing is set; the words say what that means (`unlimited`, `none (…)`).
    Means(&'static str),
}

impl Def {
    /// The group shown in the dashboard (`retry`, `breaker`, …): the key's first segment.
    pub fn group(&self) -> &'static str {
        self.key.split('.').next().unwrap_or(self.key)
    }
}

const fn d(
    key: &'static str,
    env: &'static str,
    alias: Option<&'static str>,
    kind: Kind,
    default: &'static str,
    description: &'static str,
) -> Def {
    Def {
        key,
        env,
        alias,
        kind,
        default,
        description,
        secret: false,
        restart: false,
        empty: None,
    }
}

const fn restart(mut def: Def) -> Def {
    def.restart = true;
    def
}

/// An empty value is worked out at start-up, as `how` says.
const fn auto(how: &'static str, mut def: Def) -> Def {
    def.empty = Some(Empty::Auto(how));
    def
}

/// An empty value means what `means` says.
const fn none(means: &'static str, mut def: Def) -> Def {
    def.empty = Some(Empty::Means(means));
    def
}

const fn secret(mut def: Def) -> Def {
    def.secret = true;
    def.restart = true;
    def
}

const PROFILES: &[&str] = &["prod", "dev", "test", "fast", "low_resource"];

settings! {
    // server
    SERVER_HOST: Text = restart(d("server.host", "PHIGUARD_HOST", None, Kind::Str, "127.0.0.1",
        "address to bind; anything but loopback requires auth to stay on")),
    SERVER_PORT: Int = restart(d("server.port", "PHIGUARD_PORT", None, Kind::Int { min: 0, max: 65535 }, "8080",
        "TCP port to bind (0 picks a free port)")),
    SERVER_PROBE_PORT: OptInt = none("none (probes and /metrics are answered on server.port only)", restart(d("server.probe_port", "PHIGUARD_PROBE_PORT", None,
        Kind::OptInt { min: 0, max: 65535 }, "",
        "a second TCP port, on server.host, answering only /livez, /readyz, /health and /metrics, with connections of its own: probes and scrapes are answered while server.port is at server.max_connections (0 picks a free port)"))),
    SERVER_METRICS_ENABLED: Flag = d("server.metrics_enabled", "PHIGUARD_METRICS_ENABLED", Some("OPENMED_SERVICE_METRICS_ENABLED"),
        Kind::Bool, "false", "serve Prometheus metrics at /metrics"),
    SERVER_SHUTDOWN_DRAIN_SECONDS: Float = d("server.shutdown_drain_seconds", "PHIGUARD_SHUTDOWN_DRAIN_SECONDS",
        Some("OPENMED_SERVICE_SHUTDOWN_DRAIN_SECONDS"), Kind::Float { min: 0.0, max: 86400.0 }, "30",
        "on SIGTERM, seconds to let in-flight work finish before exiting"),
    SERVER_LOG_LEVEL: Text = restart(d("server.log_level", "PHIGUARD_LOG_LEVEL", Some("OPENMED_SERVICE_LOG_LEVEL"),
        Kind::Enum(&["trace", "debug", "info", "warning", "warn", "error", "off"]), "info",
        "log verbosity of phiguard's own logs; other crates stay at warn or quieter (logs never contain request text)")),
    SERVER_LOG_FORMAT: Text = restart(d("server.log_format", "PHIGUARD_LOG_FORMAT", Some("OPENMED_SERVICE_LOG_FORMAT"),
        Kind::Enum(&["json", "plain", "text"]), "json", "log line format (plain is coloured only on a terminal)")),
    SERVER_UI: Flag = restart(d("server.ui", "PHIGUARD_UI", None, Kind::Bool, "false",
        "serve the dashboard at /ui/ (it asks for the admin token)")),
    // slow and stalled clients (docs/architecture.md, "Connections")
    SERVER_MAX_CONNECTIONS: Int = restart(d("server.max_connections", "PHIGUARD_MAX_CONNECTIONS", None, Kind::Int { min: 1, max: 1_000_000 }, "1024",
        "open client connections at most; one more is answered 503 and closed")),
    SERVER_HEADER_TIMEOUT_SECONDS: Float = restart(d("server.header_timeout_seconds", "PHIGUARD_HEADER_TIMEOUT_SECONDS", None,
        Kind::Float { min: 0.1, max: 3600.0 }, "15",
        "seconds a client has to send a request's headers, counted from the connection's start or its previous response (so also how long an idle connection stays open)")),
    SERVER_BODY_TIMEOUT_SECONDS: Float = d("server.body_timeout_seconds", "PHIGUARD_BODY_TIMEOUT_SECONDS", None,
        Kind::Float { min: 0.1, max: 3600.0 }, "30",
        "seconds a client has to send a whole request body (408 after); no admission is held meanwhile"),
    SERVER_SEND_TIMEOUT_SECONDS: Float = d("server.send_timeout_seconds", "PHIGUARD_SEND_TIMEOUT_SECONDS", None,
        Kind::Float { min: 0.1, max: 3600.0 }, "30",
        "seconds a streaming response waits for the client to take its next line before the stream is abandoned"),
    // timeouts
    TIMEOUTS_PROFILE: Text = d("timeouts.profile", "PHIGUARD_PROFILE", Some("OPENMED_PROFILE"), Kind::Enum(PROFILES), "prod",
        "runtime profile; sets the request timeout (prod 300 s, dev 600, test 60, fast 120, low_resource 900)"),
    TIMEOUTS_REQUEST_TIMEOUT_SECONDS: OptFloat = auto("the profile's timeout", d("timeouts.request_timeout_seconds", "PHIGUARD_REQUEST_TIMEOUT_SECONDS", None,
        Kind::OptFloat { min: 0.0, max: 86400.0 }, "",
        "overrides the profile's request timeout; 0 disables it")),
    // retry
    RETRY_ENABLED: Flag = d("retry.enabled", "PHIGUARD_RESILIENCE_ENABLED", Some("OPENMED_SERVICE_RESILIENCE_ENABLED"),
        Kind::Bool, "true", "retry and circuit breaking around model calls"),
    RETRY_MAX_ATTEMPTS: Int = d("retry.max_attempts", "PHIGUARD_RETRY_MAX_ATTEMPTS", Some("OPENMED_SERVICE_RETRY_MAX_ATTEMPTS"),
        Kind::Int { min: 1, max: 100 }, "3", "total attempts per model call, the first included"),
    RETRY_BACKOFF_INITIAL_SECONDS: Float = d("retry.backoff_initial_seconds", "PHIGUARD_RETRY_BACKOFF_INITIAL_SECONDS",
        Some("OPENMED_SERVICE_RETRY_BACKOFF_INITIAL_SECONDS"), Kind::Float { min: 0.0, max: 3600.0 }, "0.05",
        "delay before the first retry"),
    RETRY_BACKOFF_MULTIPLIER: Float = d("retry.backoff_multiplier", "PHIGUARD_RETRY_BACKOFF_MULTIPLIER",
        Some("OPENMED_SERVICE_RETRY_BACKOFF_MULTIPLIER"), Kind::Float { min: 1.0, max: 100.0 }, "2.0",
        "exponential growth factor of the delay"),
    RETRY_BACKOFF_MAX_SECONDS: Float = d("retry.backoff_max_seconds", "PHIGUARD_RETRY_BACKOFF_MAX_SECONDS",
        Some("OPENMED_SERVICE_RETRY_BACKOFF_MAX_SECONDS"), Kind::Float { min: 0.0, max: 3600.0 }, "1.0",
        "cap on one delay"),
    RETRY_BACKOFF_JITTER_SECONDS: Float = d("retry.backoff_jitter_seconds", "PHIGUARD_RETRY_BACKOFF_JITTER_SECONDS",
        Some("OPENMED_SERVICE_RETRY_BACKOFF_JITTER_SECONDS"), Kind::Float { min: 0.0, max: 3600.0 }, "0.01",
        "jitter bound (additive mode adds U(0, jitter))"),
    RETRY_JITTER_MODE: Text = d("retry.jitter_mode", "PHIGUARD_RETRY_JITTER_MODE", None,
        Kind::Enum(&["additive", "full", "decorrelated"]), "additive",
        "additive (OpenMed), full, or decorrelated jitter"),
    RETRY_BUDGET_RATIO: Float = d("retry.budget_ratio", "PHIGUARD_RETRY_BUDGET_RATIO", None, Kind::Float { min: 0.0, max: 10.0 }, "0.2",
        "retries allowed per first attempt over the budget window"),
    RETRY_BUDGET_MIN_PER_SECOND: Float = d("retry.budget_min_per_second", "PHIGUARD_RETRY_BUDGET_MIN_PER_SECOND", None,
        Kind::Float { min: 0.0, max: 10000.0 }, "1.0", "retries always allowed per second (the floor)"),
    RETRY_BUDGET_WINDOW_SECONDS: Float = d("retry.budget_window_seconds", "PHIGUARD_RETRY_BUDGET_WINDOW_SECONDS", None,
        Kind::Float { min: 1.0, max: 3600.0 }, "10", "sliding window of the retry budget"),
    // breaker
    BREAKER_FAILURE_THRESHOLD: Int = d("breaker.failure_threshold", "PHIGUARD_BREAKER_FAILURE_THRESHOLD",
        Some("OPENMED_SERVICE_CIRCUIT_BREAKER_FAILURE_THRESHOLD"), Kind::Int { min: 1, max: 10000 }, "3",
        "consecutive failed requests that open a model's breaker"),
    BREAKER_RECOVERY_TIMEOUT_SECONDS: Float = d("breaker.recovery_timeout_seconds", "PHIGUARD_BREAKER_RECOVERY_TIMEOUT_SECONDS",
        Some("OPENMED_SERVICE_CIRCUIT_BREAKER_RECOVERY_TIMEOUT_SECONDS"), Kind::Float { min: 0.0, max: 86400.0 },
        "30", "seconds a breaker stays open before a half-open probe"),
    BREAKER_HALF_OPEN_CALLS: Int = d("breaker.half_open_calls", "PHIGUARD_BREAKER_HALF_OPEN_CALLS", None, Kind::Int { min: 1, max: 1000 }, "1",
        "probes admitted while half-open"),
    BREAKER_FAILURE_RATE_THRESHOLD: Float = d("breaker.failure_rate_threshold", "PHIGUARD_BREAKER_FAILURE_RATE_THRESHOLD", None,
        Kind::Float { min: 0.0, max: 100.0 }, "0", "open when this percent of recent calls fail (0 = off)"),
    BREAKER_SLIDING_WINDOW_SIZE: Int = d("breaker.sliding_window_size", "PHIGUARD_BREAKER_SLIDING_WINDOW_SIZE", None,
        Kind::Int { min: 1, max: 100000 }, "20", "calls in the failure-rate window"),
    BREAKER_MINIMUM_CALLS: Int = d("breaker.minimum_calls", "PHIGUARD_BREAKER_MINIMUM_CALLS", None, Kind::Int { min: 1, max: 100000 }, "10",
        "calls needed before the failure rate is judged"),
    BREAKER_SLOW_CALL_SECONDS: Float = d("breaker.slow_call_seconds", "PHIGUARD_BREAKER_SLOW_CALL_SECONDS", None,
        Kind::Float { min: 0.0, max: 86400.0 }, "0", "a call slower than this counts as slow (0 = off)"),
    BREAKER_SLOW_CALL_RATE_THRESHOLD: Float = d("breaker.slow_call_rate_threshold", "PHIGUARD_BREAKER_SLOW_CALL_RATE_THRESHOLD", None,
        Kind::Float { min: 1.0, max: 100.0 }, "100", "open when this percent of recent calls are slow"),
    // limits
    LIMITS_MAX_TEXT_LENGTH: Int = d("limits.max_text_length", "PHIGUARD_MAX_TEXT_LENGTH", Some("OPENMED_SERVICE_MAX_TEXT_LENGTH"),
        Kind::Int { min: 1, max: 100_000_000 }, "1000000", "most characters of `text` (422 beyond)"),
    LIMITS_MAX_TEXT_BYTES: Int = d("limits.max_text_bytes", "PHIGUARD_MAX_TEXT_BYTES", Some("OPENMED_MAX_TEXT_BYTES"),
        Kind::Int { min: 1, max: 400_000_000 }, "4000000", "most UTF-8 bytes of `text` (422 beyond)"),
    LIMITS_MAX_REQUEST_BYTES: Int = restart(d("limits.max_request_bytes", "PHIGUARD_MAX_REQUEST_BYTES", Some("OPENMED_SERVICE_MAX_REQUEST_BYTES"),
        Kind::Int { min: 1, max: 268_435_456 }, "16777216", "most bytes of a request body (413 beyond)")),
    LIMITS_RATE_LIMIT_RPS: Float = d("limits.rate_limit_rps", "PHIGUARD_RATE_LIMIT_RPS", Some("OPENMED_SERVICE_RATE_LIMIT_RPS"),
        Kind::Float { min: 0.0, max: 1e9 }, "0", "global request rate (0 = off)"),
    LIMITS_RATE_LIMIT_BURST: Int = d("limits.rate_limit_burst", "PHIGUARD_RATE_LIMIT_BURST", Some("OPENMED_SERVICE_RATE_LIMIT_BURST"),
        Kind::Int { min: 0, max: 1_000_000_000 }, "0", "global burst (0 = off)"),
    LIMITS_TOKEN_RATE_LIMIT_RPS: Float = d("limits.token_rate_limit_rps", "PHIGUARD_TOKEN_RATE_LIMIT_RPS", None, Kind::Float { min: 0.0, max: 1e9 }, "0",
        "request rate per API token (0 = off)"),
    LIMITS_TOKEN_RATE_LIMIT_BURST: Int = d("limits.token_rate_limit_burst", "PHIGUARD_TOKEN_RATE_LIMIT_BURST", None,
        Kind::Int { min: 0, max: 1_000_000_000 }, "0", "burst per API token (0 = off)"),
    LIMITS_MAX_CONCURRENCY: Int = d("limits.max_concurrency", "PHIGUARD_MAX_CONCURRENCY", Some("OPENMED_SERVICE_RATE_LIMIT_MAX_CONCURRENCY"),
        Kind::Int { min: 0, max: 100000 }, "0", "model calls in flight per model, the bulkhead (0 = off)"),
    LIMITS_CONCURRENCY_WAIT_SECONDS: Float = d("limits.concurrency_wait_seconds", "PHIGUARD_CONCURRENCY_WAIT_SECONDS",
        Some("OPENMED_SERVICE_CONCURRENCY_WAIT_SECONDS"), Kind::Float { min: 0.0, max: 3600.0 }, "0.05",
        "wait for a bulkhead slot before 503 service_busy"),
    // admission
    ADMISSION_CAPACITY: Int = d("admission.capacity", "PHIGUARD_ADMISSION_CAPACITY", None, Kind::Int { min: 1, max: 100000 }, "8",
        "requests executing at once; the rest queue by priority"),
    ADMISSION_MAX_QUEUE_SIZE: Int = d("admission.max_queue_size", "PHIGUARD_BATCH_MAX_QUEUE_SIZE", Some("OPENMED_SERVICE_BATCH_MAX_QUEUE_SIZE"),
        Kind::Int { min: 1, max: 1_000_000 }, "256", "queue size; the high watermark defaults to it"),
    ADMISSION_HIGH_WATERMARK: OptInt = auto("max_queue_size", d("admission.high_watermark", "PHIGUARD_BATCH_HIGH_WATERMARK", Some("OPENMED_SERVICE_BATCH_HIGH_WATERMARK"),
        Kind::OptInt { min: 1, max: 1_000_000 }, "", "depth at which shedding starts (default: max_queue_size)")),
    ADMISSION_LOW_WATERMARK: OptInt = auto("high watermark / 2", d("admission.low_watermark", "PHIGUARD_BATCH_LOW_WATERMARK", Some("OPENMED_SERVICE_BATCH_LOW_WATERMARK"),
        Kind::OptInt { min: 0, max: 1_000_000 }, "", "depth at which shedding stops (default: high / 2; < high)")),
    ADMISSION_MAX_QUEUE_WAIT_MS: Float = d("admission.max_queue_wait_ms", "PHIGUARD_BATCH_MAX_QUEUE_WAIT_MS", Some("OPENMED_SERVICE_BATCH_MAX_QUEUE_WAIT_MS"),
        Kind::Float { min: 0.0, max: 3_600_000.0 }, "1000", "longest wait in the queue before 503 backpressure"),
    ADMISSION_BATCHING_ENABLED: Flag = d("admission.batching_enabled", "PHIGUARD_BATCHING_ENABLED", Some("OPENMED_SERVICE_BATCHING_ENABLED"),
        Kind::Bool, "false", "while every other inference worker is busy, wait up to batch_max_wait_ms to fill a batch (off: batch only what is already queued)"),
    ADMISSION_BATCH_MAX_SIZE: Int = d("admission.batch_max_size", "PHIGUARD_BATCH_MAX_SIZE", Some("OPENMED_SERVICE_BATCH_MAX_SIZE"),
        Kind::Int { min: 1, max: 100 }, "8", "texts per batch"),
    ADMISSION_BATCH_MAX_WAIT_MS: Float = d("admission.batch_max_wait_ms", "PHIGUARD_BATCH_MAX_WAIT_MS", Some("OPENMED_SERVICE_BATCH_MAX_WAIT_MS"),
        Kind::Float { min: 0.0, max: 10_000.0 }, "5", "longest wait to fill a batch"),
    ADMISSION_COALESCING_ENABLED: Flag = d("admission.coalescing_enabled", "PHIGUARD_COALESCING_ENABLED", Some("OPENMED_SERVICE_COALESCING_ENABLED"),
        Kind::Bool, "false", "identical concurrent requests share one computation (no cache)"),
    ADMISSION_DEGRADED_FALLBACK: Text = d("admission.degraded_fallback", "PHIGUARD_DEGRADED_FALLBACK", None, Kind::Enum(&["off", "rules"]), "off",
        "while a model's breaker is open, or when its call failed after the retries, answer from the rule recognizers alone (marked degraded)"),
    // security
    SECURITY_AUTH: Text = restart(d("security.auth", "PHIGUARD_AUTH", None, Kind::Enum(&["on", "off"]), "on",
        "require a token on inference and admin routes; off only on a loopback bind")),
    SECURITY_AUTH_TOKEN: Text = auto("generated at first start, kept in the keychain", secret(d("security.auth_token", "PHIGUARD_AUTH_TOKEN", None, Kind::Str, "",
        "client token (default: generated and kept in the keychain); must differ from the admin token, and a placeholder of the deploy files (replace-me-…), or fewer than 16 characters on a non-loopback host, stops start-up"))),
    SECURITY_ADMIN_TOKEN: Text = auto("generated at first start, kept in the keychain", secret(d("security.admin_token", "PHIGUARD_ADMIN_TOKEN", None, Kind::Str, "",
        "admin token (default: generated and kept in the keychain); the client token's rules apply to it too"))),
    SECURITY_HASH_KEY: Text = auto("generated at first start, kept in the keychain", secret(restart(d("security.hash_key", "PHIGUARD_HASH_KEY", None, Kind::Key, "",
        "per-install key (64 hex digits) of `hash`, subject surrogates and date offsets: set the same on every replica of a cluster and on the CLI so they agree (default: generated and kept in the keychain)")))),
    SECURITY_MAPPING_KEY: Text = auto("generated at first start, kept in the keychain", secret(restart(d("security.mapping_key", "PHIGUARD_MAPPING_KEY", None, Kind::Key, "",
        "key (64 hex digits) that seals mappings for POST /admin/reidentify: set the same on every replica so any of them opens a seal (default: generated and kept in the keychain)")))),
    SECURITY_AUTH_FAILURE_BURST: Int = d("security.auth_failure_burst", "PHIGUARD_AUTH_FAILURE_BURST", None, Kind::Int { min: 0, max: 1_000_000 }, "10",
        "failed authentications a peer address may make at once; then its requests answer 429 until one is forgiven (0 turns the limit off)"),
    SECURITY_AUTH_FAILURES_PER_MINUTE: Float = d("security.auth_failures_per_minute", "PHIGUARD_AUTH_FAILURES_PER_MINUTE", None, Kind::Float { min: 0.0, max: 1_000_000.0 }, "10",
        "failed authentications forgiven per minute and peer address (0 turns the limit off)"),
    SECURITY_AUDIT_MAX_BYTES: Int = restart(d("security.audit_max_bytes", "PHIGUARD_AUDIT_MAX_BYTES", None, Kind::Int { min: 4096, max: 1_099_511_627_776 }, "10485760",
        "size of the admin audit log (audit.jsonl in the data directory) before it moves to audit.jsonl.1; one older file is kept")),
    SECURITY_TRUSTED_HOSTS: Items = d("security.trusted_hosts", "PHIGUARD_TRUSTED_HOSTS", Some("OPENMED_SERVICE_TRUSTED_HOSTS"), Kind::Hosts,
        "localhost,127.0.0.1,[::1]", "Host headers accepted (400 otherwise); *.example.org patterns allowed (not * or *.tld), for the subdomains only (as OpenMed: not example.org itself); a change that would not accept the Host of the request making it is refused"),
    SECURITY_CORS_ORIGINS: Items = none("none (only the desktop app's own origins)", d("security.cors_origins", "PHIGUARD_CORS_ORIGINS", Some("OPENMED_SERVICE_CORS_ORIGINS"), Kind::Origins, "",
        "browser origins allowed to call the API (exact origins, no *)")),
    // cluster (docs/deploy.md): one admission limit shared by replicas through Redis
    CLUSTER_REDIS_URL: Text = none("none (limits are per process)", secret(d("cluster.redis_url", "PHIGUARD_REDIS_URL", None, Kind::Str, "",
        "Redis URL of the cluster-wide admission limit (empty: limits are per process)"))),
    CLUSTER_KEY_PREFIX: Text = restart(d("cluster.key_prefix", "PHIGUARD_REDIS_KEY_PREFIX", None, Kind::Str, "phiguard",
        "prefix of the Redis keys (timestamps and token ids only, never text)")),
    CLUSTER_ADMISSIONS: OptInt = none("none (required with a Redis URL)", restart(d("cluster.admissions", "PHIGUARD_CLUSTER_ADMISSIONS", None, Kind::OptInt { min: 1, max: 100_000_000 }, "",
        "admissions to model routes allowed per window across all replicas (required with a Redis URL)"))),
    CLUSTER_WINDOW_SECONDS: Float = restart(d("cluster.window_seconds", "PHIGUARD_CLUSTER_WINDOW_SECONDS", None, Kind::Float { min: 0.01, max: 3600.0 }, "1",
        "sliding window of the cluster-wide limit")),
    CLUSTER_REPLICAS: Int = restart(d("cluster.replicas", "PHIGUARD_CLUSTER_REPLICAS", None, Kind::Int { min: 1, max: 10_000 }, "1",
        "expected replicas; each falls back to admissions / replicas while Redis is unreachable")),
    // models
    MODELS_DEFAULT: Text = d("models.default", "PHIGUARD_DEFAULT_MODEL", None, Kind::Str, "phiguard-deid",
        "model that serves requests naming no model; one not installed stops start-up (but the bundled phiguard-deid, which warns) and is refused by PUT /admin/settings and `phiguard settings set`; its model cannot be removed (`DELETE /admin/models/{id}` answers 409, `phiguard models rm` exits 2) while it is the default"),
    MODELS_ALIASES: Items = d("models.aliases", "PHIGUARD_MODEL_ALIASES", None, Kind::List,
        "OpenMed/OpenMed-PII-SuperClinical-Small-44M-v1=default",
        "requested model id=installed model that serves it (`default` = models.default, `rules` = the rule recognizers); an entry without `=` or naming a model not installed stops start-up and is refused by PUT /admin/settings and `phiguard settings set`; a model an alias maps to cannot be removed (409, `phiguard models rm` exits 2)"),
    MODELS_SERVED: Items = auto("installed models and aliases", d("models.served", "PHIGUARD_SERVED_MODELS", Some("OPENMED_SERVICE_SERVED_MODELS"), Kind::List, "",
        "explicit served set (default: installed models and aliases), applied at once; a name that is neither an installed model nor an alias stops start-up and is refused by PUT /admin/settings and `phiguard settings set`; a model it names cannot be removed (409, `phiguard models rm` exits 2)")),
    MODELS_PRELOAD: Items = none("none (models load on first use)", restart(d("models.preload", "PHIGUARD_PRELOAD_MODELS", Some("OPENMED_SERVICE_PRELOAD_MODELS"), Kind::List, "",
        "models loaded before /readyz turns ready"))),
    MODELS_MAX_RESIDENT: OptInt = none("unlimited", d("models.max_resident", "PHIGUARD_MAX_RESIDENT_MODELS", Some("OPENMED_SERVICE_MAX_RESIDENT_MODELS"),
        Kind::OptInt { min: 1, max: 1000 }, "", "models kept loaded; least recently used unloaded first")),
    MODELS_KEEP_ALIVE: OptFloat = none("never (models stay loaded)", d("models.keep_alive", "PHIGUARD_KEEP_ALIVE", Some("OPENMED_SERVICE_KEEP_ALIVE"), Kind::KeepAlive, "",
        "idle time before a model is unloaded (`5m`, `1h30m`, `never`; empty = never); a change applies at once to the models already loaded")),
    MODELS_DEVICE: Text = restart(d("models.device", "PHIGUARD_DEVICE", None, Kind::Enum(&["auto", "cpu", "metal", "cuda"]), "auto",
        "compute device for models: auto takes Metal or CUDA where built in and present, else the CPU; an explicit metal or cuda that does not open stops start-up")),
    MODELS_PRECISION: Text = restart(d("models.precision", "PHIGUARD_MODEL_PRECISION", None, Kind::Enum(&["int8", "f32"]), "int8",
        "arithmetic of BERT-family models on the CPU: int8 dense layers and attention products (on AVX-512 VNNI, the dense ones on AMX tiles where the CPU has them; on AVX2 with 7-bit weights, K and V; else f32) or f32 (reference numerics)")),
    MODELS_INFERENCE_THREADS: OptInt = auto("one per core", restart(d("models.inference_threads", "PHIGUARD_INFERENCE_THREADS", None, Kind::OptInt { min: 1, max: 256 }, "",
        "inference worker threads (default: one per core)"))),
    MODELS_REQUIRE_PINNED: Flag = d("models.require_pinned", "PHIGUARD_MODELS_REQUIRE_PINNED", None, Kind::Bool, "false",
        "refuse to download catalog models that pin no commit and sha256 per file (off: they are checked against the hub's own checksums and recorded as unpinned)"),
    MODELS_LABEL_THRESHOLDS: Items = d("models.label_thresholds", "PHIGUARD_LABEL_THRESHOLDS", None, Kind::List,
        "CITY=0.5,STREET_ADDRESS=0.5,ZIPCODE=0.5",
        "minimum model confidence per label, LABEL=0.4,… (labels not listed keep every model span); the default suits the bundled phiguard-deid (chosen on the openmed source: 0.8 cost it 2 points of character recall there), Rampart's spread-out scores want 0.8"),
    // de-identification
    DEID_ALLOW_TERMS: Items = none("none", d("deid.allow_terms", "PHIGUARD_ALLOW_TERMS", None, Kind::List, "",
        "terms never masked (a clinic's drug or device names, staff roles): words, case-insensitive, or /regex/; at most 256")),
    DEID_DENY_TERMS: Items = none("none", d("deid.deny_terms", "PHIGUARD_DENY_TERMS", None, Kind::List, "",
        "terms always masked (study site names, local nicknames): words, case-insensitive, or /regex/; at most 256; deny wins over allow")),
    // FHIR
    FHIR_PROFILE: Text = d("fhir.profile", "PHIGUARD_FHIR_PROFILE", None, Kind::Enum(&["hipaa_safe_harbor", "pseudonymize"]), "hipaa_safe_harbor",
        "profile of /fhir/deidentify and of FHIR files in `phiguard deid` when none is named (a request's `profile` wins)"),
    FHIR_ACTIONS: Items = none("none (the profile's own actions)", d("fhir.actions", "PHIGUARD_FHIR_ACTIONS", None, Kind::List, "",
        "actions over the profile, ELEMENT=ACTION,… (elements: names, telecom, address_lines, city, state, country, postal_code, identifiers, birth_date, dates, or a path such as Patient.birthDate or *.note.text; actions: keep, redact, pseudonymize, date_shift, generalize, hash); each element or path once, with an action that fits it (a date takes no hash, a name or address no date action, a path no pseudonymize)")),
}

/// Finds a row by key.
pub fn def(key: &str) -> Option<&'static Def> {
    TABLE.iter().find(|d| d.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn keys_and_variables_are_unique_and_defaults_parse() {
        let mut seen = HashSet::new();
        for def in TABLE {
            assert!(seen.insert(def.key), "duplicate key {}", def.key);
            assert!(seen.insert(def.env), "duplicate env {}", def.env);
            if let Some(a) = def.alias {
                assert!(seen.insert(a), "duplicate alias {a}");
            }
            assert!(def.env.starts_with("PHIGUARD_"));
            def.kind
                .parse(def.default)
                .unwrap_or_else(|e| panic!("default of {} does not parse: {e}", def.key));
        }
    }

    #[test]
    fn every_row_has_one_line_of_description_and_says_what_empty_means() {
        for def in TABLE {
            let text = def.description.trim();
            assert!(!text.is_empty(), "{} has no description", def.key);
            assert!(
                !text.contains('\n'),
                "{}: the description is one line",
                def.key
            );
            assert_eq!(
                def.default.is_empty(),
                def.empty.is_some(),
                "{}: a row says what an empty value means exactly when its default is empty",
                def.key
            );
        }
    }
}
