// SPDX-License-Identifier: GPL-2.0

//! A connection's reads, through a small prefetch buffer.
//!
//! A frame is read in two steps, its header and then its payload, whose
//! destination the header names. Read straight from the socket that is two
//! receive calls for every frame, each taking and releasing the socket's
//! lock, where TCP usually holds the whole frame (or several) at once. A
//! short read (less than half the buffer: a header, a small payload) takes
//! instead what TCP holds, up to the buffer's size, in one call; the next
//! reads are served from the buffer first. A long read goes straight to its
//! destination, as before: only the first bytes of a large payload, those
//! that came with its header, are copied twice. (libfabric's tcp provider
//! reads the same way, `ofi_bsock_recv`.)
//!
//! The buffer holds bytes TCP no longer does: a connection's reader must ask
//! [`Reader::has_input`] or [`Reader::input_len`], never the socket.

// `clear`: the compatibility trait's on 6.12, inherent on 7.3.
#[allow(unused_imports)]
use crate::compat::VecExt;
use crate::kofi::{MrHold, PostedRecv};
use crate::socket::{Received, Socket};
use kernel::alloc::{Allocator, KVVec, Vec};
use kernel::prelude::*;

/// The buffer's size: a header with a page of payload and a small frame
/// behind it (a storage consumer's 4 KiB I/O and its command or response).
const PREFETCH_LEN: usize = 4096 + 512;

/// Bytes read from the socket ahead of the frame parser.
///
/// # Invariants
///
/// `start <= buf.len() <= PREFETCH_LEN`; `buf[start..]` are the bytes read
/// and not yet taken, in the socket's order, before any the socket holds.
pub(crate) struct Prefetch {
    buf: KVVec<u8>,
    start: usize,
}

impl Prefetch {
    pub(crate) fn new() -> Result<Prefetch> {
        // INVARIANT: empty.
        Ok(Prefetch {
            buf: KVVec::with_capacity(PREFETCH_LEN, GFP_KERNEL)?,
            start: 0,
        })
    }

    fn held(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Refills the empty buffer with what the socket holds, up to its size.
    fn fill(&mut self, sock: &Socket) -> Result<Received> {
        // INVARIANT: emptied before the socket appends to it, within the
        // capacity.
        self.buf.clear();
        self.start = 0;
        sock.recv_append(&mut self.buf, PREFETCH_LEN)
    }

    /// The next bytes held, at most `max`.
    fn peek(&self, max: usize) -> &[u8] {
        let end = self.start + self.held().min(max);
        &self.buf[self.start..end]
    }

    fn consume(&mut self, n: usize) {
        // INVARIANT: `n` bytes were peeked, so at most `held()`.
        self.start += n.min(self.held());
    }
}

/// A connection's socket read through its prefetch buffer.
pub(crate) struct Reader<'a> {
    sock: &'a Socket,
    prefetch: &'a mut Prefetch,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(sock: &'a Socket, prefetch: &'a mut Prefetch) -> Reader<'a> {
        Reader { sock, prefetch }
    }

    /// Whether a read could return something now: bytes, EOF or an error.
    pub(crate) fn has_input(&self) -> bool {
        self.prefetch.held() != 0 || self.sock.has_input()
    }

    /// Bytes ready to read (more may arrive meanwhile).
    pub(crate) fn input_len(&self) -> usize {
        self.prefetch.held() + self.sock.input_len()
    }

    /// Where the next read of up to `len` bytes comes from: the buffer if
    /// it holds any (refilled first for a short read), else the socket.
    fn source(&mut self, len: usize) -> Result<Source<'_>> {
        if self.prefetch.held() == 0 && len < PREFETCH_LEN / 2 {
            match self.prefetch.fill(self.sock)? {
                Received::Bytes(_) => {}
                other => return Ok(Source::Done(other)),
            }
        }
        Ok(match self.prefetch.held() {
            0 => Source::Socket,
            _ => Source::Buffer(self.prefetch.peek(len)),
        })
    }

    /// The buffer's next `n` bytes were copied out.
    fn took(&mut self, n: usize) -> Result<Received> {
        self.prefetch.consume(n);
        Ok(Received::Bytes(n))
    }

    /// Reads up to `buf.len()` bytes into `buf`.
    pub(crate) fn recv(&mut self, buf: &mut [u8]) -> Result<Received> {
        match self.source(buf.len())? {
            Source::Buffer(bytes) => {
                let n = bytes.len();
                buf[..n].copy_from_slice(bytes);
                self.took(n)
            }
            Source::Socket => self.sock.recv(buf),
            Source::Done(got) => Ok(got),
        }
    }

    /// Reads up to `len` bytes: the buffer's through `copy`, or the socket's
    /// through `direct`.
    fn read_with(
        &mut self,
        len: usize,
        copy: impl FnOnce(&[u8]) -> Result,
        direct: impl FnOnce(&Socket) -> Result<Received>,
    ) -> Result<Received> {
        match self.source(len)? {
            Source::Buffer(bytes) => {
                let n = bytes.len();
                copy(bytes)?;
                self.took(n)
            }
            Source::Socket => direct(self.sock),
            Source::Done(got) => Ok(got),
        }
    }

    /// Reads up to `len` bytes into `recv`'s buffers from byte `offset` on
    /// (`offset + len` within them).
    pub(crate) fn recv_into(
        &mut self,
        recv: &PostedRecv,
        offset: usize,
        len: usize,
    ) -> Result<Received> {
        self.read_with(
            len,
            |bytes| {
                if recv.fill_at(offset, bytes) == bytes.len() {
                    Ok(())
                } else {
                    Err(EFAULT)
                }
            },
            |sock| sock.recv_into(recv, offset, len),
        )
    }

    /// Reads up to `len` bytes into the window of the region `held` from
    /// byte `offset` on.
    pub(crate) fn recv_into_region(
        &mut self,
        held: &MrHold,
        offset: usize,
        len: usize,
    ) -> Result<Received> {
        self.read_with(
            len,
            |bytes| held.write(offset, bytes),
            |sock| sock.recv_into_region(held, offset, len),
        )
    }

    /// Appends at most `max` bytes to `v`, within its spare capacity.
    pub(crate) fn recv_append<A: Allocator>(
        &mut self,
        v: &mut Vec<u8, A>,
        max: usize,
    ) -> Result<Received> {
        let max = max.min(v.capacity() - v.len());
        match self.source(max)? {
            Source::Buffer(bytes) => {
                let n = bytes.len();
                // Within the capacity: nothing is allocated (the flags
                // are never used).
                v.extend_from_slice(bytes, GFP_KERNEL)?;
                self.took(n)
            }
            Source::Socket => self.sock.recv_append(v, max),
            Source::Done(got) => Ok(got),
        }
    }
}

/// Where a read's bytes come from.
enum Source<'b> {
    /// The buffer's next bytes, to copy out.
    Buffer(&'b [u8]),
    /// The socket itself.
    Socket,
    /// The refill found nothing: would block, EOF.
    Done(Received),
}
