//! phiguard desktop shell: hosts the embedded phiguard server in-process, shows its health in a
//! tray icon, and opens the dashboard (`ui/`) in a window.
//!
//! Why a thin shell: every behaviour a user can observe over HTTP lives in the `phiguard`
//! library and is tested there; this crate only owns what needs a desktop: the tray, the window,
//! single-instance, start at login, the clipboard, and the server's start/stop/drain around the
//! app's own lifecycle ([`lifecycle`]). [`configure`] registers the state and commands on any
//! Tauri runtime, so the command and lifecycle tests run on Tauri's mock runtime without a
//! display.

mod commands;
mod error;
mod lifecycle;
mod tray;
mod window;

use phiguard::settings::Home;
use tauri::{Manager, RunEvent, Runtime};
use tauri_plugin_autostart::{MacosLauncher, ManagerExt as _};

pub use error::{Problem, Result, ShellError};
pub use lifecycle::{Bootstrap, Light, Service, ServiceState, ServiceView};
pub use window::Tab;

/// Command-line options of the desktop app.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `--dashboard`: open the dashboard window at start (it also opens on a first start).
    pub open_dashboard: bool,
    /// `--tab NAME` (or `--tab=NAME`): open the dashboard on that tab (`playground`, `logs`,
    /// …); implies `--dashboard`. An unknown name opens the first tab.
    pub tab: Option<Tab>,
}

impl Options {
    /// Reads the options from the arguments after the program name; unknown ones are ignored
    /// (the autostart entry and the OS may add their own).
    pub fn from_args<I: IntoIterator<Item = String>>(args: I) -> Self {
        let args: Vec<String> = args.into_iter().collect();
        let tab_name = args.iter().enumerate().find_map(|(i, a)| {
            a.strip_prefix("--tab=")
                .map(str::to_owned)
                .or_else(|| (a == "--tab").then(|| args.get(i + 1).cloned().unwrap_or_default()))
        });
        Options {
            open_dashboard: tab_name.is_some() || args.iter().any(|a| a == "--dashboard"),
            tab: tab_name.as_deref().and_then(Tab::from_name),
        }
    }
}

/// Registers the service state and the dashboard's commands on a builder.
pub fn configure<R: Runtime>(builder: tauri::Builder<R>, service: Service) -> tauri::Builder<R> {
    builder
        .manage(service)
        .invoke_handler(tauri::generate_handler![
            commands::dashboard_bootstrap,
            commands::service_status,
            commands::service_start,
            commands::service_stop,
            commands::copy_api_token,
        ])
}

/// Runs the desktop app until the user quits.
///
/// # Errors
/// [`ShellError::Tauri`] when the app cannot be built (no display, broken config),
/// [`ShellError::Marker`] when the home directory is not writable.
pub fn run(options: Options) -> Result<()> {
    let home = Home::from_env();
    let open_at_start = lifecycle::take_first_start(&home)? || options.open_dashboard;
    let tab = options.tab;
    let builder = tauri::Builder::default()
        // First plugin, so a second launch is stopped before anything else happens.
        // A second launch opens the first one's dashboard, on the tab its `--tab` names.
        .plugin(tauri_plugin_single_instance::init(|app, args, _cwd| {
            if let Err(e) = window::open_dashboard(app, Options::from_args(args).tab) {
                tracing::warn!(error = %e, "cannot open the dashboard for a second launch");
            }
        }))
        .plugin(tauri_plugin_autostart::init(
            MacosLauncher::LaunchAgent,
            None,
        ))
        .plugin(tauri_plugin_clipboard_manager::init());
    let app = configure(builder, Service::new(home))
        .setup(move |app| {
            // The bundled model ships as a resource of the desktop bundle (tauri.conf.json),
            // wherever the OS put the app; the server finds it there before any other place.
            if let Ok(resources) = app.path().resource_dir() {
                phiguard::models::bundle::use_dir(resources.join("models/phiguard-deid"));
            }
            let handle = app.handle().clone();
            let autostart = app.autolaunch().is_enabled().unwrap_or(false);
            let view = tauri::async_runtime::block_on(app.state::<Service>().view());
            app.manage(tray::Tray::build(&handle, &view, autostart)?);
            start_in_background(handle.clone());
            tray::spawn_refresher(handle.clone());
            if open_at_start {
                window::open_dashboard(&handle, tab)?;
            }
            Ok(())
        })
        .build(tauri::generate_context!())?;
    app.run(|app, event| match event {
        // Closing the last window keeps the tray app (and the service) running; Quit exits.
        RunEvent::ExitRequested {
            code: None, api, ..
        } => api.prevent_exit(),
        RunEvent::Exit => tauri::async_runtime::block_on(app.state::<Service>().stop()),
        _ => {}
    });
    Ok(())
}

/// Starts the server without holding up the window; a failure (port in use, bad setting) is
/// kept by the service and shown by the tray and the dashboard.
fn start_in_background<R: Runtime>(app: tauri::AppHandle<R>) {
    tauri::async_runtime::spawn(async move {
        let _ = app.state::<Service>().start().await;
        commands::notify_changed(&app).await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use phiguard::settings::Settings;
    use serde_json::Value;
    use tauri::test::{mock_builder, mock_context, noop_assets, MockRuntime, INVOKE_KEY};
    use tauri::webview::InvokeRequest;
    use tauri::WebviewWindowBuilder;

    const ADMIN: &str = "test-admin-token-0123456789";
    const CLIENT: &str = "test-client-token-0123456789";

    /// A service on a fresh home whose environment is injected: port `port`, known tokens.
    fn service(home: &std::path::Path, port: u16) -> Service {
        let port = port.to_string();
        Service::with_settings(Home::at(home), move |home| {
            Settings::load_from(home, |key| match key {
                "PHIGUARD_PORT" => Some(port.clone()),
                "PHIGUARD_ADMIN_TOKEN" => Some(ADMIN.to_owned()),
                "PHIGUARD_AUTH_TOKEN" => Some(CLIENT.to_owned()),
                _ => None,
            })
        })
    }

    fn app(service: Service) -> (tauri::App<MockRuntime>, tauri::WebviewWindow<MockRuntime>) {
        let app = configure(mock_builder(), service)
            .build(mock_context(noop_assets()))
            .expect("mock app builds");
        let webview = WebviewWindowBuilder::new(&app, window::DASHBOARD, Default::default())
            .build()
            .expect("mock window builds");
        (app, webview)
    }

    fn invoke(webview: &tauri::WebviewWindow<MockRuntime>, cmd: &str) -> Result<Value, Value> {
        tauri::test::get_ipc_response(
            webview,
            InvokeRequest {
                cmd: cmd.into(),
                callback: tauri::ipc::CallbackFn(0),
                error: tauri::ipc::CallbackFn(1),
                url: "tauri://localhost".parse().expect("url"),
                body: tauri::ipc::InvokeBody::default(),
                headers: Default::default(),
                invoke_key: INVOKE_KEY.to_string(),
            },
        )
        .map(|body| body.deserialize::<Value>().expect("json response"))
    }

    #[test]
    fn options_read_dashboard_flag() {
        assert!(Options::from_args(["--dashboard".to_owned()]).open_dashboard);
        assert!(!Options::from_args(["--minimized".to_owned()]).open_dashboard);
    }

    #[test]
    fn options_read_the_tab_to_open() {
        let args = |a: &[&str]| Options::from_args(a.iter().map(|s| s.to_string()));
        assert_eq!(args(&["--tab", "logs"]).tab, Some(Tab::Logs));
        assert_eq!(args(&["--tab=playground"]).tab, Some(Tab::Playground));
        assert!(args(&["--tab=playground"]).open_dashboard);
        let unknown = args(&["--tab", "nope"]);
        assert_eq!((unknown.tab, unknown.open_dashboard), (None, true));
        assert_eq!(args(&["--dashboard"]).tab, None);
        assert_eq!(Tab::Logs.anchor(), "#logs");
    }

    #[test]
    fn commands_follow_the_lifecycle() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (_app, webview) = app(service(dir.path(), 0));

        // Stopped: bootstrap says why, the view is red.
        let err = invoke(&webview, "dashboard_bootstrap").expect_err("stopped");
        assert_eq!(err["kind"], "not_running");
        let view = invoke(&webview, "service_status").expect("status");
        assert_eq!(view["state"], "stopped");
        assert_eq!(view["light"], "red");

        // Start: the dashboard gets a loopback API base and the admin token.
        let view = invoke(&webview, "service_start").expect("start");
        assert_eq!(view["state"], "running");
        let boot = invoke(&webview, "dashboard_bootstrap").expect("bootstrap");
        let base = boot["api_base"].as_str().expect("api_base");
        assert!(base.starts_with("http://127.0.0.1:"), "{base}");
        assert!(!base.ends_with(":0"), "a real port was bound: {base}");
        assert_eq!(boot["admin_token"], ADMIN);
        assert_eq!(
            view["address"].as_str().map(|a| base.ends_with(a)),
            Some(true)
        );

        // Starting again is a no-op on the same address.
        let again = invoke(&webview, "service_start").expect("start again");
        assert_eq!(again["address"], view["address"]);

        // Stop drains and frees the port: the same address can be bound again.
        let stopped = invoke(&webview, "service_stop").expect("stop");
        assert_eq!(stopped["state"], "stopped");
        let addr = view["address"].as_str().expect("address").to_owned();
        std::net::TcpListener::bind(&addr).expect("port freed after stop");
    }

    #[test]
    fn a_taken_port_is_reported_not_swallowed() {
        let holder = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = holder.local_addr().expect("addr").port();
        let dir = tempfile::tempdir().expect("tempdir");
        let (app, webview) = app(service(dir.path(), port));

        let err = invoke(&webview, "service_start").expect_err("port taken");
        assert_eq!(err["kind"], "port_in_use");
        let view = invoke(&webview, "service_status").expect("status");
        assert_eq!(view["state"], "failed");
        assert_eq!(view["light"], "red");
        assert_eq!(view["problem"]["kind"], "port_in_use");
        // The window learns the same reason from bootstrap.
        let err = invoke(&webview, "dashboard_bootstrap").expect_err("not serving");
        assert_eq!(err["kind"], "port_in_use");
        // And the tray menu says it.
        let view = tauri::async_runtime::block_on(app.state::<Service>().view());
        let texts = tray::menu_texts(&view);
        assert!(texts.service.contains("port in use"), "{}", texts.service);
        drop(holder);
    }
}
