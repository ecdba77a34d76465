//! Secrets and tokens: the per-install HMAC key, the client and admin tokens, and the
//! registry of extra client tokens created by admins.
//!
//! Secrets live in the OS keychain (keyring: macOS Keychain, Windows Credential Manager,
//! Secret Service on Linux). Where no keychain answers (headless Linux, containers) they live
//! in a 0600 JSON file under `PHIGUARD_HOME`. `PHIGUARD_KEYRING=off` skips the keychain.
//! Tokens are compared as SHA-256 digests in constant time; the registry file holds digests,
//! labels and prefixes only, never a usable token. A running server picks up tokens changed
//! by another process (rotation, revocation) within about a second (see `tokens.rs`).

mod store;
mod tokens;

pub use store::{SecretStore, StoreKind};
pub use tokens::{
    label_problem, registry_file, rotate, spawn_refresh, NewToken, Primary, Scope, TokenInfo,
    TokenRegistry, PRIMARY_CLIENT_ID, REFRESH_PERIOD,
};

/// Errors of the secrets module.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    /// Returned when neither the keychain nor the fallback file could be used.
    #[error("secret storage failed: {0}")]
    Storage(#[source] StorageError),
    /// Returned when a token id does not exist.
    #[error("no such token")]
    NoSuchToken,
    /// Returned when a primary token is set by the environment or the settings file and so
    /// cannot be replaced by phiguard.
    #[error("the token is set by {variable}; change it there")]
    Pinned {
        /// The variable (or its `security.*` setting) that sets it.
        variable: &'static str,
    },
}

/// How the keychain or a file under PHIGUARD_HOME failed ([`SecretsError::Storage`]). No
/// variant carries a secret, a token or a path.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// Returned when reading, writing or locking a secrets or registry file fails.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Returned when the operating system's keychain refuses an operation.
    #[error(transparent)]
    Keychain(#[from] keyring::Error),
    /// Returned when the secrets or the registry cannot be encoded for writing.
    #[error(transparent)]
    Encode(#[from] serde_json::Error),
    /// Returned when the secrets file is not a JSON object of strings.
    #[error("secrets file is not valid JSON")]
    CorruptSecrets,
    /// Returned when the token registry file does not parse.
    #[error("token registry is not valid JSON")]
    CorruptRegistry,
}

/// Wraps a storage failure, for `map_err`.
pub(crate) fn storage(e: impl Into<StorageError>) -> SecretsError {
    SecretsError::Storage(e.into())
}

/// Module result.
pub type Result<T> = std::result::Result<T, SecretsError>;

/// A fresh random token: `pg_` + 32 bytes base64url (43 chars).
pub fn generate_token() -> String {
    use base64::Engine as _;
    let bytes: [u8; 32] = rand::random();
    format!(
        "pg_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

/// SHA-256 of a token, hex.
pub fn digest(token: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_failures_keep_their_wording_and_their_source() {
        assert_eq!(
            storage(StorageError::CorruptSecrets).to_string(),
            "secret storage failed: secrets file is not valid JSON"
        );
        assert_eq!(
            storage(StorageError::CorruptRegistry).to_string(),
            "secret storage failed: token registry is not valid JSON"
        );
        let e = storage(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        let source = std::error::Error::source(&e).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("permission denied"));
        assert!(e.to_string().starts_with("secret storage failed: "));
    }
}
