//! Arbitrary bytes as a stored suspended cell: decoding is an error or a
//! record, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = talon_codemode::store::decode_record("fuzz", data);
});
