// SPDX-License-Identifier: GPL-2.0

//! Byte buffers a connection keeps for its next sends: the copy of an
//! inject's bytes (or a frame's header) goes into a buffer a completed send
//! gave back, so a busy connection allocates nothing per send (issue 16:
//! allocations on every operation; nvme-rdma and nvme-tcp keep theirs per
//! request too).

// `pop` and `clear`: the compatibility trait's on 6.12, inherent on 7.3.
#[allow(unused_imports)]
use crate::compat::VecExt;
use kernel::alloc::{Allocator, Vec};
use kernel::prelude::*;

/// At most `count` buffers of at most `largest` bytes of capacity.
pub(crate) struct KeptBuffers<A: Allocator> {
    bufs: KVec<Vec<u8, A>>,
    largest: usize,
}

impl<A: Allocator> KeptBuffers<A> {
    /// Room for `count` buffers, made now: keeping one never allocates.
    pub(crate) fn new(count: usize, largest: usize) -> Result<Self> {
        Ok(KeptBuffers {
            bufs: KVec::with_capacity(count, GFP_KERNEL)?,
            largest,
        })
    }

    /// An empty buffer with room for `len` bytes: a kept one (grown if it
    /// is too small), else a new one.
    pub(crate) fn take(&mut self, len: usize) -> Result<Vec<u8, A>> {
        let mut buf = self.bufs.pop().unwrap_or_else(Vec::new);
        buf.clear();
        buf.reserve(len, GFP_KERNEL)?;
        Ok(buf)
    }

    /// A buffer no send uses any more (nor the device: unmapped), kept
    /// for the next unless it is too large or there are enough.
    pub(crate) fn keep(&mut self, buf: Vec<u8, A>) {
        let cap = buf.capacity();
        if cap != 0 && cap <= self.largest && self.bufs.len() < self.bufs.capacity() {
            // Within the room made at `new`: no allocation.
            let _ = self.bufs.push(buf, GFP_ATOMIC);
        }
    }
}
