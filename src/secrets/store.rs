//! Where secrets are kept: the OS keychain, else a 0600 file.

use std::collections::BTreeMap;
use std::path::PathBuf;

use parking_lot::Mutex;

use super::{storage, Result, StorageError};
use crate::settings::home::write_private;

const SERVICE: &str = "phiguard";

/// Which backend holds the secrets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreKind {
    /// The OS keychain.
    Keychain,
    /// The 0600 file under `PHIGUARD_HOME`.
    File,
}

/// A small key → secret store.
pub struct SecretStore {
    kind: StoreKind,
    file: PathBuf,
    /// Distinguishes installs sharing one keychain (different `PHIGUARD_HOME`s).
    account_prefix: String,
    lock: Mutex<()>,
}

impl SecretStore {
    /// Opens the store: the keychain if it answers (and `PHIGUARD_KEYRING` is not `off`),
    /// else the file.
    pub fn open(file: PathBuf) -> Self {
        let account_prefix = {
            use sha2::Digest;
            let h = sha2::Sha256::digest(file.to_string_lossy().as_bytes());
            hex::encode(&h[..6])
        };
        let keyring_off = std::env::var("PHIGUARD_KEYRING")
            .map(|v| v.eq_ignore_ascii_case("off"))
            .unwrap_or(false);
        let kind = if !keyring_off && keychain_answers(&account_prefix) {
            StoreKind::Keychain
        } else {
            StoreKind::File
        };
        SecretStore {
            kind,
            file,
            account_prefix,
            lock: Mutex::new(()),
        }
    }

    /// A store that always uses the file.
    pub fn file_only(file: PathBuf) -> Self {
        SecretStore {
            kind: StoreKind::File,
            file,
            account_prefix: String::new(),
            lock: Mutex::new(()),
        }
    }

    /// The backend in use.
    pub fn kind(&self) -> StoreKind {
        self.kind
    }

    /// Reads a secret.
    ///
    /// # Errors
    /// [`SecretsError::Storage`](super::SecretsError::Storage) when the backend fails (a missing secret is `Ok(None)`).
    pub fn get(&self, name: &str) -> Result<Option<String>> {
        let _g = self.lock.lock();
        match self.kind {
            StoreKind::Keychain => match self.entry(name)?.get_password() {
                Ok(v) => Ok(Some(v)),
                Err(keyring::Error::NoEntry) => Ok(None),
                Err(e) => Err(storage(e)),
            },
            StoreKind::File => Ok(self.read_file()?.remove(name)),
        }
    }

    /// Writes a secret.
    ///
    /// # Errors
    /// [`SecretsError::Storage`](super::SecretsError::Storage).
    pub fn set(&self, name: &str, value: &str) -> Result<()> {
        let _g = self.lock.lock();
        match self.kind {
            StoreKind::Keychain => self.entry(name)?.set_password(value).map_err(storage),
            StoreKind::File => {
                let mut all = self.read_file()?;
                all.insert(name.to_string(), value.to_string());
                let body = serde_json::to_vec_pretty(&all).map_err(storage)?;
                write_private(&self.file, &body).map_err(storage)
            }
        }
    }

    /// A 32-byte key as 64 hex digits: `configured` when it is set (the same value on every
    /// replica, from `PHIGUARD_HASH_KEY` or `PHIGUARD_MAPPING_KEY`), else the stored one,
    /// generated at first use.
    ///
    /// # Errors
    /// When the store can be neither read nor written.
    pub fn key(&self, name: &str, configured: &str) -> Result<String> {
        match configured.trim() {
            "" => self.get_or_create(name, || hex::encode(rand::random::<[u8; 32]>())),
            set => Ok(set.to_owned()),
        }
    }

    /// Reads a secret, creating it with `make` when absent.
    ///
    /// # Errors
    /// [`SecretsError::Storage`](super::SecretsError::Storage).
    pub fn get_or_create(&self, name: &str, make: impl FnOnce() -> String) -> Result<String> {
        if let Some(v) = self.get(name)? {
            return Ok(v);
        }
        let v = make();
        self.set(name, &v)?;
        Ok(v)
    }

    fn entry(&self, name: &str) -> Result<keyring::Entry> {
        keyring::Entry::new(SERVICE, &format!("{}-{name}", self.account_prefix)).map_err(storage)
    }

    fn read_file(&self) -> Result<BTreeMap<String, String>> {
        match std::fs::read(&self.file) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map_err(|_| storage(StorageError::CorruptSecrets))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(storage(e)),
        }
    }
}

/// True when a keychain round trip works.
fn keychain_answers(prefix: &str) -> bool {
    let Ok(entry) = keyring::Entry::new(SERVICE, &format!("{prefix}-probe")) else {
        return false;
    };
    if entry.set_password("probe").is_err() {
        return false;
    }
    let ok = matches!(entry.get_password().as_deref(), Ok("probe"));
    let _ = entry.delete_credential();
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_store_round_trips_with_private_mode() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s/secrets.json");
        let store = SecretStore::file_only(path.clone());
        assert_eq!(store.get("a").expect("get"), None);
        let v = store.get_or_create("a", || "one".into()).expect("create");
        assert_eq!(v, "one");
        assert_eq!(
            store.get_or_create("a", || "two".into()).expect("again"),
            "one"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
