//! Request bodies as the server reads them: JSON parsing, then every route's field parser.
//! Any input must give a request or a 422, never a panic, and no error may quote the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use phiguard::server::api::{AnalyzeRequest, DeidentifyRequest, ExtractRequest, UnloadRequest};
use phiguard::server::validate::{parse_object, TextLimits};

const LIMITS: TextLimits = TextLimits {
    max_chars: 2000,
    max_bytes: 8000,
};

fuzz_target!(|data: &[u8]| {
    let Ok(map) = parse_object(data) else {
        return;
    };
    let _ = ExtractRequest::parse(&map, LIMITS);
    let _ = ExtractRequest::parse_stream(&map, LIMITS);
    let _ = DeidentifyRequest::parse(&map, LIMITS, false);
    let _ = DeidentifyRequest::parse(&map, LIMITS, true);
    let _ = AnalyzeRequest::parse(&map, LIMITS);
    let _ = UnloadRequest::parse(&map);
});
