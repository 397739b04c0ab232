// SPDX-License-Identifier: GPL-2.0

//! A count of the provider's live connections, read when its module
//! unloads. A connection still alive then is leaked, and kmemleak may not
//! say so: objects that hold each other (a connection and its device
//! entry, say) stay referenced. The unload names it instead, on a line the
//! test runs fail on (`kofi-leak:`, scripts/vmlog).

use core::sync::atomic::{AtomicUsize, Ordering};
use kernel::prelude::*;

/// The connections alive in this module (each provider's module compiles
/// this layer in, so each has its own count).
static LIVE_CONNECTIONS: AtomicUsize = AtomicUsize::new(0);

/// Held by a connection: counts it from its making to its drop.
pub(crate) struct Counted(());

impl Counted {
    pub(crate) fn new() -> Self {
        LIVE_CONNECTIONS.fetch_add(1, Ordering::Relaxed);
        Counted(())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        LIVE_CONNECTIONS.fetch_sub(1, Ordering::Release);
    }
}

/// Dropped last at unload, after the provider's state (its workqueue
/// drained, its devices gone): no connection may be left then.
pub(crate) struct UnloadCheck(());

impl UnloadCheck {
    pub(crate) fn new() -> Self {
        UnloadCheck(())
    }
}

impl Drop for UnloadCheck {
    fn drop(&mut self) {
        let live = LIVE_CONNECTIONS.load(Ordering::Acquire);
        if live != 0 {
            pr_err!("kofi-leak: {live} connection(s) alive at unload\n");
        }
    }
}
