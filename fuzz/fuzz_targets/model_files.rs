//! The small files of a model folder that phiguard parses: its manifest, a `SHA256SUMS`
//! list, `config.json` and the catalog. Any bytes must be accepted or refused, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use phiguard::models::{catalog, manifest, validate};

fuzz_target!(|data: &[u8]| {
    let _ = manifest::Manifest::parse(data);
    let _ = validate::check_config(data);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = manifest::parse_sha256sums(text);
        let _ = catalog::Catalog::from_toml(text);
    }
});
