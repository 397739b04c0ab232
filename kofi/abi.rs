// SPDX-License-Identifier: GPL-2.0

//! The kofi ABI and the core's C helpers, as bindgen reads them from
//! `include/kofi/` and `kofi_glue.h`.

#![allow(
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    clippy::as_underscore,
    clippy::ptr_as_ptr,
    dead_code,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    unused_imports,
    unknown_lints,
    unnecessary_transmutes
)]

use kernel::ffi;

// Blocklisted by the kernel's bindgen parameters; defined as the kernel's
// own bindings define them.
type __kernel_size_t = usize;
type __kernel_ssize_t = isize;
type __kernel_ptrdiff_t = isize;

include!("abi_generated.rs");
