// SPDX-License-Identifier: GPL-2.0

//! The contexts kofi hands back as it was given them: an object's (its
//! fid's) and an operation's (its completion's). The core and the providers
//! compile this file in (as `crate::context`).

use core::ptr;
use kernel::ffi::c_void;

/// A context kofi hands back unchanged and never dereferences. A consumer's
/// is its pointer; an in-kernel user of the typed API may carry a number
/// instead ([`Context::value`]), which rides through the C ABI's pointer
/// unchanged.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(transparent)]
pub(crate) struct Context(*mut c_void);

// SAFETY: A cookie: kofi never dereferences it.
unsafe impl Send for Context {}
// SAFETY: As above.
unsafe impl Sync for Context {}

// A value fills the pointer (kofi builds for 64-bit kernels).
const _: () = assert!(core::mem::size_of::<*mut c_void>() == core::mem::size_of::<u64>());

impl Context {
    /// No context (a null pointer).
    pub(crate) const NONE: Context = Context(ptr::null_mut());

    /// A consumer's context.
    pub(crate) fn of(ptr: *mut c_void) -> Context {
        Context(ptr)
    }

    /// A number as the context.
    pub(crate) fn value(v: u64) -> Context {
        Context(v as usize as *mut c_void)
    }

    /// The context as a number (what [`Context::value`] was given).
    pub(crate) fn as_value(self) -> u64 {
        self.0 as usize as u64
    }

    /// The context as the C ABI carries it.
    pub(crate) fn as_ptr(self) -> *mut c_void {
        self.0
    }

    pub(crate) fn is_none(self) -> bool {
        self.0.is_null()
    }
}
