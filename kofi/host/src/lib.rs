//! The kofi core's pure logic, compiled from the module's own source files
//! so that `cargo test` checks exactly what runs in the kernel.

#![allow(dead_code)]

#[path = "../../../include/kofi/rust/ring.rs"]
pub(crate) mod ring;

#[path = "../../info_match.rs"]
pub(crate) mod info_match;

#[path = "../../addr.rs"]
pub(crate) mod addr;

#[path = "../../rdm/wire.rs"]
pub(crate) mod rdm_wire;

#[path = "../../rdm/atomic.rs"]
pub(crate) mod rdm_atomic;

#[cfg(test)]
mod tests;
