// SPDX-License-Identifier: GPL-2.0

//! The provider registry: `kofi_provider_register()` and
//! `kofi_provider_deregister()`, and finding providers for fi_getinfo and
//! fi_fabric.
//!
//! A provider's table lives in its module. The core calls into it only while
//! it holds a reference on that module ([`ModuleRef`]), so a module that is
//! going away is never entered, and every open fabric holds such a
//! reference, so a provider in use cannot be unloaded.

use crate::abi;
use crate::compat::CStrBytes;
use crate::info_match;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use kernel::c_str;
use kernel::ffi::c_int;
use kernel::prelude::*;
use kernel::rbtree::{RBTree, RBTreeNode};
use kernel::str::CString;
use kernel::sync::{new_mutex, Arc, Mutex};

/// A registered provider.
///
/// # Invariants
///
/// `table` points to the provider's `struct kofi_provider`, which stays valid
/// until `kofi_provider_deregister()` for it returns; the core dereferences
/// it only while it holds a [`ModuleRef`] on `owner` or inside the
/// register/deregister calls.
pub(crate) struct Provider {
    table: NonNull<abi::kofi_provider>,
    owner: *mut abi::module,
    pub(crate) name: CString,
    pub(crate) version: u32,
    /// The ABI minor version the provider was built for: ops added in a
    /// later one are past the end of its tables.
    pub(crate) abi_minor: u32,
    pub(crate) priority: i32,
    seq: u64,
    /// Open fabrics of this provider.
    pub(crate) fabrics: AtomicUsize,
    /// Open objects of this provider, by `FI_CLASS_*` (for debugfs).
    objects: [AtomicUsize; OBJECT_CLASSES],
}

/// Object classes counted per provider: FI_CLASS_UNSPEC up to FI_CLASS_CONNREQ.
pub(crate) const OBJECT_CLASSES: usize = abi::FI_CLASS_CONNREQ as usize + 1;

impl Provider {
    /// Counts an object of `class` opened (`opened`) or closed.
    pub(crate) fn count(&self, class: u32, opened: bool) {
        if let Some(c) = self.objects.get(class as usize) {
            if opened {
                c.fetch_add(1, Ordering::Relaxed);
            } else {
                c.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Open objects of `class` (0 for a class not counted).
    pub(crate) fn open(&self, class: u32) -> usize {
        self.objects
            .get(class as usize)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }
}

// SAFETY: The table and the module are only read, and only while the module
// is pinned (see the type invariants); the kernel's module refcount is
// thread-safe.
unsafe impl Send for Provider {}
// SAFETY: As for `Send`: no interior mutability but the atomic counter.
unsafe impl Sync for Provider {}

/// A reference on a provider's module, taken with `try_module_get()`:
/// while it lives, the provider's table and code stay.
pub(crate) struct ModuleRef {
    provider: Arc<Provider>,
}

impl ModuleRef {
    /// Pins `provider`'s module, unless it is on its way out. Called only
    /// under the registry's lock with `provider` in the registry, so its
    /// module cannot finish unloading (deregistration takes the same lock)
    /// between the lookup and the pin.
    fn get(provider: &Arc<Provider>) -> Option<ModuleRef> {
        // SAFETY: `owner` is the provider's module (or NULL): registered
        // and the registry locked, it has not left its exit function (which
        // deregisters); `try_module_get` fails once it started unloading.
        if unsafe { abi::kofi_module_get(provider.owner) } {
            Some(ModuleRef {
                provider: provider.clone(),
            })
        } else {
            None
        }
    }

    /// The provider's dispatch table.
    pub(crate) fn table(&self) -> &abi::kofi_provider {
        // SAFETY: The module is pinned, so the table is valid (type invariants).
        unsafe { self.provider.table.as_ref() }
    }

    pub(crate) fn provider(&self) -> &Arc<Provider> {
        &self.provider
    }
}

impl Drop for ModuleRef {
    fn drop(&mut self) {
        // SAFETY: Balances the successful `kofi_module_get` in `get`.
        unsafe { abi::kofi_module_put(self.provider.owner) };
    }
}

/// The registered providers.
#[pin_data]
pub(crate) struct Registry {
    /// Keyed by registration sequence.
    #[pin]
    providers: Mutex<RBTree<u64, Arc<Provider>>>,
    next_seq: AtomicU64,
}

static REGISTRY: AtomicPtr<Registry> = AtomicPtr::new(core::ptr::null_mut());

impl Registry {
    /// Creates the registry and makes it the one [`Registry::get`] returns.
    pub(crate) fn install() -> Result<Pin<KBox<Registry>>> {
        let registry = KBox::pin_init(
            pin_init!(Registry {
                providers <- new_mutex!(RBTree::new(), "kofi_registry"),
                next_seq: AtomicU64::new(0),
            }),
            GFP_KERNEL,
        )?;
        let ptr: *const Registry = &*registry;
        REGISTRY.store(ptr.cast_mut(), Ordering::Release);
        Ok(registry)
    }

    /// Forgets the registry at module exit.
    pub(crate) fn uninstall() {
        REGISTRY.store(core::ptr::null_mut(), Ordering::Release);
    }

    /// The registry. The exported calls can only be reached while kofi.ko is
    /// live, between [`Registry::install`] and [`Registry::uninstall`].
    pub(crate) fn get() -> Result<&'static Registry> {
        let ptr = REGISTRY.load(Ordering::Acquire);
        // SAFETY: A non-null pointer was stored by `install` and points to the
        // pinned registry, which the module keeps until after `uninstall`.
        unsafe { ptr.as_ref() }.ok_or(ENODEV)
    }

    /// The providers, pinned, in fi_getinfo's order; one on its way out is
    /// left out.
    pub(crate) fn pinned(&self) -> Result<KVec<ModuleRef>> {
        let mut out = KVec::new();
        {
            let list = self.providers.lock();
            // Allocating under a mutex is fine; providers are few.
            out.reserve(list.iter().count(), GFP_KERNEL)?;
            for (_, p) in list.iter() {
                if let Some(m) = ModuleRef::get(p) {
                    out.push(m, GFP_KERNEL)?;
                }
            }
        }
        out.sort_unstable_by(|a, b| {
            let (a, b) = (a.provider(), b.provider());
            info_match::provider_order((a.priority, a.seq), (b.priority, b.seq))
        });
        Ok(out)
    }

    /// Calls `f` with each provider from the `skip`th on, in registration
    /// order, and the references on its module, until `f` fails; returns how
    /// many `f` took. Under the registry's lock: `f` must not sleep long.
    pub(crate) fn visit(&self, skip: usize, mut f: impl FnMut(&Provider, i32) -> Result) -> usize {
        let list = self.providers.lock();
        let mut taken = 0;
        for p in list.values().skip(skip) {
            // SAFETY: `owner` is the provider's module, live while it is
            // registered, and it stays registered while we hold the lock.
            let refs = unsafe { abi::kofi_module_refcount(p.owner) };
            if f(p, refs).is_err() {
                break;
            }
            taken += 1;
        }
        taken
    }

    /// The provider called `name` (ignoring case), pinned.
    fn pin(&self, name: &[u8]) -> Option<ModuleRef> {
        let list = self.providers.lock();
        let found = list
            .values()
            .find(|p| p.name.cstr_bytes().eq_ignore_ascii_case(name))
            .and_then(ModuleRef::get);
        found
    }

    /// As [`Registry::pin`], loading module `kofi-<name>` when needed.
    pub(crate) fn pin_or_load(&self, name: &CStr) -> Option<ModuleRef> {
        if let Some(p) = self.pin(name.cstr_bytes()) {
            return Some(p);
        }
        // SAFETY: `name` is a valid NUL-terminated string.
        let ret = unsafe { abi::kofi_request_provider(name.as_char_ptr()) };
        if ret != 0 {
            pr_debug!("no provider {:?} (request_module: {})\n", name, ret);
        }
        self.pin(name.cstr_bytes())
    }
}

fn register(version: u32, table: *mut abi::kofi_provider) -> Result {
    let registry = Registry::get()?;
    let table = NonNull::new(table).ok_or(EINVAL)?;
    // SAFETY: The caller passes its provider table, valid until it
    // deregisters; we only read it here.
    let t = unsafe { table.as_ref() };
    if t.name.is_null() {
        pr_err!("provider without a name refused\n");
        return Err(EINVAL);
    }
    // SAFETY: `name` is non-null and, by the ABI, a NUL-terminated string.
    let name = unsafe { CStr::from_char_ptr(t.name) };
    let major = version >> 16;
    let minor = version & 0xffff;
    if major != abi::FI_MAJOR_VERSION || minor > abi::FI_MINOR_VERSION {
        pr_err!(
            "provider {:?} is built for ABI {}.{}, this core offers {}.{}: refused\n",
            name,
            major,
            minor,
            abi::FI_MAJOR_VERSION,
            abi::FI_MINOR_VERSION
        );
        return Err(crate::errno::enosys());
    }
    if name.is_empty() || name.cstr_bytes().len() >= abi::FI_NAME_MAX as usize {
        pr_err!("provider name {:?} is empty or too long: refused\n", name);
        return Err(EINVAL);
    }
    if t.getinfo.is_none()
        || t.fabric.is_none()
        || t.fabric_close.is_none()
        || t.domain_ops.is_null()
        || t.ep_ops.is_null()
    {
        pr_err!(
            "provider {:?} lacks getinfo, fabric, fabric_close, domain_ops or ep_ops: refused\n",
            name
        );
        return Err(EINVAL);
    }
    let provider = Arc::new(
        Provider {
            table,
            owner: t.owner,
            name: name.to_cstring()?,
            version: t.version,
            abi_minor: minor,
            priority: t.priority,
            seq: registry.next_seq.fetch_add(1, Ordering::Relaxed),
            fabrics: AtomicUsize::new(0),
            objects: [const { AtomicUsize::new(0) }; OBJECT_CLASSES],
        },
        GFP_KERNEL,
    )?;
    let seq = provider.seq;
    let node = RBTreeNode::new(seq, provider, GFP_KERNEL)?;
    let mut list = registry.providers.lock();
    if list
        .values()
        .any(|p| p.table == table || p.name.cstr_bytes().eq_ignore_ascii_case(name.cstr_bytes()))
    {
        pr_err!("provider {:?} is registered already: refused\n", name);
        return Err(EEXIST);
    }
    list.insert(node);
    pr_info!(
        "provider {:?} registered (version {}.{})\n",
        name,
        t.version >> 16,
        t.version & 0xffff
    );
    Ok(())
}

/// `kofi_provider_register()`: adds a provider. Process context.
#[no_mangle]
pub(crate) extern "C" fn kofi_provider_register(
    version: u32,
    prov: *mut abi::kofi_provider,
) -> c_int {
    crate::errno::to_c(register(version, prov))
}

/// `kofi_provider_deregister()`: removes a provider. Its module is pinned
/// while any of its fabrics is open, so at module exit none is.
#[no_mangle]
pub(crate) extern "C" fn kofi_provider_deregister(prov: *mut abi::kofi_provider) {
    let Ok(registry) = Registry::get() else {
        return;
    };
    let Some(table) = NonNull::new(prov) else {
        return;
    };
    let removed = {
        let mut list = registry.providers.lock();
        let Some(seq) = list.values().find(|p| p.table == table).map(|p| p.seq) else {
            return;
        };
        match list.remove(&seq) {
            Some(p) => p,
            None => return,
        }
    };
    if removed.fabrics.load(Ordering::Acquire) != 0 {
        pr_err!(
            "provider {:?} deregistered with fabrics open\n",
            removed.name
        );
    }
    // SAFETY: The provider's table is valid during its own deregister call.
    let t = unsafe { table.as_ref() };
    if let Some(cleanup) = t.cleanup {
        // SAFETY: The provider asked for `cleanup` at deregistration.
        unsafe { cleanup() };
    }
    pr_info!("provider {:?} deregistered\n", removed.name);
}

/// One line of debugfs `kofi/providers` for `p`, whose module has `refs`
/// references.
fn provider_line(p: &Provider, refs: i32) -> Result<CString> {
    CString::try_from_fmt(format_args!(
        "{:<12} {:>3}.{:<3} {:>8} {:>11} {:>7} {:>7} {:>9} {:>11} {:>3} {:>3} {:>3} {:>8}\n",
        p.name.to_str().unwrap_or("?"),
        p.version >> 16,
        p.version & 0xffff,
        p.priority,
        refs,
        p.open(abi::FI_CLASS_FABRIC),
        p.open(abi::FI_CLASS_DOMAIN),
        p.open(abi::FI_CLASS_EP),
        p.open(abi::FI_CLASS_PEP),
        p.open(abi::FI_CLASS_CQ),
        p.open(abi::FI_CLASS_EQ),
        p.open(abi::FI_CLASS_MR),
        p.open(abi::FI_CLASS_CONNREQ),
    ))
}

fn seq_put(m: *mut abi::seq_file, s: &CStr) {
    // SAFETY: `m` is the seq_file of the show call in progress.
    unsafe { abi::kofi_seq_write(m, s.as_char_ptr(), s.cstr_bytes().len()) };
}

/// The contents of `/sys/kernel/debug/kofi/providers`: a line per provider
/// with its version, priority, module references and open objects.
#[no_mangle]
pub(crate) extern "C" fn kofi_debugfs_show_providers(m: *mut abi::seq_file) {
    seq_put(
        m,
        c_str!("provider     version priority module_refs fabrics domains endpoints passive_eps cqs eqs mrs connreqs\n"),
    );
    let Ok(registry) = Registry::get() else {
        return;
    };
    registry.visit(0, |p, refs| {
        if let Ok(line) = provider_line(p, refs) {
            seq_put(m, &line);
        }
        Ok(())
    });
}
