//! The dashboard window: one window, labelled `dashboard`, showing the bundled `ui/` files.
//!
//! Why bundled rather than loading the server's `/ui/`: the window must still open (and say
//! why) when the service is off or its port is taken; the page then asks the shell for the API
//! base and admin token through `dashboard_bootstrap`.

use tauri::{AppHandle, Manager, Runtime, WebviewUrl, WebviewWindowBuilder};

use crate::error::Result;

/// The label of the dashboard window (capabilities refer to it).
pub(crate) const DASHBOARD: &str = "dashboard";

/// A tab of the dashboard, to open it on (the tray's "Open playground" and "View logs", and
/// `--tab NAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    /// Tiles, charts and breakers.
    Status,
    /// Paste a note, see what would be removed.
    Playground,
    /// The settings form.
    Settings,
    /// Installed, loaded and downloadable models.
    Models,
    /// Tokens, trusted hosts, CORS origins.
    Access,
    /// The admin audit log.
    Audit,
    /// The service's log, live.
    Logs,
}

impl Tab {
    const ALL: [(Tab, &'static str); 7] = [
        (Tab::Status, "status"),
        (Tab::Playground, "playground"),
        (Tab::Settings, "settings"),
        (Tab::Models, "models"),
        (Tab::Access, "access"),
        (Tab::Audit, "audit"),
        (Tab::Logs, "logs"),
    ];

    /// The tab a name (`logs`) names.
    pub fn from_name(name: &str) -> Option<Tab> {
        Tab::ALL.iter().find(|(_, n)| *n == name).map(|(t, _)| *t)
    }

    /// The page's anchor for the tab (`#logs`): the dashboard selects the tab it names.
    pub(crate) fn anchor(self) -> String {
        let name = Tab::ALL
            .iter()
            .find(|(t, _)| *t == self)
            .map_or("status", |(_, n)| n);
        format!("#{name}")
    }
}

/// Shows and focuses the dashboard, creating it when it is not open, on `tab` when one is
/// given.
///
/// # Errors
/// [`crate::ShellError::Tauri`] when the window cannot be created, shown or told the tab.
pub(crate) fn open_dashboard<R: Runtime>(app: &AppHandle<R>, tab: Option<Tab>) -> Result<()> {
    if let Some(window) = app.get_webview_window(DASHBOARD) {
        if let Some(tab) = tab {
            // A fixed anchor, never data: the page's `hashchange` handler selects the tab.
            window.eval(format!("location.hash = '{}'", tab.anchor()))?;
        }
        window.unminimize()?;
        window.show()?;
        window.set_focus()?;
        return Ok(());
    }
    let mut builder =
        WebviewWindowBuilder::new(app, DASHBOARD, WebviewUrl::App("index.html".into()))
            .title("phiguard dashboard")
            .inner_size(1180.0, 820.0)
            .min_inner_size(720.0, 480.0);
    if let Some(tab) = tab {
        // Before the page's scripts run, so its start-up opens that tab.
        builder = builder.initialization_script(format!(
            "if (!location.hash) history.replaceState(null, '', '{}');",
            tab.anchor()
        ));
    }
    builder.build()?;
    Ok(())
}
