//! The token registry: the primary client and admin tokens plus labelled client tokens
//! created through the admin API, as SHA-256 digests, compared in constant time.

use std::path::PathBuf;
use std::time::SystemTime;

use parking_lot::RwLock;
use subtle::ConstantTimeEq;

use super::{digest, generate_token, Result, SecretStore, SecretsError};
use crate::settings::home::write_private;

/// What a token may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Inference routes and model listing.
    Client,
    /// Everything, the admin API included.
    Admin,
}

/// A token as listed (never the token itself).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct TokenInfo {
    /// Stable id (`tok_…`).
    pub id: String,
    /// Admin-chosen label.
    pub label: String,
    /// Scope.
    pub scope: Scope,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// First characters, to recognise it.
    pub prefix: String,
    #[serde(with = "hex_digest")]
    digest: [u8; 32],
}

mod hex_digest {
    use serde::{Deserialize, Deserializer, Serializer};
    pub(super) fn serialize<S: Serializer>(d: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(d))
    }
    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
        let s = String::deserialize(d)?;
        let v = hex::decode(s).map_err(serde::de::Error::custom)?;
        v.try_into()
            .map_err(|_| serde::de::Error::custom("digest must be 32 bytes"))
    }
}

/// A token in the JSON the admin API returns on creation (the only time it is shown).
#[derive(Clone, Debug, serde::Serialize)]
pub struct NewToken {
    /// Id.
    pub id: String,
    /// Label.
    pub label: String,
    /// Scope.
    pub scope: Scope,
    /// The token itself.
    pub token: String,
}

/// Primary tokens and the labelled ones.
pub struct TokenRegistry {
    file: PathBuf,
    entries: RwLock<Vec<TokenInfo>>,
    client: String,
    admin: String,
}

impl TokenRegistry {
    /// Loads the registry; the primary tokens come from `explicit` (environment) or the
    /// secret store (generated on first start).
    ///
    /// # Errors
    /// [`SecretsError::Storage`].
    pub fn open(
        store: &SecretStore,
        file: PathBuf,
        explicit_client: Option<String>,
        explicit_admin: Option<String>,
    ) -> Result<Self> {
        let client = match explicit_client.filter(|t| !t.is_empty()) {
            Some(t) => t,
            None => store.get_or_create("client-token", generate_token)?,
        };
        let admin = match explicit_admin.filter(|t| !t.is_empty()) {
            Some(t) => t,
            None => store.get_or_create("admin-token", generate_token)?,
        };
        let reg = TokenRegistry {
            file,
            entries: RwLock::new(Vec::new()),
            client,
            admin,
        };
        reg.reload()?;
        Ok(reg)
    }

    /// Re-reads the registry file (tokens created or revoked by another process).
    ///
    /// # Errors
    /// [`SecretsError::Storage`] when the file exists but cannot be parsed.
    pub fn reload(&self) -> Result<()> {
        let entries: Vec<TokenInfo> = match std::fs::read(&self.file) {
            Ok(b) => serde_json::from_slice(&b)
                .map_err(|_| SecretsError::Storage("token registry is not valid JSON".into()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(SecretsError::Storage(e.to_string())),
        };
        *self.entries.write() = entries;
        Ok(())
    }

    /// The primary client token.
    pub fn client_token(&self) -> &str {
        &self.client
    }

    /// The admin token.
    pub fn admin_token(&self) -> &str {
        &self.admin
    }

    /// Checks a presented token: `Some((token id, scope))` when it matches. Every candidate
    /// is compared (constant time per comparison, no early exit on the first match).
    pub fn authenticate(&self, presented: &str) -> Option<(String, Scope)> {
        let d = digest(presented);
        let mut found: Option<(String, Scope)> = None;
        if bool::from(d.ct_eq(&digest(&self.admin))) {
            found = Some(("admin".into(), Scope::Admin));
        }
        if bool::from(d.ct_eq(&digest(&self.client))) && found.is_none() {
            found = Some(("client".into(), Scope::Client));
        }
        for e in self.entries.read().iter() {
            if bool::from(d.ct_eq(&e.digest)) && found.is_none() {
                found = Some((e.id.clone(), e.scope));
            }
        }
        found
    }

    /// Listed tokens.
    pub fn list(&self) -> Vec<TokenInfo> {
        self.entries.read().clone()
    }

    /// Creates a labelled token; the returned secret is shown once.
    ///
    /// # Errors
    /// [`SecretsError::Storage`] when the registry cannot be written.
    pub fn create(&self, label: &str, scope: Scope) -> Result<NewToken> {
        let token = generate_token();
        let id = format!("tok_{}", &hex::encode(rand::random::<[u8; 6]>()));
        let info = TokenInfo {
            id: id.clone(),
            label: label.to_string(),
            scope,
            created_at: rfc3339(SystemTime::now()),
            prefix: token.chars().take(7).collect(),
            digest: digest(&token),
        };
        let mut entries = self.entries.write();
        entries.push(info);
        self.save(&entries)?;
        Ok(NewToken {
            id,
            label: label.to_string(),
            scope,
            token,
        })
    }

    /// Revokes a labelled token.
    ///
    /// # Errors
    /// [`SecretsError::NoSuchToken`] or a storage error.
    pub fn revoke(&self, id: &str) -> Result<()> {
        let mut entries = self.entries.write();
        let before = entries.len();
        entries.retain(|e| e.id != id);
        if entries.len() == before {
            return Err(SecretsError::NoSuchToken);
        }
        self.save(&entries)
    }

    fn save(&self, entries: &[TokenInfo]) -> Result<()> {
        let body =
            serde_json::to_vec_pretty(entries).map_err(|e| SecretsError::Storage(e.to_string()))?;
        write_private(&self.file, &body).map_err(|e| SecretsError::Storage(e.to_string()))
    }
}

/// Replaces the primary client token in the store (`phiguard token rotate`).
///
/// # Errors
/// [`SecretsError::Storage`].
pub fn rotate_client(store: &SecretStore) -> Result<String> {
    let t = generate_token();
    store.set("client-token", &t)?;
    Ok(t)
}

fn rfc3339(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_tokens_authenticate_until_revoked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SecretStore::file_only(dir.path().join("secrets.json"));
        let reg = TokenRegistry::open(
            &store,
            dir.path().join("tokens.json"),
            None,
            Some("adm".into()),
        )
        .expect("open");
        assert_eq!(reg.authenticate("adm").map(|t| t.1), Some(Scope::Admin));
        assert_eq!(
            reg.authenticate(reg.client_token()).map(|t| t.1),
            Some(Scope::Client)
        );
        let t = reg.create("ehr", Scope::Client).expect("create");
        assert!(reg.authenticate(&t.token).is_some());
        let text = std::fs::read_to_string(dir.path().join("tokens.json")).expect("read");
        assert!(!text.contains(&t.token), "registry must not hold the token");
        reg.revoke(&t.id).expect("revoke");
        assert!(reg.authenticate(&t.token).is_none());
        assert!(reg.authenticate("nope").is_none());
    }
}
