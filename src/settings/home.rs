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

/// Writes `bytes` to `path` atomically with mode 0600, creating parents.
///
/// # Why a random temporary and not `.<name>.tmp<pid>`
/// The secrets file, the token registry and `settings.toml` are written through this one
/// function. A predictable temporary name opened with `O_CREAT|O_TRUNC` lets anyone who can
/// write to the folder plant a symlink there first, and the secret is then written through
/// it to a file of their choosing (or into a file they can read). So the temporary is made by
/// `tempfile`: a random name, created with `O_CREAT|O_EXCL` (which never follows a symlink,
/// dangling or not) and mode 0600 from the first instant, written, fsynced and renamed over
/// the target. `rename` replaces a symlink at the target rather than writing through it, but
/// a symlink there is refused anyway: it means someone redirected the file, and silently
/// replacing it would hide that.
///
/// # Errors
/// Any I/O error; [`std::io::ErrorKind::InvalidInput`] when `path` is a symbolic link.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "refusing to write a private file through a symbolic link",
        ));
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    // The rename itself is durable only once the folder is synced (where that is possible).
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(path)
                .map(|m| m.permissions().mode() & 0o777)
                .unwrap_or(0)
        }
        #[cfg(not(unix))]
        {
            let _ = path;
            0o600
        }
    }

    #[test]
    fn writes_replace_the_file_with_mode_0600_and_leave_no_temporary() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("a/secrets.json");
        write_private(&path, b"one")?;
        write_private(&path, b"two")?;
        assert_eq!(std::fs::read(&path)?, b"two");
        assert_eq!(mode(&path), 0o600);
        let names: Vec<_> = std::fs::read_dir(dir.path().join("a"))?
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("secrets.json")]);
        Ok(())
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_planted_at_the_old_temporary_name_is_not_followed() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"untouched")?;
        let path = dir.path().join("secrets.json");
        // The name the previous implementation used, predictable from the pid.
        let old_tmp = dir
            .path()
            .join(format!(".secrets.json.tmp{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &old_tmp)?;
        write_private(&path, b"secret")?;
        assert_eq!(std::fs::read(&victim)?, b"untouched");
        assert_eq!(std::fs::read(&path)?, b"secret");
        assert!(std::fs::symlink_metadata(&path)?.file_type().is_file());
        Ok(())
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_at_the_target_is_refused() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"untouched")?;
        let path = dir.path().join("secrets.json");
        std::os::unix::fs::symlink(&victim, &path)?;
        let err = write_private(&path, b"secret").expect_err("a symlink target is refused");
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
        assert_eq!(std::fs::read(&victim)?, b"untouched");
        assert!(std::fs::symlink_metadata(&path)?.file_type().is_symlink());
        // A dangling link is refused the same way (nothing is created at its destination).
        let dangling = dir.path().join("tokens.json");
        let nowhere = dir.path().join("nowhere");
        std::os::unix::fs::symlink(&nowhere, &dangling)?;
        assert!(write_private(&dangling, b"secret").is_err());
        assert!(!nowhere.exists());
        Ok(())
    }
}
