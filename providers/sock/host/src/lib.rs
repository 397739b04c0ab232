//! The kofi_sock wire protocol, compiled from the module's own source file.

#[path = "../../wire.rs"]
#[allow(dead_code)]
pub mod wire;

/// What the fuzz target calls: parse any 64 bytes; anything accepted must
/// encode back to the same bytes and satisfy the limits.
pub fn parse_any(bytes: &[u8]) {
    let Ok(b) = <&[u8; wire::HEADER_LEN]>::try_from(bytes) else {
        return;
    };
    let limits = wire::Limits { max_msg: 1 << 20 };
    if let Ok(h) = wire::Header::parse(b, &limits) {
        assert_eq!(&h.encode(), b, "accepted header does not round-trip");
        assert!(h.len <= limits.max_msg.max(wire::CM_DATA_MAX));
        assert!(h.rma_len <= limits.max_msg);
    }
}

#[cfg(test)]
mod tests;
