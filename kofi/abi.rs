// SPDX-License-Identifier: GPL-2.0

//! The kofi ABI as bindgen reads it from `include/kofi/`.

#![allow(
    clippy::all,
    dead_code,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    unreachable_pub,
    unused_imports,
    unsafe_op_in_unsafe_fn
)]

use kernel::ffi;

include!("abi_generated.rs");
