// SPDX-License-Identifier: GPL-2.0

//! RDMA devices as the ib_client sees them, and kofi domains on them.
//!
//! The registry lists the devices between the client's add and remove
//! callbacks. Each entry knows the connections and domains made on its
//! device, so removing the device (`rdma link delete`) tears them down
//! before the callback returns: connections report error completions and
//! FI_SHUTDOWN; domains drop their regions and PD. The consumer's objects
//! stay, answering -FI_ENOTCONN (or failing) until closed.

use crate::abi;
use crate::compat::CStrBytes;
use crate::compat::VecExt;
use crate::conn::Conn;
use crate::flags::*;
use crate::kofi::{self, fi_error, DomainRef, MrAttr, Premapped};
use crate::rdma::{Device, LocalMap, Pd, Region};
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::prelude::*;
use kernel::sync::{new_condvar, new_mutex, Arc, CondVar, Mutex};
use kernel::time::msecs_to_jiffies;

/// One registered device and what is made on it.
#[pin_data]
pub(crate) struct DeviceEntry {
    dev: Device,
    #[pin]
    users: Mutex<Users>,
}

#[derive(Default)]
struct Users {
    removed: bool,
    conns: KVec<Arc<Conn>>,
    domains: KVec<Arc<VDomain>>,
}

impl DeviceEntry {
    pub(crate) fn device(&self) -> Device {
        self.dev
    }

    pub(crate) fn add_conn(&self, conn: &Arc<Conn>) -> Result {
        let mut u = self.users.lock();
        if u.removed {
            return Err(ENODEV);
        }
        u.conns.push(conn.clone(), GFP_KERNEL)?;
        Ok(())
    }

    pub(crate) fn remove_conn(&self, conn: &Conn) {
        let mut u = self.users.lock();
        if let Some(i) = u.conns.iter().position(|c| core::ptr::eq(&**c, conn)) {
            drop(u.conns.swap_remove(i));
        }
    }

    fn add_domain(&self, d: &Arc<VDomain>) -> Result {
        let mut u = self.users.lock();
        if u.removed {
            return Err(ENODEV);
        }
        u.domains.push(d.clone(), GFP_KERNEL)?;
        Ok(())
    }

    fn remove_domain(&self, d: &VDomain) {
        let mut u = self.users.lock();
        if let Some(i) = u.domains.iter().position(|x| core::ptr::eq(&**x, d)) {
            drop(u.domains.swap_remove(i));
        }
    }

    /// The device is going: tear down everything on it.
    fn remove(&self) {
        self.users.lock().removed = true;
        loop {
            let conn = self.users.lock().conns.first().cloned();
            let Some(conn) = conn else { break };
            conn.device_gone();
            self.remove_conn(&conn);
        }
        loop {
            let d = self.users.lock().domains.first().cloned();
            let Some(d) = d else { break };
            d.device_gone();
            self.remove_domain(&d);
        }
    }
}

/// The devices present, for the module's lifetime.
#[pin_data]
pub(crate) struct Registry {
    #[pin]
    devices: Mutex<KVec<Arc<DeviceEntry>>>,
}

static REGISTRY: AtomicPtr<Registry> = AtomicPtr::new(ptr::null_mut());

impl Registry {
    /// Installs the registry; before the ib_client registers.
    pub(crate) fn install() -> Result<Pin<KBox<Registry>>> {
        let r = KBox::pin_init(
            pin_init!(Registry {
                devices <- new_mutex!(KVec::new(), "kofi_verbs_devices"),
            }),
            GFP_KERNEL,
        )?;
        REGISTRY.store(ptr::from_ref(&*r).cast_mut(), Ordering::Release);
        Ok(r)
    }

    /// After the ib_client is unregistered (every device removed).
    pub(crate) fn uninstall() {
        REGISTRY.store(ptr::null_mut(), Ordering::Release);
    }

    fn get() -> Option<&'static Registry> {
        // SAFETY: Set by `install` to a pinned box the module keeps until
        // `uninstall`; the callers run between the two (the client's
        // callbacks and the provider's ops).
        unsafe { REGISTRY.load(Ordering::Acquire).as_ref() }
    }
}

/// The devices present, in the order they came.
pub(crate) fn devices() -> Result<KVec<Arc<DeviceEntry>>> {
    let mut out = KVec::new();
    if let Some(r) = Registry::get() {
        for e in r.devices.lock().iter() {
            out.push(e.clone(), GFP_KERNEL)?;
        }
    }
    Ok(out)
}

pub(crate) fn entry_of(dev: &Device) -> Option<Arc<DeviceEntry>> {
    let r = Registry::get()?;
    let devices = r.devices.lock();
    devices.iter().find(|e| e.dev.same(dev)).cloned()
}

pub(crate) fn entry_named(name: &CStr) -> Option<Arc<DeviceEntry>> {
    let r = Registry::get()?;
    let devices = r.devices.lock();
    devices
        .iter()
        .find(|e| e.dev.name().cstr_bytes() == name.cstr_bytes())
        .cloned()
}

/// A device added (the ib_client's add callback, `rdma.rs`).
pub(crate) fn added(dev: Device) {
    let Some(r) = Registry::get() else {
        return;
    };
    let Ok(entry) = Arc::pin_init(
        pin_init!(DeviceEntry {
            dev,
            users <- new_mutex!(Users::default(), "kofi_verbs_device"),
        }),
        GFP_KERNEL,
    ) else {
        return;
    };
    let _ = r.devices.lock().push(entry, GFP_KERNEL);
}

/// A device going (the ib_client's remove callback, `rdma.rs`): nothing of
/// kofi's is left on it when this returns.
pub(crate) fn removed(dev: Device) {
    let Some(r) = Registry::get() else {
        return;
    };
    let entry = {
        let mut devices = r.devices.lock();
        devices
            .iter()
            .position(|e| e.dev.same(&dev))
            .map(|i| devices.swap_remove(i))
    };
    if let Some(entry) = entry {
        entry.remove();
    }
}

/// How long a region's registration in flight is waited for (by
/// fi_mr_reg, the region's close, a connection's greeting), and how often
/// its connection's completions are reaped meanwhile.
const SETTLE_MS: u32 = 10_000;
const SETTLE_POLL_MS: u32 = 10;

/// Where a region's registration stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RegPhase {
    /// Waiting for a connection to register through.
    Pending,
    /// Registration work request in flight.
    Posted,
    Valid,
    Failed,
}

struct RegInner {
    region: Option<Region>,
    phase: RegPhase,
    /// While `Posted`: the connection whose send queue holds the
    /// registration (its completion comes on that connection's CQ).
    through: Option<Arc<Conn>>,
    /// The region is being closed: no registration is posted for it again.
    closing: bool,
}

/// How a region's registration reaches the device.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RegRoute {
    /// Through any connection of the domain, waited for by fi_mr_reg.
    Domain,
    /// Through the endpoint it is bound to, at fi_mr_enable, not waited for
    /// (FI_MR_ENDPOINT): the QP orders it before what the endpoint posts next.
    Endpoint,
}

/// A region with remote access and its fast registration.
#[pin_data]
pub(crate) struct RegState {
    route: RegRoute,
    #[pin]
    inner: Mutex<RegInner>,
    #[pin]
    changed: CondVar,
}

impl RegState {
    /// Runs `post` with the region to post its registration through
    /// `conn`.
    pub(crate) fn with_region(
        &self,
        conn: &Arc<Conn>,
        post: impl FnOnce(&Region) -> Result,
    ) -> Result {
        let mut g = self.inner.lock();
        if g.phase != RegPhase::Pending || g.closing {
            return Err(EINVAL);
        }
        let region = g.region.as_ref().ok_or(ENODEV)?;
        post(region)?;
        g.phase = RegPhase::Posted;
        // Until `done`, which every posted registration reaches: its
        // completion, or the connection's release failing it.
        g.through = Some(conn.clone());
        Ok(())
    }

    /// The registration completed (`ok`) or failed.
    pub(crate) fn done(&self, ok: bool) {
        let mut g = self.inner.lock();
        // Not the connection's last reference: its caller (polling it, or
        // releasing it) holds one.
        g.through = None;
        // A flushed registration (its connection went away) may try again.
        g.phase = if ok {
            RegPhase::Valid
        } else {
            RegPhase::Pending
        };
        if !ok && g.region.is_none() {
            g.phase = RegPhase::Failed;
        }
        drop(g);
        self.changed.notify_all();
    }

    /// Waits while the registration is in flight, up to SETTLE_MS; its
    /// phase after. Meanwhile it reaps the completions of the connection
    /// the registration went through: the thread waiting may be the very
    /// one its completion is handed to (a consumer making its queue's
    /// progress, KOFI_CQ_HANDLER_PROGRESS, closing a region), and the
    /// connection may be failing, its flushed completions reaped by nobody
    /// else until its endpoint closes, after the region.
    fn settle(&self) -> RegPhase {
        let rounds = SETTLE_MS / SETTLE_POLL_MS;
        for _ in 0..rounds {
            let through = {
                let g = self.inner.lock();
                if g.phase != RegPhase::Posted {
                    return g.phase;
                }
                g.through.clone()
            };
            if let Some(conn) = through {
                conn.poll();
            }
            let mut g = self.inner.lock();
            if g.phase != RegPhase::Posted {
                return g.phase;
            }
            let _ = self
                .changed
                .wait_interruptible_timeout(&mut g, msecs_to_jiffies(SETTLE_POLL_MS));
        }
        self.inner.lock().phase
    }

    /// The region's close began: nothing is posted for it from now on.
    fn close(&self) {
        self.inner.lock().closing = true;
    }

    fn take_region(&self) -> Option<Region> {
        self.inner.lock().region.take()
    }

    /// Waiting for a connection of the domain to register through.
    fn pending(&self) -> bool {
        let g = self.inner.lock();
        self.route == RegRoute::Domain && g.phase == RegPhase::Pending && !g.closing
    }
}

/// A kofi domain on a device: its PD and its regions with remote access.
#[pin_data]
pub(crate) struct VDomain {
    entry: Arc<DeviceEntry>,
    /// Regions go through the endpoint they are bound to (FI_MR_ENDPOINT).
    mr_endpoint: bool,
    #[pin]
    pd: Mutex<Option<Arc<Pd>>>,
    #[pin]
    regs: Mutex<KVec<Arc<RegState>>>,
    /// Every region's local mapping (changed under `regs` too, so
    /// `device_gone` never misses one).
    #[pin]
    locals: Mutex<KVec<Arc<LocalMap>>>,
}

impl VDomain {
    pub(crate) fn open(entry: Arc<DeviceEntry>, mr_endpoint: bool) -> Result<Arc<VDomain>> {
        let pd = Pd::new(entry.dev)?;
        let owner = entry.clone();
        let d = Arc::pin_init(
            pin_init!(VDomain {
                entry: owner,
                mr_endpoint,
                pd <- new_mutex!(Some(pd), "kofi_verbs_pd"),
                regs <- new_mutex!(KVec::new(), "kofi_verbs_regs"),
                locals <- new_mutex!(KVec::new(), "kofi_verbs_locals"),
            }),
            GFP_KERNEL,
        )?;
        entry.add_domain(&d)?;
        Ok(d)
    }

    pub(crate) fn entry(&self) -> &Arc<DeviceEntry> {
        &self.entry
    }

    /// Runs `f` with the PD, unless the device is gone.
    pub(crate) fn with_pd<R>(&self, f: impl FnOnce(&Arc<Pd>) -> Result<R>) -> Result<R> {
        let pd = self.pd.lock();
        f(pd.as_ref().ok_or_else(|| fi_error(abi::FI_ENOTCONN))?)
    }

    /// Registers the regions waiting for a connection through `conn`.
    pub(crate) fn register_pending(&self, conn: &Arc<Conn>) {
        let regs = self.regs.lock();
        for r in regs.iter().filter(|r| r.pending()) {
            let _ = conn.post_reg(r);
        }
    }

    /// Waits for the registrations in flight (on any connection of the
    /// domain) to complete.
    pub(crate) fn settle_registrations(&self) {
        let posted = {
            let regs = self.regs.lock();
            let mut posted = KVec::new();
            for r in regs.iter() {
                if posted.push(r.clone(), GFP_KERNEL).is_err() {
                    break;
                }
            }
            posted
        };
        for r in posted.iter() {
            r.settle();
        }
    }

    /// fi_mr_reg with remote access: the region, fast-registered through
    /// a connection of the domain now or when the first one comes up; in an
    /// FI_MR_ENDPOINT domain through its endpoint at fi_mr_enable.
    fn register(&self, attr: &MrAttr<'_>) -> Result<(u64, Arc<RegState>)> {
        let access = attr.access();
        let (rr, rw) = (access & FI_REMOTE_READ != 0, access & FI_REMOTE_WRITE != 0);
        // Held from the region's making to its listing: `device_gone` takes
        // the list and the PD under this lock, so it never misses a region
        // made on a PD it is about to drop (the device's MRs must all be
        // gone when its removal returns).
        let mut regs = self.regs.lock();
        let region = self.with_pd(|pd| {
            // Dropped by the region's close (`unregister`) or the device's
            // removal.
            Region::registered(pd, attr, rr, rw)
        })?;
        let key = region.key();
        let route = if self.mr_endpoint {
            RegRoute::Endpoint
        } else {
            RegRoute::Domain
        };
        let reg = Arc::pin_init(
            pin_init!(RegState {
                route,
                inner <- new_mutex!(
                    RegInner {
                        region: Some(region),
                        phase: RegPhase::Pending,
                        through: None,
                        closing: false,
                    },
                    "kofi_verbs_reg"
                ),
                changed <- new_condvar!("kofi_verbs_reg"),
            }),
            GFP_KERNEL,
        )?;
        regs.push(reg.clone(), GFP_KERNEL)?;
        if route == RegRoute::Endpoint {
            return Ok((key, reg));
        }
        for conn in self.entry.conns_of(self)?.iter() {
            if conn.post_reg(&reg).is_ok() {
                break;
            }
        }
        drop(regs);
        if reg.settle() == RegPhase::Failed {
            self.unregister(&reg);
            return Err(EIO);
        }
        Ok((key, reg))
    }

    fn unregister(&self, reg: &Arc<RegState>) {
        // Listed while its registration settles (none is posted again),
        // then unlisted and released under the list's lock: `device_gone`
        // either finds it and releases it itself or runs after its MR is
        // gone (the device must not outlive it).
        reg.close();
        reg.settle();
        let mut regs = self.regs.lock();
        if let Some(i) = regs.iter().position(|r| Arc::ptr_eq(r, reg)) {
            drop(regs.swap_remove(i));
        }
        drop(reg.take_region());
    }

    /// The local mapping of registration `attr`'s memory (every region has
    /// one: operations whose buffers carry its descriptor use it).
    fn map_locally(&self, attr: &MrAttr<'_>) -> Result<Arc<LocalMap>> {
        // Made and listed under `regs`, as `register` makes regions, so
        // `device_gone` releases it or runs before (the PD check fails).
        let _regs = self.regs.lock();
        self.with_pd(|_| Ok(()))?;
        // The region's close unlists it; `device_gone` releases it.
        let map = LocalMap::new(self.entry.dev, attr)?;
        self.locals.lock().push(map.clone(), GFP_KERNEL)?;
        Ok(map)
    }

    /// A region's close: its local mapping goes once the operations that
    /// hold it are done.
    fn unmap_locally(&self, map: &Arc<LocalMap>) {
        let _regs = self.regs.lock();
        let mut locals = self.locals.lock();
        if let Some(i) = locals.iter().position(|m| Arc::ptr_eq(m, map)) {
            drop(locals.swap_remove(i));
        }
    }

    fn device_gone(&self) {
        let mut regs = self.regs.lock();
        for r in core::mem::take(&mut *regs).iter() {
            drop(r.take_region());
        }
        for m in core::mem::take(&mut *self.locals.lock()).iter() {
            m.release();
        }
        drop(self.pd.lock().take());
    }
}

impl DeviceEntry {
    /// The connected connections of `domain`.
    fn conns_of(&self, domain: &VDomain) -> Result<KVec<Arc<Conn>>> {
        let mut out = KVec::new();
        for c in self.users.lock().conns.iter() {
            if c.serves(domain) {
                out.push(c.clone(), GFP_KERNEL)?;
            }
        }
        Ok(out)
    }
}

/// The provider's domain: closes its device state on drop.
pub(crate) struct VerbsDomain {
    pub(crate) inner: Arc<VDomain>,
    _dom: DomainRef,
}

impl VerbsDomain {
    pub(crate) fn new(dom: DomainRef, inner: Arc<VDomain>) -> VerbsDomain {
        VerbsDomain { inner, _dom: dom }
    }
}

impl Drop for VerbsDomain {
    fn drop(&mut self) {
        self.inner.device_gone();
        self.inner.entry.remove_domain(&self.inner);
    }
}

/// A registered region: remote access goes through its fast registration,
/// local buffers in it through its local mapping.
pub(crate) struct VRegion {
    reg: Option<(Arc<VDomain>, Arc<RegState>)>,
    local: Option<(Arc<VDomain>, Arc<LocalMap>)>,
}

impl VRegion {
    /// fi_mr_enable in an FI_MR_ENDPOINT domain: posts the registration on
    /// `conn`'s send queue, ahead of anything posted there after; a full
    /// send queue is -FI_EAGAIN, an endpoint not connected -FI_ENOTCONN.
    pub(crate) fn enable_through(&self, conn: &Arc<Conn>) -> Result {
        match &self.reg {
            Some((_, reg)) => conn.post_reg(reg),
            None => Ok(()),
        }
    }
}

impl Drop for VRegion {
    fn drop(&mut self) {
        if let Some((d, r)) = self.reg.take() {
            d.unregister(&r);
        }
        if let Some((d, m)) = self.local.take() {
            d.unmap_locally(&m);
        }
    }
}

#[vtable]
impl kofi::Domain for VerbsDomain {
    type Region = VRegion;

    fn mr_reg(&self, attr: &MrAttr<'_>) -> Result<(u64, VRegion)> {
        // Only a region with local access can be named by a descriptor
        // (the core refuses the others' with -FI_EACCES): regions for
        // peers alone (kofi_blk's, one per I/O) are not mapped for it.
        let local = match attr.access() & (FI_SEND | FI_RECV | FI_READ | FI_WRITE) {
            0 => None,
            _ => Some((self.inner.clone(), self.inner.map_locally(attr)?)),
        };
        let mut region = VRegion { reg: None, local };
        // Local access needs no registration (the PD's DMA key serves);
        // remote access its fast registration. A failure drops `region`,
        // unlisting its local mapping.
        if attr.access() & (FI_REMOTE_READ | FI_REMOTE_WRITE) == 0 {
            return Ok((0, region));
        }
        let (key, reg) = self.inner.register(attr)?;
        region.reg = Some((self.inner.clone(), reg));
        Ok((key, region))
    }

    fn premapped(region: &VRegion) -> Option<Premapped> {
        region
            .local
            .as_ref()
            .map(|(_, m)| -> Premapped { m.clone() })
    }
}
