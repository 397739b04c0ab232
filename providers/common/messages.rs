// SPDX-License-Identifier: GPL-2.0

//! The operations a provider is handed: messages, tagged messages, RMA,
//! and posted receives with what reports them.

use super::buffers::{append_from, copy_all, Buffers, Lent, Premapped, PremappedList};
use super::handles::EpRef;
use super::{fi_error, Context};
use crate::abi;
use crate::flags::{FI_MSG, FI_TAGGED};
use crate::iovec::Iov;
use kernel::alloc::{Allocator, Vec};
use kernel::prelude::*;

/// How an operation finds what the provider keeps of the region a
/// descriptor names (`Domain::premapped`); `None` for a provider without
/// regions of its own.
///
/// # Safety
///
/// The function is called only with a descriptor the core checked: a live
/// region of the operation's domain (and so of this provider).
pub(super) type PremappedOf = Option<unsafe fn(*mut kernel::ffi::c_void) -> Option<Premapped>>;

/// A message operation's arguments, borrowed for the op call.
pub(crate) struct Msg<'a> {
    pub(super) raw: &'a abi::fi_msg,
    pub(super) premapped_of: PremappedOf,
}

impl Msg<'_> {
    /// An owned description of the receive buffers, to fill later.
    pub(crate) fn to_posted(&self, flags: u64) -> Result<PostedRecv> {
        self.posted(flags, None)
    }
}

/// A tagged message operation's arguments, borrowed for the op call.
pub(crate) struct TaggedMsg<'a> {
    pub(super) raw: &'a abi::fi_msg_tagged,
    pub(super) premapped_of: PremappedOf,
}

impl TaggedMsg<'_> {
    /// A send's tag.
    pub(crate) fn tag(&self) -> u64 {
        self.raw.tag
    }

    /// What a receive takes.
    pub(crate) fn tag_match(&self) -> TagMatch {
        TagMatch {
            tag: self.raw.tag,
            ignore: self.raw.ignore,
        }
    }

    /// The tagged receive this describes, to fill later; `buffers`: false
    /// for one that uses none (FI_DISCARD).
    pub(crate) fn to_posted(&self, flags: u64, buffers: bool) -> Result<PostedRecv> {
        if buffers {
            return self.posted(flags, Some(self.tag_match()));
        }
        Ok(PostedRecv {
            buffers: Buffers::none(),
            premapped: KVec::new(),
            context: self.context(),
            flags,
            tag: Some(self.tag_match()),
        })
    }
}

/// FI_TAGGED for a tagged send (its flags, as a provider keeps them, say
/// so), else FI_MSG: what its completion says.
pub(crate) fn send_kind(flags: u64) -> u64 {
    if flags & FI_TAGGED != 0 {
        FI_TAGGED
    } else {
        FI_MSG
    }
}

/// The tags a tagged receive takes: those equal to `tag` in every bit
/// `ignore` does not set (fi_tagged(3)).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct TagMatch {
    pub(crate) tag: u64,
    pub(crate) ignore: u64,
}

impl TagMatch {
    pub(crate) fn takes(&self, tag: u64) -> bool {
        (tag | self.ignore) == (self.tag | self.ignore)
    }
}

/// A posted receive (or a read's local buffers): the consumer's buffers,
/// its context and flags, and for a tagged receive the tags it takes.
pub(crate) struct PostedRecv {
    buffers: Buffers,
    premapped: PremappedList,
    pub(crate) context: Context,
    pub(crate) flags: u64,
    pub(crate) tag: Option<TagMatch>,
}

impl PostedRecv {
    /// FI_TAGGED for a tagged receive, else FI_MSG: what its completion says.
    pub(crate) fn kind(&self) -> u64 {
        if self.tag.is_some() {
            FI_TAGGED
        } else {
            FI_MSG
        }
    }

    /// The tag its error entry shows when no message reached it.
    pub(crate) fn own_tag(&self) -> u64 {
        self.tag.map_or(0, |t| t.tag)
    }

    /// The receive's buffers as a lent view (a copy of their descriptors),
    /// for a provider whose device writes into them.
    pub(crate) fn lend(&self) -> Result<Lent> {
        let mut premapped = KVec::with_capacity(self.premapped.len(), GFP_KERNEL)?;
        for p in self.premapped.iter() {
            premapped.push(p.clone(), GFP_KERNEL)?;
        }
        Ok(Buffers::copy_of(self.buffers.as_iov())?.into_lent(premapped))
    }

    /// The buffers' total size.
    pub(crate) fn capacity(&self) -> usize {
        self.buffers.len()
    }

    /// Copies a message into the buffers; returns the bytes that fit.
    pub(crate) fn fill(&self, src: &[u8]) -> usize {
        self.buffers.scatter_at(0, src)
    }

    /// An iov_iter over the buffers from byte `offset` on (`offset` at most
    /// the capacity), for a provider that receives straight into them.
    pub(crate) fn iter_at(&self, offset: usize) -> abi::iov_iter {
        self.buffers.as_iov().iter_at(abi::ITER_DEST, offset)
    }

    /// Copies `src` into the buffers from byte `offset` on (a part of a read
    /// of several remote buffers); returns the bytes that fit.
    pub(crate) fn fill_at(&self, offset: usize, src: &[u8]) -> usize {
        self.buffers.scatter_at(offset, src)
    }
}

/// An RMA operation's arguments, borrowed for the op call.
pub(crate) struct RmaMsg<'a> {
    pub(super) raw: &'a abi::fi_msg_rma,
    pub(super) premapped_of: PremappedOf,
}

impl RmaMsg<'_> {
    /// The remote buffers (the core checked their total is the local one's).
    pub(crate) fn remote(&self) -> &[abi::fi_rma_iov] {
        // SAFETY: The core checked `rma_iov` holds `rma_iov_count` entries.
        unsafe { core::slice::from_raw_parts(self.raw.rma_iov, self.raw.rma_iov_count) }
    }

    /// An owned description of the local buffers, to fill when a read's
    /// data arrives later.
    pub(crate) fn to_posted(&self, flags: u64) -> Result<PostedRecv> {
        self.posted(flags, None)
    }

    /// Copies `src` into the local buffers (of a read); returns bytes copied.
    pub(crate) fn scatter(&self, src: &[u8]) -> Result<usize> {
        Ok(self.buffers()?.scatter_at(0, src))
    }
}

/// What every operation's arguments give: its context, remote CQ data and
/// local buffers (the three C structs share these fields).
macro_rules! operation_accessors {
    ($($op:ident),*) => {$(
        impl $op<'_> {
            /// The consumer's context, returned in the operation's completion.
            pub(crate) fn context(&self) -> Context {
                Context::of(self.raw.context)
            }

            /// Remote CQ data (with FI_REMOTE_CQ_DATA).
            pub(crate) fn data(&self) -> u64 {
                self.raw.data
            }

            fn buffers(&self) -> Result<Buffers> {
                Buffers::of(self.raw.msg_iov, self.raw.msg_bvec, self.raw.iov_count)
            }

            /// Appends the local bytes (from kvecs or pages) to `out`.
            pub(crate) fn gather<A: Allocator>(&self, out: &mut Vec<u8, A>) -> Result {
                let view = self.view();
                append_from(view, 0, view.len(), out)
            }

            /// The local buffers' descriptors as the caller gave them, for
            /// the op call.
            fn view(&self) -> Iov<'_> {
                // SAFETY: The view borrows `self`, which lasts no longer
                // than the op call.
                unsafe { Buffers::view(self.raw.msg_iov, self.raw.msg_bvec, self.raw.iov_count) }
            }

            /// The number of local bytes.
            #[allow(dead_code)] // Not of every kind of message in each provider.
            pub(crate) fn len(&self) -> usize {
                self.view().len()
            }

            /// Copies the local bytes into `dst`, which is as long as they are
            /// (no copy of their descriptors on the way).
            #[allow(dead_code)] // kofi_sock's; kofi_verbs compiles this file too.
            pub(crate) fn copy_to(&self, dst: &mut [u8]) -> Result {
                copy_all(self.view(), dst)
            }

            /// The local buffers, lent by the consumer until the operation
            /// completes (OFI's rule for every operation but an inject), to
            /// move the bytes in place.
            pub(crate) fn lend(&self) -> Result<Lent> {
                Ok(self.buffers()?.into_lent(self.premapped()?))
            }

            /// Per buffer, what the provider keeps of the region its
            /// descriptor names; empty when none has one.
            fn premapped(&self) -> Result<PremappedList> {
                let mut list = KVec::new();
                let Some(of) = self.premapped_of else {
                    return Ok(list);
                };
                if self.raw.desc.is_null() || self.raw.iov_count == 0 {
                    return Ok(list);
                }
                // SAFETY: The core checked that a non-null `desc` holds
                // `iov_count` descriptors.
                let descs = unsafe {
                    core::slice::from_raw_parts(self.raw.desc, self.raw.iov_count)
                };
                if descs.iter().all(|d| d.is_null()) {
                    return Ok(list);
                }
                list.reserve(descs.len(), GFP_KERNEL)?;
                for &d in descs {
                    if d.is_null() {
                        list.push(None, GFP_KERNEL)?;
                        continue;
                    }
                    // SAFETY: A non-null descriptor is a live region of the
                    // endpoint's domain (the core checked it).
                    list.push(unsafe { of(d) }, GFP_KERNEL)?;
                }
                Ok(list)
            }

            /// The operation's buffers as a receive (or a read) to fill later.
            fn posted(&self, flags: u64, tag: Option<TagMatch>) -> Result<PostedRecv> {
                Ok(PostedRecv {
                    buffers: self.buffers()?,
                    premapped: self.premapped()?,
                    context: self.context(),
                    flags,
                    tag,
                })
            }
        }
    )*};
}
operation_accessors!(Msg, TaggedMsg, RmaMsg);

/// Reports a receive taken back by fi_cancel, or that no message can reach
/// any more.
pub(crate) fn report_cancelled(ep: &EpRef, recv: &PostedRecv) {
    let _ = ep.recv_failed(recv, abi::FI_ECANCELED, 0, 0, recv.own_tag());
}

/// fi_cancel on a connection's posted receives: the oldest in `ring` with
/// `context` is taken back and reported to `ep`; else -FI_EBUSY when the
/// receive being filled has that context (`filling`), -FI_ENOENT.
pub(crate) fn cancel_posted<S: core::ops::DerefMut<Target = [Option<PostedRecv>]>>(
    ring: &mut crate::ring::Ring<PostedRecv, S>,
    context: Context,
    ep: Option<&EpRef>,
    filling: bool,
) -> Result {
    let mut found = false;
    ring.retain(|r| {
        let hit = !found && r.context == context;
        if let (true, Some(ep)) = (hit, ep) {
            report_cancelled(ep, r);
        }
        found |= hit;
        !hit
    });
    match found {
        true => Ok(()),
        false if filling => Err(fi_error(abi::FI_EBUSY)),
        false => Err(fi_error(abi::FI_ENOENT)),
    }
}
