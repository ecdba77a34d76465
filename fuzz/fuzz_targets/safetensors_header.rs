//! The safetensors header of a model being imported or downloaded: JSON of any shape against
//! any data length. It must be accepted or refused, never panic or overflow.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let (len, header) = data.split_at(8);
    let data_len = u64::from_le_bytes(len.try_into().expect("eight bytes"));
    let _ = phiguard::models::validate::check_safetensors_header(header, data_len);
});
