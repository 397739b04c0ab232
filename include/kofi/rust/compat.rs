// SPDX-License-Identifier: GPL-2.0

//! What differs between the kernels kofi builds on: 6.12's Rust (Debian 12's
//! LTS) and 7.3's. Every crate of kofi includes this file (`#[path]`) and
//! uses these items where the two kernels' crates differ; nothing else in
//! the tree asks which kernel it is built for. Kbuild sets `kofi_kernel_7_3`
//! on 7.x.

use kernel::ffi::c_void;
use kernel::types::ForeignOwnable;

/// Hands `owner` to C as the `void *` a C struct keeps (6.12's
/// `into_foreign` gives a `*const`, 7.3's a `*mut`). Take it back with
/// `ForeignOwnable::from_foreign` or look at it with `borrow`: both accept
/// this pointer on either kernel.
pub(crate) fn into_foreign<T: ForeignOwnable>(owner: T) -> *mut c_void {
    #[cfg(not(kofi_kernel_7_3))]
    return owner.into_foreign().cast_mut();
    #[cfg(kofi_kernel_7_3)]
    return owner.into_foreign().cast();
}

/// A point on the monotonic clock, for "how long since".
#[derive(Clone, Copy)]
pub(crate) struct Stamp(
    #[cfg(not(kofi_kernel_7_3))] kernel::time::Ktime,
    #[cfg(kofi_kernel_7_3)] kernel::time::Instant<kernel::time::Monotonic>,
);

impl Stamp {
    /// Now.
    pub(crate) fn now() -> Self {
        #[cfg(not(kofi_kernel_7_3))]
        return Self(kernel::time::Ktime::ktime_get());
        #[cfg(kofi_kernel_7_3)]
        return Self(kernel::time::Instant::now());
    }

    /// Nanoseconds from `earlier` to `self` (negative if `earlier` is later).
    fn ns_since(self, earlier: Stamp) -> i64 {
        #[cfg(not(kofi_kernel_7_3))]
        return self.0.to_ns() - earlier.0.to_ns();
        #[cfg(kofi_kernel_7_3)]
        return (self.0 - earlier.0).as_nanos();
    }

    /// Milliseconds from `earlier` to `self` (negative if `earlier` is later).
    pub(crate) fn ms_since(self, earlier: Stamp) -> i64 {
        self.ns_since(earlier) / 1_000_000
    }

    /// Milliseconds from `self` to now.
    pub(crate) fn elapsed_ms(self) -> i64 {
        Self::now().ms_since(self)
    }
}

impl PartialEq for Stamp {
    fn eq(&self, other: &Self) -> bool {
        self.ns_since(*other) == 0
    }
}

impl Eq for Stamp {}

impl PartialOrd for Stamp {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Earlier is less.
impl Ord for Stamp {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.ns_since(*other).cmp(&0)
    }
}

/// The `.modinfo` entries of a kofi module that `module!` cannot say the
/// same way on both kernels: its author (6.12 spells the key `author`, 7.3
/// `authors`) and, with `import_kofi`, `MODULE_IMPORT_NS(KOFI)` (which 6.12's
/// `module!` cannot say at all). The same bytes the C macros emit.
macro_rules! kofi_modinfo {
    () => {
        #[cfg(MODULE)]
        #[link_section = ".modinfo"]
        #[used(compiler)]
        static KOFI_MODINFO_AUTHOR: [u8; 23] = *b"author=kofi developers\0";
    };
    (import_kofi) => {
        $crate::compat::kofi_modinfo!();
        #[cfg(MODULE)]
        #[link_section = ".modinfo"]
        #[used(compiler)]
        static KOFI_MODINFO_IMPORT_NS: [u8; 15] = *b"import_ns=KOFI\0";
    };
}
pub(crate) use kofi_modinfo;
