// SPDX-License-Identifier: GPL-2.0

//! A module's own workqueue, for the module's lifetime: WQ_MEM_RECLAIM, so
//! its progress goes on under memory pressure (storage depends on it), and
//! destroyed only after what is queued on it has run, so no work of the
//! module's outlives its code. Each crate that needs one (the core, for the
//! RDM layer's progress; each provider) compiles this file (`#[path]`), so
//! each has a queue of its own.

use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::bindings;
use kernel::prelude::*;
use kernel::workqueue::Queue;

static WQ: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(ptr::null_mut());

/// The module's workqueue.
///
/// Called only while the module's [`OwnQueue`] lives: by the module's
/// objects, which are all closed before the module goes.
pub(crate) fn queue() -> &'static Queue {
    // SAFETY: Set by `OwnQueue::new` in the module's init, before any
    // object of the module exists, and destroyed by its drop after they
    // are all gone.
    unsafe { Queue::from_raw(WQ.load(Ordering::Acquire)) }
}

/// Owns the module's workqueue: made first in the module's init, dropped
/// last.
///
/// # Invariants
///
/// At most one lives (the module's); while it does, `WQ` is its queue.
pub(crate) struct OwnQueue(());

impl OwnQueue {
    /// Creates the queue named `name`, with `flags` (`WQ_*`) beside
    /// `WQ_MEM_RECLAIM`.
    pub(crate) fn new(name: &'static CStr, flags: u32) -> Result<OwnQueue> {
        let wq = crate::compat::alloc_workqueue(name, flags | bindings::wq_flags_WQ_MEM_RECLAIM);
        if wq.is_null() {
            return Err(ENOMEM);
        }
        // INVARIANT: The module makes one, in its init.
        WQ.store(wq, Ordering::Release);
        Ok(OwnQueue(()))
    }
}

impl Drop for OwnQueue {
    fn drop(&mut self) {
        let wq = WQ.swap(ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: Made in `new` (type invariants); destroying it runs what
        // is queued first.
        unsafe { bindings::destroy_workqueue(wq) };
    }
}
