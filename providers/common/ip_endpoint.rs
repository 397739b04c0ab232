// SPDX-License-Identifier: GPL-2.0

//! An IP provider's active endpoint apart from its transport
//! ([`IpEndpoint`]): at most one connection ([`IpConn`]), the address it
//! connects to, and the receives posted before the connection exists.
//!
//! OFI lets a consumer post receives once the endpoint is enabled, before
//! fi_connect and FI_CONNECTED, so that a reply sent as soon as the peer
//! accepts cannot beat its receive. They wait in the connection slot, in
//! order, and go to the connection when it is made.

use super::sockaddr::SockAddr;
use super::{fi_error, report_cancelled, Context, EpRef, InfoRef, PeerAddr, PostedRecv};
use crate::abi;
use crate::compat::VecExt;
use crate::flags::{FI_CLAIM, FI_PEEK};
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};

/// What an IP provider's connection does for the endpoint holding it.
pub(crate) trait IpConn: Send + Sync + Sized + 'static {
    /// fi_accept, on a connection request's connection.
    fn accept(self: &Arc<Self>, param: &[u8]) -> Result;
    /// fi_shutdown.
    fn shutdown(self: &Arc<Self>) -> Result;
    /// The connection's own address, or (`peer`) its peer's.
    fn addr(&self, peer: bool) -> Result<SockAddr>;
    /// Posts a receive (tagged or not) to be filled by the messages to come.
    fn post_recv(self: &Arc<Self>, recv: PostedRecv) -> Result;
    /// A tagged receive with FI_PEEK or FI_CLAIM: about the messages the
    /// connection holds.
    fn post_trecv(self: &Arc<Self>, recv: PostedRecv, flags: u64) -> Result;
    /// fi_cancel of a receive posted on the connection.
    fn cancel_recv(&self, context: Context) -> Result;
    /// Progress asked for by a consumer about to sleep on a queue.
    fn progress(self: &Arc<Self>);
    /// Closes the connection: its endpoint is closing.
    fn close(&self);
}

/// Implements [`IpConn`] for a connection type by its inherent methods of
/// the same names (a path call prefers them to the trait's), `progress` by
/// the one named. (Unused by providers without connections.)
#[allow(unused_macros)]
macro_rules! ip_conn_by_inherent_methods {
    ($conn:ty, progress: $progress:ident) => {
        impl $crate::kofi::ip_endpoint::IpConn for $conn {
            fn accept(self: &Arc<Self>, param: &[u8]) -> Result {
                <$conn>::accept(self, param)
            }

            fn shutdown(self: &Arc<Self>) -> Result {
                <$conn>::shutdown(self)
            }

            fn addr(&self, peer: bool) -> Result<$crate::kofi::sockaddr::SockAddr> {
                <$conn>::addr(self, peer)
            }

            fn post_recv(self: &Arc<Self>, recv: $crate::kofi::PostedRecv) -> Result {
                <$conn>::post_recv(self, recv)
            }

            fn post_trecv(self: &Arc<Self>, recv: $crate::kofi::PostedRecv, flags: u64) -> Result {
                <$conn>::post_trecv(self, recv, flags)
            }

            fn cancel_recv(&self, context: $crate::kofi::Context) -> Result {
                <$conn>::cancel_recv(self, context)
            }

            fn progress(self: &Arc<Self>) {
                <$conn>::$progress(self)
            }

            fn close(&self) {
                <$conn>::close(self)
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use ip_conn_by_inherent_methods;

/// The `kofi::Endpoint` impl of an IP provider's endpoint type `$ep` (an
/// `ip: IpEndpoint<$conn>` and a `domain` field): connection management,
/// names, receives, cancel and progress through its [`IpEndpoint`], the
/// same for every IP provider; the sends and RMA, the provider's own, are
/// given as `$ops` (the impl is `#[vtable]`'s, which sees them all).
/// (Unused by providers without connections.)
#[allow(unused_macros)]
macro_rules! ip_endpoint_ops {
    ($ep:ty, $conn:ty, { $($ops:tt)* }) => {
        #[vtable]
        impl $crate::kofi::Endpoint for $ep {
            fn connect(&self, addr: $crate::kofi::PeerAddr, param: &[u8]) -> Result {
                self.ip.connect(addr, |dest| {
                    let (ep, domain) = (self.ip.ep().clone(), self.domain.clone());
                    <$conn>::connect(dest, param, ep, domain, self.ip.rx_cq_data())
                })
            }

            fn accept(&self, param: &[u8]) -> Result {
                self.ip.accept(param)
            }

            fn shutdown(&self) -> Result {
                self.ip.shutdown()
            }

            fn getname(&self, out: &mut KVec<u8>) -> Result {
                self.ip.name(false, out)
            }

            fn getpeer(&self, out: &mut KVec<u8>) -> Result {
                self.ip.name(true, out)
            }

            fn recvmsg(&self, msg: &$crate::kofi::Msg<'_>, flags: u64) -> Result {
                self.ip.recv(msg.to_posted(flags)?, flags)
            }

            fn trecvmsg(&self, msg: &$crate::kofi::TaggedMsg<'_>, flags: u64) -> Result {
                use $crate::flags::{FI_DISCARD, FI_PEEK};
                // A peek or a discard uses no buffers (fi_tagged(3)).
                let buffers = flags & (FI_PEEK | FI_DISCARD) == 0;
                self.ip.recv(msg.to_posted(flags, buffers)?, flags)
            }

            fn cancel(&self, context: $crate::kofi::Context) -> Result {
                self.ip.cancel(context)
            }

            fn progress(&self) {
                self.ip.progress()
            }

            $($ops)*
        }
    };
}
#[allow(unused_imports)]
pub(crate) use ip_endpoint_ops;

/// An IP provider's active endpoint apart from its transport.
pub(crate) struct IpEndpoint<C: IpConn> {
    ep: EpRef,
    ipv6: bool,
    /// Where fi_connect goes without an address (the info's destination).
    dest: Option<SockAddr>,
    /// FI_RX_CQ_DATA mode (from its info).
    rx_cq_data: bool,
    slot: ConnSlot<C>,
}

impl<C: IpConn> IpEndpoint<C> {
    /// The endpoint `ep` of `info`, with the connection of its request
    /// (`conn`) for a server's; up to `depth` receives wait for a connection.
    pub(crate) fn new(
        ep: EpRef,
        info: &InfoRef<'_>,
        conn: Option<Arc<C>>,
        depth: usize,
    ) -> Result<Self> {
        let parts = info
            .dest_addr()
            .map(SockAddr::from_bytes)
            .transpose()
            .and_then(|dest| Ok((dest, ConnSlot::new(conn.clone(), depth)?)));
        let (dest, slot) = match parts {
            Ok(parts) => parts,
            Err(e) => {
                // The request's connection was bound to this endpoint, which
                // is not made after all: nothing may report to it any more.
                if let Some(conn) = conn {
                    conn.close();
                }
                return Err(e);
            }
        };
        Ok(IpEndpoint {
            ep,
            ipv6: info.addr_format() == abi::FI_SOCKADDR_IN6,
            dest,
            rx_cq_data: info.rx_cq_data(),
            slot,
        })
    }

    /// The kofi endpoint.
    pub(crate) fn ep(&self) -> &EpRef {
        &self.ep
    }

    /// Whether remote CQ data takes a posted receive (FI_RX_CQ_DATA).
    pub(crate) fn rx_cq_data(&self) -> bool {
        self.rx_cq_data
    }

    /// The connection; -FI_ENOTCONN before there is one.
    pub(crate) fn conn(&self) -> Result<Arc<C>> {
        self.slot.get()
    }

    /// fi_connect to `addr`, else to the info's destination, of the
    /// endpoint's family: `make` makes the connection to the address.
    pub(crate) fn connect(
        &self,
        addr: PeerAddr,
        make: impl FnOnce(&SockAddr) -> Result<Arc<C>>,
    ) -> Result {
        let dest = match addr.bytes(SockAddr::len_of(self.ipv6)) {
            Some(b) => SockAddr::from_bytes(b)?,
            None => self.dest.ok_or(EINVAL)?,
        };
        if dest.is_ipv6() != self.ipv6 {
            return Err(EINVAL);
        }
        self.slot.connect(|| make(&dest), C::post_recv)
    }

    /// fi_accept.
    pub(crate) fn accept(&self, param: &[u8]) -> Result {
        self.conn()?.accept(param)
    }

    /// fi_shutdown.
    pub(crate) fn shutdown(&self) -> Result {
        self.conn()?.shutdown()
    }

    /// fi_getname (`peer`: fi_getpeer): the connection's address into `out`.
    pub(crate) fn name(&self, peer: bool, out: &mut KVec<u8>) -> Result {
        let a = self.conn()?.addr(peer)?;
        out.extend_from_slice(a.bytes(), GFP_KERNEL)?;
        Ok(())
    }

    /// A receive, tagged or not: posted on the connection, or kept for it;
    /// a peek or claim asks the connection about what it holds.
    pub(crate) fn recv(&self, recv: PostedRecv, flags: u64) -> Result {
        if flags & (FI_PEEK | FI_CLAIM) != 0 {
            // About messages the connection holds: there must be one.
            return self.conn()?.post_trecv(recv, flags);
        }
        self.slot.recv(recv, C::post_recv)
    }

    /// fi_cancel of a receive.
    pub(crate) fn cancel(&self, context: Context) -> Result {
        self.slot
            .cancel(context, &self.ep, |conn| conn.cancel_recv(context))
    }

    /// Progress for a consumer about to sleep.
    pub(crate) fn progress(&self) {
        if let Ok(conn) = self.conn() {
            conn.progress();
        }
    }
}

impl<C: IpConn> Drop for IpEndpoint<C> {
    fn drop(&mut self) {
        if let Some(conn) = self.slot.take(&self.ep) {
            conn.close();
        }
    }
}

struct Slot<C> {
    conn: Option<Arc<C>>,
    early: KVec<PostedRecv>,
}

/// A connection slot: the connection, and the receives posted before it
/// (see the module documentation).
struct ConnSlot<C> {
    inner: Pin<KBox<Mutex<Slot<C>>>>,
    /// Receives it keeps at most before a connection (the endpoint's
    /// receive queue depth).
    depth: usize,
}

impl<C> ConnSlot<C> {
    /// A slot holding `conn` (a server endpoint's, from its request).
    fn new(conn: Option<Arc<C>>, depth: usize) -> Result<Self> {
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
    fn get(&self) -> Result<Arc<C>> {
        self.inner
            .lock()
            .conn
            .clone()
            .ok_or_else(|| fi_error(abi::FI_ENOTCONN))
    }

    /// Takes the connection out (the endpoint is closing); receives still
    /// waiting for one complete FI_ECANCELED, reported to `ep`.
    fn take(&self, ep: &EpRef) -> Option<Arc<C>> {
        let mut s = self.inner.lock();
        for recv in core::mem::take(&mut s.early) {
            report_cancelled(ep, &recv);
        }
        s.conn.take()
    }

    /// Makes the connection with `make` (-FI_EISCONN when there is one) and
    /// hands it the receives posted so far, in order, through `post`.
    fn connect(
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
    fn recv(&self, recv: PostedRecv, post: impl FnOnce(&Arc<C>, PostedRecv) -> Result) -> Result {
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
    fn cancel(
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
        report_cancelled(ep, &s.early.remove_at(i));
        Ok(())
    }
}
