// SPDX-License-Identifier: GPL-2.0

//! The objects an RDM endpoint opens through the public calls, as owned
//! handles: dropping one closes it. The one place the RDM layer holds raw
//! object pointers.

use crate::abi;
use crate::api_objects::fi_close;
use core::ptr::NonNull;
use kernel::prelude::*;

/// An object the RDM endpoint opened and closes.
///
/// # Invariants
///
/// `0` is an object from kofi's open calls, not yet closed.
pub(crate) struct Handle<T>(NonNull<T>);

// SAFETY: kofi objects may be used and closed from any thread.
unsafe impl<T> Send for Handle<T> {}

impl<T> Handle<T> {
    /// Takes ownership of an object an open call gave.
    ///
    /// # Safety
    ///
    /// `p` is a kofi object (whose head is a `struct fid`) that nothing
    /// else closes.
    pub(crate) unsafe fn new(p: *mut T) -> Option<Handle<T>> {
        NonNull::new(p).map(Handle)
    }

    pub(crate) fn as_ptr(&self) -> *mut T {
        self.0.as_ptr()
    }
}

impl<T> Drop for Handle<T> {
    fn drop(&mut self) {
        // Owned and open (the type invariant); not used after.
        let ret = fi_close(self.0.as_ptr().cast::<abi::fid>());
        if ret != 0 {
            // Only a queue still bound can refuse, and the RDM endpoint closes
            // its endpoints first.
            pr_warn!("rdm: closing an internal object: {}\n", ret);
        }
    }
}

/// An info the RDM endpoint owns.
///
/// # Invariants
///
/// `0` is an info list from kofi, freed only here.
pub(crate) struct InfoBox(NonNull<abi::fi_info>);

// SAFETY: An info is plain memory.
unsafe impl Send for InfoBox {}

impl InfoBox {
    /// # Safety
    ///
    /// `p` is null or an info the caller gives up.
    pub(crate) unsafe fn new(p: *mut abi::fi_info) -> Option<InfoBox> {
        NonNull::new(p).map(InfoBox)
    }

    pub(crate) fn as_ptr(&self) -> *mut abi::fi_info {
        self.0.as_ptr()
    }

    /// A deep copy.
    pub(crate) fn dup(&self) -> Result<InfoBox> {
        // SAFETY: The info is valid (invariant); the copy is ours.
        unsafe { InfoBox::new(crate::info::fi_dupinfo(self.as_ptr())) }.ok_or(ENOMEM)
    }
}

impl Drop for InfoBox {
    fn drop(&mut self) {
        crate::info::fi_freeinfo(self.0.as_ptr());
    }
}
