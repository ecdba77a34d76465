//! Resource ids, `fullUrl`s and references re-pointed: every `Patient/123` of a document
//! becomes the same `Patient/<new id>`, so references still resolve inside a Bundle while
//! the source system's ids are gone.
//!
//! The new id is an HMAC of the old one under a key drawn per request, or shared by the
//! documents of one export (the files of one `phiguard deid` run), or derived from the
//! caller's subject so that the same subject's resources get the same ids in every request.
//! A reference that is a search (`Patient?identifier=…`) carries an identifier in its
//! query and is removed; a Bundle's own URLs (`link.url`, `request.url`) lose their query
//! and are re-pointed the same way, so a `PUT Patient/<id>` still names its resource. A
//! contained resource's id (local to its container, never a source system's) is kept with
//! its `#id` references, which would dangle otherwise.
//!
//! # Conditional operations in a transaction
//!
//! A transaction names resources by search as well as by id: `PUT Patient?identifier=…`
//! (a conditional update), `ifNoneExist` (a conditional create), a reference
//! `Patient?identifier=…` to the entry that such an operation writes, `DELETE
//! Observation?subject=…`. The searches hold identifiers and dates, so they go; what they
//! pointed to stays ([`resolve_conditionals`], before anything else reads the document): a
//! search reference that names an entry's conditional operation points to that entry's
//! `fullUrl`; a conditional update of a resource with an id becomes an update of that id,
//! of one without an id a create; a conditional delete is removed whole, since without
//! its search it would delete every resource of its type.

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

/// The id map of one request (stateless: the HMAC is the map).
pub(super) struct IdMap {
    key: [u8; 32],
}

impl IdMap {
    pub(super) fn new(key: [u8; 32]) -> Self {
        IdMap { key }
    }

    fn mac(&self, what: &str) -> [u8; 32] {
        #[allow(clippy::expect_used)]
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.key).expect("HMAC accepts any key length");
        mac.update(what.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// The new id of `ty/id`: 32 hex digits (FHIR ids allow 64 of `[A-Za-z0-9.-]`).
    fn id(&self, ty: &str, id: &str) -> String {
        hex::encode(&self.mac(&format!("{ty}/{id}"))[..16])
    }

    /// The new UUID of `urn:uuid:<old>` (version 4 and variant bits set, so it reads as a
    /// random UUID).
    fn uuid(&self, old: &str) -> String {
        let mut b: [u8; 16] = [0; 16];
        b.copy_from_slice(&self.mac(&format!("urn:uuid:{}", old.to_ascii_lowercase()))[..16]);
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        let h = hex::encode(b);
        format!(
            "{}-{}-{}-{}-{}",
            &h[..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..]
        )
    }

    /// `Resource.id` of a resource of type `ty`.
    pub(super) fn resource_id(&self, ty: &str, node: &mut Value) -> bool {
        let Value::String(id) = node else {
            return false;
        };
        *id = self.id(ty, id);
        true
    }

    /// `Bundle.entry.fullUrl`: a `urn:uuid:` gets a new UUID, a RESTful URL a new id after
    /// its type; anything else is kept (it names no resource of this document's source).
    pub(super) fn full_url(&self, node: &mut Value) -> bool {
        let Value::String(url) = node else {
            return false;
        };
        match self.repoint(url) {
            Some(new) => {
                *url = new;
                true
            }
            None => false,
        }
    }

    /// `Reference.reference`: re-pointed as its target was; a contained (`#id`) reference
    /// is kept; a search reference is removed.
    pub(super) fn reference(&self, node: &mut Value) -> bool {
        let Value::String(r) = node else { return false };
        if r.starts_with('#') {
            return false;
        }
        match self.repoint(r) {
            Some(new) => *r = new,
            None => *node = Value::Null,
        }
        true
    }

    /// A URL of a Bundle's plumbing (`Bundle.link.url`, `entry.request.url`): the query
    /// cut (a search's values are a patient's name, birth date, MRN), the rest re-pointed
    /// when it is a resource's address (`Patient/p-42` becomes `Patient/<new id>`, the id
    /// the resource itself gets) and kept otherwise (`Patient`, a server's base).
    pub(super) fn url(&self, node: &mut Value) -> bool {
        let Value::String(u) = node else { return false };
        let path = u.split(['?', '#']).next().unwrap_or("");
        let new = self.repoint(path).unwrap_or_else(|| path.to_owned());
        if new == *u {
            return false;
        }
        *u = new;
        true
    }

    /// The re-pointed form of a `urn:uuid:`, `Type/id`, `Type/id/_history/v` or
    /// `base/Type/id` address; `None` when it is none of these.
    fn repoint(&self, url: &str) -> Option<String> {
        if let Some(uuid) = url.strip_prefix("urn:uuid:") {
            return Some(format!("urn:uuid:{}", self.uuid(uuid)));
        }
        if url.contains('?') {
            return None;
        }
        let path = match url.find("/_history/") {
            Some(i) => &url[..i],
            None => url,
        };
        let (rest, id) = path.rsplit_once('/')?;
        let (base, ty) = match rest.rsplit_once('/') {
            Some((b, t)) => (Some(b), t),
            None => (None, rest),
        };
        let is_type = ty.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && ty.chars().all(|c| c.is_ascii_alphabetic());
        if !is_type || id.is_empty() {
            return None;
        }
        let new = format!("{ty}/{}", self.id(ty, id));
        Some(match base {
            Some(b) => format!("{b}/{new}"),
            None => new,
        })
    }
}

/// Resolves the conditional operations of every `Bundle` in `v` (see the module docs);
/// returns how many conditional deletes were removed.
pub(super) fn resolve_conditionals(v: &mut Value) -> usize {
    let Value::Object(m) = v else { return 0 };
    if m.get("resourceType").and_then(Value::as_str) != Some("Bundle") {
        return 0;
    }
    let Some(Value::Array(entries)) = m.get_mut("entry") else {
        return 0;
    };
    // The search of each entry's conditional operation → that entry's fullUrl.
    let mut by_search = std::collections::HashMap::new();
    for e in entries.iter() {
        let (Some(full), Some(req)) = (e.get("fullUrl").and_then(Value::as_str), e.get("request"))
        else {
            continue;
        };
        let url = req.get("url").and_then(Value::as_str).unwrap_or("");
        if url.contains('?') {
            by_search.insert(url.to_owned(), full.to_owned());
        }
        if let Some(q) = req.get("ifNoneExist").and_then(Value::as_str) {
            let ty = url.split(['?', '/']).next().unwrap_or("");
            by_search.insert(
                format!("{ty}?{}", q.trim_start_matches('?')),
                full.to_owned(),
            );
        }
    }
    let before = entries.len();
    entries.retain(|e| {
        let req = e.get("request");
        let method = req
            .and_then(|r| r.get("method"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let url = req
            .and_then(|r| r.get("url"))
            .and_then(Value::as_str)
            .unwrap_or("");
        !(method.eq_ignore_ascii_case("DELETE") && url.contains('?'))
    });
    let removed = before - entries.len();
    for e in entries.iter_mut() {
        if !by_search.is_empty() {
            if let Some(r) = e.get_mut("resource") {
                search_references(r, &by_search);
            }
        }
        conditional_update(e);
    }
    removed
}

/// Points each search reference below `v` that names a conditional operation of the
/// Bundle to that operation's entry.
fn search_references(v: &mut Value, by_search: &std::collections::HashMap<String, String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("reference") {
                if let Some(full) = by_search.get(r.as_str()) {
                    *r = full.clone();
                }
            }
            m.values_mut().for_each(|c| search_references(c, by_search));
        }
        Value::Array(a) => a.iter_mut().for_each(|c| search_references(c, by_search)),
        _ => {}
    }
}

/// `PUT|PATCH Type?search`: of the resource's own id when it has one (`Type/<id>`, then
/// re-pointed as the id is), else a create (`POST Type`).
fn conditional_update(e: &mut Value) {
    let id = e
        .get("resource")
        .and_then(|r| r.get("id"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let Some(Value::Object(req)) = e.get_mut("request") else {
        return;
    };
    let method = req
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_uppercase();
    let Some(url) = req.get("url").and_then(Value::as_str).map(str::to_owned) else {
        return;
    };
    if !(method == "PUT" || method == "PATCH") || !url.contains('?') {
        return;
    }
    let ty = url.split(['?', '/']).next().unwrap_or("").to_owned();
    match id {
        Some(id) => {
            req.insert("url".into(), Value::String(format!("{ty}/{id}")));
        }
        None if method == "PUT" => {
            req.insert("method".into(), Value::String("POST".into()));
            req.insert("url".into(), Value::String(ty));
        }
        // A conditional patch of a resource without an id patches nothing once its search
        // is gone; its url keeps the type alone, as the other URLs do.
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_follow_their_targets_and_searches_go() {
        let m = IdMap::new([7; 32]);
        let mut id = Value::String("123".into());
        assert!(m.resource_id("Patient", &mut id));
        let mut r = Value::String("Patient/123".into());
        m.reference(&mut r);
        assert_eq!(
            r,
            Value::String(format!("Patient/{}", id.as_str().unwrap_or("")))
        );
        let mut abs = Value::String("http://example.org/fhir/Patient/123/_history/2".into());
        m.reference(&mut abs);
        assert_eq!(
            abs,
            Value::String(format!(
                "http://example.org/fhir/Patient/{}",
                id.as_str().unwrap_or("")
            ))
        );
        let mut urn = Value::String("urn:uuid:8a4e2a4c-67b5-4b0d-a5d4-2f1e3c9d0a11".into());
        let mut full = urn.clone();
        m.reference(&mut urn);
        m.full_url(&mut full);
        assert_eq!(urn, full);
        assert_ne!(
            urn,
            Value::String("urn:uuid:8a4e2a4c-67b5-4b0d-a5d4-2f1e3c9d0a11".into())
        );
        let mut search = Value::String("Patient?identifier=http://x|123".into());
        m.reference(&mut search);
        assert_eq!(search, Value::Null);
        let mut contained = Value::String("#p1".into());
        assert!(!m.reference(&mut contained));
    }
}
