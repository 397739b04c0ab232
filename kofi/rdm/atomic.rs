// SPDX-License-Identifier: GPL-2.0

//! Atomic operations of RDM endpoints (fi_atomic.h): which are served and
//! what each does to one 64-bit element. Pure logic, tested on the host; the
//! target applies it under one lock (rdm/rx.rs), so operations are atomic
//! with respect to each other.

/// `FI_INT64` and `FI_UINT64` of `enum fi_datatype` (checked against the
/// ABI in api_atomic.rs).
pub(crate) const INT64: u32 = 6;
pub(crate) const UINT64: u32 = 7;

/// `enum fi_op`, the same way.
pub(crate) mod op {
    pub(crate) const MIN: u32 = 0;
    pub(crate) const MAX: u32 = 1;
    pub(crate) const SUM: u32 = 2;
    pub(crate) const PROD: u32 = 3;
    pub(crate) const LOR: u32 = 4;
    pub(crate) const LAND: u32 = 5;
    pub(crate) const BOR: u32 = 6;
    pub(crate) const BAND: u32 = 7;
    pub(crate) const LXOR: u32 = 8;
    pub(crate) const BXOR: u32 = 9;
    pub(crate) const READ: u32 = 10;
    pub(crate) const WRITE: u32 = 11;
    pub(crate) const CSWAP: u32 = 12;
    pub(crate) const CSWAP_NE: u32 = 13;
    pub(crate) const CSWAP_LE: u32 = 14;
    pub(crate) const CSWAP_LT: u32 = 15;
    pub(crate) const CSWAP_GE: u32 = 16;
    pub(crate) const CSWAP_GT: u32 = 17;
    pub(crate) const MSWAP: u32 = 18;
}

/// Elements one operation takes at most (fi_query_atomic's `count`).
pub(crate) const MAX_COUNT: usize = 64;
/// Bytes of one element.
pub(crate) const SIZE: usize = 8;

/// The form of an operation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// fi_atomic: updates.
    Plain = 0,
    /// fi_fetch_atomic: updates and returns the old values.
    Fetch = 1,
    /// fi_compare_atomic: updates where the compare values say; returns
    /// the old values.
    Compare = 2,
}

impl Kind {
    pub(crate) fn from_u8(b: u8) -> Option<Kind> {
        match b {
            0 => Some(Kind::Plain),
            1 => Some(Kind::Fetch),
            2 => Some(Kind::Compare),
            _ => None,
        }
    }
}

/// Whether the RDM layer serves `op` on `datatype` in form `kind`.
pub(crate) fn served(datatype: u32, aop: u32, kind: Kind) -> bool {
    if datatype != INT64 && datatype != UINT64 {
        return false;
    }
    match kind {
        // Reading without fetching does nothing.
        Kind::Plain => aop <= op::WRITE && aop != op::READ,
        Kind::Fetch => aop <= op::WRITE,
        Kind::Compare => (op::CSWAP..=op::MSWAP).contains(&aop),
    }
}

/// The new value of an element holding `cur`, for operand `operand` and
/// compare value `compare` (compare forms only). The caller checked the op
/// with [`served`]; anything else leaves the element as it is.
pub(crate) fn apply(datatype: u32, aop: u32, cur: u64, operand: u64, compare: u64) -> u64 {
    let signed = datatype == INT64;
    // The order of two values as the datatype sees it.
    let less = |a: u64, b: u64| {
        if signed {
            (a as i64) < (b as i64)
        } else {
            a < b
        }
    };
    let swap_if = |c: bool| if c { operand } else { cur };
    match aop {
        op::MIN => swap_if(less(operand, cur)),
        op::MAX => swap_if(less(cur, operand)),
        op::SUM => cur.wrapping_add(operand),
        op::PROD => cur.wrapping_mul(operand),
        op::LOR => u64::from(cur != 0 || operand != 0),
        op::LAND => u64::from(cur != 0 && operand != 0),
        op::BOR => cur | operand,
        op::BAND => cur & operand,
        op::LXOR => u64::from((cur != 0) ^ (operand != 0)),
        op::BXOR => cur ^ operand,
        op::WRITE => operand,
        op::CSWAP => swap_if(compare == cur),
        op::CSWAP_NE => swap_if(compare != cur),
        op::CSWAP_LE => swap_if(!less(cur, compare)),
        op::CSWAP_LT => swap_if(less(compare, cur)),
        op::CSWAP_GE => swap_if(!less(compare, cur)),
        op::CSWAP_GT => swap_if(less(cur, compare)),
        op::MSWAP => (operand & compare) | (cur & !compare),
        _ => cur,
    }
}
