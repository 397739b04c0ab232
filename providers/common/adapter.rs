// SPDX-License-Identifier: GPL-2.0

//! The C dispatch tables built from a [`Provider`]: `extern "C"`
//! trampolines generic over it, as the kernel's `#[vtable]` adapters are. The
//! provider's objects live in `fid.prov_data` as boxed foreign pointers.

use super::buffers::Premapped;
use super::handles::{drop_request, request_of, DomainRef, EpRef, PeerAddr, PepRef};
use super::info::InfoRef;
use super::messages::{Msg, PremappedOf, RmaMsg, TaggedMsg};
use super::provider::{Domain, Endpoint, MrAttr, PassiveEndpoint, Provider};
use super::{fi_error, Context};
use crate::abi;
use core::marker::PhantomData;
use core::ptr::{self, NonNull};
use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;
use kernel::types::ForeignOwnable;

/// The C return value of a `Result`.
fn ret(r: Result) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The provider state behind a fid.
///
/// # Safety
///
/// `fid` is a live kofi object whose `prov_data` is a `KBox<T>`'s pointer.
pub(super) unsafe fn state<'a, T: 'static>(fid: *mut abi::fid) -> &'a T {
    // SAFETY: The caller's guarantee.
    unsafe { <KBox<T> as ForeignOwnable>::borrow((*fid).prov_data) }
}

/// Stores `value` as the provider state of `fid`.
///
/// # Safety
///
/// `fid` is a live kofi object being opened (its `prov_data` unset).
unsafe fn set_state<T: 'static>(fid: *mut abi::fid, value: T) -> Result {
    let boxed = KBox::new(value, GFP_KERNEL)?;
    // SAFETY: The caller's guarantee.
    unsafe { (*fid).prov_data = crate::compat::into_foreign(boxed) };
    Ok(())
}

/// Takes back and drops the provider state of `fid`.
///
/// # Safety
///
/// As [`state`]; the state is not used after.
unsafe fn drop_state<T: 'static>(fid: *mut abi::fid) {
    // SAFETY: The caller's guarantee.
    drop(unsafe { <KBox<T> as ForeignOwnable>::from_foreign((*fid).prov_data) });
    // SAFETY: `fid` is live.
    unsafe { (*fid).prov_data = ptr::null_mut() };
}

/// An optional string argument.
///
/// # Safety
///
/// `s` is null or a NUL-terminated string valid for `'a`.
pub(super) unsafe fn opt_cstr<'a>(s: *const c_char) -> Option<&'a CStr> {
    // SAFETY: The caller's guarantee.
    (!s.is_null()).then(|| unsafe { CStr::from_char_ptr(s) })
}

/// Private data of a CM call.
///
/// # Safety
///
/// `p` holds `len` bytes when non-null (the core checked the pair).
unsafe fn param<'a>(p: *const c_void, len: usize) -> &'a [u8] {
    if p.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: The caller's guarantee.
        unsafe { core::slice::from_raw_parts(p.cast(), len) }
    }
}

/// Copies an address the provider produced into the consumer's buffer,
/// with fi_getname's semantics (-FI_ETOOSMALL and the size needed).
///
/// # Safety
///
/// `addrlen` is valid; `addr` holds `*addrlen` bytes when non-null.
unsafe fn give_name(name: &[u8], addr: *mut c_void, addrlen: *mut usize) -> c_int {
    // SAFETY: The caller's guarantee.
    let room = unsafe { *addrlen };
    // SAFETY: As above.
    unsafe { *addrlen = name.len() };
    if room < name.len() || addr.is_null() {
        return fi_error(abi::FI_ETOOSMALL).to_errno();
    }
    // SAFETY: `addr` has room for `name`.
    unsafe { ptr::copy_nonoverlapping(name.as_ptr(), addr.cast(), name.len()) };
    0
}

/// The trampolines of provider `P`: `extern "C"` functions the C tables
/// point to, each calling into the provider's traits.
pub(super) struct Adapter<P: Provider>(PhantomData<P>);

impl<P: Provider> Adapter<P> {
    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    pub(super) unsafe extern "C" fn getinfo(
        version: u32,
        node: *const c_char,
        service: *const c_char,
        flags: u64,
        _hints: *const abi::fi_info,
        info: *mut *mut abi::fi_info,
    ) -> c_int {
        // SAFETY: The core passes valid (or null) strings and a valid `info`.
        let (node, service) = unsafe { (opt_cstr(node), opt_cstr(service)) };
        match P::getinfo(version, node, service, flags) {
            Ok(list) => {
                // SAFETY: The core's out pointer.
                unsafe { *info = list.into_raw() };
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    pub(super) unsafe extern "C" fn fabric(
        attr: *mut abi::fi_fabric_attr,
        fabric: *mut abi::fid_fabric,
        _context: *mut c_void,
    ) -> c_int {
        // SAFETY: The core checked `attr` and allocated `fabric`.
        ret(P::fabric(unsafe { &*attr }).and_then(|f| unsafe { set_state(fabric.cast(), f) }))
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    pub(super) unsafe extern "C" fn fabric_close(fabric: *mut abi::fid_fabric) {
        // SAFETY: Set by `fabric`; the core closes once.
        unsafe { drop_state::<P::Fabric>(fabric.cast()) };
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn domain_open(
        fabric: *mut abi::fid_fabric,
        info: *const abi::fi_info,
        domain: *mut abi::fid_domain,
    ) -> c_int {
        // SAFETY: The fabric was opened by `fabric`; the core checked `info`
        // and allocated `domain`.
        let r = unsafe {
            let f = state::<P::Fabric>(fabric.cast());
            let d = DomainRef {
                ptr: NonNull::new_unchecked(domain),
            };
            P::domain(f, d, &InfoRef { raw: &*info }).and_then(|v| set_state(domain.cast(), v))
        };
        ret(r)
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn domain_close(domain: *mut abi::fid_domain) {
        // SAFETY: Set by `domain_open`; the core closes once.
        unsafe { drop_state::<P::Domain>(domain.cast()) };
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_open(
        domain: *mut abi::fid_domain,
        info: *const abi::fi_info,
        ep: *mut abi::fid_ep,
    ) -> c_int {
        // SAFETY: As in `domain_open`, one level down.
        let r = unsafe {
            let d = state::<P::Domain>(domain.cast());
            let e = EpRef {
                ptr: NonNull::new_unchecked(ep),
            };
            P::endpoint(d, e, &InfoRef { raw: &*info }).and_then(|v| set_state(ep.cast(), v))
        };
        ret(r)
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_close(ep: *mut abi::fid_ep) {
        // SAFETY: Set by `ep_open`; the core closes once.
        unsafe { drop_state::<P::Endpoint>(ep.cast()) };
    }

    /// The provider's endpoint behind `ep`.
    ///
    /// # Safety
    ///
    /// `ep` is live and was opened by `ep_open`.
    unsafe fn ep<'a>(ep: *mut abi::fid_ep) -> &'a P::Endpoint {
        // SAFETY: The caller's guarantee.
        unsafe { state::<P::Endpoint>(ep.cast()) }
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_enable(ep: *mut abi::fid_ep) -> c_int {
        // SAFETY: The core calls ops on live endpoints of this provider.
        ret(unsafe { Self::ep(ep) }.enable())
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_connect(
        ep: *mut abi::fid_ep,
        addr: *const c_void,
        p: *const c_void,
        len: usize,
    ) -> c_int {
        // SAFETY: As above; the core checked the private data.
        ret(unsafe { Self::ep(ep).connect(PeerAddr(addr), param(p, len)) })
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_accept(ep: *mut abi::fid_ep, p: *const c_void, len: usize) -> c_int {
        // SAFETY: As above.
        ret(unsafe { Self::ep(ep).accept(param(p, len)) })
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_shutdown(ep: *mut abi::fid_ep, _flags: u64) -> c_int {
        // SAFETY: As above.
        ret(unsafe { Self::ep(ep) }.shutdown())
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_getname(
        ep: *mut abi::fid_ep,
        addr: *mut c_void,
        len: *mut usize,
    ) -> c_int {
        let mut name = KVec::new();
        // SAFETY: As above.
        match unsafe { Self::ep(ep) }.getname(&mut name) {
            // SAFETY: The core checked `len` (and `addr` against it).
            Ok(()) => unsafe { give_name(&name, addr, len) },
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_getpeer(
        ep: *mut abi::fid_ep,
        addr: *mut c_void,
        len: *mut usize,
    ) -> c_int {
        let mut name = KVec::new();
        // SAFETY: As above.
        match unsafe { Self::ep(ep) }.getpeer(&mut name) {
            // SAFETY: As above.
            Ok(()) => unsafe { give_name(&name, addr, len) },
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_sendmsg(
        ep: *mut abi::fid_ep,
        msg: *const abi::fi_msg,
        flags: u64,
    ) -> isize {
        // SAFETY: As above; the core checked `msg`.
        ret(unsafe { Self::ep(ep).sendmsg(&Self::msg(&*msg), flags) }) as isize
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_recvmsg(
        ep: *mut abi::fid_ep,
        msg: *const abi::fi_msg,
        flags: u64,
    ) -> isize {
        // SAFETY: As above.
        ret(unsafe { Self::ep(ep).recvmsg(&Self::msg(&*msg), flags) }) as isize
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_tsendmsg(
        ep: *mut abi::fid_ep,
        msg: *const abi::fi_msg_tagged,
        flags: u64,
    ) -> isize {
        // SAFETY: The core calls this only on an open, enabled endpoint of
        // this provider, set up by `ep_open`, with a `msg` it checked.
        ret(unsafe { Self::ep(ep).tsendmsg(&Self::tagged(&*msg), flags) }) as isize
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_trecvmsg(
        ep: *mut abi::fid_ep,
        msg: *const abi::fi_msg_tagged,
        flags: u64,
    ) -> isize {
        // SAFETY: The core calls this only on an open, enabled endpoint of
        // this provider, set up by `ep_open`, with a `msg` it checked.
        ret(unsafe { Self::ep(ep).trecvmsg(&Self::tagged(&*msg), flags) }) as isize
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_cancel(ep: *mut abi::fid_ep, context: *mut c_void) -> isize {
        // SAFETY: The core calls this only on an open, enabled endpoint of
        // this provider, set up by `ep_open`; `context` is a cookie.
        ret(unsafe { Self::ep(ep).cancel(Context::of(context)) }) as isize
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_progress(ep: *mut abi::fid_ep) {
        // SAFETY: The core calls this only on an open endpoint of this
        // provider, set up by `ep_open`, before its close op.
        unsafe { Self::ep(ep).progress() }
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_readmsg(
        ep: *mut abi::fid_ep,
        msg: *const abi::fi_msg_rma,
        flags: u64,
    ) -> isize {
        // SAFETY: As above.
        ret(unsafe { Self::ep(ep).readmsg(&Self::rma(&*msg), flags) }) as isize
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_writemsg(
        ep: *mut abi::fid_ep,
        msg: *const abi::fi_msg_rma,
        flags: u64,
    ) -> isize {
        // SAFETY: As above.
        ret(unsafe { Self::ep(ep).writemsg(&Self::rma(&*msg), flags) }) as isize
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn pep_open(
        fabric: *mut abi::fid_fabric,
        info: *const abi::fi_info,
        pep: *mut abi::fid_pep,
    ) -> c_int {
        // SAFETY: As in `domain_open`.
        let r = unsafe {
            let f = state::<P::Fabric>(fabric.cast());
            let p = PepRef {
                ptr: NonNull::new_unchecked(pep),
            };
            P::passive_ep(f, p, &InfoRef { raw: &*info }).and_then(|v| set_state(pep.cast(), v))
        };
        ret(r)
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn pep_close(pep: *mut abi::fid_pep) {
        // SAFETY: Set by `pep_open`; the core closes once.
        unsafe { drop_state::<P::PassiveEp>(pep.cast()) };
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn pep_listen(pep: *mut abi::fid_pep) -> c_int {
        // SAFETY: A live passive endpoint of this provider.
        ret(unsafe { state::<P::PassiveEp>(pep.cast()) }.listen())
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn pep_reject(
        pep: *mut abi::fid_pep,
        handle: *mut abi::fid,
        p: *const c_void,
        len: usize,
    ) -> c_int {
        // SAFETY: A live passive endpoint; the core checked `handle` is one
        // of its requests, made by `PepRef::connreq`.
        ret(unsafe {
            request_of::<<P::PassiveEp as PassiveEndpoint>::Request>(handle)
                .ok_or(EINVAL)
                .and_then(|request| {
                    state::<P::PassiveEp>(pep.cast()).reject(request, param(p, len))
                })
        })
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn pep_getname(
        pep: *mut abi::fid_pep,
        addr: *mut c_void,
        len: *mut usize,
    ) -> c_int {
        let mut name = KVec::new();
        // SAFETY: A live passive endpoint of this provider.
        match unsafe { state::<P::PassiveEp>(pep.cast()) }.getname(&mut name) {
            // SAFETY: The core checked `len` (and `addr` against it).
            Ok(()) => unsafe { give_name(&name, addr, len) },
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn connreq_release(handle: *mut abi::fid) {
        // SAFETY: The last reference of a request made by `PepRef::connreq`.
        unsafe { drop_request::<<P::PassiveEp as PassiveEndpoint>::Request>(handle) };
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn mr_reg(
        domain: *mut abi::fid_domain,
        mr: *mut abi::fid_mr,
        attr: *const abi::fi_mr_attr,
        _flags: u64,
    ) -> c_int {
        // INVARIANT: fi_mr_reg's attributes: the consumer keeps the memory
        // registered until the region's close, which drops its state.
        // SAFETY: A live domain of this provider; the core checked `attr`
        // and allocated `mr`, not yet visible to anyone else.
        ret(unsafe {
            state::<P::Domain>(domain.cast())
                .mr_reg(&MrAttr { raw: &*attr })
                .and_then(|(key, region)| {
                    (*mr).key = key;
                    set_state(mr.cast(), region)
                })
        })
    }

    /// What the provider keeps of the region descriptor `desc` names.
    ///
    /// # Safety
    ///
    /// `desc` is a descriptor the core checked: a live region of a domain
    /// of this provider, whose state `mr_reg` set (the descriptor is the
    /// region's fid).
    unsafe fn premapped_of(desc: *mut c_void) -> Option<Premapped> {
        // SAFETY: The caller's guarantee.
        let region = unsafe { state::<<P::Domain as Domain>::Region>(desc.cast()) };
        <P::Domain as Domain>::premapped(region)
    }

    /// How the operations find it; none when regions have no state here.
    const PREMAPPED_OF: PremappedOf = if <P::Domain as Domain>::HAS_MR_REG {
        Some(Self::premapped_of)
    } else {
        None
    };

    /// A message operation's arguments as the provider gets them.
    fn msg(raw: &abi::fi_msg) -> Msg<'_> {
        Msg {
            raw,
            premapped_of: Self::PREMAPPED_OF,
        }
    }

    /// A tagged operation's arguments as the provider gets them.
    fn tagged(raw: &abi::fi_msg_tagged) -> TaggedMsg<'_> {
        TaggedMsg {
            raw,
            premapped_of: Self::PREMAPPED_OF,
        }
    }

    /// An RMA operation's arguments as the provider gets them.
    fn rma(raw: &abi::fi_msg_rma) -> RmaMsg<'_> {
        RmaMsg {
            raw,
            premapped_of: Self::PREMAPPED_OF,
        }
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn mr_close(mr: *mut abi::fid_mr) {
        // SAFETY: Set by `mr_reg`; the core closes once.
        unsafe { drop_state::<<P::Domain as Domain>::Region>(mr.cast()) };
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn mr_enable(
        domain: *mut abi::fid_domain,
        mr: *mut abi::fid_mr,
        ep: *mut abi::fid_ep,
    ) -> c_int {
        // SAFETY: A live domain, a region `mr_reg` gave state to, and an
        // open endpoint, all of this provider (the core checked the binding).
        ret(unsafe {
            P::mr_enable(
                state::<P::Domain>(domain.cast()),
                state::<<P::Domain as Domain>::Region>(mr.cast()),
                state::<P::Endpoint>(ep.cast()),
            )
        })
    }

    pub(super) const DOMAIN_OPS: abi::kofi_domain_ops = abi::kofi_domain_ops {
        open: Some(Self::domain_open),
        close: Some(Self::domain_close),
        mr_reg: if <P::Domain as Domain>::HAS_MR_REG {
            Some(Self::mr_reg)
        } else {
            None
        },
        mr_close: if <P::Domain as Domain>::HAS_MR_REG {
            Some(Self::mr_close)
        } else {
            None
        },
        mr_enable: if <P::Domain as Domain>::HAS_MR_REG && P::HAS_MR_ENABLE {
            Some(Self::mr_enable)
        } else {
            None
        },
    };

    pub(super) const EP_OPS: abi::kofi_ep_ops = abi::kofi_ep_ops {
        open: Some(Self::ep_open),
        close: Some(Self::ep_close),
        bind: None,
        enable: if <P::Endpoint as Endpoint>::HAS_ENABLE {
            Some(Self::ep_enable)
        } else {
            None
        },
        connect: if <P::Endpoint as Endpoint>::HAS_CONNECT {
            Some(Self::ep_connect)
        } else {
            None
        },
        accept: if <P::Endpoint as Endpoint>::HAS_ACCEPT {
            Some(Self::ep_accept)
        } else {
            None
        },
        shutdown: if <P::Endpoint as Endpoint>::HAS_SHUTDOWN {
            Some(Self::ep_shutdown)
        } else {
            None
        },
        getname: if <P::Endpoint as Endpoint>::HAS_GETNAME {
            Some(Self::ep_getname)
        } else {
            None
        },
        getpeer: if <P::Endpoint as Endpoint>::HAS_GETPEER {
            Some(Self::ep_getpeer)
        } else {
            None
        },
        getopt: None,
        setopt: None,
        sendmsg: if <P::Endpoint as Endpoint>::HAS_SENDMSG {
            Some(Self::ep_sendmsg)
        } else {
            None
        },
        recvmsg: if <P::Endpoint as Endpoint>::HAS_RECVMSG {
            Some(Self::ep_recvmsg)
        } else {
            None
        },
        readmsg: if <P::Endpoint as Endpoint>::HAS_READMSG {
            Some(Self::ep_readmsg)
        } else {
            None
        },
        writemsg: if <P::Endpoint as Endpoint>::HAS_WRITEMSG {
            Some(Self::ep_writemsg)
        } else {
            None
        },
        cancel: if <P::Endpoint as Endpoint>::HAS_CANCEL {
            Some(Self::ep_cancel)
        } else {
            None
        },
        tsendmsg: if <P::Endpoint as Endpoint>::HAS_TSENDMSG {
            Some(Self::ep_tsendmsg)
        } else {
            None
        },
        trecvmsg: if <P::Endpoint as Endpoint>::HAS_TRECVMSG {
            Some(Self::ep_trecvmsg)
        } else {
            None
        },
        // Atomic operations are the core's RDM layer's (rdm.rst).
        atomicmsg: None,
        progress: if <P::Endpoint as Endpoint>::HAS_PROGRESS {
            Some(Self::ep_progress)
        } else {
            None
        },
    };

    pub(super) const PEP_OPS: abi::kofi_pep_ops = abi::kofi_pep_ops {
        open: Some(Self::pep_open),
        close: Some(Self::pep_close),
        listen: if <P::PassiveEp as PassiveEndpoint>::HAS_LISTEN {
            Some(Self::pep_listen)
        } else {
            None
        },
        reject: if <P::PassiveEp as PassiveEndpoint>::HAS_REJECT {
            Some(Self::pep_reject)
        } else {
            None
        },
        getname: if <P::PassiveEp as PassiveEndpoint>::HAS_GETNAME {
            Some(Self::pep_getname)
        } else {
            None
        },
        connreq_release: Some(Self::connreq_release),
    };
}
