// SPDX-License-Identifier: GPL-2.0

//! A passive endpoint's listening socket, and the connections it accepted
//! whose CONNECT has not yet become an FI_CONNREQ.
//!
//! Until its request is handed to the core, an accepted connection belongs to
//! the listener alone: closing the passive endpoint closes it, so no socket
//! outlives the endpoint (or the module) it would report to. Beyond
//! [`MAX_PENDING`] such connections, the oldest one whose peer has sent
//! nothing goes to make room once it has waited [`SLOW_MS`] (a burst of
//! real clients, each sending its CONNECT at once, loses none, however long
//! their CONNECTs wait to be read), and beyond [`MAX_PENDING_HARD`] the
//! oldest whatever its state; none is held longer than [`HANDSHAKE_MS`]: a
//! timer, armed for the oldest, closes those that have not sent their
//! CONNECT by then.

use crate::compat::Stamp;
use crate::compat::VecExt;
use crate::conn::Conn;
use crate::kofi::{Info, PepRef};
use crate::socket::{SockAddr, Socket, SocketOwner};
use crate::timer::{Timer, TimerOwner};
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, ArcBorrow, Mutex};
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};

/// Accepted connections waiting for their CONNECT, per listener, before the
/// slow ones make room.
pub(crate) const MAX_PENDING: usize = 64;
/// Beyond this many, the oldest makes room whatever its age.
pub(crate) const MAX_PENDING_HARD: usize = 1024;
/// A connection this slow to send its CONNECT makes room beyond
/// [`MAX_PENDING`].
pub(crate) const SLOW_MS: i64 = 3_000;
/// How long an accepted connection may take to send its CONNECT.
pub(crate) const HANDSHAKE_MS: i64 = 10_000;
/// The listening socket's backlog.
const BACKLOG: i32 = 128;

/// The connections a listener still owns.
struct Pending {
    /// False once the passive endpoint closed: nothing is accepted or
    /// handed over after.
    open: bool,
    /// Each with the time it was accepted.
    conns: KVec<(Arc<Conn>, Stamp)>,
}

/// A listening socket; its work accepts connections.
#[pin_data]
pub(crate) struct Listener {
    #[pin]
    work: Work<Listener>,
    #[pin]
    sock: Mutex<Option<Socket>>,
    /// Lock order: `pending`, then a connection's own lock.
    #[pin]
    pending: Mutex<Pending>,
    /// Valid while `pending.open`: the passive endpoint closes the listener
    /// before it goes.
    pep: PepRef,
    /// Armed while connections are pending, for the oldest one's deadline.
    timer: Timer<Listener>,
}

impl_has_work! {
    impl HasWork<Self> for Listener { self.work }
}

impl WorkItem for Listener {
    type Pointer = Arc<Listener>;

    fn run(this: Arc<Listener>) {
        this.accept_all();
    }
}

impl SocketOwner for Listener {
    /// A connection to accept (or the socket's state changed): the work
    /// accepts it.
    fn socket_event(this: ArcBorrow<'_, Self>) {
        let _ = crate::workqueue::queue().enqueue(Arc::<Listener>::from(this));
    }
}

impl TimerOwner for Listener {
    /// The timer expired (softirq): the work closes what waited too long.
    fn timer_fired(this: Arc<Listener>) {
        // Already queued: that run expires them. (The passive endpoint's
        // close holds a reference while it stops the timer, so this one is
        // never the last.)
        let _ = crate::workqueue::queue().enqueue(this);
    }
}

impl Listener {
    pub(crate) fn new(src: &SockAddr, pep: PepRef) -> Result<Arc<Listener>> {
        let sock = Socket::new(src.is_ipv6())?;
        sock.listen(src, BACKLOG)?;
        let timer = Timer::new()?;
        let l = Arc::pin_init(
            pin_init!(Listener {
                work <- new_work!("kofi_sock_listener"),
                sock <- new_mutex!(Some(sock), "kofi_sock_listener"),
                pending <- new_mutex!(
                    Pending {
                        open: true,
                        conns: KVec::new(),
                    },
                    "kofi_sock_listener_pending"
                ),
                pep,
                timer,
            }),
            GFP_KERNEL,
        )?;
        if let Some(s) = &mut *l.sock.lock() {
            s.attach(l.clone())?;
        }
        Ok(l)
    }

    fn accept_all(self: Arc<Self>) {
        self.expire();
        loop {
            let accepted = {
                let g = self.sock.lock();
                match g.as_ref() {
                    Some(s) => s.accept(),
                    None => return,
                }
            };
            let sock = match accepted {
                Ok(Some(sock)) => sock,
                Ok(None) | Err(_) => return,
            };
            // A socket we cannot keep is dropped (closed).
            if let Ok(conn) = self.adopt(sock) {
                // Data may have arrived before the callbacks were ours.
                conn.kick();
            }
        }
    }

    /// Closes the pending connections older than [`HANDSHAKE_MS`]; arms
    /// the timer for the oldest of the others.
    fn expire(self: &Arc<Self>) {
        let mut p = self.pending.lock();
        Self::expire_locked(&mut p, Stamp::now());
        self.arm(&p);
    }

    fn expire_locked(p: &mut Pending, now: Stamp) {
        let mut i = 0;
        while i < p.conns.len() {
            if now.ms_since(p.conns[i].1) >= HANDSHAKE_MS {
                p.conns.swap_remove(i).0.close();
            } else {
                i += 1;
            }
        }
    }

    /// Arms the timer for the oldest pending connection's deadline, while
    /// the listener is open (after its close, nothing arms it).
    fn arm(self: &Arc<Self>, p: &Pending) {
        let oldest = p.conns.iter().map(|&(_, at)| at).min();
        if let (true, Some(oldest)) = (p.open, oldest) {
            let age_ms = oldest.elapsed_ms();
            let ms = (HANDSHAKE_MS - age_ms).clamp(1, HANDSHAKE_MS) + 1;
            self.timer.arm(self, ms as u32);
        }
    }

    /// A connection for `sock`, among the pending ones, room made as the
    /// module doc says.
    fn adopt(self: &Arc<Self>, sock: Socket) -> Result<Arc<Conn>> {
        let mut p = self.pending.lock();
        if !p.open {
            return Err(EINVAL);
        }
        let now = Stamp::now();
        Self::expire_locked(&mut p, now);
        if p.conns.len() >= MAX_PENDING_HARD {
            let oldest = (0..p.conns.len()).min_by_key(|&i| p.conns[i].1);
            if let Some(i) = oldest {
                p.conns.swap_remove(i).0.close();
            }
        } else if p.conns.len() >= MAX_PENDING {
            // The oldest of those the peer has sent nothing on: under a
            // burst, a CONNECT that arrived may wait seconds for its work
            // item, and that connection is not slow.
            let silent = (0..p.conns.len())
                .filter(|&i| !p.conns[i].0.heard_from())
                .min_by_key(|&i| p.conns[i].1);
            if let Some(i) = silent {
                if now.ms_since(p.conns[i].1) >= SLOW_MS {
                    p.conns.swap_remove(i).0.close();
                }
            }
        }
        p.conns.reserve(1, GFP_KERNEL)?;
        // Under `pending`: its socket's callbacks may run its work at once,
        // and a CONNECT it reads is handed over (`hand_over`, which takes
        // `pending`) only once it is pending.
        let conn = Conn::accepted(sock, self.clone())?;
        if let Err(e) = p.conns.push((conn.clone(), now), GFP_KERNEL) {
            // Not reached (room reserved); the socket holds `conn` open.
            conn.close();
            return Err(e.into());
        }
        self.arm(&p);
        Ok(conn)
    }

    /// Hands `conn`'s request to the passive endpoint (FI_CONNREQ); `conn`
    /// is closed instead when the listener no longer owns it.
    pub(crate) fn hand_over(&self, conn: &Arc<Conn>, info: Info, data: &[u8]) {
        let mut p = self.pending.lock();
        let Some(i) = p.conns.iter().position(|(c, _)| Arc::ptr_eq(c, conn)) else {
            drop(p);
            conn.close();
            return;
        };
        let (conn, _) = p.conns.swap_remove(i);
        // Under the lock, so the passive endpoint cannot close meanwhile. A
        // request the core does not take is dropped, which closes `conn`.
        let _ = self.pep.connreq(info, crate::Request::new(conn), data);
    }

    /// Lets go of `conn`, which closed before its request went out.
    pub(crate) fn forget(&self, conn: &Arc<Conn>) {
        let gone = {
            let mut p = self.pending.lock();
            let i = p.conns.iter().position(|(c, _)| Arc::ptr_eq(c, conn));
            i.map(|i| p.conns.swap_remove(i))
        };
        drop(gone);
    }

    pub(crate) fn addr(&self) -> Result<SockAddr> {
        self.sock.lock().as_ref().ok_or(EINVAL)?.name(false)
    }

    /// Stops accepting and closes every connection not yet handed over.
    pub(crate) fn close(&self) {
        // Dropping the socket detaches it and stops new connections.
        *self.sock.lock() = None;
        let conns = {
            let mut p = self.pending.lock();
            p.open = false;
            core::mem::take(&mut p.conns)
        };
        // Not armed again: only an open listener arms it.
        self.timer.stop();
        for (c, _) in conns {
            c.close();
        }
    }
}
