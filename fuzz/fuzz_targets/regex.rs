//! Regex front-end: any pattern converts or yields an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let pattern = String::from_utf8_lossy(data);
    let _ = formcast_grammar::regex_grammar(&pattern);
});
