// SPDX-License-Identifier: GPL-2.0

//! The exported atomic calls (fi_atomic.h). Every form reaches the endpoint
//! as one op, atomicmsg, after the checks: an enabled endpoint with
//! FI_ATOMIC, a known datatype and op, arrays that are there and whose
//! element counts agree, known flags. What is served is the RDM layer's
//! (rdm/atomic.rs): fi_query_atomic and the fi_*atomicvalid calls say it.

use crate::abi;
use crate::ep_data::ready;
use crate::errno::{self, to_c, to_c_ssize};
use crate::flags::*;
use crate::iov::Buffer;
use crate::mr::check_desc;
use crate::object::{lookup, Domain, Endpoint};
use crate::rdm::atomic::{self, Kind};
use core::ptr;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

// The numbers rdm/atomic.rs uses are the ABI's.
const _: () = assert!(abi::fi_datatype_FI_INT64 == atomic::INT64);
const _: () = assert!(abi::fi_datatype_FI_UINT64 == atomic::UINT64);
const _: () = assert!(abi::fi_op_FI_SUM == atomic::op::SUM);
const _: () = assert!(abi::fi_op_FI_ATOMIC_READ == atomic::op::READ);
const _: () = assert!(abi::fi_op_FI_ATOMIC_WRITE == atomic::op::WRITE);
const _: () = assert!(abi::fi_op_FI_CSWAP == atomic::op::CSWAP);
const _: () = assert!(abi::fi_op_FI_MSWAP == atomic::op::MSWAP);

/// The elements of an array of `fi_ioc`s; `None` when an entry names no
/// memory (a null address with elements, unless `addresses` is false).
///
/// # Safety
///
/// `iov` is null or holds `count` entries.
unsafe fn elements(iov: *const abi::fi_ioc, count: usize, addresses: bool) -> Option<usize> {
    if count == 0 {
        return Some(0);
    }
    if iov.is_null() {
        return None;
    }
    let mut total: usize = 0;
    // SAFETY: The caller's guarantee.
    for v in unsafe { core::slice::from_raw_parts(iov, count) } {
        if addresses && v.addr.is_null() && v.count != 0 {
            return None;
        }
        total = total.checked_add(v.count)?;
    }
    Some(total)
}

/// The elements of the remote arrays.
///
/// # Safety
///
/// `rma` is null or holds `count` entries.
unsafe fn remote_elements(rma: *const abi::fi_rma_ioc, count: usize) -> Option<usize> {
    if count == 0 || rma.is_null() {
        return None;
    }
    // SAFETY: The caller's guarantee.
    unsafe { core::slice::from_raw_parts(rma, count) }
        .iter()
        .try_fold(0usize, |t, r| t.checked_add(r.count))
}

/// The descriptors of an operation's local arrays: each null, or one per
/// entry of its array (fi_atomic(3)).
#[derive(Clone, Copy)]
struct Descs {
    operand: *const *mut c_void,
    compare: *const *mut c_void,
    result: *const *mut c_void,
}

/// The size of one element of `datatype` (checked below FI_DATATYPE_LAST).
fn element_size(datatype: u32) -> usize {
    match datatype {
        abi::fi_datatype_FI_INT8 | abi::fi_datatype_FI_UINT8 => 1,
        abi::fi_datatype_FI_INT16 | abi::fi_datatype_FI_UINT16 => 2,
        abi::fi_datatype_FI_INT32 | abi::fi_datatype_FI_UINT32 | abi::fi_datatype_FI_FLOAT => 4,
        abi::fi_datatype_FI_DOUBLE_COMPLEX | abi::fi_datatype_FI_LONG_DOUBLE => 16,
        abi::fi_datatype_FI_LONG_DOUBLE_COMPLEX => 32,
        _ => 8,
    }
}

/// Checks the descriptors of an array of `fi_ioc`s (see `check_desc`).
///
/// # Safety
///
/// `iov` holds `count` entries (checked by `elements`); `descs` is null or
/// holds as many, each null or a descriptor of a region the consumer keeps
/// open.
unsafe fn check_ioc_descs(
    e: &Endpoint,
    iov: *const abi::fi_ioc,
    descs: *const *mut c_void,
    count: usize,
    size: usize,
    access: u64,
) -> Result {
    if descs.is_null() || count == 0 {
        return Ok(());
    }
    // SAFETY: The caller's guarantee.
    let (iov, descs) = unsafe {
        (
            core::slice::from_raw_parts(iov, count),
            core::slice::from_raw_parts(descs, count),
        )
    };
    for (v, &desc) in iov.iter().zip(descs) {
        let bytes = abi::kvec {
            iov_base: v.addr,
            iov_len: v.count.checked_mul(size).ok_or(EINVAL)?,
        };
        // SAFETY: The caller's guarantee.
        unsafe { check_desc(&e.domain, desc, &Buffer::Bytes(bytes), access) }?;
    }
    Ok(())
}

fn atomicmsg(
    ep: *mut abi::fid_ep,
    a: &abi::kofi_atomic,
    descs: Descs,
    kind: Kind,
    flags: u64,
) -> Result<usize> {
    // A fetching operation reads the target, a plain one writes it.
    let dir = if kind == Kind::Plain {
        FI_WRITE
    } else {
        FI_READ
    };
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    let e = unsafe { ready(ep, FI_ATOMIC, dir) }?;
    // SAFETY: `msg` is null or valid (ABI).
    let m = unsafe { a.msg.as_ref() }.ok_or(EINVAL)?;
    if flags & !TX_OP_FLAGS != 0 || (kind != Kind::Plain && flags & FI_INJECT != 0) {
        return Err(errno::ebadflags());
    }
    if m.datatype >= abi::fi_datatype_FI_DATATYPE_LAST || m.op >= abi::fi_op_FI_ATOMIC_OP_LAST {
        return Err(EINVAL);
    }
    if m.iov_count > e.limits.tx_iov_limit {
        return Err(EINVAL);
    }
    // A read takes no operands: their addresses are not looked at.
    let operands = m.op != abi::fi_op_FI_ATOMIC_READ;
    // SAFETY: The arrays are null or hold their counts (ABI).
    let (n, remote, compare, result) = unsafe {
        (
            elements(m.msg_iov, m.iov_count, operands),
            remote_elements(m.rma_iov, m.rma_iov_count),
            elements(a.comparev, a.compare_count, true),
            elements(a.resultv, a.result_count, true),
        )
    };
    let n = n.filter(|&n| n != 0).ok_or(EINVAL)?;
    let wanted = |count: Option<usize>, needed: bool| match count {
        Some(c) if needed => c == n,
        Some(0) => true,
        _ => false,
    };
    if remote != Some(n)
        || !wanted(compare, kind == Kind::Compare)
        || !wanted(result, kind != Kind::Plain)
    {
        return Err(EINVAL);
    }
    // Operands go out (fi_mr(3): FI_WRITE, or FI_SEND for "fi_atomic
    // operations"); old values come back (FI_READ).
    let (size, out) = (element_size(m.datatype), FI_WRITE | FI_SEND);
    // SAFETY: The arrays hold their counts (checked above); the descriptor
    // arrays are null or as long (ABI).
    unsafe {
        if operands {
            check_ioc_descs(e, m.msg_iov, descs.operand, m.iov_count, size, out)?;
        }
        check_ioc_descs(e, a.comparev, descs.compare, a.compare_count, size, out)?;
        check_ioc_descs(e, a.resultv, descs.result, a.result_count, size, FI_READ)?;
    }
    // SAFETY: The arrays hold their counts (checked above), the buffers are
    // the consumer's (the ABI's terms).
    unsafe { e.backend().atomic(e, a, flags) }.map(|()| 0)
}

/// One operation's arrays, as the provider gets them.
fn bundle(
    msg: &abi::fi_msg_atomic,
    comparev: *const abi::fi_ioc,
    compare_count: usize,
    resultv: *mut abi::fi_ioc,
    result_count: usize,
) -> abi::kofi_atomic {
    abi::kofi_atomic {
        msg,
        comparev,
        compare_count,
        resultv,
        result_count,
    }
}

/// The flags of a call: `flags`, or the endpoint's defaults for a plain
/// call, with a completion when wanted.
fn with_completion(ep: *mut abi::fid_ep, flags: Option<u64>) -> Result<u64> {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    let e = unsafe { lookup::<Endpoint>(ep) }?;
    Ok(e.call_flags(false, flags.unwrap_or(e.limits.tx_op_flags)))
}

/// An operation of one local buffer (fi_atomic, fi_fetch_atomic, ...).
#[allow(clippy::too_many_arguments)]
fn one(
    ep: *mut abi::fid_ep,
    kind: Kind,
    buf: *const c_void,
    count: usize,
    descs: [*mut c_void; 3],
    compare: *const c_void,
    result: *mut c_void,
    dest_addr: u64,
    addr: u64,
    key: u64,
    datatype: u32,
    op: u32,
    context: *mut c_void,
    flags: Option<u64>,
) -> isize {
    let ioc = |p: *const c_void| abi::fi_ioc {
        addr: p.cast_mut(),
        count,
    };
    let (iov, cmp, res) = (ioc(buf), ioc(compare), ioc(result));
    let rma = abi::fi_rma_ioc { addr, count, key };
    let [operand_desc, compare_desc, result_desc] = descs;
    let descs = Descs {
        operand: &operand_desc,
        compare: &compare_desc,
        result: &result_desc,
    };
    let msg = abi::fi_msg_atomic {
        msg_iov: &iov,
        desc: descs.operand.cast_mut(),
        iov_count: 1,
        addr: dest_addr,
        rma_iov: &rma,
        rma_iov_count: 1,
        datatype,
        op,
        context,
        data: 0,
    };
    let (c, cn) = if kind == Kind::Compare {
        (ptr::from_ref(&cmp), 1)
    } else {
        (ptr::null(), 0)
    };
    let (r, rn) = if kind != Kind::Plain {
        (ptr::from_ref(&res).cast_mut(), 1)
    } else {
        (ptr::null_mut(), 0)
    };
    let a = bundle(&msg, c, cn, r, rn);
    let flags = match flags {
        // fi_inject_atomic: never a completion.
        Some(FI_INJECT) => Ok(FI_INJECT),
        f => with_completion(ep, f),
    };
    to_c_ssize(flags.and_then(|f| atomicmsg(ep, &a, descs, kind, f)))
}

/// `fi_atomic()`.
#[no_mangle]
pub(crate) extern "C" fn fi_atomic(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    count: usize,
    desc: *mut c_void,
    dest_addr: u64,
    addr: u64,
    key: u64,
    datatype: u32,
    op: u32,
    context: *mut c_void,
) -> isize {
    let (c, r) = (ptr::null(), ptr::null_mut());
    one(
        ep,
        Kind::Plain,
        buf,
        count,
        [desc, ptr::null_mut(), ptr::null_mut()],
        c,
        r,
        dest_addr,
        addr,
        key,
        datatype,
        op,
        context,
        None,
    )
}

/// An operation over arrays of local buffers (the `*v` calls).
#[allow(clippy::too_many_arguments)]
fn vector(
    ep: *mut abi::fid_ep,
    kind: Kind,
    iov: *const abi::fi_ioc,
    count: usize,
    comparev: *const abi::fi_ioc,
    compare_count: usize,
    resultv: *mut abi::fi_ioc,
    result_count: usize,
    descs: Descs,
    dest_addr: u64,
    addr: u64,
    key: u64,
    datatype: u32,
    op: u32,
    context: *mut c_void,
) -> isize {
    // One remote array of as many elements as the local ones (checked).
    // SAFETY: `iov` is null or holds `count` entries (ABI).
    let n = unsafe { elements(iov, count, false) }.unwrap_or(0);
    let rma = abi::fi_rma_ioc {
        addr,
        count: n,
        key,
    };
    let msg = abi::fi_msg_atomic {
        msg_iov: iov,
        desc: descs.operand.cast_mut(),
        iov_count: count,
        addr: dest_addr,
        rma_iov: &rma,
        rma_iov_count: 1,
        datatype,
        op,
        context,
        data: 0,
    };
    let a = bundle(&msg, comparev, compare_count, resultv, result_count);
    to_c_ssize(with_completion(ep, None).and_then(|f| atomicmsg(ep, &a, descs, kind, f)))
}

/// An operation described by a `fi_msg_atomic` (the `*msg` calls).
#[allow(clippy::too_many_arguments)]
fn message(
    ep: *mut abi::fid_ep,
    kind: Kind,
    msg: *const abi::fi_msg_atomic,
    comparev: *const abi::fi_ioc,
    compare_count: usize,
    resultv: *mut abi::fi_ioc,
    result_count: usize,
    (compare_desc, result_desc): (*mut *mut c_void, *mut *mut c_void),
    flags: u64,
) -> isize {
    // SAFETY: `msg` is null or valid (ABI).
    let Some(msg) = (unsafe { msg.as_ref() }) else {
        return EINVAL.to_errno() as isize;
    };
    let descs = Descs {
        operand: msg.desc.cast_const(),
        compare: compare_desc.cast_const(),
        result: result_desc.cast_const(),
    };
    let a = bundle(msg, comparev, compare_count, resultv, result_count);
    to_c_ssize(with_completion(ep, Some(flags)).and_then(|f| atomicmsg(ep, &a, descs, kind, f)))
}

/// `fi_atomicv()`.
#[no_mangle]
pub(crate) extern "C" fn fi_atomicv(
    ep: *mut abi::fid_ep,
    iov: *const abi::fi_ioc,
    desc: *mut *mut c_void,
    count: usize,
    dest_addr: u64,
    addr: u64,
    key: u64,
    datatype: u32,
    op: u32,
    context: *mut c_void,
) -> isize {
    let (c, r) = (ptr::null(), ptr::null_mut());
    vector(
        ep,
        Kind::Plain,
        iov,
        count,
        c,
        0,
        r,
        0,
        Descs {
            operand: desc.cast_const(),
            compare: ptr::null(),
            result: ptr::null(),
        },
        dest_addr,
        addr,
        key,
        datatype,
        op,
        context,
    )
}

/// `fi_atomicmsg()`.
#[no_mangle]
pub(crate) extern "C" fn fi_atomicmsg(
    ep: *mut abi::fid_ep,
    msg: *const abi::fi_msg_atomic,
    flags: u64,
) -> isize {
    let (c, r, no_desc) = (ptr::null(), ptr::null_mut(), ptr::null_mut());
    message(ep, Kind::Plain, msg, c, 0, r, 0, (no_desc, no_desc), flags)
}

/// `fi_inject_atomic()`: the operands may be reused at once; no completion.
#[no_mangle]
pub(crate) extern "C" fn fi_inject_atomic(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    count: usize,
    dest_addr: u64,
    addr: u64,
    key: u64,
    datatype: u32,
    op: u32,
) -> isize {
    let (c, r, ctx) = (ptr::null(), ptr::null_mut(), ptr::null_mut());
    let flags = Some(FI_INJECT);
    one(
        ep,
        Kind::Plain,
        buf,
        count,
        [ptr::null_mut(); 3],
        c,
        r,
        dest_addr,
        addr,
        key,
        datatype,
        op,
        ctx,
        flags,
    )
}

/// `fi_fetch_atomic()`.
#[no_mangle]
pub(crate) extern "C" fn fi_fetch_atomic(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    count: usize,
    desc: *mut c_void,
    result: *mut c_void,
    result_desc: *mut c_void,
    dest_addr: u64,
    addr: u64,
    key: u64,
    datatype: u32,
    op: u32,
    context: *mut c_void,
) -> isize {
    let c = ptr::null();
    one(
        ep,
        Kind::Fetch,
        buf,
        count,
        [desc, ptr::null_mut(), result_desc],
        c,
        result,
        dest_addr,
        addr,
        key,
        datatype,
        op,
        context,
        None,
    )
}

/// `fi_fetch_atomicv()`.
#[no_mangle]
pub(crate) extern "C" fn fi_fetch_atomicv(
    ep: *mut abi::fid_ep,
    iov: *const abi::fi_ioc,
    desc: *mut *mut c_void,
    count: usize,
    resultv: *mut abi::fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: usize,
    dest_addr: u64,
    addr: u64,
    key: u64,
    datatype: u32,
    op: u32,
    context: *mut c_void,
) -> isize {
    let (c, r) = (ptr::null(), resultv);
    let rn = result_count;
    vector(
        ep,
        Kind::Fetch,
        iov,
        count,
        c,
        0,
        r,
        rn,
        Descs {
            operand: desc.cast_const(),
            compare: ptr::null(),
            result: result_desc.cast_const(),
        },
        dest_addr,
        addr,
        key,
        datatype,
        op,
        context,
    )
}

/// `fi_fetch_atomicmsg()`.
#[no_mangle]
pub(crate) extern "C" fn fi_fetch_atomicmsg(
    ep: *mut abi::fid_ep,
    msg: *const abi::fi_msg_atomic,
    resultv: *mut abi::fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: usize,
    flags: u64,
) -> isize {
    message(
        ep,
        Kind::Fetch,
        msg,
        ptr::null(),
        0,
        resultv,
        result_count,
        (ptr::null_mut(), result_desc),
        flags,
    )
}

/// `fi_compare_atomic()`.
#[no_mangle]
pub(crate) extern "C" fn fi_compare_atomic(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    count: usize,
    desc: *mut c_void,
    compare: *const c_void,
    compare_desc: *mut c_void,
    result: *mut c_void,
    result_desc: *mut c_void,
    dest_addr: u64,
    addr: u64,
    key: u64,
    datatype: u32,
    op: u32,
    context: *mut c_void,
) -> isize {
    let (c, r) = (compare, result);
    one(
        ep,
        Kind::Compare,
        buf,
        count,
        [desc, compare_desc, result_desc],
        c,
        r,
        dest_addr,
        addr,
        key,
        datatype,
        op,
        context,
        None,
    )
}

/// `fi_compare_atomicv()`.
#[no_mangle]
pub(crate) extern "C" fn fi_compare_atomicv(
    ep: *mut abi::fid_ep,
    iov: *const abi::fi_ioc,
    desc: *mut *mut c_void,
    count: usize,
    comparev: *const abi::fi_ioc,
    compare_desc: *mut *mut c_void,
    compare_count: usize,
    resultv: *mut abi::fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: usize,
    dest_addr: u64,
    addr: u64,
    key: u64,
    datatype: u32,
    op: u32,
    context: *mut c_void,
) -> isize {
    let (c, cn, r, rn) = (comparev, compare_count, resultv, result_count);
    vector(
        ep,
        Kind::Compare,
        iov,
        count,
        c,
        cn,
        r,
        rn,
        Descs {
            operand: desc.cast_const(),
            compare: compare_desc.cast_const(),
            result: result_desc.cast_const(),
        },
        dest_addr,
        addr,
        key,
        datatype,
        op,
        context,
    )
}

/// `fi_compare_atomicmsg()`.
#[no_mangle]
pub(crate) extern "C" fn fi_compare_atomicmsg(
    ep: *mut abi::fid_ep,
    msg: *const abi::fi_msg_atomic,
    comparev: *const abi::fi_ioc,
    compare_desc: *mut *mut c_void,
    compare_count: usize,
    resultv: *mut abi::fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: usize,
    flags: u64,
) -> isize {
    let (c, cn, r, rn) = (comparev, compare_count, resultv, result_count);
    let descs = (compare_desc, result_desc);
    message(ep, Kind::Compare, msg, c, cn, r, rn, descs, flags)
}

/// What `fi_*atomicvalid` and `fi_query_atomic` answer: the elements one
/// operation may take, when `datatype` and `op` are served in form `kind`.
fn valid(datatype: u32, op: u32, kind: Kind) -> Result<usize> {
    if datatype >= abi::fi_datatype_FI_DATATYPE_LAST || op >= abi::fi_op_FI_ATOMIC_OP_LAST {
        return Err(EINVAL);
    }
    if !atomic::served(datatype, op, kind) {
        return Err(errno::eopnotsupp());
    }
    Ok(atomic::MAX_COUNT)
}

fn atomicvalid(
    ep: *mut abi::fid_ep,
    datatype: u32,
    op: u32,
    count: *mut usize,
    kind: Kind,
) -> Result {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    let e = unsafe { lookup::<Endpoint>(ep) }?;
    if count.is_null() {
        return Err(EINVAL);
    }
    if e.limits.caps & FI_ATOMIC == 0 || !e.is_rdm() {
        return Err(errno::eopnotsupp());
    }
    let n = valid(datatype, op, kind)?;
    // SAFETY: Non-null and valid for write (ABI).
    unsafe { *count = n };
    Ok(())
}

/// `fi_atomicvalid()`.
#[no_mangle]
pub(crate) extern "C" fn fi_atomicvalid(
    ep: *mut abi::fid_ep,
    datatype: u32,
    op: u32,
    count: *mut usize,
) -> c_int {
    to_c(atomicvalid(ep, datatype, op, count, Kind::Plain))
}

/// `fi_fetch_atomicvalid()`.
#[no_mangle]
pub(crate) extern "C" fn fi_fetch_atomicvalid(
    ep: *mut abi::fid_ep,
    datatype: u32,
    op: u32,
    count: *mut usize,
) -> c_int {
    to_c(atomicvalid(ep, datatype, op, count, Kind::Fetch))
}

/// `fi_compare_atomicvalid()`.
#[no_mangle]
pub(crate) extern "C" fn fi_compare_atomicvalid(
    ep: *mut abi::fid_ep,
    datatype: u32,
    op: u32,
    count: *mut usize,
) -> c_int {
    to_c(atomicvalid(ep, datatype, op, count, Kind::Compare))
}

/// `fi_query_atomic()`: what the domain's RDM endpoints serve.
#[no_mangle]
pub(crate) extern "C" fn fi_query_atomic(
    domain: *mut abi::fid_domain,
    datatype: u32,
    op: u32,
    attr: *mut abi::fi_atomic_attr,
    flags: u64,
) -> c_int {
    let result = (|| {
        // SAFETY: `domain` is null or a kofi fid the consumer keeps open.
        unsafe { lookup::<Domain>(domain) }?;
        let kind = match flags {
            0 => Kind::Plain,
            f if f == abi::FI_FETCH_ATOMIC => Kind::Fetch,
            f if f == abi::FI_COMPARE_ATOMIC => Kind::Compare,
            _ => return Err(errno::ebadflags()),
        };
        if attr.is_null() {
            return Err(EINVAL);
        }
        let count = valid(datatype, op, kind)?;
        // SAFETY: Non-null and valid for write (ABI).
        unsafe {
            *attr = abi::fi_atomic_attr {
                count,
                size: atomic::SIZE,
            }
        };
        Ok(())
    })();
    to_c(result)
}
