// SPDX-License-Identifier: GPL-2.0

//! Tagged messages on a connection (fi_tagged(3)), for the providers that
//! offer FI_TAGGED on their MSG endpoints: the tagged receives posted, in
//! order, and the tagged messages that came before any receive wanted them,
//! held until one does. A provider keeps the held messages' bytes in its own
//! form (`M`) and moves them; the rules of matching, FI_PEEK, FI_CLAIM and
//! FI_DISCARD live here once.

use crate::abi;
use crate::compat::VecExt;
use crate::flags::{FI_CLAIM, FI_COMPLETION, FI_DISCARD, FI_PEEK};
use crate::kofi::{fi_error, report_cancelled, Context, EpRef, PostedRecv};
use kernel::prelude::*;

/// The tagged receives a connection has posted, oldest first.
pub(crate) struct TaggedRecvs {
    list: KVec<PostedRecv>,
    depth: usize,
}

impl TaggedRecvs {
    /// Room for `depth` receives (the endpoint's receive queue).
    pub(crate) fn new(depth: usize) -> Result<TaggedRecvs> {
        Ok(TaggedRecvs {
            list: KVec::with_capacity(depth, GFP_KERNEL)?,
            depth,
        })
    }

    /// Posts `recv`; -FI_EAGAIN when `depth` are posted.
    pub(crate) fn push(&mut self, recv: PostedRecv) -> Result {
        if self.list.len() >= self.depth {
            return Err(fi_error(abi::FI_EAGAIN));
        }
        self.list.push(recv, GFP_KERNEL)?;
        Ok(())
    }

    /// Whether a receive posted takes a message tagged `tag` (kofi_sock
    /// asks before it reads a message's bytes; kofi_verbs has them).
    #[allow(dead_code)]
    pub(crate) fn wants(&self, tag: u64) -> bool {
        self.list
            .iter()
            .any(|r| r.tag.is_some_and(|m| m.takes(tag)))
    }

    /// The oldest receive that takes a message tagged `tag`, taken out.
    pub(crate) fn take_for(&mut self, tag: u64) -> Option<PostedRecv> {
        let i = self
            .list
            .iter()
            .position(|r| r.tag.is_some_and(|m| m.takes(tag)))?;
        Some(self.list.remove_at(i))
    }

    /// fi_cancel: the oldest receive posted with `context`, taken back and
    /// reported to `ep`; whether there was one.
    pub(crate) fn cancel(&mut self, context: Context, ep: Option<&EpRef>) -> bool {
        let Some(i) = self.list.iter().position(|r| r.context == context) else {
            return false;
        };
        let recv = self.list.remove_at(i);
        if let Some(ep) = ep {
            report_cancelled(ep, &recv);
        }
        true
    }

    /// No message can come any more: every receive completes FI_ECANCELED.
    pub(crate) fn cancel_all(&mut self, ep: &EpRef) {
        for recv in core::mem::take(&mut self.list) {
            report_cancelled(ep, &recv);
        }
    }
}

/// A tagged message a provider holds for a receive to come.
pub(crate) trait HeldMessage {
    /// Its length in bytes.
    fn len(&self) -> usize;
    /// Its remote CQ data.
    fn data(&self) -> Option<u64>;
}

struct Held<M> {
    tag: u64,
    /// Reserved by an FI_PEEK | FI_CLAIM with this context.
    claimed: Option<Context>,
    msg: M,
}

/// The tagged messages a connection holds, in order of arrival.
pub(crate) struct HeldTagged<M> {
    list: KVec<Held<M>>,
}

/// What a tagged receive comes to (see [`HeldTagged::trecv`]).
pub(crate) enum Trecv<M> {
    /// FI_PEEK: answered with a completion or FI_ENOMSG; nothing more.
    Answered,
    /// `recv` takes the held message `msg`, tagged `tag`: the provider
    /// moves its bytes into it and reports it.
    Take { recv: PostedRecv, tag: u64, msg: M },
    /// The held message `msg` is dropped (FI_DISCARD): the provider lets it
    /// go, and reports `recv` with no bytes when there is one (FI_CLAIM).
    Discard {
        recv: Option<PostedRecv>,
        tag: u64,
        msg: M,
    },
    /// Nothing held for it: the provider posts `recv`.
    Post(PostedRecv),
}

impl<M: HeldMessage> HeldTagged<M> {
    /// Room for `depth` messages, so that holding one never allocates.
    pub(crate) fn new(depth: usize) -> Result<HeldTagged<M>> {
        Ok(HeldTagged {
            list: KVec::with_capacity(depth, GFP_KERNEL)?,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// Holds `msg`, tagged `tag`, for a receive to come.
    pub(crate) fn push(&mut self, tag: u64, msg: M) -> Result {
        let held = Held {
            tag,
            claimed: None,
            msg,
        };
        self.list.push(held, GFP_KERNEL)?;
        Ok(())
    }

    /// The first message held, not claimed, that `recv` takes.
    fn first_for(&self, recv: &PostedRecv) -> Option<usize> {
        let want = recv.tag?;
        self.list
            .iter()
            .position(|h| h.claimed.is_none() && want.takes(h.tag))
    }

    /// A tagged receive `recv` with fi_trecvmsg's `flags` (FI_PEEK, FI_CLAIM,
    /// FI_DISCARD in a combination the core checked) meets what is held:
    /// a peek is answered to `ep` here; the rest says what the provider
    /// does. Without `ep` (a server's connection before fi_accept) nothing
    /// came: a receive is posted, a peek or a claim is -FI_ENOTCONN.
    pub(crate) fn trecv(
        &mut self,
        recv: PostedRecv,
        flags: u64,
        ep: Option<&EpRef>,
    ) -> Result<Trecv<M>> {
        let Some(ep) = ep else {
            if flags & (FI_PEEK | FI_CLAIM) != 0 {
                return Err(fi_error(abi::FI_ENOTCONN));
            }
            return Ok(Trecv::Post(recv));
        };
        if flags & FI_PEEK != 0 {
            return self.peek(recv, flags, ep);
        }
        if flags & FI_CLAIM != 0 {
            // The message an earlier peek claimed with this context,
            // whatever its tag.
            let i = self
                .list
                .iter()
                .position(|h| h.claimed == Some(recv.context))
                .ok_or_else(|| fi_error(abi::FI_ENOMSG))?;
            let Held { tag, msg, .. } = self.list.remove_at(i);
            if flags & FI_DISCARD != 0 {
                return Ok(Trecv::Discard {
                    recv: Some(recv),
                    tag,
                    msg,
                });
            }
            return Ok(Trecv::Take { recv, tag, msg });
        }
        match self.first_for(&recv) {
            Some(i) => {
                let Held { tag, msg, .. } = self.list.remove_at(i);
                Ok(Trecv::Take { recv, tag, msg })
            }
            None => Ok(Trecv::Post(recv)),
        }
    }

    /// FI_PEEK: reports the first message held that `recv` would take (its
    /// length, tag and data; FI_ENOMSG when there is none), then claims or
    /// drops it as `flags` say.
    fn peek(&mut self, recv: PostedRecv, flags: u64, ep: &EpRef) -> Result<Trecv<M>> {
        if flags & FI_CLAIM != 0 && self.list.iter().any(|h| h.claimed == Some(recv.context)) {
            // A context names one claim.
            return Err(EINVAL);
        }
        let Some(i) = self.first_for(&recv) else {
            ep.recv_failed(&recv, abi::FI_ENOMSG, 0, 0, recv.own_tag())?;
            return Ok(Trecv::Answered);
        };
        let h = &mut self.list[i];
        // The answer is the completion: always written.
        let mut recv = recv;
        recv.flags |= FI_COMPLETION;
        ep.recv_done(&recv, h.msg.len(), h.msg.data(), h.tag)?;
        if flags & FI_DISCARD != 0 {
            let Held { tag, msg, .. } = self.list.remove_at(i);
            return Ok(Trecv::Discard {
                recv: None,
                tag,
                msg,
            });
        }
        if flags & FI_CLAIM != 0 {
            h.claimed = Some(recv.context);
        }
        Ok(Trecv::Answered)
    }
}
