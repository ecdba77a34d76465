//! The dashboard window: one window, labelled `dashboard`, showing the bundled `ui/` files.
//!
//! Why bundled rather than loading the server's `/ui/`: the window must still open (and say
//! why) when the service is off or its port is taken; the page then asks the shell for the API
//! base and admin token through `dashboard_bootstrap`.

use tauri::{AppHandle, Manager, Runtime, WebviewUrl, WebviewWindowBuilder};

use crate::error::Result;

/// The label of the dashboard window (capabilities refer to it).
pub(crate) const DASHBOARD: &str = "dashboard";

/// Shows and focuses the dashboard, creating it when it is not open.
///
/// # Errors
/// [`crate::ShellError::Tauri`] when the window cannot be created or shown.
pub(crate) fn open_dashboard<R: Runtime>(app: &AppHandle<R>) -> Result<()> {
    if let Some(window) = app.get_webview_window(DASHBOARD) {
        window.unminimize()?;
        window.show()?;
        window.set_focus()?;
        return Ok(());
    }
    WebviewWindowBuilder::new(app, DASHBOARD, WebviewUrl::App("index.html".into()))
        .title("phiguard dashboard")
        .inner_size(1180.0, 820.0)
        .min_inner_size(720.0, 480.0)
        .build()?;
    Ok(())
}
