// SPDX-License-Identifier: GPL-2.0

//! A kernel TCP socket, through the C glue: nonblocking operations, and
//! callbacks that wake an owner (a connection or a listener) through
//! [`SocketOwner`].

use crate::abi;
use crate::compat::VecExt;
use crate::kofi::{MrHold, PostedRecv};
pub(crate) use crate::sockaddr::SockAddr;
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::alloc::{Allocator, Vec};
use kernel::error::to_result;
use kernel::ffi::c_uint;
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};

/// What a nonblocking receive got.
pub(crate) enum Received {
    Bytes(usize),
    WouldBlock,
    Eof,
}

/// What a socket's callbacks wake.
pub(crate) trait SocketOwner: Send + Sync + Sized + 'static {
    /// Bytes to read, room to write or a new state on the socket `this` is
    /// attached to (softirq or process context, bottom halves off).
    fn socket_event(this: ArcBorrow<'_, Self>);
}

/// A socket's user data: the owner its callbacks wake.
///
/// # Invariants
///
/// `raw.owner` is a reference of an `Arc<T>` this value holds, given up
/// when it drops; `raw.wake` is [`woken::<T>`] and `release` is
/// [`release::<T>`], for the same `T: SocketOwner`.
struct Attachment {
    raw: abi::ksock_waker,
    release: unsafe fn(*const c_void),
}

impl Attachment {
    fn new<T: SocketOwner>(owner: Arc<T>) -> Attachment {
        // INVARIANT: The reference goes to the attachment, with `T`'s entry
        // points.
        Attachment {
            raw: abi::ksock_waker {
                wake: Some(woken::<T>),
                owner: Arc::into_raw(owner).cast(),
            },
            release: release::<T>,
        }
    }
}

impl Drop for Attachment {
    fn drop(&mut self) {
        // SAFETY: The attachment's own reference, for the `T` of `release`
        // (type invariants), given up once, here.
        unsafe { (self.release)(self.raw.owner) };
    }
}

/// A socket callback, for an owner of type `T`.
///
/// # Safety
///
/// Called by the socket glue with the `owner` of an [`Attachment`] for `T`
/// that is attached: its detach waits for this call to return.
unsafe extern "C" fn woken<T: SocketOwner>(owner: *const c_void) {
    // SAFETY: The attachment holds a reference of this `Arc<T>` until it is
    // detached and dropped, which waits for this call (the caller's
    // guarantee).
    T::socket_event(unsafe { ArcBorrow::from_raw(owner.cast::<T>()) });
}

/// Gives up an attachment's reference.
///
/// # Safety
///
/// `owner` is a reference of an `Arc<T>` from `Arc::into_raw`, not used
/// after this.
unsafe fn release<T: SocketOwner>(owner: *const c_void) {
    // SAFETY: The caller's guarantee.
    drop(unsafe { Arc::from_raw(owner.cast::<T>()) });
}

/// A kernel TCP socket.
///
/// # Invariants
///
/// `ptr` is a socket this value created or accepted and releases on drop;
/// `attached`, when set, is the socket's user data, which its callbacks
/// read until it is detached.
pub(crate) struct Socket {
    ptr: NonNull<abi::socket>,
    attached: Option<Pin<KBox<Attachment>>>,
}

// SAFETY: Socket calls may be made from any process context; the callbacks'
// owner is reference counted.
unsafe impl Send for Socket {}
// SAFETY: As above; all methods take `&self` only for nonblocking calls.
unsafe impl Sync for Socket {}

impl Socket {
    pub(crate) fn new(ipv6: bool) -> Result<Socket> {
        let family = if ipv6 { abi::AF_INET6 } else { abi::AF_INET } as i32;
        let mut ptr = core::ptr::null_mut();
        // SAFETY: `ptr` is written on success.
        to_result(unsafe { abi::ksock_create(family, &mut ptr) })?;
        Ok(Socket {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
            attached: None,
        })
    }

    fn raw(&self) -> *mut abi::socket {
        self.ptr.as_ptr()
    }

    /// Makes the socket's callbacks wake `owner`, which the socket holds
    /// until it is detached.
    pub(crate) fn attach<T: SocketOwner>(&mut self, owner: Arc<T>) -> Result {
        self.detach();
        let attachment = KBox::pin(Attachment::new(owner), GFP_KERNEL)?;
        // SAFETY: The socket is ours; the attachment stays where it is until
        // `detach`, which waits out callbacks in progress before dropping it.
        unsafe { abi::ksock_attach(self.raw(), &attachment.raw) };
        // INVARIANT: The socket's user data is now this attachment.
        self.attached = Some(attachment);
        Ok(())
    }

    /// Stops the callbacks; once this returns none is running.
    pub(crate) fn detach(&mut self) {
        if let Some(attachment) = self.attached.take() {
            // SAFETY: The socket is ours.
            unsafe { abi::ksock_detach(self.raw()) };
            drop(attachment);
        }
    }

    pub(crate) fn listen(&self, addr: &SockAddr, backlog: i32) -> Result {
        // SAFETY: The socket is ours; `addr` is a valid address.
        to_result(unsafe { abi::ksock_listen(self.raw(), &addr.0, backlog) })
    }

    /// A pending connection, or None.
    pub(crate) fn accept(&self) -> Result<Option<Socket>> {
        let mut ptr = core::ptr::null_mut();
        // SAFETY: The socket is ours; `ptr` is written on success.
        let ret = unsafe { abi::ksock_accept(self.raw(), &mut ptr) };
        if ret == -(abi::EAGAIN as i32) {
            return Ok(None);
        }
        to_result(ret)?;
        Ok(Some(Socket {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
            attached: None,
        }))
    }

    pub(crate) fn connect(&self, addr: &SockAddr) -> Result {
        // SAFETY: The socket is ours; `addr` is a valid address.
        to_result(unsafe { abi::ksock_connect(self.raw(), &addr.0) })
    }

    /// Whether received bytes wait to be read.
    pub(crate) fn readable(&self) -> bool {
        // SAFETY: The socket is ours.
        unsafe { abi::ksock_readable(self.raw()) }
    }

    /// Whether a read could find something: bytes, EOF or an error. When
    /// not, the socket's callbacks come before there is.
    pub(crate) fn has_input(&self) -> bool {
        // SAFETY: The socket is ours.
        unsafe { abi::ksock_has_input(self.raw()) }
    }

    /// Whether the connection is established (false: still connecting).
    pub(crate) fn established(&self) -> Result<bool> {
        // SAFETY: The socket is ours.
        let ret = unsafe { abi::ksock_state(self.raw()) };
        to_result(ret.min(0))?;
        Ok(ret == 1)
    }

    /// Sends `header` then `payload` (an iterator over the bytes that follow
    /// it, the consumer's lent buffers or a copy) in one call, as far as the
    /// socket takes them: the bytes sent, counting the header's; 0 when the
    /// socket is full. A payload in many pieces may leave it to the header
    /// alone. TCP copies what it takes before returning: pages are not
    /// spliced, so a send's completion means the buffers may be reused, as
    /// OFI says (a spliced page stays referenced by TCP until the peer
    /// acknowledges it, and rewriting it before then changes what the peer
    /// receives).
    pub(crate) fn send_frame(
        &self,
        header: &[u8],
        payload: Option<&abi::iov_iter>,
        more: bool,
    ) -> Result<usize> {
        let payload = payload.map_or(core::ptr::null(), core::ptr::from_ref);
        // SAFETY: The socket is ours; `header` is readable for its length
        // and `payload`, when given, describes buffers readable until the
        // frame's send completes (TCP copies them before returning).
        let ret = unsafe {
            abi::ksock_send_frame(
                self.raw(),
                header.as_ptr().cast(),
                header.len(),
                payload,
                more,
            )
        };
        if ret == -(abi::EAGAIN as i32) {
            return Ok(0);
        }
        to_result(ret.min(0))?;
        Ok(ret as usize)
    }

    /// Bytes TCP holds ready to read (more may arrive meanwhile).
    pub(crate) fn input_len(&self) -> usize {
        // SAFETY: The socket is ours.
        unsafe { abi::ksock_inq(self.raw()) }
    }

    /// Receives what is there, up to `len` bytes, straight into `recv`'s
    /// buffers from byte `offset` on (`offset + len` within them).
    pub(crate) fn recv_into(
        &self,
        recv: &PostedRecv,
        offset: usize,
        len: usize,
    ) -> Result<Received> {
        let iter = recv.iter_at(offset);
        // SAFETY: `iter` describes the consumer's receive buffers, lent
        // until the receive completes.
        unsafe { self.recv_iter(&iter, len) }
    }

    /// Receives what is there, up to `len` bytes, into the window of the
    /// region `held` from byte `offset` on.
    pub(crate) fn recv_into_region(
        &self,
        held: &MrHold,
        offset: usize,
        len: usize,
    ) -> Result<Received> {
        let iter = held.iter(abi::ITER_DEST, offset, len)?;
        // SAFETY: `iter` describes the held region's memory (checked to lie
        // in its window), which stays while it is held.
        unsafe { self.recv_iter(&iter, len) }
    }

    /// Receives what is there, up to `len` bytes, into `iter`'s memory.
    ///
    /// # Safety
    ///
    /// `iter` describes memory writable for `len` bytes for the call.
    unsafe fn recv_iter(&self, iter: &abi::iov_iter, len: usize) -> Result<Received> {
        // SAFETY: The socket is ours; the caller's guarantee for `iter`.
        let ret = unsafe { abi::ksock_recv_iter(self.raw(), iter, len) };
        Ok(match ret {
            0 => Received::Eof,
            n if n > 0 => Received::Bytes(n as usize),
            n if n == -(abi::EAGAIN as i32) => Received::WouldBlock,
            n => return Err(Error::from_errno(n)),
        })
    }

    /// Receives what is there, up to `buf.len()` bytes.
    pub(crate) fn recv(&self, buf: &mut [u8]) -> Result<Received> {
        // SAFETY: `MaybeUninit<u8>` has the layout of `u8`, and the receive
        // writes only initialised bytes, so `buf` stays initialised.
        let uninit =
            unsafe { &mut *(core::ptr::from_mut(buf) as *mut [core::mem::MaybeUninit<u8>]) };
        self.recv_uninit(uninit)
    }

    /// As [`Socket::recv`], appending at most `max` bytes to `v`, within its
    /// spare capacity.
    pub(crate) fn recv_append<A: Allocator>(
        &self,
        v: &mut Vec<u8, A>,
        max: usize,
    ) -> Result<Received> {
        let spare = v.spare_capacity_mut();
        let room = spare.len().min(max);
        let got = self.recv_uninit(&mut spare[..room])?;
        if let Received::Bytes(n) = got {
            // SAFETY: The socket wrote `n` bytes past the length (at most the
            // `room` offered, within the capacity).
            unsafe { v.grow_len(n.min(room)) };
        }
        Ok(got)
    }

    /// As [`Socket::recv`], into memory not yet initialised (the socket
    /// writes the bytes it reports).
    fn recv_uninit(&self, buf: &mut [core::mem::MaybeUninit<u8>]) -> Result<Received> {
        let iov = abi::kvec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: The socket is ours; `iov` describes `buf`, which the
        // receive only writes.
        let ret = unsafe { abi::ksock_recv(self.raw(), &iov, 1, buf.len()) };
        Ok(match ret {
            0 => Received::Eof,
            n if n > 0 => Received::Bytes(n as usize),
            n if n == -(abi::EAGAIN as i32) => Received::WouldBlock,
            n => return Err(Error::from_errno(n)),
        })
    }

    pub(crate) fn shutdown(&self) {
        // SAFETY: The socket is ours.
        unsafe { abi::ksock_shutdown(self.raw()) };
    }

    /// The local (or, with `peer`, the remote) address.
    pub(crate) fn name(&self, peer: bool) -> Result<SockAddr> {
        let mut ss = abi::__kernel_sockaddr_storage::default();
        // SAFETY: The socket is ours; `ss` is written.
        let ret = unsafe { abi::ksock_getname(self.raw(), &mut ss, peer) };
        to_result(ret.min(0))?;
        Ok(SockAddr(ss))
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        self.detach();
        // SAFETY: The socket is ours (type invariants) and not used after.
        unsafe { abi::ksock_release(self.raw()) };
    }
}

/// A stretch of the task in which its allocations do no I/O
/// (memalloc_noio_save): a storage consumer's writes may be what reclaim
/// waits for. Restored on drop, by the task that entered it.
pub(crate) struct NoIo {
    flags: c_uint,
    /// Restored on the task that saved it: neither `Send` nor `Sync`.
    _task: PhantomData<*mut ()>,
}

impl NoIo {
    pub(crate) fn enter() -> NoIo {
        NoIo {
            // SAFETY: No preconditions; `drop` restores the state.
            flags: unsafe { abi::ksock_noio_save() },
            _task: PhantomData,
        }
    }
}

impl Drop for NoIo {
    fn drop(&mut self) {
        // SAFETY: Restores what `enter` saved, on the same task (the type
        // is not `Send`).
        unsafe { abi::ksock_noio_restore(self.flags) };
    }
}
