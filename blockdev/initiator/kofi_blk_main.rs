// SPDX-License-Identifier: GPL-2.0

//! kofi_blk: a block device whose every byte moves through kofi, to an
//! export of the kofi_blkt target (Documentation/kofi/blk.rst).
//!
//! Devices are added and removed by writing to /sys/kernel/kofi_blk/
//! (`add_device`, `remove_device`; `devices` lists them); each is a blk-mq
//! disk, /dev/kofiblkN, with one connection and CQ per hardware queue.

use core::fmt::Write;
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::{Arc, Mutex};
use kernel::{new_mutex, workqueue};

#[path = "../../include/kofi/rust/abi.rs"]
mod abi;
#[path = "../../include/kofi/rust/compat.rs"]
#[allow(dead_code)]
mod compat;
mod control;
mod device;
mod errno;
mod fabric;
#[path = "../../include/kofi/rust/fi_error.rs"]
mod fi_error;
#[path = "../../include/kofi/rust/flags.rs"]
#[allow(dead_code)]
mod flags;
mod mq;
mod proto;
mod queue;

use compat::{CStrBytes, VecExt};
use device::Device;
pub(crate) use device::Driver;

module! {
    type: KofiBlk,
    name: "kofi_blk",
    description: "kofi_blk: block devices over kofi",
    license: "GPL",
}

crate::compat::kofi_modinfo!(import_kofi);

extern "C" {
    fn kofi_blk_glue_init() -> *mut kernel::bindings::workqueue_struct;
    fn kofi_blk_glue_add_files() -> i32;
    fn kofi_blk_glue_remove_files();
    fn kofi_blk_glue_exit();
}

/// Devices at most (kofiblk0 .. kofiblk63).
const DEVICES_MAX: u32 = 64;

/// One added device.
struct Entry {
    index: u32,
    device: Arc<Device>,
    /// Dropped before the device's Arc: the disk holds another.
    disk: Option<mq::Disk<Driver>>,
}

impl Entry {
    /// Fails what is in flight and removes the disk.
    fn remove(mut self) {
        self.device.shut_down();
        drop(self.disk.take());
        pr_info!("{} removed\n", &*self.device.name);
    }
}

#[pin_data]
struct Registry {
    #[pin]
    devices: Mutex<KVec<Entry>>,
}

/// The registry, from module init to exit; the glue's files, which call
/// into it, exist only in between.
static mut REGISTRY: Option<Pin<KBox<Registry>>> = None;
static mut WORKQUEUE: *mut kernel::bindings::workqueue_struct = core::ptr::null_mut();

fn registry() -> &'static Registry {
    // SAFETY: Written only in init, before the control files exist, and in
    // exit, after they are gone: every caller sees it set and unchanging.
    unsafe {
        (*core::ptr::addr_of!(REGISTRY))
            .as_deref()
            .expect("kofi_blk registry")
    }
}

/// The module's workqueue, drained at unload.
pub(crate) fn workqueue() -> &'static workqueue::Queue {
    // SAFETY: Set in init before any device exists, destroyed in exit after
    // every device is gone; a valid workqueue in between.
    unsafe { workqueue::Queue::from_raw(WORKQUEUE) }
}

fn add(line: &[u8]) -> Result {
    let spec = control::parse(line)?;
    let mut devices = registry().devices.lock();
    let index = (0..DEVICES_MAX)
        .find(|i| devices.iter().all(|e| e.index != *i))
        .ok_or(ENOSPC)?;
    let name = CString::try_from_fmt(format_args!("kofiblk{index}"))?;
    let target = CString::try_from_fmt(format_args!(
        "{} over {} at {}:{}",
        text(&spec.export),
        text(&spec.provider),
        text(&spec.addr),
        text(&spec.port)
    ))?;
    let device = Device::connect(name, spec).inspect_err(|e| {
        pr_info!("cannot reach {} ({:?})\n", &*target, e);
    })?;
    let g = device.geometry().ok_or_else(errno::eproto)?;
    let params = mq::DiskParams {
        name: &device.name,
        queues: device.spec.queues.into(),
        depth: device.spec.depth.into(),
        sectors: g.sectors,
        block_size: g.block_size,
        max_io: device.max_io().ok_or_else(errno::eproto)?,
        timeout: device.spec.io_timeout_s * kernel::bindings::HZ,
    };
    let disk = match mq::Disk::add(device.clone(), &params) {
        Ok(disk) => disk,
        Err(e) => {
            device.shut_down();
            return Err(e);
        }
    };
    pr_info!(
        "{}: {} sectors of {} bytes, {} queues of depth {}\n",
        &*device.name,
        g.sectors,
        g.block_size,
        device.spec.queues,
        device.spec.depth
    );
    let entry = Entry {
        index,
        device,
        disk: Some(disk),
    };
    // On failure the entry comes back inside the error: remove it.
    if let Err(e) = devices.push(entry, GFP_KERNEL) {
        drop(devices);
        let _ = e;
        return Err(ENOMEM);
    }
    Ok(())
}

fn remove(line: &[u8]) -> Result {
    let name = core::str::from_utf8(line).map_err(|_| EINVAL)?.trim();
    let entry = {
        let mut devices = registry().devices.lock();
        let i = devices
            .iter()
            .position(|e| e.device.name.cstr_bytes() == name.as_bytes())
            .ok_or(ENOENT)?;
        devices.remove_at(i)
    };
    entry.remove();
    Ok(())
}

/// A `Write` into the page sysfs gives a show.
struct Page<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Write for Page<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(core::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// A setting as text, for messages.
fn text(c: &CStr) -> &str {
    c.to_str().unwrap_or("?")
}

fn show(page: &mut Page<'_>) -> core::fmt::Result {
    for e in registry().devices.lock().iter() {
        let d = &e.device;
        writeln!(
            page,
            "{} export={} provider={} addr={} port={} queues={} depth={} state={}",
            text(&d.name),
            text(&d.spec.export),
            text(&d.spec.provider),
            text(&d.spec.addr),
            text(&d.spec.port),
            d.spec.queues,
            d.spec.depth,
            d.status()
        )?;
    }
    Ok(())
}

/// Converts the glue's buffer into a slice.
///
/// # Safety
///
/// `buf` is readable for `len` bytes for the call.
unsafe fn input<'a>(buf: *const u8, len: usize) -> &'a [u8] {
    // SAFETY: The caller's guarantee.
    unsafe { core::slice::from_raw_parts(buf, len) }
}

/// `add_device`'s store (called by the glue with sysfs's buffer).
///
/// # Safety
///
/// `buf` is readable for `len` bytes.
#[no_mangle]
unsafe extern "C" fn kofi_blk_control_add(buf: *const u8, len: usize) -> i32 {
    // SAFETY: sysfs passes the written bytes, readable for the call.
    match add(unsafe { input(buf, len) }) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `remove_device`'s store.
///
/// # Safety
///
/// `buf` is readable for `len` bytes.
#[no_mangle]
unsafe extern "C" fn kofi_blk_control_remove(buf: *const u8, len: usize) -> i32 {
    // SAFETY: sysfs passes the written bytes, readable for the call.
    match remove(unsafe { input(buf, len) }) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `devices`' show: the bytes written into `buf` (of `size` bytes).
///
/// # Safety
///
/// `buf` is writable for `size` bytes, and no one else's during the call.
#[no_mangle]
unsafe extern "C" fn kofi_blk_control_show(buf: *mut u8, size: usize) -> isize {
    // SAFETY: The caller's guarantee (sysfs's page, ours for the call).
    let buf = unsafe { core::slice::from_raw_parts_mut(buf, size) };
    let mut page = Page { buf, len: 0 };
    // A full page ends the list where it is.
    let _ = show(&mut page);
    page.len as isize
}

struct KofiBlk;

impl kernel::Module for KofiBlk {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let registry = KBox::pin_init(
            pin_init!(Registry {
                devices <- new_mutex!(KVec::new(), "kofi_blk::Registry::devices"),
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: No preconditions; called once.
        let wq = unsafe { kofi_blk_glue_init() };
        if wq.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: Nothing reads these before the control files exist.
        unsafe {
            *core::ptr::addr_of_mut!(REGISTRY) = Some(registry);
            *core::ptr::addr_of_mut!(WORKQUEUE) = wq;
        }
        // SAFETY: Called once, with the registry and workqueue in place.
        let ret = unsafe { kofi_blk_glue_add_files() };
        if ret != 0 {
            // SAFETY: The files were not made: nothing else reads these; the
            // workqueue has no work.
            unsafe {
                *core::ptr::addr_of_mut!(REGISTRY) = None;
                kofi_blk_glue_exit();
            }
            return Err(Error::from_errno(ret));
        }
        Ok(KofiBlk)
    }
}

impl Drop for KofiBlk {
    fn drop(&mut self) {
        // SAFETY: Called once; afterwards no control call runs.
        unsafe { kofi_blk_glue_remove_files() };
        let entries = core::mem::take(&mut *registry().devices.lock());
        for e in entries {
            e.remove();
        }
        // SAFETY: No device is left to queue work; drains what is queued.
        unsafe { kofi_blk_glue_exit() };
        // SAFETY: The files are gone: no one reads the registry any more.
        unsafe { *core::ptr::addr_of_mut!(REGISTRY) = None };
    }
}
