// SPDX-License-Identifier: GPL-2.0

//! A spinlock taken with bottom halves disabled.
//!
//! Providers report completions from softirq (socket callbacks, RDMA CQ
//! polling) while consumers read the same queues in process context; a plain
//! spinlock would deadlock when the softirq interrupts a holder on its CPU.
//! The kernel crates of 6.12 and 7.3 have no such lock, so this backend
//! supplies it. 7.3's `Backend` asks two methods more (`try_lock`,
//! `assert_is_held`): the one place outside the compatibility layer
//! (`include/kofi/rust/compat.rs`) that asks which kernel it is built for,
//! as a trait's items cannot come from elsewhere.

use crate::abi;
use kernel::sync::lock::{Backend, Lock};

/// A [`Lock`] whose critical sections run with bottom halves disabled.
pub(crate) type BhSpinLock<T> = Lock<T, BhSpinLockBackend>;

/// The [`Backend`] of [`BhSpinLock`]: `spin_lock_bh()`/`spin_unlock_bh()`.
pub(crate) struct BhSpinLockBackend;

// SAFETY: `lock` takes and `unlock` releases the same spinlock, initialised
// by `init`, so the lock provides mutual exclusion; `relock` is the default,
// which calls `lock` again, the same method.
unsafe impl Backend for BhSpinLockBackend {
    type State = abi::spinlock_t;
    type GuardState = ();

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const kernel::ffi::c_char,
        key: *mut kernel::bindings::lock_class_key,
    ) {
        // SAFETY: The caller guarantees `ptr` is valid for write and that
        // `name` and `key` stay valid; the two `lock_class_key` types are the
        // same C type seen by two bindgen runs.
        unsafe { abi::kofi_bh_lock_init(ptr, name, key.cast()) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: The caller guarantees `init` was called on `ptr`.
        unsafe { abi::kofi_bh_lock(ptr) }
    }

    unsafe fn unlock(ptr: *mut Self::State, _guard_state: &Self::GuardState) {
        // SAFETY: The caller guarantees it holds the lock.
        unsafe { abi::kofi_bh_unlock(ptr) }
    }

    #[cfg(kofi_kernel_7_3)]
    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState> {
        // SAFETY: The caller guarantees `init` was called on `ptr`.
        unsafe { abi::kofi_bh_trylock(ptr) }.then_some(())
    }

    #[cfg(kofi_kernel_7_3)]
    unsafe fn assert_is_held(ptr: *mut Self::State) {
        // SAFETY: The caller guarantees `init` was called on `ptr`.
        unsafe { abi::kofi_bh_assert_held(ptr) }
    }
}

/// Creates a [`BhSpinLock`] initialiser with a lock class of its own.
macro_rules! new_bh_spinlock {
    ($inner:expr $(, $name:literal)? $(,)?) => {
        $crate::lock::BhSpinLock::new(
            $inner,
            ::kernel::optional_name!($($name)?),
            ::kernel::static_lock_class!(),
        )
    };
}
pub(crate) use new_bh_spinlock;
