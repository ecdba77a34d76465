//! The tray icon and its menu: a light that says at a glance whether the service is healthy,
//! and the few actions a clinician needs without opening a window.
//!
//! Why the menu is rendered from a [`ServiceView`] by a pure function: the view is the one
//! truth (derived from the server's `Status::tray()` and breaker list); [`menu_texts`] turns it
//! into strings and is unit-tested without a display, and [`Tray::apply`] only pushes those
//! strings and the matching icon into the platform tray. A refresher re-derives the view once a
//! second and touches the tray only when something changed.

use std::time::Duration;

use tauri::image::Image;
use tauri::menu::{CheckMenuItem, Menu, MenuEvent, MenuItem, PredefinedMenuItem};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tauri_plugin_autostart::ManagerExt as _;
use tauri_plugin_clipboard_manager::ClipboardExt as _;

use crate::error::Result;
use crate::lifecycle::{Light, Service, ServiceState, ServiceView};

const TRAY_ID: &str = "phiguard";
/// Menu item ids (also what `on_menu_event` matches on).
pub(crate) const ITEM_SERVICE: &str = "service";
pub(crate) const ITEM_BREAKERS: &str = "breakers";
pub(crate) const ITEM_DASHBOARD: &str = "dashboard";
pub(crate) const ITEM_PLAYGROUND: &str = "playground";
pub(crate) const ITEM_LOGS: &str = "logs";
pub(crate) const ITEM_COPY_TOKEN: &str = "copy_token";
pub(crate) const ITEM_AUTOSTART: &str = "autostart";
pub(crate) const ITEM_QUIT: &str = "quit";

/// The event the dashboard listens to: the service started, stopped or moved address.
pub(crate) const SERVICE_CHANGED: &str = "service-changed";

const MAX_PROBLEM_CHARS: usize = 60;

/// The strings and state the tray shows for one [`ServiceView`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MenuTexts {
    pub(crate) service: String,
    pub(crate) service_checked: bool,
    pub(crate) breakers: String,
    pub(crate) tooltip: String,
    pub(crate) light: Light,
}

/// Renders a view into menu strings.
pub(crate) fn menu_texts(view: &ServiceView) -> MenuTexts {
    let (service, tooltip) = match (&view.state, &view.address, &view.problem) {
        (ServiceState::Running, Some(addr), _) => (
            format!("Service on — {addr}"),
            format!("phiguard: serving on {addr}; {}", view.breakers),
        ),
        (ServiceState::Failed, _, Some(p)) => {
            let short = shorten(&p.message, MAX_PROBLEM_CHARS);
            let headline = if p.kind == "port_in_use" {
                "port in use".to_owned()
            } else {
                "failed to start".to_owned()
            };
            (
                format!("Service off — {headline}: {short}"),
                format!("phiguard: off ({headline})"),
            )
        }
        _ => ("Service off".to_owned(), "phiguard: off".to_owned()),
    };
    MenuTexts {
        service,
        service_checked: view.state == ServiceState::Running,
        breakers: capitalise(&view.breakers),
        tooltip,
        light: view.light,
    }
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn capitalise(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The PNG of a light, embedded at build time.
pub(crate) fn icon_bytes(light: Light) -> &'static [u8] {
    match light {
        Light::Green => include_bytes!("../icons/tray-green.png"),
        Light::Amber => include_bytes!("../icons/tray-amber.png"),
        Light::Red => include_bytes!("../icons/tray-red.png"),
    }
}

/// Handles to the parts of the tray that change (managed Tauri state).
pub(crate) struct Tray<R: Runtime> {
    icon: TrayIcon<R>,
    service: CheckMenuItem<R>,
    breakers: MenuItem<R>,
    autostart: CheckMenuItem<R>,
}

impl<R: Runtime> Tray<R> {
    /// Builds the tray icon and menu for `view`.
    ///
    /// # Errors
    /// [`crate::ShellError::Tauri`] when the platform refuses the tray or the menu.
    pub(crate) fn build(app: &AppHandle<R>, view: &ServiceView, autostart: bool) -> Result<Self> {
        let texts = menu_texts(view);
        let service = CheckMenuItem::with_id(
            app,
            ITEM_SERVICE,
            &texts.service,
            true,
            texts.service_checked,
            None::<&str>,
        )?;
        let breakers = MenuItem::with_id(app, ITEM_BREAKERS, &texts.breakers, false, None::<&str>)?;
        let dashboard =
            MenuItem::with_id(app, ITEM_DASHBOARD, "Open dashboard", true, None::<&str>)?;
        let playground =
            MenuItem::with_id(app, ITEM_PLAYGROUND, "Open playground", true, None::<&str>)?;
        let logs = MenuItem::with_id(app, ITEM_LOGS, "View logs", true, None::<&str>)?;
        let copy = MenuItem::with_id(app, ITEM_COPY_TOKEN, "Copy API token", true, None::<&str>)?;
        let autostart_item = CheckMenuItem::with_id(
            app,
            ITEM_AUTOSTART,
            "Start at login",
            true,
            autostart,
            None::<&str>,
        )?;
        let quit = MenuItem::with_id(app, ITEM_QUIT, "Quit phiguard", true, None::<&str>)?;
        let menu = Menu::with_items(
            app,
            &[
                &service,
                &breakers,
                &PredefinedMenuItem::separator(app)?,
                &dashboard,
                &playground,
                &logs,
                &copy,
                &autostart_item,
                &PredefinedMenuItem::separator(app)?,
                &quit,
            ],
        )?;
        let icon = TrayIconBuilder::with_id(TRAY_ID)
            .icon(Image::from_bytes(icon_bytes(texts.light))?)
            .tooltip(&texts.tooltip)
            .menu(&menu)
            .show_menu_on_left_click(true)
            .on_menu_event(on_menu_event::<R>)
            .build(app)?;
        Ok(Tray {
            icon,
            service,
            breakers,
            autostart: autostart_item,
        })
    }

    /// Pushes `texts` into the tray.
    ///
    /// # Errors
    /// [`crate::ShellError::Tauri`] when the platform refuses an update.
    pub(crate) fn apply(&self, texts: &MenuTexts) -> Result<()> {
        self.icon
            .set_icon(Some(Image::from_bytes(icon_bytes(texts.light))?))?;
        self.icon.set_tooltip(Some(&texts.tooltip))?;
        self.service.set_text(&texts.service)?;
        self.service.set_checked(texts.service_checked)?;
        self.breakers.set_text(&texts.breakers)?;
        Ok(())
    }
}

fn on_menu_event<R: Runtime>(app: &AppHandle<R>, event: MenuEvent) {
    let app = app.clone();
    match event.id().as_ref() {
        ITEM_SERVICE => {
            tauri::async_runtime::spawn(async move {
                let service = app.state::<Service>();
                if let Err(e) = service.toggle().await {
                    tracing::warn!(kind = e.kind(), "service toggle failed");
                }
                refresh(&app).await;
                if let Err(e) = app.emit(SERVICE_CHANGED, ()) {
                    tracing::warn!(error = %e, "cannot notify the dashboard");
                }
            });
        }
        ITEM_DASHBOARD | ITEM_PLAYGROUND | ITEM_LOGS => {
            let tab = match event.id().as_ref() {
                ITEM_PLAYGROUND => Some(crate::window::Tab::Playground),
                ITEM_LOGS => Some(crate::window::Tab::Logs),
                _ => None,
            };
            if let Err(e) = crate::window::open_dashboard(&app, tab) {
                tracing::warn!(error = %e, "cannot open the dashboard");
            }
        }
        ITEM_COPY_TOKEN => {
            tauri::async_runtime::spawn(async move {
                if let Err(e) = copy_client_token(&app).await {
                    tracing::warn!(kind = e.kind(), "copy api token failed");
                }
            });
        }
        ITEM_AUTOSTART => {
            if let Err(e) = toggle_autostart(&app) {
                tracing::warn!(kind = e.kind(), "start at login not changed");
            }
        }
        ITEM_QUIT => app.exit(0),
        _ => {}
    }
}

/// Copies the client token to the system clipboard.
///
/// # Errors
/// When the service is not running, or the clipboard refuses.
pub(crate) async fn copy_client_token<R: Runtime>(app: &AppHandle<R>) -> Result<()> {
    let token = app.state::<Service>().client_token().await?;
    app.clipboard().write_text(token)?;
    Ok(())
}

fn toggle_autostart<R: Runtime>(app: &AppHandle<R>) -> Result<()> {
    let launcher = app.autolaunch();
    if launcher.is_enabled()? {
        launcher.disable()?;
    } else {
        launcher.enable()?;
    }
    let enabled = launcher.is_enabled()?;
    if let Some(tray) = app.try_state::<Tray<R>>() {
        tray.autostart.set_checked(enabled)?;
    }
    Ok(())
}

/// Re-derives the view and pushes it into the tray now (after a menu action).
pub(crate) async fn refresh<R: Runtime>(app: &AppHandle<R>) -> MenuTexts {
    let texts = menu_texts(&app.state::<Service>().view().await);
    apply_if_installed(app, &texts);
    texts
}

fn apply_if_installed<R: Runtime>(app: &AppHandle<R>, texts: &MenuTexts) {
    if let Some(tray) = app.try_state::<Tray<R>>() {
        if let Err(e) = tray.apply(texts) {
            tracing::warn!(error = %e, "tray update failed");
        }
    }
}

/// Keeps the tray in step with the server: once a second, re-derive and apply on change.
pub(crate) fn spawn_refresher<R: Runtime>(app: AppHandle<R>) {
    tauri::async_runtime::spawn(async move {
        let mut last: Option<MenuTexts> = None;
        let mut every = tokio::time::interval(Duration::from_secs(1));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            every.tick().await;
            let texts = menu_texts(&app.state::<Service>().view().await);
            if last.as_ref() != Some(&texts) {
                apply_if_installed(&app, &texts);
                last = Some(texts);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Problem;

    fn view(state: ServiceState, light: Light) -> ServiceView {
        ServiceView {
            state,
            address: (state == ServiceState::Running).then(|| "127.0.0.1:8080".to_owned()),
            light,
            problem: None,
            breakers: "breakers: all 2 closed".to_owned(),
        }
    }

    #[test]
    fn running_shows_address_checked_and_its_light() {
        let t = menu_texts(&view(ServiceState::Running, Light::Amber));
        assert_eq!(t.service, "Service on — 127.0.0.1:8080");
        assert!(t.service_checked);
        assert_eq!(t.breakers, "Breakers: all 2 closed");
        assert_eq!(t.light, Light::Amber);
        assert!(t.tooltip.contains("127.0.0.1:8080"));
    }

    #[test]
    fn stopped_is_off_and_unchecked() {
        let t = menu_texts(&view(ServiceState::Stopped, Light::Red));
        assert_eq!(t.service, "Service off");
        assert!(!t.service_checked);
        assert_eq!(t.light, Light::Red);
    }

    #[test]
    fn port_in_use_is_said_in_the_menu() {
        let mut v = view(ServiceState::Failed, Light::Red);
        v.problem = Some(Problem {
            kind: "port_in_use",
            message: "cannot bind 127.0.0.1:8080: address already in use".to_owned(),
        });
        let t = menu_texts(&v);
        assert!(t
            .service
            .starts_with("Service off — port in use: cannot bind 127.0.0.1:8080"));
        assert!(!t.service_checked);
    }

    #[test]
    fn long_problems_are_shortened_on_a_char_boundary() {
        let long = "é".repeat(200);
        let s = shorten(&long, 10);
        assert_eq!(s.chars().count(), 10);
        assert!(s.ends_with('…'));
        assert_eq!(shorten("short", 10), "short");
    }

    #[test]
    fn every_light_has_a_png() {
        for light in [Light::Green, Light::Amber, Light::Red] {
            let bytes = icon_bytes(light);
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{light:?}");
        }
    }
}
