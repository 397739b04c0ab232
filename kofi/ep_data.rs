// SPDX-License-Identifier: GPL-2.0

//! An endpoint's data operations as typed calls: the checks every form of a
//! send, receive and RMA shares, and the one provider op each reaches
//! (sendmsg, recvmsg, readmsg, writemsg). The exports (api_data.rs,
//! api_tagged.rs, api_atomic.rs) convert their C arguments and call these;
//! the RDM layer calls them on its MSG endpoints. `FI_COMPLETION` in the
//! flags the provider gets says whether a completion is wanted (see
//! `kofi_ep_complete`).

use crate::abi;
use crate::errno;
use crate::flags::*;
use crate::info_match;
use crate::iov::Local;
use crate::mr::check_descs;
use crate::msg::{Msg, Rma, RmaMsg, TaggedMsg};
use crate::object::{lookup, on_backend, Endpoint};
use kernel::prelude::*;

/// Flags a tagged receive accepts from the consumer.
const TRECV_FLAGS: u64 = RX_OP_FLAGS | FI_PEEK | FI_CLAIM | FI_DISCARD;

/// The endpoint `ep` names, enabled and with capability `cap` in direction
/// `dir` ([`Endpoint::ready`]).
///
/// # Safety
///
/// `ep` is null or a kofi fid the caller keeps open.
pub(crate) unsafe fn ready<'a>(ep: *mut abi::fid_ep, cap: u64, dir: u64) -> Result<&'a Endpoint> {
    // SAFETY: The caller's guarantee.
    let e = unsafe { lookup::<Endpoint>(ep) }?;
    e.ready(cap, dir)?;
    Ok(e)
}

impl Endpoint {
    /// Enabled, with capability `cap` in direction `dir` (FI_SEND, FI_RECV,
    /// FI_READ or FI_WRITE).
    pub(crate) fn ready(&self, cap: u64, dir: u64) -> Result {
        if !self.is_enabled() {
            return Err(errno::eopbadstate());
        }
        if self.limits.caps & cap == 0 || !info_match::allows(self.limits.caps, dir) {
            return Err(errno::eopnotsupp());
        }
        Ok(())
    }

    /// The completion flag for a call: wanted unless the CQ is selective and
    /// the consumer did not ask (by flags, or the default op_flags).
    pub(crate) fn completion(&self, rx: bool, asked: u64) -> u64 {
        let b = self.bindings.lock();
        let selective = if rx { b.rx_selective } else { b.tx_selective };
        if !selective || asked & FI_COMPLETION != 0 {
            FI_COMPLETION
        } else {
            0
        }
    }

    /// The flags of a `*msg` call: the consumer's, with a completion when
    /// wanted.
    pub(crate) fn call_flags(&self, rx: bool, flags: u64) -> u64 {
        (flags & !FI_COMPLETION) | self.completion(rx, flags)
    }

    /// The flags of a plain call (fi_send, ...): the default op_flags
    /// (checked at fi_endpoint), with a completion when wanted.
    pub(crate) fn plain_flags(&self, rx: bool) -> u64 {
        let defaults = if rx {
            self.limits.rx_op_flags
        } else {
            self.limits.tx_op_flags
        };
        (defaults & !FI_COMPLETION) | self.completion(rx, defaults)
    }

    /// Checks an operation's local buffers against the iov limit `limit`
    /// and their descriptors against the domain (the regions must grant
    /// `access`); their total length.
    ///
    /// # Safety
    ///
    /// Each of `local.desc` is null or a descriptor of a region that stays
    /// open for the call.
    pub(crate) unsafe fn check_local(
        &self,
        local: &Local<'_>,
        limit: usize,
        access: u64,
    ) -> Result<usize> {
        if local.iov.count() > limit {
            return Err(EINVAL);
        }
        let total = local.iov.total()?;
        // SAFETY: The caller's guarantee.
        unsafe { check_descs(&self.domain, local, access) }?;
        Ok(total)
    }

    /// Checks a send's buffers and flags against the endpoint's limits.
    ///
    /// # Safety
    ///
    /// As for [`Self::check_local`].
    pub(crate) unsafe fn check_send(&self, local: &Local<'_>, flags: u64) -> Result {
        if flags & !TX_OP_FLAGS != 0 {
            return Err(errno::ebadflags());
        }
        // SAFETY: The caller's guarantee.
        let total = unsafe { self.check_local(local, self.limits.tx_iov_limit, FI_SEND) }?;
        self.check_tx_size(total, flags)
    }

    /// Checks a transmit of `total` bytes against the maximum message size,
    /// an inject's size, and remote CQ data against the domain.
    fn check_tx_size(&self, total: usize, flags: u64) -> Result {
        if total > self.limits.max_msg_size {
            return Err(errno::emsgsize());
        }
        if flags & FI_INJECT != 0 && total > self.limits.inject_size {
            return Err(errno::emsgsize());
        }
        if flags & FI_REMOTE_CQ_DATA != 0 && self.domain.cq_data_size == 0 {
            return Err(errno::ebadflags());
        }
        Ok(())
    }

    /// Checks a receive's buffers against the endpoint's limits.
    ///
    /// # Safety
    ///
    /// As for [`Self::check_local`].
    pub(crate) unsafe fn check_recv(&self, local: &Local<'_>) -> Result {
        // SAFETY: The caller's guarantee.
        unsafe { self.check_local(local, self.limits.rx_iov_limit, FI_RECV) }.map(|_| ())
    }

    /// Posts a send of `m` (`flags`: the call's, with `FI_COMPLETION` when
    /// a completion is wanted).
    ///
    /// # Safety
    ///
    /// `m`'s buffers are readable until the send completes (or its posting
    /// fails); each of its descriptors is null or a region's, open for the
    /// call.
    pub(crate) unsafe fn send(&self, m: &Msg<'_>, flags: u64) -> Result {
        self.ready(FI_MSG, FI_SEND)?;
        // SAFETY: The caller's guarantee.
        unsafe { self.check_send(&m.local, flags) }?;
        // SAFETY: The caller's guarantee.
        unsafe { on_backend!(self, |b| b.send(self, m, flags)) }
    }

    /// Posts a receive into `m`'s buffers (`flags` as for [`Self::send`]).
    ///
    /// # Safety
    ///
    /// `m`'s buffers are writable, and used by nothing else, until the
    /// receive completes (or its posting fails); descriptors as for
    /// [`Self::send`].
    pub(crate) unsafe fn recv(&self, m: &Msg<'_>, flags: u64) -> Result {
        self.ready(FI_MSG, FI_RECV)?;
        let multi = if self.limits.caps & FI_MULTI_RECV != 0 {
            FI_MULTI_RECV
        } else {
            0
        };
        if flags & !(RX_OP_FLAGS | multi) != 0 {
            return Err(errno::ebadflags());
        }
        // SAFETY: The caller's guarantee.
        unsafe { self.check_recv(&m.local) }?;
        // SAFETY: The caller's guarantee.
        unsafe { on_backend!(self, |b| b.recv(self, m, flags)) }
    }

    /// Posts an RMA between `m`'s buffers and the peer's `remote` ones,
    /// which are as long in total (`flags` as for [`Self::send`]).
    ///
    /// # Safety
    ///
    /// As for [`Self::send`] for a write, [`Self::recv`] for a read.
    pub(crate) unsafe fn rma(&self, kind: Rma, m: &RmaMsg<'_>, flags: u64) -> Result {
        let remote = m.remote;
        let dir = if kind == Rma::Read { FI_READ } else { FI_WRITE };
        self.ready(FI_RMA, dir)?;
        if flags & !TX_OP_FLAGS != 0 {
            return Err(errno::ebadflags());
        }
        if kind == Rma::Read && flags & (FI_INJECT | FI_REMOTE_CQ_DATA) != 0 {
            return Err(errno::ebadflags());
        }
        // SAFETY: The caller's guarantee.
        let total = unsafe { self.check_local(&m.msg.local, self.limits.tx_iov_limit, dir) }?;
        self.check_tx_size(total, flags)?;
        if remote.is_empty() || remote.len() > self.limits.rma_iov_limit {
            return Err(EINVAL);
        }
        let mut remote_total: usize = 0;
        for r in remote {
            r.addr.checked_add(r.len as u64).ok_or(EINVAL)?;
            remote_total = remote_total.checked_add(r.len).ok_or(EINVAL)?;
        }
        if remote_total != total {
            return Err(EINVAL);
        }
        // SAFETY: The caller's guarantee.
        unsafe { on_backend!(self, |b| b.rma(self, kind, m, flags)) }
    }

    /// Posts a tagged send of `m` (`flags` as for [`Self::send`]).
    ///
    /// # Safety
    ///
    /// As for [`Self::send`].
    pub(crate) unsafe fn tsend(&self, m: &TaggedMsg<'_>, flags: u64) -> Result {
        self.ready(FI_TAGGED, FI_SEND)?;
        // SAFETY: The caller's guarantee.
        unsafe { self.check_send(&m.msg.local, flags) }?;
        // SAFETY: The caller's guarantee.
        unsafe { on_backend!(self, |b| b.tsend(self, m, flags)) }
    }

    /// Posts a tagged receive into `m`'s buffers, or with FI_PEEK, FI_CLAIM
    /// and FI_DISCARD looks at, claims or drops a message that arrived
    /// (`flags` as for [`Self::send`]).
    ///
    /// # Safety
    ///
    /// As for [`Self::recv`].
    pub(crate) unsafe fn trecv(&self, m: &TaggedMsg<'_>, flags: u64) -> Result {
        self.ready(FI_TAGGED, FI_RECV)?;
        if flags & !TRECV_FLAGS != 0 {
            return Err(errno::ebadflags());
        }
        if flags & FI_DISCARD != 0 && flags & (FI_PEEK | FI_CLAIM) == 0 {
            // Discards only a message peeked at or claimed.
            return Err(errno::ebadflags());
        }
        if flags & FI_CLAIM != 0 && m.msg.context.is_none() {
            // The context is what pairs a claim with its receive.
            return Err(EINVAL);
        }
        if flags & FI_DISCARD == 0 {
            // SAFETY: The caller's guarantee.
            unsafe { self.check_recv(&m.msg.local) }?;
        }
        // SAFETY: The caller's guarantee.
        unsafe { on_backend!(self, |b| b.trecv(self, m, flags)) }
    }
}
