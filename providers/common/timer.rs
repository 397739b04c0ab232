// SPDX-License-Identifier: GPL-2.0

//! A one-shot kernel timer whose owner lives in an [`Arc`]: the unsafe layer
//! over the timer calls of `kofi_timer.c` (which a provider's glue file
//! includes; its crate includes this file as `mod timer`). An armed timer
//! holds a reference to its owner, which its expiry hands to the owner's
//! [`TimerOwner::timer_fired`] and [`Timer::stop`] drops, so the owner
//! outlives every expiry.

use crate::abi;
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::prelude::*;
use kernel::sync::Arc;

/// What a timer's expiry calls.
pub(crate) trait TimerOwner: Send + Sync + Sized {
    /// The timer armed for `this` expired (softirq).
    fn timer_fired(this: Arc<Self>);
}

/// A timer armed for one owner of type `T`.
///
/// # Invariants
///
/// `ptr` is a timer from `kofi_ptimer_new` calling [`fired::<T>`], freed
/// only when this drops. While armed it holds one reference of an `Arc<T>`,
/// given up by `arm` and taken back by its expiry or by [`Timer::stop`].
pub(crate) struct Timer<T> {
    ptr: NonNull<abi::kofi_ptimer>,
    _owner: PhantomData<Arc<T>>,
}

// SAFETY: The timer calls may be made from any thread; the owner references
// it holds are `Arc<T>`s, which may move between threads when `T` may.
unsafe impl<T: Send + Sync> Send for Timer<T> {}
// SAFETY: As above; every call on a shared timer is serialized by the timer
// core's own lock.
unsafe impl<T: Send + Sync> Sync for Timer<T> {}

impl<T: TimerOwner> Timer<T> {
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: No preconditions; `fired::<T>` is called with what the
        // timer is armed with, which `arm` makes an `Arc<T>` reference.
        let ptr = NonNull::new(unsafe { abi::kofi_ptimer_new(Some(fired::<T>)) }).ok_or(ENOMEM)?;
        // INVARIANT: A new timer of `T`'s callback, not armed.
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
        let ret = unsafe { abi::kofi_ptimer_arm(self.ptr.as_ptr(), raw.cast(), ms) };
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
        let owner = unsafe { abi::kofi_ptimer_stop(self.ptr.as_ptr()) };
        if !owner.is_null() {
            // SAFETY: The timer was armed with this reference (type
            // invariants) and will not expire now, so nobody else takes it.
            drop(unsafe { Arc::from_raw(owner.cast::<T>()) });
        }
    }
}

/// The expiry of a timer of `T`'s: hands the owner the reference it was
/// armed with.
///
/// # Safety
///
/// Called by the timer glue, once per expiry, with what a [`Timer<T>`] was
/// armed with: a reference of an `Arc<T>` (type invariants of [`Timer`]).
unsafe extern "C" fn fired<T: TimerOwner>(owner: *const c_void) {
    // SAFETY: The reference the timer was armed with, which this expiry now
    // gives up (the caller's guarantee).
    T::timer_fired(unsafe { Arc::from_raw(owner.cast::<T>()) });
}

impl<T> Drop for Timer<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` is live and not used after this (type invariants).
        // An armed timer holds a reference to its owner, which holds this
        // timer: it is never armed here.
        unsafe { abi::kofi_ptimer_free(self.ptr.as_ptr()) };
    }
}
