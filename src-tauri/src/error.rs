//! `ShellError`: every way a shell command or a lifecycle step can fail, and its IPC form.
//!
//! The core's errors are wrapped transparently so their messages (which name the offending
//! variable and rule, never patient data) reach the dashboard unchanged. Commands return
//! `Result<T, ShellError>`; Tauri serialises the error for the webview as
//! `{"kind": "...", "message": "..."}`, where `kind` is a stable machine-readable tag the
//! dashboard can branch on (for example `port_in_use`).

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// The result type of the shell's fallible operations.
pub type Result<T, E = ShellError> = std::result::Result<T, E>;

/// Errors of the desktop shell.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    /// Returned when the settings (env, `settings.toml`) do not validate at start-up.
    #[error(transparent)]
    Settings(#[from] phiguard::settings::SettingsError),
    /// Returned when the embedded server fails to start for any reason but a taken port.
    #[error(transparent)]
    Server(#[from] phiguard::server::ServerError),
    /// Returned when the server's address is held by another process
    /// ([`ServerError::is_addr_in_use`](phiguard::server::ServerError::is_addr_in_use)).
    #[error("{source}")]
    PortInUse {
        /// The server's bind error.
        source: phiguard::server::ServerError,
    },
    /// Returned when a command needs the embedded server and it is stopped.
    #[error("the service is stopped")]
    NotRunning,
    /// Returned when the service failed to start earlier and has not been started again;
    /// carries the kind and message of that failure.
    #[error("{}", .0.message)]
    StartFailed(Problem),
    /// Returned when a Tauri window, tray or menu operation fails.
    #[error(transparent)]
    Tauri(#[from] tauri::Error),
    /// Returned when Start at login cannot be read or changed.
    #[error(transparent)]
    Autostart(#[from] tauri_plugin_autostart::Error),
    /// Returned when the system clipboard refuses the API token.
    #[error(transparent)]
    Clipboard(#[from] tauri_plugin_clipboard_manager::Error),
    /// Returned when the first-start marker under PHIGUARD_HOME cannot be written.
    #[error("cannot write the first-start marker: {0}")]
    Marker(#[source] std::io::Error),
}

/// A failure kept after the fact (the error itself is not `Clone`): what the tray menu and the
/// dashboard banner show until the service is started again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The failure's [`ShellError::kind`].
    pub kind: &'static str,
    /// The failure's message.
    pub message: String,
}

impl From<&ShellError> for Problem {
    fn from(e: &ShellError) -> Self {
        Problem {
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

impl ShellError {
    /// A stable tag for the dashboard: `port_in_use`, `not_running`, `settings`, ….
    pub fn kind(&self) -> &'static str {
        match self {
            ShellError::PortInUse { .. } => "port_in_use",
            ShellError::Server(_) => "server",
            ShellError::Settings(_) => "settings",
            ShellError::NotRunning => "not_running",
            ShellError::StartFailed(p) => p.kind,
            ShellError::Tauri(_) => "tauri",
            ShellError::Autostart(_) => "autostart",
            ShellError::Clipboard(_) => "clipboard",
            ShellError::Marker(_) => "io",
        }
    }
}

impl Serialize for ShellError {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("ShellError", 2)?;
        s.serialize_field("kind", self.kind())?;
        s.serialize_field("message", &self.to_string())?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_kind_and_lowercase_message() -> Result<(), serde_json::Error> {
        let v = serde_json::to_value(ShellError::NotRunning)?;
        assert_eq!(v["kind"], "not_running");
        assert_eq!(v["message"], "the service is stopped");
        Ok(())
    }
}
