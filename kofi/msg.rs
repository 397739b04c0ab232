// SPDX-License-Identifier: GPL-2.0

//! The typed messages of the data calls: a message, an RMA (with the
//! peer's buffers) and a tagged message, and their C forms for a
//! provider's ops.

use crate::abi;
use crate::context::Context;
use crate::iov::{Iov, Local};

/// A message: its local buffers, its peer (an AV address, or 0 on a
/// connected endpoint), the consumer's context for the completion and the
/// remote CQ data (sent with `FI_REMOTE_CQ_DATA`).
pub(crate) struct Msg<'a> {
    pub(crate) local: Local<'a>,
    pub(crate) addr: u64,
    pub(crate) context: Context,
    pub(crate) data: u64,
}

impl<'a> Msg<'a> {
    /// A message of `iov`, without descriptors or remote CQ data, on a
    /// connected endpoint.
    pub(crate) fn connected(iov: Iov<'a>, context: Context) -> Self {
        Msg {
            local: Local::new(iov),
            addr: 0,
            context,
            data: 0,
        }
    }

    pub(crate) fn to_c(&self) -> abi::fi_msg {
        let (msg_iov, msg_bvec) = self.local.iov.as_raw();
        abi::fi_msg {
            msg_iov,
            msg_bvec,
            desc: self.local.desc_raw(),
            iov_count: self.local.iov.count(),
            addr: self.addr,
            context: self.context.as_ptr(),
            data: self.data,
        }
    }

    fn to_c_rma(&self, remote: &[abi::fi_rma_iov]) -> abi::fi_msg_rma {
        let (msg_iov, msg_bvec) = self.local.iov.as_raw();
        abi::fi_msg_rma {
            msg_iov,
            msg_bvec,
            desc: self.local.desc_raw(),
            iov_count: self.local.iov.count(),
            addr: self.addr,
            rma_iov: remote.as_ptr(),
            rma_iov_count: remote.len(),
            context: self.context.as_ptr(),
            data: self.data,
        }
    }
}

/// An RMA: a message's local buffers, and the peer's buffers (`remote`),
/// as long in total.
pub(crate) struct RmaMsg<'a> {
    pub(crate) msg: Msg<'a>,
    pub(crate) remote: &'a [abi::fi_rma_iov],
}

impl RmaMsg<'_> {
    pub(crate) fn to_c(&self) -> abi::fi_msg_rma {
        self.msg.to_c_rma(self.remote)
    }
}

/// A tagged message: a message with its tag, and for a receive the tag
/// bits to ignore.
pub(crate) struct TaggedMsg<'a> {
    pub(crate) msg: Msg<'a>,
    pub(crate) tag: u64,
    pub(crate) ignore: u64,
}

impl TaggedMsg<'_> {
    pub(crate) fn to_c(&self) -> abi::fi_msg_tagged {
        let m = self.msg.to_c();
        abi::fi_msg_tagged {
            msg_iov: m.msg_iov,
            msg_bvec: m.msg_bvec,
            desc: m.desc,
            iov_count: m.iov_count,
            addr: m.addr,
            tag: self.tag,
            ignore: self.ignore,
            context: m.context,
            data: m.data,
        }
    }
}

/// Which RMA: the capability bit and the provider's op.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rma {
    Read,
    Write,
}
