// SPDX-License-Identifier: GPL-2.0

//! The kofi ABI and the core's C helpers, as bindgen reads them from
//! `include/kofi/` and `kofi_glue.h`: the same bindings module the providers
//! use (`include/kofi/rust/abi.rs`), over the core's own generated file.

#[path = "../include/kofi/rust/abi.rs"]
mod bindings;

pub(crate) use bindings::*;
