#![no_main]
//! Any 64 bytes from a peer: the parser must not panic, and a header it
//! accepts must round-trip and respect the limits.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kofi_sock_wire::parse_any(data);
});
