// SPDX-License-Identifier: GPL-2.0

//! An active endpoint's connection slot: at most one connection, and the
//! receives posted before it exists.
//!
//! OFI lets a consumer post receives once the endpoint is enabled, before
//! fi_connect and FI_CONNECTED, so that a reply sent as soon as the peer
//! accepts cannot beat its receive. They wait here, in order, and go to the
//! connection when it is made.

use crate::abi;
use crate::kofi::{fi_error, report_cancelled, Context, EpRef, PostedRecv};
use crate::vec::VecExt;
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};

struct Slot<C> {
    conn: Option<Arc<C>>,
    early: KVec<PostedRecv>,
}

/// A connection slot (see the module documentation).
pub(crate) struct ConnSlot<C> {
    inner: Pin<KBox<Mutex<Slot<C>>>>,
    /// Receives it keeps at most before a connection (the endpoint's
    /// receive queue depth).
    depth: usize,
}

impl<C> ConnSlot<C> {
    /// A slot holding `conn` (a server endpoint's, from its request).
    pub(crate) fn new(conn: Option<Arc<C>>, depth: usize) -> Result<Self> {
        let slot = Slot {
            conn,
            early: KVec::new(),
        };
        Ok(ConnSlot {
            inner: KBox::pin_init(new_mutex!(slot, "kofi_conn_slot"), GFP_KERNEL)?,
            depth,
        })
    }

    /// The connection; -FI_ENOTCONN before there is one.
    pub(crate) fn get(&self) -> Result<Arc<C>> {
        self.inner
            .lock()
            .conn
            .clone()
            .ok_or_else(|| fi_error(abi::FI_ENOTCONN))
    }

    /// Takes the connection out (the endpoint is closing); receives still
    /// waiting for one complete FI_ECANCELED, reported to `ep`.
    pub(crate) fn take(&self, ep: &EpRef) -> Option<Arc<C>> {
        let mut s = self.inner.lock();
        for recv in core::mem::take(&mut s.early) {
            report_cancelled(ep, &recv);
        }
        s.conn.take()
    }

    /// Makes the connection with `make` (-FI_EISCONN when there is one) and
    /// hands it the receives posted so far, in order, through `post`.
    pub(crate) fn connect(
        &self,
        make: impl FnOnce() -> Result<Arc<C>>,
        post: impl Fn(&Arc<C>, PostedRecv) -> Result,
    ) -> Result {
        let mut s = self.inner.lock();
        if s.conn.is_some() {
            return Err(fi_error(abi::FI_EISCONN));
        }
        let conn = make()?;
        // Each fits: the connection's receive queue is at least `depth`.
        for recv in core::mem::take(&mut s.early) {
            let _ = post(&conn, recv);
        }
        s.conn = Some(conn);
        Ok(())
    }

    /// Posts `recv` through `post` on the connection, or keeps it for the
    /// connection to come (-FI_EAGAIN beyond the queue depth).
    pub(crate) fn recv(
        &self,
        recv: PostedRecv,
        post: impl FnOnce(&Arc<C>, PostedRecv) -> Result,
    ) -> Result {
        let mut s = self.inner.lock();
        if let Some(conn) = &s.conn {
            return post(conn, recv);
        }
        if s.early.len() >= self.depth {
            return Err(fi_error(abi::FI_EAGAIN));
        }
        s.early.push(recv, GFP_KERNEL)?;
        Ok(())
    }

    /// fi_cancel: the oldest receive posted with `context`, taken back here
    /// (reported to `ep`) while there is no connection, else by the
    /// connection's `cancel`.
    pub(crate) fn cancel(
        &self,
        context: Context,
        ep: &EpRef,
        cancel: impl FnOnce(&Arc<C>) -> Result,
    ) -> Result {
        let mut s = self.inner.lock();
        if let Some(conn) = &s.conn {
            return cancel(conn);
        }
        let i = s
            .early
            .iter()
            .position(|r| r.context == context)
            .ok_or_else(|| fi_error(abi::FI_ENOENT))?;
        report_cancelled(ep, &s.early.remove(i));
        Ok(())
    }
}
