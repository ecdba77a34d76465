//! Request bodies as the server reads them: JSON parsing, then every route's field parser.
//! Any input must give a request or a 422, never a panic, and no error may quote the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use phiguard::server::api::{
    AnalyzeRequest, DeidentifyRequest, DeidentifyStreamRequest, EvalRequest, ExtractRequest,
    ExtractStreamRequest, ModelIdRequest, TokenCreateRequest, UnloadRequest,
};
use phiguard::server::validate::{parse_map, parse_object, Body, TextLimits};

const LIMITS: TextLimits = TextLimits {
    max_chars: 2000,
    max_bytes: 8000,
};

fuzz_target!(|data: &[u8]| {
    let Ok(map) = parse_object(data) else {
        return;
    };
    check::<ExtractRequest>(&map);
    check::<ExtractStreamRequest>(&map);
    check::<DeidentifyRequest>(&map);
    check::<DeidentifyStreamRequest>(&map);
    check::<AnalyzeRequest>(&map);
    check::<UnloadRequest>(&map);
    check::<TokenCreateRequest>(&map);
    check::<ModelIdRequest>(&map);
    check::<EvalRequest>(&map);
});

/// A parse gives a request or a 422 listing at least one problem.
fn check<T: Body>(map: &serde_json::Map<String, serde_json::Value>) {
    if let Err(e) = parse_map::<T>(map, LIMITS) {
        assert_eq!(e.status().as_u16(), 422);
        let body = e.body(None);
        assert!(body["error"]["details"].as_array().is_some_and(|d| !d.is_empty()));
    }
}
