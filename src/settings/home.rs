//! Where phiguard keeps its files: `PHIGUARD_HOME` when set (config, data, models and the
//! fallback secret file all below it), else the platform's config and data directories.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The set of directories phiguard uses.
#[derive(Clone, Debug)]
pub struct Home {
    config: PathBuf,
    data: PathBuf,
}

impl Home {
    /// `PHIGUARD_HOME`, else the platform directories, else `./.phiguard`.
    pub fn from_env() -> Self {
        if let Some(root) = std::env::var_os("PHIGUARD_HOME").filter(|v| !v.is_empty()) {
            return Home::at(Path::new(&root));
        }
        match directories::ProjectDirs::from("org", "phiguard", "phiguard") {
            Some(p) => Home {
                config: p.config_dir().to_path_buf(),
                data: p.data_dir().to_path_buf(),
            },
            None => Home::at(Path::new(".phiguard")),
        }
    }

    /// Everything below one root directory.
    pub fn at(root: &Path) -> Self {
        Home {
            config: root.join("config"),
            data: root.join("data"),
        }
    }

    /// Directory of `settings.toml`.
    pub fn config_dir(&self) -> &Path {
        &self.config
    }

    /// `settings.toml`.
    pub fn settings_file(&self) -> PathBuf {
        self.config.join("settings.toml")
    }

    /// Directory for data: tokens registry, secrets fallback, models.
    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// The model store.
    pub fn models_dir(&self) -> PathBuf {
        self.data.join("models")
    }

    /// The 0600 secrets file used where no OS keychain answers.
    pub fn secrets_file(&self) -> PathBuf {
        self.data.join("secrets.json")
    }
}

/// Writes `bytes` to `path` atomically (temp file + rename) with mode 0600, creating parents.
///
/// # Errors
/// Any I/O error.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        std::process::id()
    ));
    {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut f = opts.open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}
