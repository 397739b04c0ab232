// SPDX-License-Identifier: GPL-2.0

//! kofi's objects. The core allocates every one: a `#[repr(C)]` struct whose
//! first field is the public C struct (`struct fid_ep`, ...), kept in an
//! [`Arc`]. The consumer's pointer is the `Arc`'s raw pointer; `fi_close`
//! takes it back. Children hold `Arc`s of their parents, and each object
//! counts its users (children and bindings), so closing one still in use
//! fails with -EBUSY.

use crate::abi;
use crate::av::Av;
use crate::cntr::Cntr;
use crate::context::Context;
use crate::errno;
use crate::lock::{new_bh_spinlock, BhSpinLock};
use crate::msg::{Msg, Rma, RmaMsg, TaggedMsg};
use crate::queue::{Cq, Eq};
use crate::registry::{ModuleRef, Provider};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::types::Opaque;

/// A kofi object with a public C head.
///
/// # Safety
///
/// Implementers are `#[repr(C)]` with the public struct (which starts with
/// `struct fid`) as their first field, and their `fid.fclass` is `CLASS`.
pub(crate) unsafe trait Object: Sized + Send + Sync + 'static {
    /// The public C struct.
    type Public;
    /// Its `FI_CLASS_*`.
    const CLASS: u32;

    /// The public struct's address, which is also the object's.
    fn public(&self) -> *mut Self::Public {
        core::ptr::from_ref(self).cast_mut().cast()
    }

    /// The `struct fid` at the head of the object.
    fn fid(&self) -> *mut abi::fid {
        self.public().cast()
    }

    /// The context the object was opened with.
    fn context(&self) -> Context {
        // SAFETY: The object's own head, written when it was made and not
        // changed after.
        Context::of(unsafe { (*self.fid()).context })
    }
}

/// The head of an object of class `class`.
pub(crate) fn fid_head(class: u32, context: *mut c_void) -> abi::fid {
    abi::fid {
        fclass: class as usize,
        context,
        prov_data: core::ptr::null_mut(),
    }
}

/// The object behind a pointer a consumer or provider passes in.
///
/// # Safety
///
/// `p` is null or points to a `struct fid` that is valid for reads; when its
/// class is `T::CLASS` it must be a `T` from kofi, alive for `'a` (the
/// consumer must not fi_close it meanwhile).
pub(crate) unsafe fn lookup<'a, T: Object>(p: *const T::Public) -> Result<&'a T> {
    if p.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: Non-null and valid for reads (the caller guarantees it).
    let class = unsafe { (*p.cast::<abi::fid>()).fclass };
    if class != T::CLASS as usize {
        return Err(EINVAL);
    }
    // SAFETY: By the trait's contract the object starts with its public
    // head, and the caller guarantees it is alive for `'a`.
    Ok(unsafe { &*p.cast::<T>() })
}

/// The class of the fid `p` points to, or an error for null.
///
/// # Safety
///
/// `p` is null or valid for reads.
pub(crate) unsafe fn class_of(p: *const abi::fid) -> Result<u32> {
    if p.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: The caller guarantees `p` is valid for reads.
    Ok(unsafe { (*p).fclass } as u32)
}

/// Hands the consumer its reference: the pointer it will pass back.
pub(crate) fn publish<T: Object>(object: Arc<T>) -> *mut T::Public {
    Arc::into_raw(object).cast_mut().cast()
}

/// Takes back the consumer's reference, poisoning the class so that later
/// lookups through a stale copy of the pointer fail while memory remains.
///
/// # Safety
///
/// `p` came from [`publish`] for a `T` and is not used after.
pub(crate) unsafe fn reclaim<T: Object>(p: *mut T::Public) -> Arc<T> {
    // SAFETY: `p` is a live object's head (caller).
    unsafe { (*p.cast::<abi::fid>()).fclass = abi::FI_CLASS_UNSPEC as usize };
    // SAFETY: `p` came from `Arc::into_raw` of an `Arc<T>` (caller).
    unsafe { Arc::from_raw(p.cast::<T>()) }
}

/// The users of an object: children opened on it and objects bound to it.
#[derive(Default)]
pub(crate) struct Users(AtomicUsize);

impl Users {
    pub(crate) fn get(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn put(&self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }

    /// Counts a caller that sleeps in a call on the object (fi_cq_sread,
    /// fi_eq_sread) as a user until the guard goes, so fi_close answers
    /// -EBUSY instead of freeing the object under it.
    pub(crate) fn hold(&self) -> UsersHold<'_> {
        self.get();
        UsersHold(self)
    }

    /// -EBUSY while anything uses the object.
    pub(crate) fn check_idle(&self) -> Result {
        if self.0.load(Ordering::Acquire) == 0 {
            Ok(())
        } else {
            Err(errno::ebusy())
        }
    }
}

/// A use of an object for the span of a call (see [`Users::hold`]).
pub(crate) struct UsersHold<'a>(&'a Users);

impl Drop for UsersHold<'_> {
    fn drop(&mut self) {
        self.0.put();
    }
}

/// A fabric: one provider's instance. It pins the provider's module.
#[repr(C)]
pub(crate) struct Fabric {
    pub(crate) public: Opaque<abi::fid_fabric>,
    pub(crate) module: ModuleRef,
    pub(crate) users: Users,
}

// SAFETY: `Fabric` is `#[repr(C)]` with `fid_fabric` first, of class FABRIC.
unsafe impl Object for Fabric {
    type Public = abi::fid_fabric;
    const CLASS: u32 = abi::FI_CLASS_FABRIC;
}

// SAFETY: The public head is only written by its creator before publication
// and by the provider's open op (`prov_data`); the rest is thread-safe.
unsafe impl Send for Fabric {}
// SAFETY: As above.
unsafe impl Sync for Fabric {}

impl Fabric {
    pub(crate) fn provider(&self) -> &Arc<Provider> {
        self.module.provider()
    }

    pub(crate) fn table(&self) -> &abi::kofi_provider {
        self.module.table()
    }
}

/// A domain, with the core's memory registration table.
#[repr(C)]
#[pin_data]
pub(crate) struct Domain {
    pub(crate) public: Opaque<abi::fid_domain>,
    pub(crate) fabric: Arc<Fabric>,
    pub(crate) users: Users,
    /// Keys are chosen by kofi (FI_MR_PROV_KEY) rather than the consumer.
    pub(crate) prov_key: bool,
    /// Regions are bound to an endpoint and enabled (FI_MR_ENDPOINT).
    pub(crate) mr_endpoint: bool,
    pub(crate) mr_iov_limit: usize,
    pub(crate) cq_data_size: usize,
    #[pin]
    pub(crate) mrs: crate::mr::MrTable,
}

// SAFETY: `Domain` is `#[repr(C)]` with `fid_domain` first, of class DOMAIN.
unsafe impl Object for Domain {
    type Public = abi::fid_domain;
    const CLASS: u32 = abi::FI_CLASS_DOMAIN;
}
// SAFETY: See `Fabric`.
unsafe impl Send for Domain {}
// SAFETY: See `Fabric`.
unsafe impl Sync for Domain {}

/// What an endpoint is bound to. Set before fi_enable, fixed after.
#[derive(Default)]
pub(crate) struct Bindings {
    pub(crate) tx_cq: Option<Arc<Cq>>,
    pub(crate) rx_cq: Option<Arc<Cq>>,
    pub(crate) tx_selective: bool,
    pub(crate) rx_selective: bool,
    pub(crate) eq: Option<Arc<Eq>>,
    /// The address vector of an FI_EP_RDM endpoint.
    pub(crate) av: Option<Arc<crate::av::Av>>,
    /// The counter bound for each kind of [`crate::cntr::EVENTS`].
    pub(crate) cntrs: [Option<Arc<Cntr>>; crate::cntr::EVENTS.len()],
}

/// The limits an endpoint was opened with, from its info.
#[derive(Clone, Copy, Default)]
pub(crate) struct EpLimits {
    pub(crate) caps: u64,
    pub(crate) ep_type: u32,
    pub(crate) max_msg_size: usize,
    pub(crate) inject_size: usize,
    pub(crate) tx_iov_limit: usize,
    pub(crate) rx_iov_limit: usize,
    pub(crate) rma_iov_limit: usize,
    pub(crate) tx_op_flags: u64,
    pub(crate) rx_op_flags: u64,
    /// An FI_EP_RDM endpoint built by the core over MSG ones.
    pub(crate) core_rdm: bool,
}

/// An active endpoint.
#[repr(C)]
#[pin_data]
pub(crate) struct Endpoint {
    pub(crate) public: Opaque<abi::fid_ep>,
    pub(crate) domain: Arc<Domain>,
    pub(crate) limits: EpLimits,
    pub(crate) enabled: AtomicBool,
    /// A counter is bound: reports no CQ wants still count (set at bind,
    /// read on every report without the bindings' lock).
    pub(crate) counted: AtomicBool,
    /// Regions bound to it (fi_mr_bind): it is not closed under them.
    pub(crate) users: Users,
    #[pin]
    pub(crate) bindings: BhSpinLock<Bindings>,
    /// True until fi_close: the backend's progress may be made (see
    /// [`Endpoint::make_progress`]), a provider's op one call at a time
    /// under this lock.
    #[pin]
    pub(crate) progress_gate: Mutex<bool>,
    /// What implements it: the provider's ops, or for FI_EP_RDM the core's
    /// own layer over the provider's FI_EP_MSG endpoints. [`ProviderEp`]
    /// whenever `limits.core_rdm` is false (see [`on_backend`]).
    ///
    /// [`ProviderEp`]: crate::backend::ProviderEp
    backend: &'static dyn EpBackend,
}

/// Evaluates `$call` with `$b` bound to endpoint `$ep`'s backend: a direct
/// call for a provider's endpoint (nearly every one), through the vtable
/// for the RDM layer's, as the kernel's `INDIRECT_CALL_*` do. Under TCG an
/// indirect call costs a lookup of the next translation block: one more of
/// them per call took `fi_getname` through the core from 34 to 62 ns when
/// the backends came in (``make bench-ab``, bench.rst).
macro_rules! on_backend {
    ($ep:expr, |$b:ident| $call:expr) => {{
        use $crate::object::EpBackend as _;
        if $ep.is_rdm() {
            let $b = $ep.backend();
            $call
        } else {
            // An endpoint not of the RDM layer is a provider's (the
            // `backend` field's invariant).
            let $b = &$crate::backend::ProviderEp;
            $call
        }
    }};
}
pub(crate) use on_backend;

// SAFETY: `Endpoint` is `#[repr(C)]` with `fid_ep` first, of class EP.
unsafe impl Object for Endpoint {
    type Public = abi::fid_ep;
    const CLASS: u32 = abi::FI_CLASS_EP;
}
// SAFETY: See `Fabric`.
unsafe impl Send for Endpoint {}
// SAFETY: See `Fabric`.
unsafe impl Sync for Endpoint {}

impl Endpoint {
    pub(crate) fn new(
        domain: Arc<Domain>,
        limits: EpLimits,
        context: *mut c_void,
        backend: &'static dyn EpBackend,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Endpoint {
            public: Opaque::new(abi::fid_ep {
                fid: fid_head(abi::FI_CLASS_EP, context),
            }),
            domain,
            limits,
            enabled: AtomicBool::new(false),
            counted: AtomicBool::new(false),
            users: Users::default(),
            bindings <- new_bh_spinlock!(Bindings::default(), "kofi_ep_bindings"),
            progress_gate <- new_mutex!(true, "kofi_ep_progress_gate"),
            backend,
        }? Error)
    }

    /// Asks a consumer sleeping on the endpoint's receive CQ (or that
    /// queue's owner) to make its progress: see [`Cq::request_progress`].
    pub(crate) fn request_progress(&self) -> bool {
        let Some(cq) = self.bindings.lock().rx_cq.clone() else {
            return false;
        };
        // An endpoint asking for progress is open: a provider asks only
        // before its close op returns, the RDM layer only while its internal
        // queues are open, which its close op closes.
        cq.request_progress(self, || {
            // SAFETY: A published endpoint, open (above): its reference lives.
            unsafe { arc_of(self) }
        })
    }

    /// Makes the progress the backend asked for with
    /// [`Endpoint::request_progress`], in a consumer's thread, unless
    /// fi_close has begun.
    pub(crate) fn make_progress(&self) {
        self.backend.make_progress(self);
    }

    /// fi_close has begun: no progress op runs from here on, nor is one
    /// still running when this returns.
    pub(crate) fn stop_progress(&self) {
        *self.progress_gate.lock() = false;
    }

    /// What implements the endpoint.
    pub(crate) fn backend(&self) -> &'static dyn EpBackend {
        self.backend
    }

    /// Whether it is an RDM endpoint the core builds (not a provider's own).
    pub(crate) fn is_rdm(&self) -> bool {
        self.limits.core_rdm
    }

    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// Where a report of an operation with `flags` goes: the CQ of its
    /// direction and the counter bound for its kind (one lock for both).
    pub(crate) fn report_targets(&self, flags: u64) -> (Option<Arc<Cq>>, Option<Arc<Cntr>>) {
        use crate::flags::*;
        let b = self.bindings.lock();
        let rx = flags & (FI_RECV | FI_REMOTE_WRITE | FI_REMOTE_READ) != 0;
        let cq = if rx { &b.rx_cq } else { &b.tx_cq };
        let cntr = crate::cntr::slot_of(flags).and_then(|i| b.cntrs[i].clone());
        (cq.clone(), cntr)
    }

    pub(crate) fn eq(&self) -> Option<Arc<Eq>> {
        self.bindings.lock().eq.clone()
    }
}

/// An endpoint's implementation. The core calls each method on an open
/// endpoint, after the checks the typed API makes; between `open` and
/// `close` only.
pub(crate) trait EpBackend: Sync {
    /// Opens the backend's side of `ep`, for `info`.
    ///
    /// # Safety
    ///
    /// `info` is a checked info, valid for the call.
    unsafe fn open(&self, ep: &Endpoint, info: *const abi::fi_info) -> Result;

    /// Closes it: nothing is reported on `ep` after this returns.
    fn close(&self, ep: &Endpoint);

    /// Makes the progress the backend asked of `ep` (see
    /// [`Endpoint::request_progress`]), in a consumer's thread, unless
    /// fi_close has begun (`ep.progress_gate`).
    fn make_progress(&self, ep: &Endpoint);

    /// Learns of a binding the core recorded; an error undoes it.
    fn bind(&self, _ep: &Endpoint, _target: Bind<'_>, _flags: u64) -> Result {
        Ok(())
    }

    fn enable(&self, ep: &Endpoint) -> Result;

    /// # Safety
    ///
    /// As for `Endpoint::send`.
    unsafe fn send(&self, ep: &Endpoint, m: &Msg<'_>, flags: u64) -> Result;

    /// # Safety
    ///
    /// As for `Endpoint::recv`.
    unsafe fn recv(&self, ep: &Endpoint, m: &Msg<'_>, flags: u64) -> Result;

    /// # Safety
    ///
    /// As for `Endpoint::rma`.
    unsafe fn rma(&self, ep: &Endpoint, kind: Rma, m: &RmaMsg<'_>, flags: u64) -> Result;

    /// # Safety
    ///
    /// As for `Endpoint::send`.
    unsafe fn tsend(&self, ep: &Endpoint, m: &TaggedMsg<'_>, flags: u64) -> Result;

    /// # Safety
    ///
    /// As for `Endpoint::recv`.
    unsafe fn trecv(&self, ep: &Endpoint, m: &TaggedMsg<'_>, flags: u64) -> Result;

    /// # Safety
    ///
    /// The operation's arrays hold their counts, its buffers live until
    /// its completion (the core checked both).
    unsafe fn atomic(&self, ep: &Endpoint, a: &abi::kofi_atomic, flags: u64) -> Result;

    /// Takes back the posted receive of `context`.
    fn cancel(&self, ep: &Endpoint, context: Context) -> Result;

    /// # Safety
    ///
    /// As for `Endpoint::connect`.
    unsafe fn connect(&self, _ep: &Endpoint, _addr: *const c_void, _param: &[u8]) -> Result {
        Err(errno::enosys())
    }

    fn accept(&self, _ep: &Endpoint, _param: &[u8]) -> Result {
        Err(errno::enosys())
    }

    fn shutdown(&self, _ep: &Endpoint, _flags: u64) -> Result {
        Err(errno::enosys())
    }

    /// The local address into `buf`, its length into `len` (also for
    /// -FI_ETOOSMALL).
    fn getname(&self, ep: &Endpoint, buf: &mut [u8], len: &mut usize) -> Result;

    /// The peer's address, as [`EpBackend::getname`] gives a name.
    fn getpeer(&self, _ep: &Endpoint, _buf: &mut [u8], _len: &mut usize) -> Result {
        Err(errno::enosys())
    }

    /// FI_OPT_ENDPOINT option `name` into `buf`, its length into `len`;
    /// `None` when the backend has no options of its own (the core answers
    /// the common ones).
    fn getopt(&self, ep: &Endpoint, name: c_int, buf: &mut [u8], len: &mut usize)
        -> Option<Result>;

    /// Sets FI_OPT_ENDPOINT option `name` to `val`.
    fn setopt(&self, ep: &Endpoint, name: c_int, val: &[u8]) -> Result;
}

/// What an endpoint binds.
#[derive(Clone, Copy)]
pub(crate) enum Bind<'a> {
    Cq(&'a Cq),
    Eq(&'a Eq),
    Cntr(&'a Cntr),
    Av(&'a Av),
}

impl Bind<'_> {
    /// The object `fid` names, of a class an endpoint binds.
    ///
    /// # Safety
    ///
    /// `fid` is null or a kofi fid kept open for `'a`.
    pub(crate) unsafe fn of<'a>(fid: *mut abi::fid) -> Result<Bind<'a>> {
        // SAFETY: The caller's guarantee, and each lookup is of the class
        // the fid has.
        unsafe {
            Ok(match class_of(fid)? {
                abi::FI_CLASS_CQ => Bind::Cq(lookup::<Cq>(fid.cast())?),
                abi::FI_CLASS_EQ => Bind::Eq(lookup::<Eq>(fid.cast())?),
                abi::FI_CLASS_CNTR => Bind::Cntr(lookup::<Cntr>(fid.cast())?),
                abi::FI_CLASS_AV => Bind::Av(lookup::<Av>(fid.cast())?),
                _ => return Err(EINVAL),
            })
        }
    }

    pub(crate) fn fid(&self) -> *mut abi::fid {
        match self {
            Bind::Cq(o) => o.fid(),
            Bind::Eq(o) => o.fid(),
            Bind::Cntr(o) => o.fid(),
            Bind::Av(o) => o.fid(),
        }
    }
}

/// A passive endpoint: listens for connection requests.
#[repr(C)]
#[pin_data]
pub(crate) struct PassiveEp {
    pub(crate) public: Opaque<abi::fid_pep>,
    pub(crate) fabric: Arc<Fabric>,
    pub(crate) listening: AtomicBool,
    /// What the consumer chose in the info it was opened with, which the
    /// infos of its connection requests carry.
    pub(crate) choices: crate::info::Choices,
    #[pin]
    pub(crate) eq: BhSpinLock<Option<Arc<Eq>>>,
}

// SAFETY: `PassiveEp` is `#[repr(C)]` with `fid_pep` first, of class PEP.
unsafe impl Object for PassiveEp {
    type Public = abi::fid_pep;
    const CLASS: u32 = abi::FI_CLASS_PEP;
}
// SAFETY: See `Fabric`.
unsafe impl Send for PassiveEp {}
// SAFETY: See `Fabric`.
unsafe impl Sync for PassiveEp {}

impl PassiveEp {
    /// A passive endpoint of `fabric` for `info` (checked: its attrs set).
    pub(crate) fn new(
        fabric: Arc<Fabric>,
        context: *mut c_void,
        info: &abi::fi_info,
    ) -> impl PinInit<Self, Error> {
        // SAFETY: The caller checked the info, its attrs set.
        let choices = unsafe { crate::info::Choices::of(Some(info)) };
        try_pin_init!(PassiveEp {
            public: Opaque::new(abi::fid_pep {
                fid: fid_head(abi::FI_CLASS_PEP, context),
            }),
            fabric,
            listening: AtomicBool::new(false),
            choices,
            eq <- new_bh_spinlock!(None, "kofi_pep_eq"),
        }? Error)
    }
}

/// A pending connection request, named by `fi_info.handle` on FI_CONNREQ.
/// Infos that name it hold references; the last one gone tells the provider.
#[repr(C)]
pub(crate) struct ConnReq {
    pub(crate) public: Opaque<abi::fid>,
    pub(crate) pep: Arc<PassiveEp>,
}

// SAFETY: `ConnReq` is `#[repr(C)]` with `fid` first, of class CONNREQ.
unsafe impl Object for ConnReq {
    type Public = abi::fid;
    const CLASS: u32 = abi::FI_CLASS_CONNREQ;
}
// SAFETY: See `Fabric`.
unsafe impl Send for ConnReq {}
// SAFETY: See `Fabric`.
unsafe impl Sync for ConnReq {}

impl Drop for ConnReq {
    fn drop(&mut self) {
        self.pep
            .fabric
            .provider()
            .count(abi::FI_CLASS_CONNREQ, false);
        // This is the request's last reference, released once.
        self.provider_release();
    }
}

/// Takes another reference on `handle` when it is a connection request;
/// returns the handle to store in a copy of an info.
///
/// # Safety
///
/// `handle` is null or a fid from kofi.
pub(crate) unsafe fn connreq_get(handle: *mut abi::fid) -> *mut abi::fid {
    // SAFETY: The caller guarantees `handle` is null or a kofi fid.
    if let Ok(req) = unsafe { lookup::<ConnReq>(handle) } {
        // SAFETY: `req` lives in an `Arc` (it was published).
        let arc = unsafe { Arc::from_raw(core::ptr::from_ref::<ConnReq>(req)) };
        let extra = arc.clone();
        let _ = Arc::into_raw(arc);
        return publish(extra).cast();
    }
    handle
}

/// Drops a reference taken by [`connreq_get`] or by the FI_CONNREQ event.
///
/// # Safety
///
/// `handle` is null or a fid from kofi; a connection request's reference is
/// not used after.
pub(crate) unsafe fn connreq_put(handle: *mut abi::fid) {
    // SAFETY: The caller guarantees `handle` is null or a kofi fid.
    if unsafe { lookup::<ConnReq>(handle) }.is_ok() {
        // SAFETY: The info held one reference from `publish`.
        drop(unsafe { Arc::from_raw(handle.cast::<ConnReq>()) });
    }
}

/// Another `Arc` of a published object.
///
/// # Safety
///
/// `object` was published (it lives in an `Arc`).
pub(crate) unsafe fn arc_of<T: Object>(object: &T) -> Arc<T> {
    // SAFETY: The caller guarantees `object` lives in an `Arc`.
    let arc = unsafe { Arc::from_raw(core::ptr::from_ref::<T>(object)) };
    let extra = arc.clone();
    let _ = Arc::into_raw(arc);
    extra
}
