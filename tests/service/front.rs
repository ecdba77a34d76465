//! The front door: `GET /` points the way, `/docs` renders the API reference from assets the
//! server itself serves (no token, no other origin), `/ui` redirects to `/ui/`.

use crate::support::TestServer;

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// The `src`/`href` values of an HTML page.
fn references(html: &str) -> Vec<String> {
    let re = regex::Regex::new(r#"(?i)\b(?:src|href)\s*=\s*["']([^"']*)["']"#).expect("regex");
    re.captures_iter(html).map(|c| c[1].to_string()).collect()
}

/// Resolves a same-origin reference of the page at `/docs` to a path; panics on any other
/// origin (the page must work offline).
fn same_origin_path(reference: &str) -> Option<String> {
    if reference.starts_with("data:") || reference.starts_with('#') {
        return None;
    }
    assert!(
        !reference.starts_with("//") && !reference.contains("://"),
        "/docs references another origin: {reference}"
    );
    Some(if reference.starts_with('/') {
        reference.to_string()
    } else {
        format!("/{}", reference.trim_start_matches("./"))
    })
}

#[tokio::test]
async fn docs_is_open_html_and_every_asset_it_references_is_served() {
    let t = TestServer::start(&[]).await;
    let resp = t.http.get(t.url("/docs")).send().await.expect("send");
    assert_eq!(resp.status(), 200);
    let ct = resp.headers()["content-type"]
        .to_str()
        .unwrap_or("")
        .to_string();
    assert!(ct.starts_with("text/html"), "{ct}");
    let csp = resp.headers()["content-security-policy"]
        .to_str()
        .unwrap_or("")
        .to_string();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
        "{csp}"
    );
    let html = resp.text().await.expect("body");
    let paths: Vec<String> = references(&html)
        .iter()
        .filter_map(|r| same_origin_path(r))
        .collect();
    assert!(
        paths.iter().any(|p| p.ends_with(".js")) && paths.iter().any(|p| p.ends_with(".css")),
        "{paths:?}"
    );
    for path in &paths {
        let r = t.http.get(t.url(path)).send().await.expect("send");
        assert_eq!(r.status(), 200, "{path} is not served without a token");
        let ct = r.headers()["content-type"]
            .to_str()
            .unwrap_or("")
            .to_string();
        let body = r.bytes().await.expect("body");
        assert!(!body.is_empty(), "{path} is empty");
        if path.ends_with(".js") {
            assert!(ct.starts_with("text/javascript"), "{path}: {ct}");
        } else if path.ends_with(".css") {
            assert!(ct.starts_with("text/css"), "{path}: {ct}");
        }
    }
    // The page renders the server's own document, which is open too.
    let r = t
        .http
        .get(t.url("/docs/docs.js"))
        .send()
        .await
        .expect("send");
    assert!(r.text().await.expect("body").contains("'/openapi.json'"));
    let r = t
        .http
        .get(t.url("/openapi.json"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let doc: serde_json::Value = r.json().await.expect("json");
    for open in ["/", "/docs"] {
        assert!(doc["paths"][open]["get"].is_object(), "{open} undocumented");
    }
    // The Host check applies here as everywhere.
    let r = t
        .http
        .get(t.url("/docs"))
        .header("host", "evil.example.com")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 400);
    t.shutdown().await;
}

#[tokio::test]
async fn root_points_to_the_dashboard_and_the_docs() {
    let t = TestServer::start(&[("PHIGUARD_UI", "true")]).await;
    // A script (no Accept, or JSON) gets links.
    for accept in [None, Some("application/json"), Some("*/*")] {
        let mut req = t.http.get(t.url("/"));
        if let Some(a) = accept {
            req = req.header("accept", a);
        }
        let r = req.send().await.expect("send");
        assert_eq!(r.status(), 200, "{accept:?}");
        let body: serde_json::Value = r.json().await.expect("json");
        assert_eq!(body["links"]["docs"], "/docs", "{body}");
        assert_eq!(body["links"]["ui"], "/ui/", "{body}");
        assert_eq!(body["links"]["openapi"], "/openapi.json", "{body}");
    }
    // A browser gets a page with the same links.
    let r = t
        .http
        .get(t.url("/"))
        .header("accept", "text/html,application/xhtml+xml,*/*;q=0.8")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap_or("")
        .starts_with("text/html"));
    let refs = references(&r.text().await.expect("body"));
    for link in ["/ui/", "/docs", "/openapi.json"] {
        assert!(refs.iter().any(|h| h == link), "{link} missing in {refs:?}");
    }

    // `/ui` redirects to `/ui/`, which serves the dashboard.
    let http = no_redirects();
    let r = http.get(t.url("/ui")).send().await.expect("send");
    assert!(r.status().is_redirection(), "{}", r.status());
    assert_eq!(r.headers()["location"], "/ui/");
    let r = http.get(t.url("/ui/")).send().await.expect("send");
    assert_eq!(r.status(), 200);
    assert!(r.text().await.expect("body").contains("<html"));
    t.shutdown().await;
}

#[tokio::test]
async fn without_the_dashboard_root_does_not_link_it() {
    let t = TestServer::start(&[("PHIGUARD_UI", "false")]).await;
    let r = t.http.get(t.url("/")).send().await.expect("send");
    let body: serde_json::Value = r.json().await.expect("json");
    assert!(body["links"]["ui"].is_null(), "{body}");
    let r = t
        .http
        .get(t.url("/"))
        .header("accept", "text/html")
        .send()
        .await
        .expect("send");
    assert!(!r.text().await.expect("body").contains("/ui/"));
    t.shutdown().await;
}
