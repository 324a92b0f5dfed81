//! Arbitrary bytes as a stored suspended cell: decoding is an error or a
//! record, never a panic. The bytes are tried as they are (the MAC check
//! refuses them) and resealed with the key (so the parser behind the MAC
//! sees them too).
#![no_main]

use libfuzzer_sys::fuzz_target;
use talon_codemode::store::{StoreKey, decode_record, reseal_record};

fuzz_target!(|data: &[u8]| {
    let key = StoreKey::derive(&[7; 32]);
    let _ = decode_record(&key, "fuzz", data);
    let sealed = reseal_record(&key, "fuzz", data);
    let _ = decode_record(&key, "fuzz", &sealed);
});
