// SPDX-License-Identifier: GPL-2.0

//! Address vectors: the peers of FI_EP_RDM endpoints. An fi_addr_t is the
//! index of an entry (FI_AV_TABLE), or the index with the entry's generation
//! above it (FI_AV_MAP), so that an address used after fi_av_remove() is
//! refused rather than taken for whoever reuses the slot.

use crate::abi;
use crate::addr::Name;
use crate::compat::CStrBytes;
use crate::errno::{self, to_c};
use crate::flags::FI_ADDR_NOTAVAIL;
use crate::lock::{new_bh_spinlock, BhSpinLock};
use crate::object::{arc_of, fid_head, lookup, publish, Domain, Object, Users};
// `pop` and `clear`: the compatibility trait's on 6.12, inherent on 7.3.
#[allow(unused_imports)]
use crate::compat::VecExt;
use kernel::alloc::KVVec;
use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::Opaque;

/// Bytes of the largest name (sockaddr_in6).
const NAME_MAX: usize = crate::addr::SIN6_LEN;

#[derive(Clone, Copy)]
struct Entry {
    name: Name,
    generation: u32,
}

struct Table {
    /// Grown outside the lock (see [`Av::insert`]), vmalloc'd when large: up
    /// to KOFI_AV_COUNT_MAX entries.
    slots: KVVec<Option<Entry>>,
    /// Free slots a map may reuse (a table never reuses one); its capacity
    /// is the slots', so pushing never allocates.
    free: KVVec<usize>,
    generation: u32,
    /// Inserts and removals so far: a cached lookup is good while it holds.
    changes: u64,
}

impl Table {
    /// A slot for a new entry: a freed one, or one more within capacity
    /// (no allocation under the lock); None when the table must grow.
    fn free_slot(&mut self) -> Option<usize> {
        if let Some(index) = self.free.pop() {
            return Some(index);
        }
        if self.slots.len() == self.slots.capacity() {
            return None;
        }
        self.slots.push(None, GFP_ATOMIC).ok()?;
        Some(self.slots.len() - 1)
    }

    /// Fills free slot `index` with `name`; the entry's generation.
    fn put(&mut self, index: usize, name: Name) -> u32 {
        let generation = self.generation;
        self.generation = self.generation.wrapping_add(1);
        self.slots[index] = Some(Entry { name, generation });
        self.changes += 1;
        generation
    }
}

/// An address vector.
#[repr(C)]
#[pin_data]
pub(crate) struct Av {
    pub(crate) public: Opaque<abi::fid_av>,
    pub(crate) domain: Arc<Domain>,
    /// Endpoints bound to it.
    pub(crate) users: Users,
    map: bool,
    #[pin]
    table: BhSpinLock<Table>,
}

// SAFETY: `Av` is `#[repr(C)]` with `fid_av` first, of class AV.
unsafe impl Object for Av {
    type Public = abi::fid_av;
    const CLASS: u32 = abi::FI_CLASS_AV;
}
// SAFETY: The head is written only before publication; the table is locked.
unsafe impl Send for Av {}
// SAFETY: As above.
unsafe impl Sync for Av {}

impl Av {
    fn encode(&self, index: usize, generation: u32) -> u64 {
        if self.map {
            (u64::from(generation) << 32) | index as u64
        } else {
            index as u64
        }
    }

    fn insert(&self, name: Name) -> Result<u64> {
        loop {
            let capacity = {
                let mut t = self.table.lock();
                if let Some(index) = t.free_slot() {
                    let generation = t.put(index, name);
                    return Ok(self.encode(index, generation));
                }
                if t.slots.len() >= abi::KOFI_AV_COUNT_MAX as usize {
                    return Err(errno::enospc());
                }
                (t.slots.len() * 2).clamp(64, abi::KOFI_AV_COUNT_MAX as usize)
            };
            self.grow(capacity)?;
        }
    }

    /// Gives the table room for `capacity` entries, allocating with the lock
    /// dropped (it may sleep and vmalloc) and swapping the arrays under it.
    fn grow(&self, capacity: usize) -> Result {
        let mut slots = KVVec::with_capacity(capacity, GFP_KERNEL)?;
        let mut free = KVVec::with_capacity(capacity, GFP_KERNEL)?;
        let old = {
            let mut t = self.table.lock();
            if t.slots.capacity() >= capacity {
                // Another insert grew it meanwhile.
                None
            } else {
                // Within the new capacity: these copies do not allocate.
                slots.extend_from_slice(&t.slots, GFP_ATOMIC)?;
                free.extend_from_slice(&t.free, GFP_ATOMIC)?;
                Some((
                    core::mem::replace(&mut t.slots, slots),
                    core::mem::replace(&mut t.free, free),
                ))
            }
        };
        // The old arrays are freed with the lock dropped.
        drop(old);
        Ok(())
    }

    /// The slot of `addr`, if it names a live entry.
    fn slot_of(&self, t: &Table, addr: u64) -> Option<usize> {
        let index = (addr & 0xffff_ffff) as usize;
        if !self.map && addr >> 32 != 0 {
            return None;
        }
        let entry = t.slots.get(index)?.as_ref()?;
        (!self.map || entry.generation == (addr >> 32) as u32).then_some(index)
    }

    fn remove(&self, addr: u64) -> Result {
        let mut t = self.table.lock();
        let index = self.slot_of(&t, addr).ok_or(EINVAL)?;
        t.slots[index] = None;
        t.changes += 1;
        if self.map {
            // `free` has the slots' capacity: this does not allocate.
            t.free.push(index, GFP_ATOMIC)?;
        }
        Ok(())
    }

    /// The name `addr` stands for.
    pub(crate) fn name_of(&self, addr: u64) -> Option<Name> {
        let t = self.table.lock();
        let index = self.slot_of(&t, addr)?;
        t.slots[index].as_ref().map(|e| e.name)
    }

    /// The address of `name`, FI_ADDR_NOTAVAIL when it is not in the AV;
    /// `cache` (changes seen, address) spares the search while the AV is
    /// unchanged.
    pub(crate) fn addr_of(&self, name: &Name, cache: &mut Option<(u64, u64)>) -> u64 {
        let t = self.table.lock();
        if let Some((changes, addr)) = *cache {
            if changes == t.changes {
                return addr;
            }
        }
        let addr = t
            .slots
            .iter()
            .enumerate()
            .find_map(|(i, e)| match e {
                Some(e) if e.name == *name => Some(self.encode(i, e.generation)),
                _ => None,
            })
            .unwrap_or(FI_ADDR_NOTAVAIL);
        *cache = Some((t.changes, addr));
        addr
    }
}

fn av_open(
    domain: *mut abi::fid_domain,
    attr: *const abi::fi_av_attr,
    context: *mut c_void,
) -> Result<*mut abi::fid_av> {
    // SAFETY: `domain` is null or a kofi fid the consumer keeps open.
    let d = unsafe { lookup::<Domain>(domain) }?;
    // SAFETY: `attr` is null or valid (ABI).
    let a = unsafe { attr.as_ref() }.ok_or(EINVAL)?;
    let map = match a.type_ {
        abi::fi_av_type_FI_AV_UNSPEC | abi::fi_av_type_FI_AV_MAP => true,
        abi::fi_av_type_FI_AV_TABLE => false,
        _ => return Err(EINVAL),
    };
    if a.flags != 0 {
        // FI_EVENT (asynchronous inserts) and the rest are not supported.
        return Err(errno::ebadflags());
    }
    if a.rx_ctx_bits != 0 || !a.name.is_null() || !a.map_addr.is_null() {
        return Err(errno::enosys());
    }
    if a.count > abi::KOFI_AV_COUNT_MAX as usize {
        return Err(EINVAL);
    }
    let capacity = a.count.clamp(64, 1024);
    let table = Table {
        slots: KVVec::with_capacity(capacity, GFP_KERNEL)?,
        free: KVVec::with_capacity(capacity, GFP_KERNEL)?,
        generation: 1,
        changes: 0,
    };
    let av = Arc::pin_init(
        try_pin_init!(Av {
            public: Opaque::new(abi::fid_av {
                fid: fid_head(abi::FI_CLASS_AV, context),
            }),
            // SAFETY: `d` was published.
            domain: unsafe { arc_of(d) },
            users: Users::default(),
            map,
            table <- new_bh_spinlock!(table, "kofi_av"),
        }? Error),
        GFP_KERNEL,
    )?;
    d.users.get();
    Ok(publish(av))
}

/// `fi_av_open()`: an address vector of `domain`.
#[no_mangle]
pub(crate) extern "C" fn fi_av_open(
    domain: *mut abi::fid_domain,
    attr: *mut abi::fi_av_attr,
    av_out: *mut *mut abi::fid_av,
    context: *mut c_void,
) -> c_int {
    if av_out.is_null() {
        return EINVAL.to_errno();
    }
    match av_open(domain, attr, context) {
        Ok(p) => {
            // SAFETY: `av_out` is valid for writes (ABI).
            unsafe { *av_out = p };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// fi_close of an AV: -EBUSY while an endpoint is bound to it.
///
/// # Safety
///
/// `fid` is a published AV the consumer gives up.
pub(crate) unsafe fn close(fid: *mut abi::fid) -> Result {
    // SAFETY: The caller's guarantee.
    let av = unsafe { lookup::<Av>(fid.cast()) }?;
    av.users.check_idle()?;
    av.domain.users.put();
    // SAFETY: The consumer's reference, not used after.
    drop(unsafe { crate::object::reclaim::<Av>(fid.cast()) });
    Ok(())
}

/// `fi_av_insert()`: see `fi_domain.h`.
#[no_mangle]
pub(crate) extern "C" fn fi_av_insert(
    av: *mut abi::fid_av,
    addr: *const c_void,
    count: usize,
    fi_addr: *mut u64,
    flags: u64,
    _context: *mut c_void,
) -> c_int {
    let result = (|| -> Result<c_int> {
        // SAFETY: `av` is null or a kofi fid the consumer keeps open.
        let a = unsafe { lookup::<Av>(av) }?;
        if flags != 0 {
            return Err(errno::ebadflags());
        }
        if count == 0 {
            return Ok(0);
        }
        if addr.is_null() || count > abi::KOFI_AV_COUNT_MAX as usize {
            return Err(EINVAL);
        }
        let mut at = addr.cast::<u8>();
        let mut inserted = 0;
        for i in 0..count {
            // Each name says its own length; read the largest a name can be
            // only after the family says so.
            // SAFETY: The consumer's array holds `count` sockaddrs (ABI); the
            // family's two bytes are the least any holds.
            let head = unsafe { core::slice::from_raw_parts(at, 2) };
            let family = u16::from_ne_bytes([head[0], head[1]]);
            let len = match family {
                crate::addr::AF_INET => crate::addr::SIN_LEN,
                crate::addr::AF_INET6 => crate::addr::SIN6_LEN,
                _ => 0,
            };
            let out = if len == 0 {
                FI_ADDR_NOTAVAIL
            } else {
                // SAFETY: The family says the sockaddr is `len` bytes.
                let raw = unsafe { core::slice::from_raw_parts(at, len) };
                match Name::parse(raw)
                    .map_err(|_| EINVAL)
                    .and_then(|n| a.insert(n))
                {
                    Ok(x) => {
                        inserted += 1;
                        x
                    }
                    Err(_) => FI_ADDR_NOTAVAIL,
                }
            };
            if !fi_addr.is_null() {
                // SAFETY: `fi_addr` holds `count` entries (ABI).
                unsafe { fi_addr.add(i).write(out) };
            }
            if len == 0 {
                // The rest cannot be walked without a length.
                for j in i + 1..count {
                    if !fi_addr.is_null() {
                        // SAFETY: As above.
                        unsafe { fi_addr.add(j).write(FI_ADDR_NOTAVAIL) };
                    }
                }
                break;
            }
            at = at.wrapping_add(len);
        }
        Ok(inserted)
    })();
    result.unwrap_or_else(|e| e.to_errno())
}

/// `fi_av_insertsvc()`: one numeric node and port.
#[no_mangle]
pub(crate) extern "C" fn fi_av_insertsvc(
    av: *mut abi::fid_av,
    node: *const c_char,
    service: *const c_char,
    fi_addr: *mut u64,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    let result = (|| -> Result<abi::__kernel_sockaddr_storage> {
        // SAFETY: `av` is null or a kofi fid the consumer keeps open.
        unsafe { lookup::<Av>(av) }?;
        if node.is_null() || service.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: A NUL-terminated string (ABI).
        let svc = unsafe { CStr::from_char_ptr(service) };
        let port = core::str::from_utf8(svc.cstr_bytes())
            .ok()
            .and_then(|s| s.parse::<u16>().ok())
            .ok_or(EINVAL)?;
        let mut ss = abi::__kernel_sockaddr_storage::default();
        // SAFETY: `node` is a NUL-terminated string; `ss` is writable.
        let ret = unsafe { abi::kofi_sockaddr_parse(node, port, &mut ss) };
        if ret != 0 {
            return Err(Error::from_errno(ret));
        }
        Ok(ss)
    })();
    match result {
        Ok(ss) => fi_av_insert(
            av,
            core::ptr::from_ref(&ss).cast(),
            1,
            fi_addr,
            flags,
            context,
        ),
        Err(e) => e.to_errno(),
    }
}

/// `fi_av_remove()`: all or nothing for addresses that are not in the AV.
#[no_mangle]
pub(crate) extern "C" fn fi_av_remove(
    av: *mut abi::fid_av,
    fi_addr: *mut u64,
    count: usize,
    flags: u64,
) -> c_int {
    let result = (|| {
        // SAFETY: `av` is null or a kofi fid the consumer keeps open.
        let a = unsafe { lookup::<Av>(av) }?;
        if flags != 0 {
            return Err(errno::ebadflags());
        }
        if count == 0 {
            return Ok(());
        }
        if fi_addr.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: `fi_addr` holds `count` entries (ABI).
        let addrs = unsafe { core::slice::from_raw_parts(fi_addr, count) };
        if addrs.iter().any(|x| a.name_of(*x).is_none()) {
            return Err(EINVAL);
        }
        for x in addrs {
            a.remove(*x)?;
        }
        Ok(())
    })();
    to_c(result)
}

/// `fi_av_lookup()`.
#[no_mangle]
pub(crate) extern "C" fn fi_av_lookup(
    av: *mut abi::fid_av,
    fi_addr: u64,
    addr: *mut c_void,
    addrlen: *mut usize,
) -> c_int {
    let result = (|| {
        // SAFETY: `av` is null or a kofi fid the consumer keeps open.
        let a = unsafe { lookup::<Av>(av) }?;
        // SAFETY: `addrlen` is null or valid (ABI).
        let len = unsafe { addrlen.as_mut() }.ok_or(EINVAL)?;
        if addr.is_null() && *len != 0 {
            return Err(EINVAL);
        }
        let name = a.name_of(fi_addr).ok_or_else(errno::enoent)?;
        let bytes = name.as_bytes();
        let n = bytes.len().min(*len);
        // SAFETY: `addr` holds `*len` bytes (ABI); `n` is no more.
        unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), addr.cast::<u8>(), n) };
        *len = bytes.len();
        Ok(())
    })();
    to_c(result)
}

/// `fi_av_straddr()`.
#[no_mangle]
pub(crate) extern "C" fn fi_av_straddr(
    av: *mut abi::fid_av,
    addr: *const c_void,
    buf: *mut c_char,
    len: *mut usize,
) -> *const c_char {
    let result = (|| {
        // SAFETY: `av` is null or a kofi fid the consumer keeps open.
        unsafe { lookup::<Av>(av) }?;
        // SAFETY: `len` is null or valid (ABI).
        let len = unsafe { len.as_mut() }.ok_or(EINVAL)?;
        if addr.is_null() || buf.is_null() || *len == 0 {
            return Err(EINVAL);
        }
        // SAFETY: `addr` is a sockaddr (ABI): its family's two bytes first.
        let head = unsafe { core::slice::from_raw_parts(addr.cast::<u8>(), 2) };
        let need = match u16::from_ne_bytes([head[0], head[1]]) {
            crate::addr::AF_INET => crate::addr::SIN_LEN,
            crate::addr::AF_INET6 => crate::addr::SIN6_LEN,
            _ => return Err(EINVAL),
        };
        // SAFETY: The family says how long the sockaddr is.
        let raw = unsafe { core::slice::from_raw_parts(addr.cast::<u8>(), need) };
        let name = Name::parse(raw).map_err(|_| EINVAL)?;
        let mut ss = abi::__kernel_sockaddr_storage::default();
        // SAFETY: `ss` is larger than any name.
        unsafe {
            core::ptr::copy_nonoverlapping(
                name.as_bytes().as_ptr(),
                core::ptr::from_mut(&mut ss).cast::<u8>(),
                name.as_bytes().len().min(NAME_MAX),
            )
        };
        // SAFETY: `buf` holds `*len` bytes (ABI); snprintf ends it with NUL.
        let n = unsafe { abi::kofi_sockaddr_str(&ss, buf, *len) };
        if n < 0 {
            return Err(EINVAL);
        }
        *len = n as usize + 1;
        Ok(buf.cast_const())
    })();
    result.unwrap_or(core::ptr::null())
}
