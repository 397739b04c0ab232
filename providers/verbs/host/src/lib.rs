//! The kofi_verbs message header and private data encoding, compiled from
//! the module's own source file.

#[path = "../../wire.rs"]
#[allow(dead_code)]
pub mod wire;

#[cfg(test)]
mod tests;
