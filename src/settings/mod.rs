//! Settings: the one table ([`table::TABLE`]), how values are read (environment > file >
//! default), validated, persisted and listed.
//!
//! Why one table: the env parser, `settings.toml`, the admin API, the dashboard form and the
//! docs must never disagree about a name, a default or a rule. Every knob is one [`table::Def`]
//! row; nothing else declares settings. A bad value stops start-up with a message naming the
//! variable and the rule; through the admin API it is refused and nothing is applied.

pub mod home;
pub mod key;
pub mod listing;
pub mod start;
pub mod table;
pub mod value;

use std::collections::BTreeMap;
use std::path::PathBuf;

pub use home::Home;
pub use key::Key;
pub use table::{keys, Def, TABLE};
pub use value::{Invalid, Kind, Value};

/// Where a value came from.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SettingSource {
    /// The table's default.
    Default,
    /// `settings.toml`, written by the dashboard, the CLI or an admin.
    File,
    /// An environment variable: locked, the UI cannot change it.
    Env,
}

/// Errors of the settings module. Messages name the variable or key and the rule, and the
/// settings file by its path and line; never a value, and never a key that is not in the
/// table (a key typed by someone, which may be anything).
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// Returned when an environment variable does not satisfy its rule.
    #[error("{var}: {source}")]
    InvalidEnv {
        /// The variable (the row's own or its alias).
        var: &'static str,
        /// The rule it breaks.
        source: value::Invalid,
    },
    /// Returned when a key of `settings.toml` does not satisfy its rule.
    #[error("{key}: {source}")]
    InvalidValue {
        /// The dotted key.
        key: &'static str,
        /// The rule it breaks.
        source: value::Invalid,
    },
    /// Returned when a key is set by the environment and so cannot be changed here.
    #[error("{key} is set by environment variable {var} and cannot be changed here")]
    Locked {
        /// The dotted key.
        key: &'static str,
        /// The environment variable that sets it.
        var: &'static str,
    },
    /// Returned when several values are each valid but contradict each other.
    #[error(transparent)]
    Conflict(#[from] Conflict),
    /// Returned when `settings.toml` exists but cannot be read.
    #[error("settings file {path}: {source}")]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Returned when `settings.toml` cannot be written.
    #[error("settings file {path}: {source}")]
    WriteFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Returned when the content of `settings.toml` is not settings: not TOML, a value of a
    /// type settings do not take, or a key that is not in the table.
    #[error("settings file {path}: {}{problem}", At(*line))]
    File {
        /// The file.
        path: PathBuf,
        /// The 1-based line at fault; `None` when the TOML parser gave no position.
        line: Option<usize>,
        /// What is wrong there.
        #[source]
        problem: FileProblem,
    },
}

/// Values that are each valid but contradict each other ([`SettingsError::Conflict`]).
#[derive(Debug, thiserror::Error)]
pub enum Conflict {
    /// Returned when the low watermark is not below the (effective) high watermark.
    #[error("admission.low_watermark (PHIGUARD_BATCH_LOW_WATERMARK) must be below the high watermark {high}")]
    Watermarks {
        /// The effective high watermark.
        high: u64,
    },
    /// Returned when a Redis URL is set without the number of cluster admissions.
    #[error("PHIGUARD_CLUSTER_ADMISSIONS must be set when PHIGUARD_REDIS_URL is")]
    ClusterAdmissions,
    /// Returned when `models.label_thresholds` names an unknown label or a bad fraction.
    #[error("models.label_thresholds (PHIGUARD_LABEL_THRESHOLDS): {0}")]
    LabelThresholds(#[source] crate::detect::thresholds::ThresholdError),
    /// Returned when the longest retry pause is shorter than the first.
    #[error("retry.backoff_max_seconds (PHIGUARD_RETRY_BACKOFF_MAX_SECONDS) must not be below retry.backoff_initial_seconds")]
    Backoff,
    /// Returned when `deid.allow_terms` or `deid.deny_terms` has too many terms, a term too
    /// long, or a `/regex/` that does not compile (named by position, never by content).
    #[error("deid.allow_terms / deid.deny_terms (PHIGUARD_ALLOW_TERMS, PHIGUARD_DENY_TERMS): {0}")]
    Terms(#[source] crate::detect::TermsError),
    /// Returned when `fhir.actions` names an unknown element or action, or an action that
    /// does not apply to its element.
    #[error("fhir.actions (PHIGUARD_FHIR_ACTIONS): {0}")]
    FhirActions(#[source] crate::fhir::ProfileError),
    /// Returned when a configured key is not 64 hex digits (its value is never shown).
    #[error("{env} must be 64 hex digits (32 random bytes, e.g. `openssl rand -hex 32`)")]
    Key {
        /// The variable of the key.
        env: &'static str,
    },
}

/// What is wrong with the content of `settings.toml` ([`SettingsError::File`]).
#[derive(Debug, thiserror::Error)]
pub enum FileProblem {
    /// Returned when the file is not TOML. The message is the parser's description, which
    /// names no value; the source is the TOML error, stripped of its copy of the file (which
    /// may hold a token or a URL with a password).
    #[error("{}", .0.message())]
    Syntax(#[source] Box<toml::de::Error>),
    /// Returned when a key is not in the table. The key itself is not kept: it is whatever
    /// someone typed; the line says where it is.
    #[error("unknown setting")]
    UnknownKey,
    /// Returned when a value is a date, a time or a table where a setting was expected.
    #[error("values must be strings, numbers, booleans or arrays")]
    UnsupportedValue,
    /// Returned when a number does not fit in 64 bits.
    #[error("numbers must fit in 64 bits")]
    NumberOutOfRange,
    /// Returned when a secret (a token, a key, the Redis URL) is in the file: secrets are
    /// read from the environment only, so the value would be ignored.
    #[error("{key} is a secret and is read from the environment only: remove it from the file and set {env} instead")]
    Secret {
        /// The dotted key.
        key: &'static str,
        /// Its environment variable.
        env: &'static str,
    },
}

/// `line N: ` before a problem, or nothing when there is no position.
struct At(Option<usize>);

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(line) => write!(f, "line {line}: "),
            None => Ok(()),
        }
    }
}

/// One field-level problem, for 422 details and inline UI errors.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FieldError {
    /// The setting key.
    pub field: String,
    /// What is wrong, with the rule.
    pub message: String,
}

/// The resolved settings: one value and source per table row.
#[derive(Clone, Debug)]
pub struct Settings {
    values: BTreeMap<&'static str, (Value, SettingSource)>,
    /// What `settings.toml` holds (as read, then as changed by [`Settings::apply`]), whether
    /// or not the environment overrides it: saving one setting keeps every other value of
    /// the file, those hidden by an environment variable included.
    stored: BTreeMap<&'static str, Value>,
    /// For a value whose source is [`SettingSource::Env`], what set it: the variable (the
    /// row's own or its OpenMed alias) or a flag of `phiguard serve` (`--port`).
    set_by: BTreeMap<&'static str, &'static str>,
    file: Option<PathBuf>,
}

impl Settings {
    /// Defaults only (tests and `--help`).
    pub fn defaults() -> Self {
        let values = TABLE
            .iter()
            .map(|d| {
                let v = d.kind.parse(d.default).unwrap_or(Value::Unset);
                (d.key, (v, SettingSource::Default))
            })
            .collect();
        Settings {
            values,
            stored: BTreeMap::new(),
            set_by: BTreeMap::new(),
            file: None,
        }
    }

    /// Reads the process environment and `home`'s settings file.
    ///
    /// # Errors
    /// [`SettingsError::InvalidEnv`] naming the first bad variable, a file error, or a
    /// conflict between values.
    pub fn load(home: &Home) -> Result<Self, SettingsError> {
        Self::load_from(home, |k| std::env::var(k).ok())
    }

    /// As [`Settings::load`] with an injected environment (tests).
    ///
    /// # Errors
    /// As [`Settings::load`].
    pub fn load_from(
        home: &Home,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, SettingsError> {
        let mut s = Self::defaults();
        let path = home.settings_file();
        s.file = Some(path.clone());
        if path.exists() {
            let text =
                std::fs::read_to_string(&path).map_err(|source| SettingsError::ReadFile {
                    path: path.clone(),
                    source,
                })?;
            let entries = parse_file(&text).map_err(|(line, problem)| SettingsError::File {
                path: path.clone(),
                line,
                problem,
            })?;
            for FileEntry { key, raw, line } in entries {
                let def = table::def(&key).ok_or_else(|| SettingsError::File {
                    path: path.clone(),
                    line: Some(line),
                    problem: FileProblem::UnknownKey,
                })?;
                if def.secret {
                    // Secrets are read from the environment only (docs/settings.md): one
                    // in the file would be ignored, so the file is refused instead.
                    return Err(SettingsError::File {
                        path: path.clone(),
                        line: Some(line),
                        problem: FileProblem::Secret {
                            key: def.key,
                            env: def.env,
                        },
                    });
                }
                let v = def
                    .kind
                    .parse(&raw)
                    .map_err(|source| SettingsError::InvalidValue {
                        key: def.key,
                        source,
                    })?;
                s.stored.insert(def.key, v.clone());
                s.values.insert(def.key, (v, SettingSource::File));
            }
        }
        for def in TABLE {
            let found = env(def.env)
                .map(|v| (def.env, v))
                .or_else(|| def.alias.and_then(|a| env(a).map(|v| (a, v))));
            if let Some((var, raw)) = found {
                if raw.trim().is_empty() && !matches!(def.kind, Kind::Str | Kind::Key) {
                    continue; // OpenMed: empty means the default
                }
                let v = def
                    .kind
                    .parse(&raw)
                    .map_err(|source| SettingsError::InvalidEnv { var, source })?;
                s.values.insert(def.key, (v, SettingSource::Env));
                s.set_by.insert(def.key, var);
            }
        }
        s.check_conflicts()?;
        Ok(s)
    }

    fn check_conflicts(&self) -> Result<(), Conflict> {
        let high = self.high_watermark();
        if self.low_watermark() >= high {
            return Err(Conflict::Watermarks { high });
        }
        if !self.get(keys::CLUSTER_REDIS_URL).is_empty()
            && self.get(keys::CLUSTER_ADMISSIONS).is_none()
        {
            return Err(Conflict::ClusterAdmissions);
        }
        crate::detect::LabelThresholds::parse(self.get(keys::MODELS_LABEL_THRESHOLDS))
            .map_err(Conflict::LabelThresholds)?;
        self.terms().map_err(Conflict::Terms)?;
        self.fhir_profile(None).map_err(Conflict::FhirActions)?;
        if self.get(keys::RETRY_BACKOFF_MAX_SECONDS) < self.get(keys::RETRY_BACKOFF_INITIAL_SECONDS)
        {
            return Err(Conflict::Backoff);
        }
        for key in [keys::SECURITY_HASH_KEY, keys::SECURITY_MAPPING_KEY] {
            let v = self.get(key).trim();
            let hex64 = v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit());
            if !v.is_empty() && !hex64 {
                return Err(Conflict::Key { env: key.env() });
            }
        }
        Ok(())
    }

    /// The FHIR profile named `name` (or `fhir.profile`) with `fhir.actions` applied over
    /// it; `None` name falls back to the setting.
    ///
    /// # Errors
    /// [`crate::fhir::ProfileError`] naming the bad entry of `fhir.actions`.
    pub fn fhir_profile(
        &self,
        name: Option<crate::fhir::Profile>,
    ) -> Result<crate::fhir::Profile, crate::fhir::ProfileError> {
        let base = name.unwrap_or_else(|| {
            crate::fhir::Profile::parse(self.get(keys::FHIR_PROFILE)).unwrap_or_default()
        });
        base.with_actions(self.get(keys::FHIR_ACTIONS))
    }

    /// The compiled allow and deny lists (`deid.allow_terms`, `deid.deny_terms`).
    ///
    /// # Errors
    /// [`crate::detect::TermsError`] naming the list and position of a bad term.
    pub fn terms(&self) -> Result<crate::detect::Terms, crate::detect::TermsError> {
        crate::detect::Terms::parse(
            self.get(keys::DEID_ALLOW_TERMS),
            self.get(keys::DEID_DENY_TERMS),
        )
    }

    /// The value of `key` (a key from the table; unknown keys are a programming error and
    /// return `Value::Unset`).
    pub fn value(&self, key: &str) -> &Value {
        self.values
            .get(key)
            .map(|(v, _)| v)
            .unwrap_or(&Value::Unset)
    }

    /// Sets `key` from a flag of `phiguard serve` (`--port`), the highest layer: the value
    /// is locked as an environment variable's is, and messages name the flag.
    ///
    /// # Errors
    /// [`SettingsError::InvalidEnv`] naming the flag and the rule.
    pub fn set_from_flag(
        &mut self,
        key: &str,
        raw: &str,
        flag: &'static str,
    ) -> Result<(), SettingsError> {
        let Some(def) = table::def(key) else {
            return Ok(());
        };
        let v = def
            .kind
            .parse(raw)
            .map_err(|source| SettingsError::InvalidEnv { var: flag, source })?;
        self.values.insert(def.key, (v, SettingSource::Env));
        self.set_by.insert(def.key, flag);
        Ok(())
    }

    /// What set the value of `key`, in words for a message: `environment variable
    /// OPENMED_…` (the variable actually set, alias or not), `the --port flag`,
    /// `security.auth in settings.toml`, or `the default`.
    pub fn set_by(&self, key: &str) -> String {
        match self.source(key) {
            SettingSource::Env => match self.set_by.get(key) {
                Some(flag) if flag.starts_with("--") => format!("the {flag} flag"),
                Some(var) => format!("environment variable {var}"),
                None => table::def(key)
                    .map(|d| format!("environment variable {}", d.env))
                    .unwrap_or_default(),
            },
            SettingSource::File => format!("{key} in settings.toml"),
            SettingSource::Default => "the default".to_string(),
        }
    }

    /// The source of `key` in one word for a message: the variable or flag that set it
    /// (`OPENMED_…`, `--port`), `settings.toml`, or `default`.
    pub fn source_name(&self, key: &str) -> String {
        match self.source(key) {
            SettingSource::Env => self
                .set_by
                .get(key)
                .copied()
                .or_else(|| table::def(key).map(|d| d.env))
                .unwrap_or_default()
                .to_string(),
            SettingSource::File => "settings.toml".to_string(),
            SettingSource::Default => "default".to_string(),
        }
    }

    /// Where the value of `key` came from.
    pub fn source(&self, key: &str) -> SettingSource {
        self.values
            .get(key)
            .map(|(_, s)| *s)
            .unwrap_or(SettingSource::Default)
    }

    /// Reads a setting through its typed handle (`settings.get(keys::SERVER_PORT)`).
    pub fn get<T: key::Read>(&self, key: Key<T>) -> T::Out<'_> {
        T::read(self, key.name())
    }

    /// An integer setting (0 when unset).
    fn i64(&self, key: &str) -> i64 {
        match self.value(key) {
            Value::Int(i) => *i,
            Value::Float(f) => *f as i64,
            _ => 0,
        }
    }

    /// An optional integer setting.
    fn opt_i64(&self, key: &str) -> Option<i64> {
        match self.value(key) {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// A float setting (0 when unset).
    fn f64(&self, key: &str) -> f64 {
        match self.value(key) {
            Value::Float(f) => *f,
            Value::Int(i) => *i as f64,
            _ => 0.0,
        }
    }

    /// An optional float setting.
    fn opt_f64(&self, key: &str) -> Option<f64> {
        match self.value(key) {
            Value::Float(f) => Some(*f),
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }

    /// A boolean setting.
    fn bool(&self, key: &str) -> bool {
        matches!(self.value(key), Value::Bool(true))
    }

    /// A string or enum setting (empty when unset).
    fn str(&self, key: &str) -> &str {
        match self.value(key) {
            Value::Str(s) => s,
            _ => "",
        }
    }

    /// A list setting.
    fn list(&self, key: &str) -> &[String] {
        match self.value(key) {
            Value::List(l) => l,
            _ => &[],
        }
    }

    /// The effective high watermark (defaults to the queue size).
    pub fn high_watermark(&self) -> u64 {
        self.get(keys::ADMISSION_HIGH_WATERMARK)
            .unwrap_or_else(|| self.get(keys::ADMISSION_MAX_QUEUE_SIZE)) as u64
    }

    /// The effective low watermark (defaults to half the high watermark).
    pub fn low_watermark(&self) -> u64 {
        self.get(keys::ADMISSION_LOW_WATERMARK)
            .map(|v| v as u64)
            .unwrap_or_else(|| self.high_watermark() / 2)
    }

    /// The request timeout: the override, else the profile's; `None` when disabled (≤ 0).
    pub fn request_timeout(&self) -> Option<std::time::Duration> {
        let secs = self
            .get(keys::TIMEOUTS_REQUEST_TIMEOUT_SECONDS)
            .unwrap_or_else(|| profile_timeout_seconds(self.get(keys::TIMEOUTS_PROFILE)));
        (secs > 0.0).then(|| std::time::Duration::from_secs_f64(secs))
    }

    /// Applies `changes` (key → textual value) all or nothing: every bad field is reported
    /// and nothing changes when any is bad. Locked (env) and secret keys are refused.
    ///
    /// # Errors
    /// The list of field errors.
    pub fn apply(&mut self, changes: &[(String, String)]) -> Result<(), Vec<FieldError>> {
        let mut next = self.clone();
        let mut errors = Vec::new();
        for (key, raw) in changes {
            let Some(def) = table::def(key) else {
                // The key came from the request: it is counted, never echoed.
                errors.push(FieldError {
                    field: "body".into(),
                    message: "unknown setting key; GET /admin/settings lists every key".into(),
                });
                continue;
            };
            if def.secret {
                let how = match def.key {
                    "security.auth_token" => {
                        format!("set it with {} or `phiguard token rotate`", def.env)
                    }
                    "security.admin_token" => {
                        format!("set it with {} or `phiguard token rotate --admin`", def.env)
                    }
                    _ => format!("set it with environment variable {}", def.env),
                };
                errors.push(FieldError {
                    field: def.key.into(),
                    message: format!("secret; {how}"),
                });
                continue;
            }
            if self.source(def.key) == SettingSource::Env {
                errors.push(FieldError {
                    field: def.key.into(),
                    message: format!("set by {}", self.set_by(def.key)),
                });
                continue;
            }
            match def.kind.parse(raw) {
                Ok(v) => {
                    next.stored.insert(def.key, v.clone());
                    next.values.insert(def.key, (v, SettingSource::File));
                }
                Err(e) => errors.push(FieldError {
                    field: def.key.into(),
                    message: e.to_string(),
                }),
            }
        }
        if errors.is_empty() {
            if let Err(e) = next.check_conflicts() {
                errors.push(FieldError {
                    field: changes.first().map(|(k, _)| k.clone()).unwrap_or_default(),
                    message: e.to_string(),
                });
            }
        }
        if errors.is_empty() {
            // A change the next start would refuse (exit 2) is refused now, by the same rule;
            // one that was refused before the change (settings read by the CLI without the
            // server's variables) does not block an unrelated change.
            let refused = start::refusal(&next);
            if let Some(r) = refused.filter(|r| start::refusal(self).as_ref() != Some(r)) {
                errors.push(FieldError {
                    field: r.key().into(),
                    message: format!("the service would not start with this: {}", r.rule()),
                });
            }
        }
        if errors.is_empty() {
            *self = next;
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// Writes the values of `keys` (the ones a change set) to `settings.toml` (0600),
    /// atomically. Every other key stays as the file holds it *now*: a server that read the
    /// file at start must not write its old values over what the admin or `phiguard
    /// settings set` changed since.
    ///
    /// # Why the file is edited and not rewritten
    /// `settings.toml` is also the admin's document: a comment saying why a value is set, the
    /// order of the keys, a number written `0x10`. Saving from the dashboard must not take
    /// those away, so the file as it is now is edited in place (`toml_edit`): a key whose
    /// value is unchanged is left byte for byte, a changed one gets its new value with its
    /// comments and spacing, a new one goes at the end of its `[group]` table (made when
    /// missing), and nothing else moves; a byte-order mark and CRLF line endings are kept.
    /// A file that does not parse is not written: it is the admin's, half edited perhaps.
    ///
    /// # Errors
    /// [`SettingsError::WriteFile`]; [`SettingsError::File`] when the file does not parse.
    pub fn persist(&self, keys: &[&str]) -> Result<(), SettingsError> {
        let Some(path) = &self.file else {
            return Ok(());
        };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => {
                return Err(SettingsError::WriteFile {
                    path: path.clone(),
                    source,
                })
            }
        };
        let (bom, text) = match text.strip_prefix('\u{feff}') {
            Some(rest) => ("\u{feff}", rest),
            None => ("", text.as_str()),
        };
        let crlf = text.contains("\r\n");
        let text = text.replace("\r\n", "\n");
        let entries = match parse_file(&text) {
            Ok(entries) => entries,
            Err((line, problem)) => {
                return Err(SettingsError::File {
                    path: path.clone(),
                    line,
                    problem,
                })
            }
        };
        let changed: BTreeMap<&'static str, Value> = self
            .stored
            .iter()
            .filter(|(k, _)| keys.contains(k))
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        let mut body = format!("{bom}{}", edited_file(&text, entries, &changed));
        if crlf {
            body = body.replace('\n', "\r\n");
        }
        home::write_private(path, body.as_bytes()).map_err(|source| SettingsError::WriteFile {
            path: path.clone(),
            source,
        })
    }
}

/// The first line of a `settings.toml` phiguard creates.
const FILE_HEADER: &str =
    "# phiguard settings, written by phiguard; environment variables override these.\n";

/// `text` (the file as it is now) with every value of `stored` written in: keys whose value
/// the file already holds keep their bytes, the others are set in place or added to their
/// table. Comments, blank lines, order and keys that are not in `stored` are kept.
fn edited_file(
    text: &str,
    entries: Vec<FileEntry>,
    stored: &BTreeMap<&'static str, Value>,
) -> String {
    // What the file holds now (`entries`, parsed from `text`), by the rules it is read with
    // (a `0x5` equals a `5`).
    let current: BTreeMap<&'static str, Value> = entries
        .into_iter()
        .filter_map(|e| {
            let def = table::def(&e.key)?;
            Some((def.key, def.kind.parse(&e.raw).ok()?))
        })
        .collect();
    let (mut doc, header) = match text.parse::<toml_edit::DocumentMut>() {
        Ok(doc) if !text.trim().is_empty() => (doc, ""),
        _ => (toml_edit::DocumentMut::new(), FILE_HEADER),
    };
    for def in TABLE {
        let Some(value) = stored.get(def.key) else {
            continue;
        };
        if def.secret || current.get(def.key) == Some(value) {
            continue;
        }
        set_in_document(&mut doc, def, value);
    }
    format!("{header}{doc}")
}

/// Sets `def`'s key of `doc` to `value` wherever the file writes it (`[group] name = …` or
/// a top-level `"group.name" = …`), keeping the comments around it; a key the file lacks is
/// added at the end of its `[group]` table.
fn set_in_document(doc: &mut toml_edit::DocumentMut, def: &Def, value: &Value) {
    let group = def.group();
    let name = def.key.split_once('.').map(|(_, n)| n).unwrap_or(def.key);
    let root = doc.as_table_mut();
    let mut found = false;
    if let Some(item) = root.get_mut(def.key) {
        replace_value(item, value);
        found = true;
    }
    if let Some(item) = root
        .get_mut(group)
        .and_then(|t| t.as_table_like_mut())
        .and_then(|t| t.get_mut(name))
    {
        replace_value(item, value);
        found = true;
    }
    if found {
        return;
    }
    let slot = root
        .entry(group)
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
    if slot.as_table_like().is_none() {
        // Not a table (the file changed since it was read): the key must live somewhere.
        *slot = toml_edit::Item::Table(toml_edit::Table::new());
    }
    if let Some(t) = slot.as_table_like_mut() {
        t.insert(name, toml_edit::Item::Value(edit_value(value, false)));
    }
}

/// Replaces the value of `item`, keeping its comments and spacing (and its array form).
fn replace_value(item: &mut toml_edit::Item, value: &Value) {
    let old = item.as_value();
    let mut new = edit_value(value, old.is_some_and(toml_edit::Value::is_array));
    if let Some(old) = old {
        *new.decor_mut() = old.decor().clone();
    }
    *item = toml_edit::Item::Value(new);
}

/// A setting's value as TOML: a list as one comma-separated string (the form of its
/// environment variable), or as an array where the file wrote an array.
fn edit_value(value: &Value, array: bool) -> toml_edit::Value {
    match value {
        Value::Unset => "".into(),
        Value::Bool(b) => (*b).into(),
        Value::Int(i) => (*i).into(),
        Value::Float(f) => (*f).into(),
        Value::Str(s) => s.as_str().into(),
        Value::List(l) if array => l
            .iter()
            .map(String::as_str)
            .collect::<toml_edit::Array>()
            .into(),
        Value::List(l) => l.join(",").into(),
    }
}

/// The request timeout of an OpenMed profile, in seconds.
pub fn profile_timeout_seconds(profile: &str) -> f64 {
    match profile {
        "dev" => 600.0,
        "test" => 60.0,
        "fast" => 120.0,
        "low_resource" => 900.0,
        _ => 300.0,
    }
}

/// One `key = value` of `settings.toml`, the value in the textual form of the environment.
struct FileEntry {
    /// The dotted key, as written (not yet checked against the table).
    key: String,
    /// The value as text.
    raw: String,
    /// The 1-based line of the key.
    line: usize,
}

/// Reads `settings.toml`: `[group] name = value` tables, or top-level `"group.name" = value`.
///
/// # Errors
/// The line (where the parser gave one) and what is wrong there.
fn parse_file(text: &str) -> Result<Vec<FileEntry>, (Option<usize>, FileProblem)> {
    use toml::de::{DeTable, DeValue};
    let root = DeTable::parse(text).map_err(|mut e| {
        let line = e.span().map(|s| line_of(text, s.start));
        // The error holds the whole file, which its Display and Debug would print.
        e.set_input(None);
        (line, FileProblem::Syntax(Box::new(e)))
    })?;
    let mut out = Vec::new();
    for (k, v) in root.get_ref() {
        let line = line_of(text, k.span().start);
        match v.get_ref() {
            DeValue::Table(t) => {
                for (name, v) in t {
                    let line = line_of(text, name.span().start);
                    out.push(FileEntry {
                        key: format!("{}.{}", k.get_ref(), name.get_ref()),
                        raw: toml_text(text, v)?,
                        line,
                    });
                }
            }
            _ => out.push(FileEntry {
                key: k.get_ref().to_string(),
                raw: toml_text(text, v)?,
                line,
            }),
        }
    }
    Ok(out)
}

/// A value in the textual form settings are parsed from (an array as a comma-separated list).
fn toml_text(
    text: &str,
    v: &toml::Spanned<toml::de::DeValue<'_>>,
) -> Result<String, (Option<usize>, FileProblem)> {
    use toml::de::DeValue;
    let at = |problem| (Some(line_of(text, v.span().start)), problem);
    Ok(match v.get_ref() {
        DeValue::String(s) => s.to_string(),
        DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
            .map_err(|_| at(FileProblem::NumberOutOfRange))?
            .to_string(),
        DeValue::Float(f) => match f.as_str().parse::<f64>() {
            // An overflow reads as infinity; only a written `inf` may (`nan` is kept, and
            // refused by the rule of the setting, as any other value it does not take).
            Ok(x) if !x.is_infinite() || f.as_str().contains("inf") => x.to_string(),
            _ => return Err(at(FileProblem::NumberOutOfRange)),
        },
        DeValue::Boolean(b) => b.to_string(),
        DeValue::Array(a) => a
            .into_iter()
            .map(|item| toml_text(text, item))
            .collect::<Result<Vec<_>, _>>()?
            .join(","),
        DeValue::Datetime(_) | DeValue::Table(_) => return Err(at(FileProblem::UnsupportedValue)),
    })
}

/// The 1-based line of byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn env_beats_file_beats_default_and_alias_is_accepted() -> Result<(), Box<dyn std::error::Error>>
    {
        let dir = tempfile::tempdir()?;
        let home = Home::at(dir.path());
        std::fs::create_dir_all(home.config_dir()).ok();
        std::fs::write(
            home.settings_file(),
            "[retry]\nmax_attempts = 5\nbackoff_multiplier = 3.0\n",
        )
        .ok();
        let s = Settings::load_from(
            &home,
            env(&[("OPENMED_SERVICE_RETRY_BACKOFF_MULTIPLIER", "4")]),
        )?;
        assert_eq!(s.get(keys::RETRY_MAX_ATTEMPTS), 5);
        assert_eq!(s.source("retry.max_attempts"), SettingSource::File);
        assert_eq!(s.get(keys::RETRY_BACKOFF_MULTIPLIER), 4.0);
        assert_eq!(s.source("retry.backoff_multiplier"), SettingSource::Env);
        assert_eq!(s.get(keys::BREAKER_FAILURE_THRESHOLD), 3);
        Ok(())
    }

    #[test]
    fn bad_env_names_the_variable_and_rule() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = Settings::load_from(
            &Home::at(dir.path()),
            env(&[("OPENMED_SERVICE_RETRY_MAX_ATTEMPTS", "zero")]),
        )
        .expect_err("must fail");
        let msg = err.to_string();
        assert!(msg.contains("OPENMED_SERVICE_RETRY_MAX_ATTEMPTS"), "{msg}");
        assert!(msg.contains("an integer from 1"), "{msg}");
    }

    #[test]
    fn watermarks_must_be_ordered() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = Settings::load_from(
            &Home::at(dir.path()),
            env(&[
                ("PHIGUARD_BATCH_HIGH_WATERMARK", "4"),
                ("PHIGUARD_BATCH_LOW_WATERMARK", "4"),
            ]),
        )
        .expect_err("must fail");
        assert!(
            matches!(
                err,
                SettingsError::Conflict(Conflict::Watermarks { high: 4 })
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("PHIGUARD_BATCH_LOW_WATERMARK"));
    }

    /// A home whose `settings.toml` holds `text`.
    fn home_with_file(text: &str) -> (tempfile::TempDir, Home) {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = Home::at(dir.path());
        std::fs::create_dir_all(home.config_dir()).expect("config dir");
        std::fs::write(home.settings_file(), text).expect("settings file");
        (dir, home)
    }

    #[test]
    fn file_values_take_every_toml_spelling() -> Result<(), SettingsError> {
        let (_dir, home) = home_with_file(
            "\"retry.max_attempts\" = 0x5\nretry.backoff_multiplier = 3\n\
             [security]\ntrusted_hosts = [\"localhost\", \"*.example.org\"]\n",
        );
        let s = Settings::load_from(&home, env(&[]))?;
        assert_eq!(s.get(keys::RETRY_MAX_ATTEMPTS), 5);
        assert_eq!(s.get(keys::RETRY_BACKOFF_MULTIPLIER), 3.0);
        assert_eq!(
            s.get(keys::SECURITY_TRUSTED_HOSTS),
            ["localhost", "*.example.org"]
        );
        Ok(())
    }

    #[test]
    fn an_unknown_key_in_the_file_is_reported_by_line_and_never_echoed() {
        let (_dir, home) =
            home_with_file("[retry]\nmax_attempts = 5\n\n[auth]\nhf_secret_key_name = 1\n");
        let err = Settings::load_from(&home, env(&[])).expect_err("unknown key");
        assert!(
            matches!(
                err,
                SettingsError::File {
                    line: Some(5),
                    problem: FileProblem::UnknownKey,
                    ..
                }
            ),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(msg.ends_with("line 5: unknown setting"), "{msg}");
        assert!(!format!("{msg} {err:?}").contains("hf_secret"), "{msg}");
    }

    #[test]
    fn a_syntax_error_names_its_line_and_keeps_no_copy_of_the_file() {
        let (_dir, home) = home_with_file(
            "[cluster]\nredis_url = \"redis://user:hunter2@db\"\n[retry]\nmax_attempts = = 5\n",
        );
        let err = Settings::load_from(&home, env(&[])).expect_err("not TOML");
        let SettingsError::File {
            line,
            problem: FileProblem::Syntax(source),
            ..
        } = &err
        else {
            panic!("not a syntax error: {err:?}");
        };
        assert_eq!(*line, Some(4));
        assert!(!source.message().is_empty());
        assert!(std::error::Error::source(&err).is_some());
        let mut shown = format!("{err} {err:?}");
        let mut next = std::error::Error::source(&err);
        while let Some(e) = next {
            shown.push_str(&e.to_string());
            next = e.source();
        }
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn unsupported_and_out_of_range_values_name_their_line() {
        for (text, line, want) in [
            (
                "[retry]\nmax_attempts = 1979-05-27\n",
                2,
                "values must be strings",
            ),
            (
                "[retry]\n\nmax_attempts = 99999999999999999999\n",
                3,
                "64 bits",
            ),
            (
                "[retry]\nmax_attempts = { a = 1 }\n",
                2,
                "values must be strings",
            ),
            ("[retry]\nbackoff_multiplier = 1e999\n", 2, "64 bits"),
        ] {
            let (_dir, home) = home_with_file(text);
            let err = Settings::load_from(&home, env(&[])).expect_err(text);
            assert!(
                matches!(&err, SettingsError::File { line: Some(l), .. } if *l == line),
                "{text}: {err:?}"
            );
            assert!(err.to_string().contains(want), "{err}");
        }
    }

    #[test]
    fn a_bad_value_in_the_file_names_the_key_and_rule_and_keeps_the_rule_as_source() {
        let (_dir, home) = home_with_file("[retry]\nmax_attempts = \"hf_typed_text\"\n");
        let err = Settings::load_from(&home, env(&[])).expect_err("not an integer");
        assert!(
            matches!(
                &err,
                SettingsError::InvalidValue {
                    key: "retry.max_attempts",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err
            .to_string()
            .starts_with("retry.max_attempts: must be an integer"));
        assert!(!err.to_string().contains("hf_typed_text"));
        assert!(std::error::Error::source(&err).is_some_and(|s| s.is::<Invalid>()));
        for text in [
            "[retry]\nbackoff_multiplier = nan\n",
            "[retry]\nbackoff_multiplier = -inf\n",
        ] {
            let (_dir, home) = home_with_file(text);
            let err = Settings::load_from(&home, env(&[])).expect_err(text);
            assert!(
                matches!(
                    err,
                    SettingsError::InvalidValue {
                        key: "retry.backoff_multiplier",
                        ..
                    }
                ),
                "{text}: {err:?}"
            );
        }
    }

    #[test]
    fn an_unreadable_file_keeps_its_io_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = Home::at(dir.path());
        // A folder where the file should be: it exists, and reading it fails.
        std::fs::create_dir_all(home.settings_file()).expect("folder");
        let err = Settings::load_from(&home, env(&[])).expect_err("a folder");
        assert!(matches!(err, SettingsError::ReadFile { .. }), "{err:?}");
        assert!(std::error::Error::source(&err).is_some_and(|s| s.is::<std::io::Error>()));
    }

    #[test]
    fn label_thresholds_must_name_labels_and_fractions() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = Home::at(dir.path());
        let err = Settings::load_from(
            &home,
            env(&[("PHIGUARD_LABEL_THRESHOLDS", "CITY=0.6,TOWN=0.5")]),
        )
        .expect_err("must fail");
        assert!(
            err.to_string().contains("PHIGUARD_LABEL_THRESHOLDS"),
            "{err}"
        );
        let ok = Settings::load_from(&home, env(&[("PHIGUARD_LABEL_THRESHOLDS", "CITY=0.6")]));
        assert!(ok.is_ok());
    }

    #[test]
    fn term_lists_are_checked_by_position_never_echoed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = Home::at(dir.path());
        let err = Settings::load_from(&home, env(&[("PHIGUARD_DENY_TERMS", "Oak,/Canary(/")]))
            .expect_err("bad regex");
        let msg = err.to_string();
        assert!(msg.contains("deny[1]") && !msg.contains("Canary"), "{msg}");
        let s = Settings::load_from(
            &home,
            env(&[
                ("PHIGUARD_DENY_TERMS", "Oakridge"),
                ("PHIGUARD_ALLOW_TERMS", "Keppra"),
            ]),
        )
        .expect("valid");
        assert!(!s.terms().expect("compiles").is_empty());
    }
    #[test]
    fn apply_is_all_or_nothing_and_refuses_locked_keys() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = Home::at(dir.path());
        let mut s =
            Settings::load_from(&home, env(&[("PHIGUARD_RETRY_MAX_ATTEMPTS", "2")])).expect("load");
        let errs = s
            .apply(&[
                ("breaker.failure_threshold".into(), "7".into()),
                ("retry.max_attempts".into(), "4".into()),
                ("retry.backoff_multiplier".into(), "0.5".into()),
            ])
            .expect_err("must refuse");
        assert_eq!(errs.len(), 2);
        assert_eq!(s.get(keys::BREAKER_FAILURE_THRESHOLD), 3);
        s.apply(&[("breaker.failure_threshold".into(), "7".into())])
            .expect("valid");
        s.persist(&["breaker.failure_threshold"]).expect("persist");
        let again = Settings::load_from(&home, env(&[])).expect("reload");
        assert_eq!(again.get(keys::BREAKER_FAILURE_THRESHOLD), 7);
        assert_eq!(
            again.source("breaker.failure_threshold"),
            SettingSource::File
        );
    }

    /// Saving one setting keeps the file's other values, those an environment variable
    /// overrides included: once the variable is gone, the file's value is back.
    #[test]
    fn persist_keeps_file_values_an_env_var_overrides() -> Result<(), Box<dyn std::error::Error>> {
        let (_dir, home) =
            home_with_file("[retry]\nmax_attempts = 5\n[breaker]\nrecovery_timeout_seconds = 45\n");
        let mut s = Settings::load_from(&home, env(&[("PHIGUARD_RETRY_MAX_ATTEMPTS", "9")]))?;
        assert_eq!(s.get(keys::RETRY_MAX_ATTEMPTS), 9);
        s.apply(&[("limits.token_rate_limit_rps".into(), "5".into())])
            .map_err(|e| format!("{e:?}"))?;
        s.persist(&["limits.token_rate_limit_rps"])?;
        let again = Settings::load_from(&home, env(&[]))?;
        assert_eq!(again.get(keys::RETRY_MAX_ATTEMPTS), 5);
        assert_eq!(again.source("retry.max_attempts"), SettingSource::File);
        assert_eq!(again.get(keys::BREAKER_RECOVERY_TIMEOUT_SECONDS), 45.0);
        assert_eq!(again.get(keys::LIMITS_TOKEN_RATE_LIMIT_RPS), 5.0);
        Ok(())
    }

    /// Saving edits the file in place: comments above a key and at the end of its line,
    /// blank lines, the order of keys and tables, a value's spelling (`0x5`) and values an
    /// environment variable overrides all stay; a changed key keeps its comment, a new one
    /// goes at the end of its table, a new table after the last one (before the comments
    /// that end the file). Before, the file
    /// was rewritten from the values alone and every comment was lost.
    #[test]
    fn persist_keeps_comments_layout_and_untouched_values() -> Result<(), Box<dyn std::error::Error>>
    {
        let text = "# Settings of the ward server; ask J. before changing.\n\
                    \n\
                    [retry]\n\
                    # Five: the model host drops the first call after a deploy.\n\
                    max_attempts = 0x5 # see INC-1234\n\
                    backoff_multiplier = 3.0\n\
                    \n\
                    # Breaker tuned for the night batch.\n\
                    [breaker]\n\
                    failure_threshold   =   4    # night batch\n\
                    recovery_timeout_seconds = 45\n\
                    \n\
                    # The end.\n";
        let (_dir, home) = home_with_file(text);
        let mut s = Settings::load_from(&home, env(&[("PHIGUARD_RETRY_MAX_ATTEMPTS", "9")]))?;
        s.apply(&[
            ("breaker.failure_threshold".into(), "7".into()),
            ("breaker.half_open_calls".into(), "2".into()),
            ("limits.token_rate_limit_rps".into(), "5".into()),
        ])
        .map_err(|e| format!("{e:?}"))?;
        s.persist(&[
            "breaker.failure_threshold",
            "breaker.half_open_calls",
            "limits.token_rate_limit_rps",
        ])?;
        let saved = std::fs::read_to_string(home.settings_file())?;
        let want = text
            .replace(
                "failure_threshold   =   4    # night batch\n",
                "failure_threshold   =   7    # night batch\n",
            )
            .replace(
                "recovery_timeout_seconds = 45\n",
                "recovery_timeout_seconds = 45\nhalf_open_calls = 2\n\n[limits]\ntoken_rate_limit_rps = 5.0\n",
            );
        assert_eq!(saved, want);
        let again = Settings::load_from(&home, env(&[]))?;
        assert_eq!(again.get(keys::RETRY_MAX_ATTEMPTS), 5);
        assert_eq!(again.get(keys::BREAKER_FAILURE_THRESHOLD), 7);
        assert_eq!(again.get(keys::BREAKER_HALF_OPEN_CALLS), 2);
        // Saving again without a change leaves the file as it is.
        again.persist(&[])?;
        assert_eq!(std::fs::read_to_string(home.settings_file())?, want);
        Ok(())
    }

    /// The other spellings of a key are edited where they are, and a new file starts with
    /// its header line.
    #[test]
    fn persist_edits_dotted_and_quoted_keys_in_place_and_starts_a_new_file(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let text = "\"retry.max_attempts\" = 5 # quoted\nretry.backoff_multiplier = 3 # dotted\n";
        let (_dir, home) = home_with_file(text);
        let mut s = Settings::load_from(&home, env(&[]))?;
        s.apply(&[
            ("retry.max_attempts".into(), "6".into()),
            ("retry.backoff_multiplier".into(), "4".into()),
        ])
        .map_err(|e| format!("{e:?}"))?;
        s.persist(&["retry.max_attempts", "retry.backoff_multiplier"])?;
        assert_eq!(
            std::fs::read_to_string(home.settings_file())?,
            "\"retry.max_attempts\" = 6 # quoted\nretry.backoff_multiplier = 4.0 # dotted\n"
        );
        let dir = tempfile::tempdir()?;
        let home = Home::at(dir.path());
        let mut s = Settings::load_from(&home, env(&[]))?;
        s.apply(&[("models.served".into(), "rules".into())])
            .map_err(|e| format!("{e:?}"))?;
        s.persist(&["models.served"])?;
        assert_eq!(
            std::fs::read_to_string(home.settings_file())?,
            format!("{FILE_HEADER}[models]\nserved = \"rules\"\n")
        );
        Ok(())
    }

    /// A refusal names what set the value: the OpenMed alias when that was set, and the
    /// flag of `phiguard serve` rather than a variable that was never set.
    #[test]
    fn locked_values_name_their_real_source() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let mut s = Settings::load_from(
            &Home::at(dir.path()),
            env(&[("OPENMED_SERVICE_CIRCUIT_BREAKER_FAILURE_THRESHOLD", "11")]),
        )?;
        s.set_from_flag("server.port", "9000", "--port")?;
        assert_eq!(s.get(keys::SERVER_PORT), 9000);
        let errs = s
            .apply(&[
                ("breaker.failure_threshold".into(), "2".into()),
                ("server.port".into(), "9001".into()),
            ])
            .expect_err("locked");
        assert_eq!(
            errs[0].message,
            "set by environment variable OPENMED_SERVICE_CIRCUIT_BREAKER_FAILURE_THRESHOLD"
        );
        assert_eq!(errs[1].message, "set by the --port flag");
        Ok(())
    }

    #[test]
    fn profile_sets_timeout_and_override_wins() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = Home::at(dir.path());
        let s = Settings::load_from(&home, env(&[("OPENMED_PROFILE", "test")])).expect("load");
        assert_eq!(
            s.request_timeout(),
            Some(std::time::Duration::from_secs(60))
        );
        let s = Settings::load_from(&home, env(&[("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0")]))
            .expect("load");
        assert_eq!(s.request_timeout(), None);
    }
}
