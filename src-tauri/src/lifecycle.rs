//! The embedded server's lifecycle inside the desktop app: start, stop, what it looks like now.
//!
//! Why one owner: the tray menu, the dashboard's commands and the quit path all start or stop
//! the same in-process `phiguard::server::Server`. [`Service`] keeps it behind one async mutex,
//! so a double click on "Service on" cannot bind twice and quitting waits for the drain. A
//! failed start is kept as a [`Problem`] (for example "address already in use") so the menu
//! and the window say why the service is off instead of failing silently.
//!
//! [`ServiceView`] is the whole state the tray renders, derived on demand from the server's own
//! typed `Status` (the struct `/admin/status` serialises, read by field, never by JSON key);
//! nothing is cached that could drift from it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;

use phiguard::server::{BreakerStateName, BreakerStatus, Server, StartOptions, TrayState};
use phiguard::settings::{Home, Settings, SettingsError};
use serde::Serialize;
use tokio::sync::Mutex;

use crate::error::{Problem, Result, ShellError};

/// The marker file whose absence in the home's data directory means "first start": the
/// dashboard then opens by itself.
const FIRST_START_MARKER: &str = "desktop-first-start";

/// Whether the embedded server runs, and if not, why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceState {
    /// Serving on [`ServiceView::address`].
    Running,
    /// Turned off from the menu (or not started yet).
    Stopped,
    /// The last start failed; [`ServiceView::problem`] says why.
    Failed,
}

/// The tray light: green serving, amber degraded or half-open or shedding, red stopped or open.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Light {
    /// Serving, every breaker closed.
    Green,
    /// A breaker half-open, degraded fallback active, or admission shedding load.
    Amber,
    /// Stopped, failed to start, or a breaker open.
    Red,
}

impl From<TrayState> for Light {
    fn from(t: TrayState) -> Self {
        match t {
            TrayState::Green => Light::Green,
            TrayState::Amber => Light::Amber,
            TrayState::Red => Light::Red,
        }
    }
}

/// Everything the tray menu and the `service_status` command show.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServiceView {
    /// Running, stopped or failed.
    pub state: ServiceState,
    /// The bound address while running (`127.0.0.1:8080`).
    pub address: Option<String>,
    /// The tray light.
    pub light: Light,
    /// Why the last start failed, when it did.
    pub problem: Option<Problem>,
    /// One line about the breakers: "all 2 breakers closed", "phiguard-deid open (12 s)", ….
    pub breakers: String,
}

/// What the dashboard needs to talk to the admin API: where, and with which token.
#[derive(Clone, Serialize)]
pub struct Bootstrap {
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub api_base: String,
    /// The admin token (scope admin) of the embedded server.
    pub admin_token: String,
}

impl std::fmt::Debug for Bootstrap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bootstrap")
            .field("api_base", &self.api_base)
            .field("admin_token", &"<redacted>")
            .finish()
    }
}

enum Slot {
    Stopped,
    Running(Server),
    Failed(Problem),
}

/// How the settings are read at each start: `Settings::load` (env > file > default) in the app,
/// an injected environment in tests.
type LoadSettings =
    Box<dyn Fn(&Home) -> std::result::Result<Settings, SettingsError> + Send + Sync>;

/// Owner of the embedded server (managed Tauri state).
pub struct Service {
    home: Home,
    load: LoadSettings,
    slot: Mutex<Slot>,
}

impl Service {
    /// A stopped service that will use `home` for settings, tokens and models, reading the
    /// settings afresh (env > file > default) at every start.
    pub fn new(home: Home) -> Self {
        Self::with_settings(home, Settings::load)
    }

    /// As [`Service::new`], with the settings read by `load` (tests inject an environment).
    pub fn with_settings(
        home: Home,
        load: impl Fn(&Home) -> std::result::Result<Settings, SettingsError> + Send + Sync + 'static,
    ) -> Self {
        Service {
            home,
            load: Box::new(load),
            slot: Mutex::new(Slot::Stopped),
        }
    }

    /// The home this service uses.
    pub fn home(&self) -> &Home {
        &self.home
    }

    /// Loads the settings (env > file > default) and starts the server; returns its address.
    /// Starting a running service returns its address and changes nothing.
    ///
    /// # Errors
    /// [`ShellError::Settings`] when a setting is invalid, [`ShellError::Server`] when the server
    /// cannot start (its [`ShellError::kind`] is `port_in_use` when the address is taken). The
    /// failure is also kept for [`Service::view`].
    pub async fn start(&self) -> Result<SocketAddr> {
        let mut slot = self.slot.lock().await;
        if let Slot::Running(server) = &*slot {
            return Ok(server.local_addr());
        }
        match self.launch().await {
            Ok(server) => {
                let addr = server.local_addr();
                tracing::info!(%addr, "embedded server started");
                *slot = Slot::Running(server);
                Ok(addr)
            }
            Err(e) => {
                tracing::warn!(kind = e.kind(), error = %e, "embedded server did not start");
                *slot = Slot::Failed(Problem::from(&e));
                Err(e)
            }
        }
    }

    async fn launch(&self) -> Result<Server> {
        let settings = (self.load)(&self.home)?;
        let opts = StartOptions {
            desktop: true,
            ..StartOptions::default()
        };
        match Server::start_with(settings, self.home.clone(), opts).await {
            Ok(server) => Ok(server),
            Err(source) if source.is_addr_in_use() => Err(ShellError::PortInUse { source }),
            Err(e) => Err(e.into()),
        }
    }

    /// Stops the server, draining in-flight requests first. A stopped service stays stopped.
    pub async fn stop(&self) {
        let mut slot = self.slot.lock().await;
        if let Slot::Running(server) = std::mem::replace(&mut *slot, Slot::Stopped) {
            server.shutdown().await;
            tracing::info!("embedded server stopped");
        }
    }

    /// Starts a stopped (or failed) service, stops a running one.
    ///
    /// # Errors
    /// As [`Service::start`].
    pub async fn toggle(&self) -> Result<()> {
        if self.is_running().await {
            self.stop().await;
            Ok(())
        } else {
            self.start().await.map(|_| ())
        }
    }

    /// Whether the server runs now.
    pub async fn is_running(&self) -> bool {
        matches!(&*self.slot.lock().await, Slot::Running(_))
    }

    /// The current state as the tray shows it.
    pub async fn view(&self) -> ServiceView {
        match &*self.slot.lock().await {
            Slot::Running(server) => {
                let status = server.status();
                ServiceView {
                    state: ServiceState::Running,
                    address: Some(server.local_addr().to_string()),
                    light: Light::from(status.tray),
                    problem: None,
                    breakers: breaker_summary(&status.breakers),
                }
            }
            Slot::Stopped => ServiceView {
                state: ServiceState::Stopped,
                address: None,
                light: Light::Red,
                problem: None,
                breakers: "breakers: service stopped".to_owned(),
            },
            Slot::Failed(problem) => ServiceView {
                state: ServiceState::Failed,
                address: None,
                light: Light::Red,
                problem: Some(problem.clone()),
                breakers: "breakers: service not running".to_owned(),
            },
        }
    }

    /// The API base and admin token for the dashboard.
    ///
    /// # Errors
    /// [`ShellError::NotRunning`] when stopped; [`ShellError::StartFailed`] (with the original
    /// kind, e.g. `port_in_use`) when the last start failed.
    pub async fn bootstrap(&self) -> Result<Bootstrap> {
        match &*self.slot.lock().await {
            Slot::Running(server) => Ok(Bootstrap {
                api_base: api_base(server.local_addr()),
                admin_token: server.admin_token(),
            }),
            Slot::Stopped => Err(ShellError::NotRunning),
            Slot::Failed(problem) => Err(ShellError::StartFailed(problem.clone())),
        }
    }

    /// The client (inference) token, for "Copy API token".
    ///
    /// # Errors
    /// As [`Service::bootstrap`].
    pub async fn client_token(&self) -> Result<String> {
        match &*self.slot.lock().await {
            Slot::Running(server) => Ok(server.client_token()),
            Slot::Stopped => Err(ShellError::NotRunning),
            Slot::Failed(problem) => Err(ShellError::StartFailed(problem.clone())),
        }
    }
}

/// `http://ip:port` for a bound address; a wildcard bind is reached over loopback.
pub(crate) fn api_base(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("http://{}", SocketAddr::new(ip, addr.port()))
}

/// One line about the breakers of the server's `Status`: every breaker that is not closed is
/// named with its state (and seconds to half-open when open).
pub(crate) fn breaker_summary(breakers: &[BreakerStatus]) -> String {
    if breakers.is_empty() {
        return "breakers: no model loaded yet".to_owned();
    }
    let mut closed = 0usize;
    let mut others = Vec::new();
    for b in breakers {
        let key = &b.key;
        match b.state {
            BreakerStateName::Closed => closed += 1,
            BreakerStateName::Open => {
                others.push(format!("{key} open ({} s)", b.retry_after_seconds));
            }
            BreakerStateName::HalfOpen => others.push(format!("{key} half-open")),
            BreakerStateName::ForcedOpen => others.push(format!("{key} forced open")),
            BreakerStateName::Disabled => others.push(format!("{key} disabled")),
        }
    }
    match (closed, others.is_empty()) {
        (1, true) => "breakers: 1 closed".to_owned(),
        (n, true) => format!("breakers: all {n} closed"),
        (0, false) => format!("breakers: {}", others.join(", ")),
        (n, false) => format!("breakers: {}; {n} closed", others.join(", ")),
    }
}

/// Whether this is the first start with this home (a fresh PHIGUARD_HOME); records the start
/// in `home.data_dir()` so the next one is not.
///
/// # Errors
/// [`ShellError::Marker`] when the marker cannot be written.
pub(crate) fn take_first_start(home: &Home) -> Result<bool> {
    let dir = home.data_dir();
    let marker: PathBuf = dir.join(FIRST_START_MARKER);
    if marker.exists() {
        return Ok(false);
    }
    std::fs::create_dir_all(dir).map_err(ShellError::Marker)?;
    std::fs::write(
        &marker,
        b"the desktop app has started with this home before\n",
    )
    .map_err(ShellError::Marker)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_base_maps_wildcard_to_loopback() {
        let cases = [
            ("127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("0.0.0.0:9000", "http://127.0.0.1:9000"),
            ("[::]:9000", "http://[::1]:9000"),
            ("[::1]:80", "http://[::1]:80"),
        ];
        for (addr, want) in cases {
            let addr: SocketAddr = addr.parse().expect("test address");
            assert_eq!(api_base(addr), want, "{addr}");
        }
    }

    /// A breaker as the server reports it.
    fn breaker(key: &str, state: BreakerStateName, retry_after_seconds: u64) -> BreakerStatus {
        BreakerStatus {
            key: key.to_owned(),
            model_id: key.to_owned(),
            state,
            consecutive_failures: 0,
            retry_after_seconds,
            failure_rate: None,
        }
    }

    macro_rules! summary {
        ($($name:ident: [$(($key:literal, $state:ident $(, $secs:literal)?)),*] => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                let breakers = [$(breaker($key, BreakerStateName::$state, 0 $(+ $secs)?)),*];
                assert_eq!(breaker_summary(&breakers), $want);
            }
        )*};
    }

    summary! {
        summary_none: [] => "breakers: no model loaded yet";
        summary_one_closed: [("phiguard-deid", Closed)] => "breakers: 1 closed";
        summary_all_closed: [("a", Closed), ("b", Closed)] => "breakers: all 2 closed";
        summary_open_counts_down: [("phiguard-deid", Open, 12)] => "breakers: phiguard-deid open (12 s)";
        summary_mixed: [("a", HalfOpen), ("b", Closed), ("c", ForcedOpen), ("d", Disabled)]
            => "breakers: a half-open, c forced open, d disabled; 1 closed";
    }

    #[test]
    fn first_start_is_taken_once() -> Result<()> {
        let dir = tempfile::tempdir().map_err(ShellError::Marker)?;
        let home = Home::at(&dir.path().join("fresh-home"));
        assert!(take_first_start(&home)?);
        assert!(!take_first_start(&home)?);
        Ok(())
    }
}
