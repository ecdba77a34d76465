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
pub mod table;
pub mod value;

use std::collections::BTreeMap;
use std::path::PathBuf;

pub use home::Home;
pub use key::Key;
pub use table::{keys, Def, TABLE};
pub use value::{Kind, Value};

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

/// Errors of the settings module. Messages name the variable or key and the rule.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// Returned when an environment variable does not satisfy its rule.
    #[error("{var}: must be {rule}")]
    InvalidEnv { var: String, rule: String },
    /// Returned when a key given to `set` (file, CLI, admin API) does not satisfy its rule.
    #[error("{key}: must be {rule}")]
    InvalidValue { key: String, rule: String },
    /// Returned when a key is not in the table.
    #[error("unknown setting {0}")]
    UnknownKey(String),
    /// Returned when a key is set by the environment and so cannot be changed here.
    #[error("{key} is set by environment variable {var} and cannot be changed here")]
    Locked { key: String, var: String },
    /// Returned when several values are each valid but contradict each other.
    #[error("{0}")]
    Conflict(String),
    /// Returned when `settings.toml` cannot be read or written.
    #[error("settings file {path}: {reason}")]
    File { path: PathBuf, reason: String },
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
        Settings { values, file: None }
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
            let text = std::fs::read_to_string(&path).map_err(|e| SettingsError::File {
                path: path.clone(),
                reason: e.to_string(),
            })?;
            for (key, raw) in parse_file(&text).map_err(|reason| SettingsError::File {
                path: path.clone(),
                reason,
            })? {
                let def = table::def(&key).ok_or_else(|| SettingsError::File {
                    path: path.clone(),
                    reason: format!("unknown setting {key}"),
                })?;
                if def.secret {
                    continue;
                }
                let v = def
                    .kind
                    .parse(&raw)
                    .map_err(|rule| SettingsError::InvalidValue {
                        key: key.clone(),
                        rule,
                    })?;
                s.values.insert(def.key, (v, SettingSource::File));
            }
        }
        for def in TABLE {
            let found = env(def.env)
                .map(|v| (def.env, v))
                .or_else(|| def.alias.and_then(|a| env(a).map(|v| (a, v))));
            if let Some((var, raw)) = found {
                if raw.trim().is_empty() && !matches!(def.kind, Kind::Str) {
                    continue; // OpenMed: empty means the default
                }
                let v = def
                    .kind
                    .parse(&raw)
                    .map_err(|rule| SettingsError::InvalidEnv {
                        var: var.to_string(),
                        rule,
                    })?;
                s.values.insert(def.key, (v, SettingSource::Env));
            }
        }
        s.check_conflicts()?;
        Ok(s)
    }

    fn check_conflicts(&self) -> Result<(), SettingsError> {
        let high = self.high_watermark();
        if self.low_watermark() >= high {
            return Err(SettingsError::Conflict(format!(
                "admission.low_watermark (PHIGUARD_BATCH_LOW_WATERMARK) must be below the high watermark {high}"
            )));
        }
        if !self.get(keys::CLUSTER_REDIS_URL).is_empty()
            && self.get(keys::CLUSTER_ADMISSIONS).is_none()
        {
            return Err(SettingsError::Conflict(
                "PHIGUARD_CLUSTER_ADMISSIONS must be set when PHIGUARD_REDIS_URL is".into(),
            ));
        }
        if let Err(e) =
            crate::detect::LabelThresholds::parse(self.get(keys::MODELS_LABEL_THRESHOLDS))
        {
            return Err(SettingsError::Conflict(format!(
                "models.label_thresholds (PHIGUARD_LABEL_THRESHOLDS): {e}"
            )));
        }
        if self.get(keys::RETRY_BACKOFF_MAX_SECONDS) < self.get(keys::RETRY_BACKOFF_INITIAL_SECONDS)
        {
            return Err(SettingsError::Conflict(
                "retry.backoff_max_seconds (PHIGUARD_RETRY_BACKOFF_MAX_SECONDS) must not be below retry.backoff_initial_seconds".into(),
            ));
        }
        Ok(())
    }

    /// The value of `key` (a key from the table; unknown keys are a programming error and
    /// return `Value::Unset`).
    pub fn value(&self, key: &str) -> &Value {
        self.values
            .get(key)
            .map(|(v, _)| v)
            .unwrap_or(&Value::Unset)
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
                errors.push(FieldError {
                    field: def.key.into(),
                    message: format!("secret; set it with {} or the token commands", def.env),
                });
                continue;
            }
            if self.source(def.key) == SettingSource::Env {
                errors.push(FieldError {
                    field: def.key.into(),
                    message: format!("set by environment variable {}", def.env),
                });
                continue;
            }
            match def.kind.parse(raw) {
                Ok(v) => {
                    next.values.insert(def.key, (v, SettingSource::File));
                }
                Err(rule) => errors.push(FieldError {
                    field: def.key.into(),
                    message: format!("must be {rule}"),
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
            *self = next;
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// Writes every value whose source is the file to `settings.toml` (0600), atomically.
    ///
    /// # Errors
    /// [`SettingsError::File`].
    pub fn persist(&self) -> Result<(), SettingsError> {
        let Some(path) = &self.file else {
            return Ok(());
        };
        let mut groups: BTreeMap<&str, toml::Table> = BTreeMap::new();
        for def in TABLE {
            if def.secret || self.source(def.key) != SettingSource::File {
                continue;
            }
            let name = def.key.split_once('.').map(|(_, n)| n).unwrap_or(def.key);
            let v = match self.value(def.key) {
                Value::Unset => toml::Value::String(String::new()),
                Value::Bool(b) => toml::Value::Boolean(*b),
                Value::Int(i) => toml::Value::Integer(*i),
                Value::Float(f) => toml::Value::Float(*f),
                Value::Str(s) => toml::Value::String(s.clone()),
                Value::List(l) => toml::Value::String(l.join(",")),
            };
            groups
                .entry(def.group())
                .or_default()
                .insert(name.to_string(), v);
        }
        let mut root = toml::Table::new();
        for (g, t) in groups {
            root.insert(g.to_string(), toml::Value::Table(t));
        }
        let body = format!(
            "# phiguard settings, written by phiguard; environment variables override these.\n{}",
            toml::to_string(&root).unwrap_or_default()
        );
        home::write_private(path, body.as_bytes()).map_err(|e| SettingsError::File {
            path: path.clone(),
            reason: e.to_string(),
        })
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

/// Reads `settings.toml`: `[group] name = value` tables, or top-level `"group.name" = value`.
fn parse_file(text: &str) -> Result<Vec<(String, String)>, String> {
    let root: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| e.message().to_string())?;
    let mut out = Vec::new();
    for (k, v) in root {
        match v {
            toml::Value::Table(t) => {
                for (name, v) in t {
                    out.push((format!("{k}.{name}"), toml_text(&v)?));
                }
            }
            other => out.push((k, toml_text(&other)?)),
        }
    }
    Ok(out)
}

fn toml_text(v: &toml::Value) -> Result<String, String> {
    Ok(match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Array(a) => a
            .iter()
            .map(toml_text)
            .collect::<Result<Vec<_>, _>>()?
            .join(","),
        _ => return Err("values must be strings, numbers, booleans or arrays".into()),
    })
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
    fn env_beats_file_beats_default_and_alias_is_accepted() -> Result<(), SettingsError> {
        let dir = tempfile::tempdir().map_err(|e| SettingsError::Conflict(e.to_string()))?;
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
        assert!(err.to_string().contains("PHIGUARD_BATCH_LOW_WATERMARK"));
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
        s.persist().expect("persist");
        let again = Settings::load_from(&home, env(&[])).expect("reload");
        assert_eq!(again.get(keys::BREAKER_FAILURE_THRESHOLD), 7);
        assert_eq!(
            again.source("breaker.failure_threshold"),
            SettingSource::File
        );
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
