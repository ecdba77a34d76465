//! The front door: what a person or a script finds at the service's address. `GET /` points
//! to the dashboard and the API reference; `GET /docs` is that reference, rendered in the
//! browser from `/openapi.json` by a vendored Swagger UI (`vendor/swagger-ui-dist`, its
//! licence beside it). Every asset is compiled into the binary, so the page works offline
//! and wherever the binary is installed; its CSP lets it load nothing from elsewhere.
//!
//! Why Swagger UI: it renders OpenAPI 3.1 with operations, parameters, bodies, responses and
//! schemas, and its "Try it out" with "Authorize" fits a token-protected local API. Its
//! bundle (about 1.9 MB with the stylesheet) is the whole cost.

use axum::extract::{OriginalUri, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use serde_json::json;

use super::state::AppState;
use crate::settings::keys;

/// The CSP of the front-door pages: scripts, styles, images and API calls from this origin
/// only (Swagger UI sets inline styles and uses `data:` images).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

const DOCS_HTML: &str = include_str!("front/docs.html");
const DOCS_JS: &str = include_str!("front/docs.js");
const INDEX_HTML: &str = include_str!("front/index.html");
const SWAGGER_UI_JS: &[u8] = include_bytes!("../../vendor/swagger-ui-dist/swagger-ui-bundle.js");
const SWAGGER_UI_CSS: &[u8] = include_bytes!("../../vendor/swagger-ui-dist/swagger-ui.css");

/// The `/docs` assets: path, content type, bytes.
pub const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "/docs/swagger-ui-bundle.js",
        "text/javascript; charset=utf-8",
        SWAGGER_UI_JS,
    ),
    (
        "/docs/swagger-ui.css",
        "text/css; charset=utf-8",
        SWAGGER_UI_CSS,
    ),
    (
        "/docs/docs.js",
        "text/javascript; charset=utf-8",
        DOCS_JS.as_bytes(),
    ),
];

fn page(body: String) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// True when the client prefers HTML (a browser) over JSON (a script).
fn wants_html(headers: &HeaderMap) -> bool {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // Browsers send `text/html,…`; scripts send nothing, `*/*` or `application/json`.
    accept
        .split(',')
        .map(|part| part.split(';').next().unwrap_or("").trim())
        .find(|t| *t == "text/html" || *t == "application/json")
        == Some("text/html")
}

/// `GET /`: where to go next (HTML for a browser, JSON for a script).
#[utoipa::path(get, path = "/", responses((status = 200, description = "where to go next: the dashboard (`/ui/`, when served), the API reference (`/docs`) and the OpenAPI document; HTML for a browser (`Accept: text/html`), else JSON", content((serde_json::Value = "application/json"), (String = "text/html")))))]
pub async fn index(State(st): State<AppState>, headers: HeaderMap) -> Response {
    let ui = st.settings().get(keys::SERVER_UI);
    let mut resp = if wants_html(&headers) {
        let ui_item = if ui {
            "<li><a href=\"/ui/\">Dashboard</a> (asks for the admin token)</li>\n"
        } else {
            ""
        };
        page(
            INDEX_HTML
                .replace("{{version}}", env!("CARGO_PKG_VERSION"))
                .replace("{{ui}}", ui_item),
        )
    } else {
        axum::Json(json!({
            "service": "phiguard",
            "version": env!("CARGO_PKG_VERSION"),
            "links": {
                "ui": ui.then_some("/ui/"),
                "docs": "/docs",
                "openapi": "/openapi.json",
                "health": "/health",
            },
        }))
        .into_response()
    };
    resp.headers_mut()
        .insert(header::VARY, HeaderValue::from_static("accept"));
    resp
}

/// `GET /docs`: this API reference.
#[utoipa::path(get, path = "/docs", responses((status = 200, description = "the API reference, rendered in the browser from `/openapi.json`; every asset is served by this binary", body = String, content_type = "text/html")))]
pub async fn docs() -> Response {
    page(DOCS_HTML.to_string())
}

/// One of the `/docs` assets by its path.
pub fn asset(path: &'static str) -> Response {
    match ASSETS.iter().find(|(p, _, _)| *p == path) {
        Some((_, content_type, bytes)) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, *content_type),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                (header::CACHE_CONTROL, "public, max-age=3600"),
            ],
            *bytes,
        )
            .into_response(),
        None => super::error::ApiError::NotFound.into_response(),
    }
}

/// Wraps the dashboard's files: `/ui` without the slash redirects to `/ui/`, since the
/// page's relative links resolve against it. (Nesting at `/ui` routes both to the same file
/// service, so the original path tells them apart.)
pub async fn ui_slash(req: Request, next: Next) -> Response {
    let bare = req
        .extensions()
        .get::<OriginalUri>()
        .is_some_and(|u| u.path() == "/ui");
    if bare {
        return Redirect::permanent("/ui/").into_response();
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_decides_html_or_json() {
        let mut h = HeaderMap::new();
        assert!(!wants_html(&h));
        for (accept, html) in [
            (
                "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
                true,
            ),
            ("application/json", false),
            ("*/*", false),
            ("application/json, text/html", false),
        ] {
            h.insert(header::ACCEPT, HeaderValue::from_static(accept));
            assert_eq!(wants_html(&h), html, "{accept}");
        }
    }

    #[test]
    fn docs_page_references_only_served_assets() {
        for asset in [
            "/docs/swagger-ui.css",
            "/docs/swagger-ui-bundle.js",
            "/docs/docs.js",
        ] {
            assert!(DOCS_HTML.contains(asset));
            assert!(ASSETS.iter().any(|(p, _, _)| *p == asset));
        }
    }
}
