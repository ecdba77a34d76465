//! The token registry: the primary client and admin tokens plus labelled client tokens
//! created through the admin API, as SHA-256 digests, compared in constant time.
//!
//! Why a refresh loop: tokens change in other processes (`phiguard token rotate`, a second
//! server on the same home) and rotation is how a leaked token is revoked, so a running
//! server must pick the change up without a restart. The primary tokens may live in the OS
//! keychain, which has no modification time to watch, so the registry file `tokens.json`
//! (always a plain 0600 file in the data directory) is the change marker: every write of a
//! primary token bumps its `generation`. [`spawn_refresh`] re-reads that small file about
//! once a second and goes to the secret store only when the generation moved. Requests
//! never do I/O: they compare against the snapshot in memory.
//!
//! Writers (this process and the CLI) take an advisory lock on `tokens.json.lock` around
//! each read-modify-write, so two processes never lose each other's changes; readers need
//! no lock because every write replaces the file atomically (temp file + rename).
//!
//! Revoking the primary client token (`DELETE /admin/tokens/client`) means replacing it:
//! a fresh token is generated and stored, the old one is refused from then on, and
//! `phiguard token show` (or the desktop app's "Copy API token") prints the new one. A
//! primary token pinned by the environment or `settings.toml` (`PHIGUARD_AUTH_TOKEN`,
//! `PHIGUARD_ADMIN_TOKEN`) cannot be replaced here: it is changed where it is set.
//!
//! A labelled token may carry an expiry (`expires_at`, whole seconds, never earlier than
//! asked): from then on it authenticates as no token at all, and listings mark it expired
//! until it is revoked. The primary tokens never expire; they are rotated.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use parking_lot::{Mutex, RwLock};
use subtle::ConstantTimeEq;

use super::{digest, generate_token, storage, Result, SecretStore, SecretsError, StorageError};
use crate::settings::home::write_private;
use crate::settings::Home;

/// How often a running server looks at the registry file for changes made elsewhere.
pub const REFRESH_PERIOD: Duration = Duration::from_secs(1);

/// The id under which the primary client token is listed (and revoked).
pub const PRIMARY_CLIENT_ID: &str = "client";

/// What is wrong with a token's label (already trimmed), if anything: at most 80
/// characters, and no control characters (a line break in a label would print a row of its
/// own in `phiguard token list`, one that looks like another token). The CLI and
/// `POST /admin/tokens` both ask this.
pub fn label_problem(label: &str) -> Option<&'static str> {
    if label.chars().count() > 80 {
        Some("label must be at most 80 characters")
    } else if label.chars().any(char::is_control) {
        Some("label must not contain control characters (line breaks, tabs)")
    } else {
        None
    }
}

/// The registry file of a home: `tokens.json` in its data directory.
pub fn registry_file(home: &Home) -> PathBuf {
    home.data_dir().join("tokens.json")
}

/// What a token may do.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Inference routes and model listing.
    Client,
    /// Everything, the admin API included.
    Admin,
}

/// One of the two primary tokens (kept in the secret store, not in the registry file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Primary {
    /// The client (inference) token.
    Client,
    /// The admin token.
    Admin,
}

impl Primary {
    /// Its name in the secret store.
    fn secret_name(self) -> &'static str {
        match self {
            Primary::Client => "client-token",
            Primary::Admin => "admin-token",
        }
    }

    /// The environment variable that pins it.
    pub fn variable(self) -> &'static str {
        match self {
            Primary::Client => "PHIGUARD_AUTH_TOKEN",
            Primary::Admin => "PHIGUARD_ADMIN_TOKEN",
        }
    }
}

/// A token as listed by the admin API (never the token itself, nor its digest).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct TokenInfo {
    /// Stable id (`tok_…`, or `client` for the primary client token).
    pub id: String,
    /// Admin-chosen label.
    pub label: String,
    /// Scope.
    pub scope: Scope,
    /// RFC 3339 creation time; `null` when unknown (a token pinned by the environment).
    #[schema(required = true)]
    pub created_at: Option<String>,
    /// First characters, to recognise it.
    pub prefix: String,
    /// True for the primary client token: revoking it replaces it with a fresh one.
    pub primary: bool,
    /// RFC 3339 expiry; `null` for a token that does not expire.
    #[schema(required = true)]
    pub expires_at: Option<String>,
    /// True once `expires_at` has passed: the token is refused.
    pub expired: bool,
}

/// A labelled token as stored in the registry file.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Entry {
    id: String,
    label: String,
    scope: Scope,
    created_at: String,
    prefix: String,
    #[serde(with = "hex_digest")]
    digest: [u8; 32],
    /// RFC 3339; absent for a token that does not expire (and in files of earlier releases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<String>,
}

impl Entry {
    /// Whether the token has expired at `now`; an expiry that does not parse counts as
    /// passed (a damaged file must not make a token immortal).
    fn expired(&self, now: SystemTime) -> bool {
        let Some(at) = &self.expires_at else {
            return false;
        };
        match chrono::DateTime::parse_from_rfc3339(at) {
            Ok(t) => SystemTime::from(t) <= now,
            Err(_) => true,
        }
    }
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

/// The registry file: the primary tokens' change marker and the labelled tokens.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct RegistryFile {
    /// Bumped by every write of a primary token to the secret store.
    #[serde(default)]
    generation: u64,
    /// When the stored primary client token was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_created_at: Option<String>,
    /// When the stored admin token was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    admin_created_at: Option<String>,
    #[serde(default)]
    tokens: Vec<Entry>,
}

/// Earlier releases wrote the labelled tokens as a bare array.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum OnDisk {
    Current(RegistryFile),
    Legacy(Vec<Entry>),
}

impl RegistryFile {
    fn parse(bytes: Option<&[u8]>) -> Result<Self> {
        let Some(bytes) = bytes else {
            return Ok(RegistryFile::default());
        };
        match serde_json::from_slice::<OnDisk>(bytes) {
            Ok(OnDisk::Current(f)) => Ok(f),
            Ok(OnDisk::Legacy(tokens)) => Ok(RegistryFile {
                tokens,
                ..RegistryFile::default()
            }),
            Err(_) => Err(storage(StorageError::CorruptRegistry)),
        }
    }

    fn read(path: &Path) -> Result<Self> {
        Self::parse(read_optional(path)?.as_deref())
    }

    fn write(&self, path: &Path) -> Result<Vec<u8>> {
        let body = serde_json::to_vec_pretty(self).map_err(storage)?;
        write_private(path, &body).map_err(storage)?;
        Ok(body)
    }

    fn created_at_mut(&mut self, which: Primary) -> &mut Option<String> {
        match which {
            Primary::Client => &mut self.client_created_at,
            Primary::Admin => &mut self.admin_created_at,
        }
    }
}

fn read_optional(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(storage(e)),
    }
}

/// The cross-process writer lock of a registry file, held until dropped.
///
/// Written here rather than with a locking crate: `std::fs::File::lock` does exactly this
/// (flock on Unix, LockFileEx on Windows) and is released when the file is closed.
struct WriterLock {
    _file: std::fs::File,
}

impl WriterLock {
    fn take(registry: &Path) -> Result<Self> {
        let dir = registry.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(storage)?;
        let name = format!(
            "{}.lock",
            registry
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("tokens.json")
        );
        let mut opts = std::fs::OpenOptions::new();
        opts.create(true).truncate(false).write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let f = opts.open(dir.join(name)).map_err(storage)?;
        f.lock().map_err(storage)?;
        Ok(WriterLock { _file: f })
    }
}

/// A token in the JSON the admin API returns on creation (the only time it is shown).
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
pub struct NewToken {
    /// Id.
    pub id: String,
    /// Label.
    pub label: String,
    /// Scope.
    pub scope: Scope,
    /// The token itself.
    pub token: String,
    /// RFC 3339 expiry; `null` when it does not expire.
    pub expires_at: Option<String>,
}

/// A primary token in memory, with its digest computed once.
#[derive(Clone)]
struct Held {
    token: String,
    digest: [u8; 32],
}

impl Held {
    fn new(token: String) -> Self {
        Held {
            digest: digest(&token),
            token,
        }
    }
}

/// What requests are checked against; replaced whole by a refresh that saw a change.
struct Snapshot {
    client: Held,
    admin: Held,
    file: RegistryFile,
    /// Digest of the registry file's bytes last applied (`None`: no file).
    seen: Option<[u8; 32]>,
}

/// Primary tokens and the labelled ones.
pub struct TokenRegistry {
    store: Arc<SecretStore>,
    file: PathBuf,
    pinned_client: Option<String>,
    pinned_admin: Option<String>,
    snapshot: RwLock<Snapshot>,
    /// Serialises this process's refreshes and writes, so a refresh that read the file
    /// before a write cannot install the older state after it.
    writer: Mutex<()>,
}

/// Whether two token digests are equal, in constant time, a 64-bit word at a time: `subtle`
/// compares a byte slice byte by byte, each byte behind an optimisation barrier, and every
/// request compares two or more digests.
fn same_digest(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let words = |d: &[u8; 32]| {
        let mut w = [0u64; 4];
        for (w, chunk) in w.iter_mut().zip(d.chunks_exact(8)) {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(chunk);
            *w = u64::from_ne_bytes(bytes);
        }
        w
    };
    bool::from(words(a).ct_eq(&words(b)))
}

impl TokenRegistry {
    /// Loads the registry; the primary tokens come from `explicit` (environment or settings
    /// file; such a token is pinned: never replaced) or the secret store (generated on first
    /// start).
    ///
    /// # Errors
    /// [`SecretsError::Storage`].
    pub fn open(
        store: Arc<SecretStore>,
        file: PathBuf,
        explicit_client: Option<String>,
        explicit_admin: Option<String>,
    ) -> Result<Self> {
        let pinned_client = explicit_client.filter(|t| !t.is_empty());
        let pinned_admin = explicit_admin.filter(|t| !t.is_empty());
        let (client, admin, reg_file, seen) = {
            let _lock = WriterLock::take(&file)?;
            let mut reg_file = RegistryFile::read(&file)?;
            let mut created = false;
            let mut primary = |which: Primary, pinned: &Option<String>| -> Result<String> {
                if let Some(t) = pinned {
                    return Ok(t.clone());
                }
                if let Some(t) = store.get(which.secret_name())? {
                    return Ok(t);
                }
                let t = generate_token();
                store.set(which.secret_name(), &t)?;
                *reg_file.created_at_mut(which) = Some(rfc3339(SystemTime::now()));
                created = true;
                Ok(t)
            };
            let client = primary(Primary::Client, &pinned_client)?;
            let admin = primary(Primary::Admin, &pinned_admin)?;
            let seen = if created {
                reg_file.generation += 1;
                Some(bytes_digest(&reg_file.write(&file)?))
            } else {
                read_optional(&file)?.as_deref().map(bytes_digest)
            };
            (client, admin, reg_file, seen)
        };
        Ok(TokenRegistry {
            store,
            file,
            pinned_client,
            pinned_admin,
            snapshot: RwLock::new(Snapshot {
                client: Held::new(client),
                admin: Held::new(admin),
                file: reg_file,
                seen,
            }),
            writer: Mutex::new(()),
        })
    }

    /// Re-reads the registry file and, when its generation moved, the primary tokens from
    /// the secret store (changes made by another process). Returns whether anything changed.
    ///
    /// # Errors
    /// [`SecretsError::Storage`] when the file exists but cannot be read or parsed, or the
    /// store fails; the snapshot in use is then kept.
    pub fn refresh(&self) -> Result<bool> {
        let _w = self.writer.lock();
        self.refresh_locked()
    }

    fn refresh_locked(&self) -> Result<bool> {
        let bytes = read_optional(&self.file)?;
        let seen = bytes.as_deref().map(bytes_digest);
        let generation = {
            let snap = self.snapshot.read();
            if snap.seen == seen {
                return Ok(false);
            }
            snap.file.generation
        };
        let file = RegistryFile::parse(bytes.as_deref())?;
        let primaries = if file.generation != generation {
            Some((
                self.stored(Primary::Client, &self.pinned_client)?,
                self.stored(Primary::Admin, &self.pinned_admin)?,
            ))
        } else {
            None
        };
        let mut snap = self.snapshot.write();
        if let Some((client, admin)) = primaries {
            if client.digest != snap.client.digest || admin.digest != snap.admin.digest {
                // Which one changed, never the token or its digest.
                tracing::info!(
                    client = client.digest != snap.client.digest,
                    admin = admin.digest != snap.admin.digest,
                    "primary token replaced; the previous one is refused from now on"
                );
            }
            snap.client = client;
            snap.admin = admin;
        }
        snap.file = file;
        snap.seen = seen;
        Ok(true)
    }

    /// The current value of a primary token: pinned, else from the store (created if gone).
    fn stored(&self, which: Primary, pinned: &Option<String>) -> Result<Held> {
        if let Some(t) = pinned {
            return Ok(Held::new(t.clone()));
        }
        let t = self
            .store
            .get_or_create(which.secret_name(), generate_token)?;
        Ok(Held::new(t))
    }

    /// The primary client token.
    pub fn client_token(&self) -> String {
        self.snapshot.read().client.token.clone()
    }

    /// The admin token.
    pub fn admin_token(&self) -> String {
        self.snapshot.read().admin.token.clone()
    }

    /// Checks a presented token: `Some((token id, scope))` when it matches a current token.
    /// Every candidate is compared (constant time per comparison, no early exit on the first
    /// match); an expired token matches nothing.
    pub fn authenticate(&self, presented: &str) -> Option<(Arc<str>, Scope)> {
        self.authenticate_at(presented, SystemTime::now())
    }

    /// [`authenticate`](Self::authenticate) at the wall-clock time `now`.
    ///
    /// The id is shared (`Arc<str>`): every request carries it to the access log, the rate
    /// limiter and the handler, and the two primary ids are not allocated per request.
    pub fn authenticate_at(&self, presented: &str, now: SystemTime) -> Option<(Arc<str>, Scope)> {
        static ADMIN_ID: std::sync::LazyLock<Arc<str>> =
            std::sync::LazyLock::new(|| Arc::from("admin"));
        static CLIENT_ID: std::sync::LazyLock<Arc<str>> =
            std::sync::LazyLock::new(|| Arc::from(PRIMARY_CLIENT_ID));
        let d = digest(presented);
        let snap = self.snapshot.read();
        let mut found: Option<(Arc<str>, Scope)> = None;
        if same_digest(&d, &snap.admin.digest) {
            found = Some((Arc::clone(&ADMIN_ID), Scope::Admin));
        }
        if same_digest(&d, &snap.client.digest) && found.is_none() {
            found = Some((Arc::clone(&CLIENT_ID), Scope::Client));
        }
        for e in &snap.file.tokens {
            if same_digest(&d, &e.digest) && found.is_none() && !e.expired(now) {
                found = Some((Arc::from(e.id.as_str()), e.scope));
            }
        }
        found
    }

    /// Listed tokens: the primary client token first, then the labelled ones.
    pub fn list(&self) -> Vec<TokenInfo> {
        self.list_at(SystemTime::now())
    }

    /// [`list`](Self::list), with `expired` decided at `now`.
    pub fn list_at(&self, now: SystemTime) -> Vec<TokenInfo> {
        let snap = self.snapshot.read();
        let pinned = self.pinned_client.is_some();
        let mut out = vec![TokenInfo {
            id: PRIMARY_CLIENT_ID.into(),
            label: if pinned {
                format!(
                    "Primary client token (set by {})",
                    Primary::Client.variable()
                )
            } else {
                "Primary client token".into()
            },
            scope: Scope::Client,
            created_at: if pinned {
                None
            } else {
                snap.file.client_created_at.clone()
            },
            prefix: prefix_of(&snap.client.token),
            primary: true,
            expires_at: None,
            expired: false,
        }];
        out.extend(snap.file.tokens.iter().map(|e| TokenInfo {
            id: e.id.clone(),
            label: e.label.clone(),
            scope: e.scope,
            created_at: Some(e.created_at.clone()),
            prefix: e.prefix.clone(),
            primary: false,
            expires_at: e.expires_at.clone(),
            expired: e.expired(now),
        }));
        out
    }

    /// Creates a labelled token, valid for `lifetime` when given (else until revoked); the
    /// returned secret is shown once.
    ///
    /// # Errors
    /// [`SecretsError::Storage`] when the registry cannot be written.
    pub fn create(
        &self,
        label: &str,
        scope: Scope,
        lifetime: Option<Duration>,
    ) -> Result<NewToken> {
        let token = generate_token();
        let id = format!("tok_{}", &hex::encode(rand::random::<[u8; 6]>()));
        let now = SystemTime::now();
        let expires_at = lifetime.map(|d| rfc3339(expiry_after(now, d)));
        let entry = Entry {
            id: id.clone(),
            label: label.to_string(),
            scope,
            created_at: rfc3339(now),
            prefix: prefix_of(&token),
            digest: digest(&token),
            expires_at: expires_at.clone(),
        };
        self.modify(|f| {
            f.tokens.push(entry);
            Ok(())
        })?;
        Ok(NewToken {
            id,
            label: label.to_string(),
            scope,
            token,
            expires_at,
        })
    }

    /// Revokes a token: a labelled one is removed; the primary client token
    /// ([`PRIMARY_CLIENT_ID`]) is replaced by a fresh one (see the module docs).
    ///
    /// # Errors
    /// [`SecretsError::NoSuchToken`], [`SecretsError::Pinned`] for a primary token set by
    /// the environment, or a storage error.
    pub fn revoke(&self, id: &str) -> Result<()> {
        if id == PRIMARY_CLIENT_ID {
            if self.pinned_client.is_some() {
                return Err(SecretsError::Pinned {
                    variable: Primary::Client.variable(),
                });
            }
            let _w = self.writer.lock();
            rotate(&self.store, &self.file, Primary::Client)?;
            self.refresh_locked()?;
            return Ok(());
        }
        self.modify(|f| {
            let before = f.tokens.len();
            f.tokens.retain(|e| e.id != id);
            if f.tokens.len() == before {
                return Err(SecretsError::NoSuchToken);
            }
            Ok(())
        })
    }

    /// A read-modify-write of the registry file under the writer lock, applied in memory.
    fn modify(&self, change: impl FnOnce(&mut RegistryFile) -> Result<()>) -> Result<()> {
        let _w = self.writer.lock();
        {
            let _lock = WriterLock::take(&self.file)?;
            let mut f = RegistryFile::read(&self.file)?;
            change(&mut f)?;
            f.write(&self.file)?;
        }
        // Apply through the same path as a change made elsewhere: a primary change that
        // landed meanwhile is picked up too.
        self.refresh_locked().map(drop)
    }
}

/// Replaces a primary token in the secret store and bumps the registry file's generation so
/// running servers on the same home switch to it within [`REFRESH_PERIOD`] (`phiguard token
/// rotate`, dashboard revocation of the primary client token). Returns the new token.
///
/// # Errors
/// [`SecretsError::Storage`].
pub fn rotate(store: &SecretStore, registry: &Path, which: Primary) -> Result<String> {
    let _lock = WriterLock::take(registry)?;
    let mut f = RegistryFile::read(registry)?;
    let t = generate_token();
    // The secret first, then the marker: a server that sees the new generation finds the
    // new token in the store.
    store.set(which.secret_name(), &t)?;
    f.generation += 1;
    *f.created_at_mut(which) = Some(rfc3339(SystemTime::now()));
    f.write(registry)?;
    Ok(t)
}

/// The background refresh of a running server: [`TokenRegistry::refresh`] every `period`
/// on the blocking pool (the keychain may block). It ends when the registry is dropped or
/// the returned handle is aborted. A failing refresh keeps the tokens in use and is logged
/// once until it succeeds again.
pub fn spawn_refresh(reg: &Arc<TokenRegistry>, period: Duration) -> tokio::task::JoinHandle<()> {
    let weak: Weak<TokenRegistry> = Arc::downgrade(reg);
    tokio::spawn(async move {
        let mut failing = false;
        loop {
            tokio::time::sleep(period).await;
            let Some(reg) = weak.upgrade() else {
                return;
            };
            let outcome = tokio::task::spawn_blocking(move || reg.refresh()).await;
            match outcome {
                Ok(Ok(_)) => failing = false,
                Ok(Err(e)) if !failing => {
                    failing = true;
                    tracing::warn!(error = %e, "token registry refresh failed; keeping the tokens in use");
                }
                Ok(Err(_)) => {}
                Err(_) => return,
            }
        }
    })
}

/// The first characters shown to recognise a token: seven for generated tokens (`pg_` and
/// four more), at most a quarter of a short pinned one.
fn prefix_of(token: &str) -> String {
    let n = token.chars().count();
    token.chars().take(7.min(n / 4)).collect()
}

fn bytes_digest(b: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(b).into()
}

/// `now + lifetime`, rounded up to a whole second (the registry keeps whole seconds, and a
/// token must never expire before it was asked to).
fn expiry_after(now: SystemTime, lifetime: Duration) -> SystemTime {
    let at = now
        .checked_add(lifetime)
        .unwrap_or(now + Duration::from_secs(100 * 365 * 86_400));
    let since = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let whole = since.as_secs() + u64::from(since.subsec_nanos() > 0);
    SystemTime::UNIX_EPOCH + Duration::from_secs(whole)
}

fn rfc3339(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_equal_only_when_every_byte_is() {
        let a = digest("a token");
        assert!(same_digest(&a, &a));
        for i in 0..32 {
            let mut b = a;
            b[i] ^= 0x01;
            assert!(!same_digest(&a, &b), "byte {i}");
        }
        assert!(!same_digest(&a, &digest("another token")));
    }

    fn fresh(dir: &Path, admin: Option<&str>) -> (Arc<SecretStore>, PathBuf, TokenRegistry) {
        let store = Arc::new(SecretStore::file_only(dir.join("secrets.json")));
        let file = dir.join("tokens.json");
        let reg = TokenRegistry::open(
            Arc::clone(&store),
            file.clone(),
            None,
            admin.map(String::from),
        )
        .expect("open");
        (store, file, reg)
    }

    #[test]
    fn created_tokens_authenticate_until_revoked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (_store, file, reg) = fresh(dir.path(), Some("adm"));
        assert_eq!(reg.authenticate("adm").map(|t| t.1), Some(Scope::Admin));
        assert_eq!(
            reg.authenticate(&reg.client_token()).map(|t| t.1),
            Some(Scope::Client)
        );
        let t = reg.create("ehr", Scope::Client, None).expect("create");
        assert!(reg.authenticate(&t.token).is_some());
        let text = std::fs::read_to_string(&file).expect("read");
        assert!(!text.contains(&t.token), "registry must not hold the token");
        assert!(!text.contains(&reg.client_token()));
        reg.revoke(&t.id).expect("revoke");
        assert!(reg.authenticate(&t.token).is_none());
        assert!(reg.authenticate("nope").is_none());
        assert!(matches!(reg.revoke(&t.id), Err(SecretsError::NoSuchToken)));
    }

    #[test]
    fn a_rotation_by_another_process_is_seen_by_refresh() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, file, reg) = fresh(dir.path(), None);
        let old_client = reg.client_token();
        let old_admin = reg.admin_token();
        assert!(!reg.refresh().expect("refresh"), "nothing changed yet");

        // Another process: its own store handle on the same file.
        let other = SecretStore::file_only(dir.path().join("secrets.json"));
        let new_client = rotate(&other, &file, Primary::Client).expect("rotate");
        // Before the refresh the snapshot in use still answers (no I/O on requests).
        assert!(reg.authenticate(&old_client).is_some());
        assert!(reg.refresh().expect("refresh"));
        assert_eq!(reg.client_token(), new_client);
        assert!(reg.authenticate(&old_client).is_none(), "old token refused");
        assert_eq!(
            reg.authenticate(&new_client),
            Some((PRIMARY_CLIENT_ID.into(), Scope::Client))
        );
        assert_eq!(reg.admin_token(), old_admin, "admin untouched");

        let new_admin = rotate(&store, &file, Primary::Admin).expect("rotate admin");
        assert!(reg.refresh().expect("refresh"));
        assert!(reg.authenticate(&old_admin).is_none());
        assert_eq!(
            reg.authenticate(&new_admin).map(|t| t.1),
            Some(Scope::Admin)
        );
        assert!(!reg.refresh().expect("refresh"), "settled");
    }

    #[test]
    fn tokens_created_elsewhere_are_seen_and_kept_by_local_writes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, file, a) = fresh(dir.path(), None);
        let b = TokenRegistry::open(Arc::clone(&store), file.clone(), None, None).expect("b");
        assert_eq!(a.client_token(), b.client_token(), "one home, one token");
        let t = b
            .create("script", Scope::Client, None)
            .expect("create in b");
        assert!(a.authenticate(&t.token).is_none(), "not yet refreshed");
        // A write in `a` re-reads the file under the lock: b's token survives it.
        let u = a.create("other", Scope::Admin, None).expect("create in a");
        assert!(a.authenticate(&t.token).is_some());
        assert!(b.refresh().expect("refresh b"));
        assert_eq!(b.authenticate(&u.token).map(|t| t.1), Some(Scope::Admin));
        a.revoke(&t.id).expect("revoke in a");
        b.refresh().expect("refresh b");
        assert!(b.authenticate(&t.token).is_none());
    }

    #[test]
    fn revoking_the_primary_client_token_replaces_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, file, reg) = fresh(dir.path(), None);
        let old = reg.client_token();
        let listed = reg.list();
        assert_eq!(listed[0].id, PRIMARY_CLIENT_ID);
        assert!(listed[0].primary);
        assert_eq!(listed[0].prefix, old.chars().take(7).collect::<String>());
        assert!(listed[0].created_at.is_some());
        reg.revoke(PRIMARY_CLIENT_ID).expect("revoke primary");
        let new = reg.client_token();
        assert_ne!(old, new);
        assert!(reg.authenticate(&old).is_none());
        assert!(reg.authenticate(&new).is_some());
        assert_eq!(
            store.get("client-token").expect("get").as_deref(),
            Some(&*new)
        );
        // Another registry on the same home picks it up.
        let other = TokenRegistry::open(store, file, None, None).expect("other");
        assert_eq!(other.client_token(), new);
    }

    #[test]
    fn a_pinned_primary_is_not_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Arc::new(SecretStore::file_only(dir.path().join("secrets.json")));
        let file = dir.path().join("tokens.json");
        let reg = TokenRegistry::open(
            Arc::clone(&store),
            file.clone(),
            Some("pinned-client-token".into()),
            None,
        )
        .expect("open");
        assert!(matches!(
            reg.revoke(PRIMARY_CLIENT_ID),
            Err(SecretsError::Pinned { .. })
        ));
        rotate(&store, &file, Primary::Client).expect("rotate the stored one");
        reg.refresh().expect("refresh");
        assert_eq!(reg.client_token(), "pinned-client-token");
        let listed = reg.list();
        assert_eq!(listed[0].prefix.chars().count(), 4, "a quarter of 19 chars");
        assert_eq!(listed[0].created_at, None);
    }

    #[test]
    fn a_legacy_array_file_is_read_and_a_broken_file_keeps_the_snapshot() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (_store, file, reg) = fresh(dir.path(), None);
        let t = reg.create("x", Scope::Client, None).expect("create");
        let current: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json");
        std::fs::write(&file, serde_json::to_vec(&current["tokens"]).expect("ser")).expect("w");
        assert!(reg.refresh().expect("legacy parses"));
        assert!(reg.authenticate(&t.token).is_some());

        let client = reg.client_token();
        std::fs::write(&file, b"{not json").expect("w");
        assert!(reg.refresh().is_err());
        assert!(reg.authenticate(&client).is_some(), "snapshot kept");
        assert!(reg.authenticate(&t.token).is_some());
    }

    #[test]
    fn a_token_expires_at_its_time_and_is_listed_as_expired() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (_store, file, reg) = fresh(dir.path(), None);
        let t = reg
            .create(
                "batch",
                Scope::Client,
                Some(Duration::from_secs(30 * 86_400)),
            )
            .expect("create");
        let forever = reg.create("ehr", Scope::Client, None).expect("create");
        let at = t.expires_at.clone().expect("an expiry");
        let expiry = SystemTime::from(chrono::DateTime::parse_from_rfc3339(&at).expect("rfc3339"));
        let now = SystemTime::now();
        let days = expiry
            .duration_since(now)
            .expect("in the future")
            .as_secs_f64()
            / 86_400.0;
        assert!((29.99..=30.01).contains(&days), "{days} days");
        assert!(std::fs::read_to_string(&file).expect("read").contains(&at));

        let just_before = expiry - Duration::from_millis(1);
        assert_eq!(
            reg.authenticate_at(&t.token, just_before),
            Some((t.id.as_str().into(), Scope::Client))
        );
        assert_eq!(
            reg.authenticate_at(&t.token, expiry),
            None,
            "expired at its time"
        );
        let later = expiry + Duration::from_secs(86_400 * 365);
        assert!(reg.authenticate_at(&forever.token, later).is_some());
        assert!(reg.authenticate_at(&reg.client_token(), later).is_some());

        let listed = |now| {
            reg.list_at(now)
                .into_iter()
                .find(|i| i.id == t.id)
                .expect("listed")
        };
        assert!(!listed(just_before).expired);
        let info = listed(expiry);
        assert!(info.expired);
        assert_eq!(info.expires_at.as_deref(), Some(&*at));
        let json = serde_json::to_value(reg.list()).expect("ser");
        assert_eq!(json[0]["expires_at"], serde_json::Value::Null);
        assert_eq!(json[0]["expired"], false);
    }

    #[test]
    fn an_expiry_is_whole_seconds_never_early_and_a_broken_one_is_passed() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_millis(10_250);
        assert_eq!(
            expiry_after(t0, Duration::from_secs(1)),
            SystemTime::UNIX_EPOCH + Duration::from_secs(12)
        );
        let whole = SystemTime::UNIX_EPOCH + Duration::from_secs(10);
        assert_eq!(
            expiry_after(whole, Duration::from_secs(5)),
            SystemTime::UNIX_EPOCH + Duration::from_secs(15)
        );
        let e = Entry {
            id: "tok_x".into(),
            label: String::new(),
            scope: Scope::Client,
            created_at: String::new(),
            prefix: String::new(),
            digest: [0; 32],
            expires_at: Some("not a time".into()),
        };
        assert!(e.expired(SystemTime::UNIX_EPOCH));
    }

    #[test]
    fn listings_carry_no_digest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (_store, _file, reg) = fresh(dir.path(), None);
        reg.create("x", Scope::Client, None).expect("create");
        let json = serde_json::to_string(&reg.list()).expect("ser");
        assert!(!json.contains("digest"));
        assert!(!json.contains(&hex::encode(digest(&reg.client_token()))));
    }

    #[tokio::test]
    async fn the_background_refresh_applies_a_rotation_and_ends_with_the_registry() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, file, reg) = fresh(dir.path(), None);
        let reg = Arc::new(reg);
        let task = spawn_refresh(&reg, Duration::from_millis(20));
        let new = rotate(&store, &file, Primary::Client).expect("rotate");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while reg.client_token() != new {
            assert!(
                tokio::time::Instant::now() < deadline,
                "refresh did not apply"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        drop(reg);
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("task ends once the registry is gone")
            .expect("join");
    }
}
