//! The `token` query parameter of `GET /admin/events` (EventSource cannot send headers):
//! percent-decoding any bytes, escapes cut off or followed by multi-byte characters.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let query = String::from_utf8_lossy(data);
    if let Some(token) = phiguard::server::middleware::query_token(&query) {
        assert!(!token.is_empty());
    }
});
