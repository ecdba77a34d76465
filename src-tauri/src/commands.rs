//! Tauri commands the dashboard invokes: parse, call [`Service`], map the result. No logic here.

use tauri::{AppHandle, Emitter, Runtime, State};

use crate::error::Result;
use crate::lifecycle::{Bootstrap, Service, ServiceView};
use crate::tray::{self, SERVICE_CHANGED};

/// The API base and admin token for the dashboard, or why the service is not available.
#[tauri::command]
pub(crate) async fn dashboard_bootstrap(service: State<'_, Service>) -> Result<Bootstrap> {
    service.bootstrap().await
}

/// The service's state as the tray shows it.
#[tauri::command]
pub(crate) async fn service_status(service: State<'_, Service>) -> Result<ServiceView> {
    Ok(service.view().await)
}

/// Starts the embedded server (no-op when running).
#[tauri::command]
pub(crate) async fn service_start<R: Runtime>(
    app: AppHandle<R>,
    service: State<'_, Service>,
) -> Result<ServiceView> {
    let started = service.start().await;
    notify_changed(&app).await;
    started?;
    Ok(service.view().await)
}

/// Stops the embedded server after draining in-flight requests.
#[tauri::command]
pub(crate) async fn service_stop<R: Runtime>(
    app: AppHandle<R>,
    service: State<'_, Service>,
) -> Result<ServiceView> {
    service.stop().await;
    notify_changed(&app).await;
    Ok(service.view().await)
}

/// Copies the client (inference) token to the clipboard.
#[tauri::command]
pub(crate) async fn copy_api_token<R: Runtime>(app: AppHandle<R>) -> Result<()> {
    tray::copy_client_token(&app).await
}

/// Updates the tray now and tells the dashboard the service changed.
pub(crate) async fn notify_changed<R: Runtime>(app: &AppHandle<R>) {
    tray::refresh(app).await;
    if let Err(e) = app.emit(SERVICE_CHANGED, ()) {
        tracing::warn!(error = %e, "cannot notify the dashboard");
    }
}
