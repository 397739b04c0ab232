// SPDX-License-Identifier: GPL-2.0

//! A one-shot kernel timer whose owner lives in an [`Arc`]: the unsafe layer
//! over the timer calls of `kofi_sock_glue.c`. An armed timer holds a
//! reference to its owner, which its expiry hands to the owner's callback
//! and [`Timer::stop`] drops, so the owner outlives every expiry.

use crate::abi;
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::prelude::*;
use kernel::sync::Arc;

/// A timer armed for one owner of type `T`.
///
/// # Invariants
///
/// `ptr` is a timer from `ksock_timer_new`, freed only when this drops.
/// While armed it holds one reference of an `Arc<T>`, given up by `arm` and
/// taken back by its expiry (see [`Timer::expired`]) or by [`Timer::stop`].
pub(crate) struct Timer<T> {
    ptr: NonNull<abi::ksock_timer>,
    _owner: PhantomData<Arc<T>>,
}

// SAFETY: The timer calls may be made from any thread; the owner references
// it holds are `Arc<T>`s, which may move between threads when `T` may.
unsafe impl<T: Send + Sync> Send for Timer<T> {}
// SAFETY: As above; every call on a shared timer is serialized by the timer
// core's own lock.
unsafe impl<T: Send + Sync> Sync for Timer<T> {}

impl<T: Send + Sync> Timer<T> {
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: No preconditions.
        let ptr = NonNull::new(unsafe { abi::ksock_timer_new() }).ok_or(ENOMEM)?;
        // INVARIANT: A new timer, not armed.
        Ok(Timer {
            ptr,
            _owner: PhantomData,
        })
    }

    /// Arms the timer to expire in `ms` milliseconds, or moves it when it is
    /// armed already (always for `owner`: a timer serves one owner). Once
    /// stopped it stays so.
    pub(crate) fn arm(&self, owner: &Arc<T>, ms: u32) {
        let raw = Arc::into_raw(owner.clone());
        // SAFETY: `ptr` is live (type invariants); the reference behind
        // `raw` goes to the timer when this arms it.
        let ret = unsafe { abi::ksock_timer_arm(self.ptr.as_ptr(), raw.cast(), ms) };
        if ret != 0 {
            // Moved (the timer holds a reference already) or stopped (it
            // holds none and will not expire): ours is not needed.
            // SAFETY: `raw` came from `into_raw` above and was not kept.
            drop(unsafe { Arc::from_raw(raw) });
        }
    }

    /// Stops the timer for good, waiting for an expiry in progress, and
    /// drops the reference it held when armed.
    pub(crate) fn stop(&self) {
        // SAFETY: `ptr` is live (type invariants).
        let owner = unsafe { abi::ksock_timer_stop(self.ptr.as_ptr()) };
        if !owner.is_null() {
            // SAFETY: The timer was armed with this reference (type
            // invariants) and will not expire now, so nobody else takes it.
            drop(unsafe { Arc::from_raw(owner.cast::<T>()) });
        }
    }

    /// The owner reference an expiring timer held.
    ///
    /// # Safety
    ///
    /// `owner` is what `kofi_sock_timer_fired` was called with, for a timer
    /// of this type; each expiry calls this once.
    pub(crate) unsafe fn expired(owner: *const c_void) -> Arc<T> {
        // SAFETY: The timer was armed with this reference (type invariants),
        // which its expiry now gives up (the caller's guarantee).
        unsafe { Arc::from_raw(owner.cast::<T>()) }
    }
}

impl<T> Drop for Timer<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` is live and not used after this (type invariants).
        // An armed timer holds a reference to its owner, which holds this
        // timer: it is never armed here.
        unsafe { abi::ksock_timer_free(self.ptr.as_ptr()) };
    }
}
