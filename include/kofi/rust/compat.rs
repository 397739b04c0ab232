// SPDX-License-Identifier: GPL-2.0

//! What differs between the kernels kofi builds on: 6.12's Rust (Debian 12's
//! LTS) and 7.3's. Every crate of kofi includes this file (`#[path]`) and
//! uses these items where the two kernels' crates differ; nothing else in
//! the tree asks which kernel it is built for. Kbuild sets `kofi_kernel_7_3`
//! on 7.x.

use kernel::alloc::{Allocator, Vec};
use kernel::ffi::c_void;
use kernel::prelude::*;
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

/// `alloc_workqueue("%s", flags, 0, name)` (null when it fails): a macro on
/// 7.3 over `alloc_workqueue_noprof`, a function on 6.12. 7.3 warns about a
/// queue that says neither `WQ_UNBOUND` nor `WQ_PERCPU`: per-CPU is what
/// 6.12 makes of it, so that is said.
pub(crate) fn alloc_workqueue(
    name: &'static kernel::str::CStr,
    flags: u32,
) -> *mut kernel::bindings::workqueue_struct {
    #[cfg(not(kofi_kernel_7_3))]
    use kernel::bindings::alloc_workqueue as alloc;
    #[cfg(kofi_kernel_7_3)]
    use kernel::bindings::alloc_workqueue_noprof as alloc;
    #[cfg(kofi_kernel_7_3)]
    let flags = {
        use kernel::bindings::{wq_flags_WQ_PERCPU as PERCPU, wq_flags_WQ_UNBOUND as UNBOUND};
        if flags & (PERCPU | UNBOUND) == 0 {
            flags | PERCPU
        } else {
            flags
        }
    };
    // SAFETY: A "%s" format with one NUL-terminated string argument, which
    // lives as long as the module (`'static`).
    unsafe {
        alloc(
            kernel::c_str!("%s").as_char_ptr(),
            flags,
            0,
            name.as_char_ptr(),
        )
    }
}

// blk-mq's flag asking for merged requests (one item, two arms): 7.3
// merges unless told not to, and has no such flag.
#[cfg(not(kofi_kernel_7_3))]
pub(crate) const BLK_MQ_F_SHOULD_MERGE: u32 = kernel::bindings::BLK_MQ_F_SHOULD_MERGE;
#[cfg(kofi_kernel_7_3)]
pub(crate) const BLK_MQ_F_SHOULD_MERGE: u32 = 0;

// The NUMA node blk-mq's `init_request` gets (one item, two arms):
// unsigned on 6.12, signed on 7.3.
#[cfg(not(kofi_kernel_7_3))]
pub(crate) type NumaNode = kernel::ffi::c_uint;
#[cfg(kofi_kernel_7_3)]
pub(crate) type NumaNode = kernel::ffi::c_int;

/// The bytes of a C string, by one name on both kernels (6.12's own `CStr`
/// says `as_bytes`, 7.3's, which is core's, `to_bytes`).
pub(crate) trait CStrBytes {
    /// The bytes before the NUL.
    fn cstr_bytes(&self) -> &[u8];
    /// The bytes with the NUL.
    fn cstr_bytes_with_nul(&self) -> &[u8];
}

impl CStrBytes for kernel::str::CStr {
    fn cstr_bytes(&self) -> &[u8] {
        #[cfg(not(kofi_kernel_7_3))]
        return self.as_bytes();
        #[cfg(kofi_kernel_7_3)]
        return self.to_bytes();
    }

    fn cstr_bytes_with_nul(&self) -> &[u8] {
        #[cfg(not(kofi_kernel_7_3))]
        return self.as_bytes_with_nul();
        #[cfg(kofi_kernel_7_3)]
        return self.to_bytes_with_nul();
    }
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

/// What kofi needs of the kernel's `Vec` beyond what both kernels have
/// alike. 6.12's lacks `pop` and `clear` (7.3's are inherent, so these are
/// 6.12's only); its `set_len` is 7.3's `inc_len`; 7.3's `remove` returns a
/// `Result`, so ours is `remove_at`.
pub(crate) trait VecExt<T> {
    /// Removes the last element.
    #[cfg(not(kofi_kernel_7_3))]
    fn pop(&mut self) -> Option<T>;
    /// Drops every element.
    #[cfg(not(kofi_kernel_7_3))]
    fn clear(&mut self);
    /// Removes element `i`, keeping the order of the rest.
    ///
    /// # Panics
    ///
    /// If `i` is out of bounds.
    fn remove_at(&mut self, i: usize) -> T;
    /// Removes element `i`, the last one taking its place.
    ///
    /// # Panics
    ///
    /// If `i` is out of bounds.
    fn swap_remove(&mut self, i: usize) -> T;
    /// Inserts `v` at `i`, keeping the order of the rest.
    fn insert(&mut self, i: usize, v: T, flags: kernel::alloc::Flags) -> Result;
    /// Counts `n` more elements, written in the spare capacity.
    ///
    /// # Safety
    ///
    /// The `n` elements past the length are initialised and within the
    /// capacity.
    unsafe fn grow_len(&mut self, n: usize);
}

impl<T, A: Allocator> VecExt<T> for Vec<T, A> {
    #[cfg(not(kofi_kernel_7_3))]
    fn pop(&mut self) -> Option<T> {
        let len = self.len();
        if len == 0 {
            return None;
        }
        // SAFETY: Element `len - 1` is initialised; shrinking the length
        // first hands its ownership to us.
        unsafe {
            self.set_len(len - 1);
            Some(core::ptr::read(self.as_ptr().add(len - 1)))
        }
    }

    #[cfg(not(kofi_kernel_7_3))]
    fn clear(&mut self) {
        while self.pop().is_some() {}
    }

    fn remove_at(&mut self, i: usize) -> T {
        self.as_mut_slice()[i..].rotate_left(1);
        match self.pop() {
            Some(x) => x,
            None => unreachable!(),
        }
    }

    fn swap_remove(&mut self, i: usize) -> T {
        let last = self.len() - 1;
        self.as_mut_slice().swap(i, last);
        match self.pop() {
            Some(x) => x,
            None => unreachable!(),
        }
    }

    fn insert(&mut self, i: usize, v: T, flags: kernel::alloc::Flags) -> Result {
        self.push(v, flags)?;
        self.as_mut_slice()[i..].rotate_right(1);
        Ok(())
    }

    unsafe fn grow_len(&mut self, n: usize) {
        // SAFETY: The caller's guarantee: the elements are initialised and
        // within the capacity.
        #[cfg(not(kofi_kernel_7_3))]
        unsafe {
            self.set_len(self.len() + n)
        };
        // SAFETY: As above.
        #[cfg(kofi_kernel_7_3)]
        unsafe {
            self.inc_len(n)
        };
    }
}
