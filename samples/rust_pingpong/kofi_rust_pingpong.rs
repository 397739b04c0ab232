// SPDX-License-Identifier: GPL-2.0

//! kofi_rust_pingpong: a Rust consumer of kofi, through the same exported
//! `fi_*` ABI C consumers use (bindgen over `include/kofi/`).
//!
//! At load it opens a passive endpoint on 127.0.0.1:7700 of provider
//! "sock", connects an endpoint to it, accepts, and bounces 4 KiB messages
//! between the two 50 times, checking every byte; one thread drives both
//! ends, since the provider makes progress on its own. Loading fails if any
//! step or byte is wrong.

use compat::Stamp;
use core::ffi::c_void;
use core::ptr;
use kernel::c_str;
use kernel::error::to_result;
use kernel::prelude::*;

#[path = "../../include/kofi/rust/abi.rs"]
mod abi;
#[path = "../../include/kofi/rust/compat.rs"]
#[allow(dead_code)]
mod compat;
#[path = "../../include/kofi/rust/flags.rs"]
#[allow(dead_code)]
mod flags;

module! {
    type: RustPingpong,
    name: "kofi_rust_pingpong",
    description: "kofi pingpong written in Rust, through the exported fi_* ABI",
    license: "GPL",
}

crate::compat::kofi_modinfo!(import_kofi);

const SIZE: usize = 4096;
const ITERS: usize = 50;
const WAIT_MS: i32 = 10000;
const VERSION: u32 = abi::KOFI_ABI_VERSION;

/// An `fi_eq_cm_entry` with room for private data.
#[repr(C)]
struct CmEvent {
    entry: abi::fi_eq_cm_entry,
    data: [u8; abi::KOFI_CM_DATA_MAX as usize],
}

/// Everything the run opens; closed in reverse on drop.
struct Run {
    src: *mut abi::fi_info,
    dest: *mut abi::fi_info,
    accepted: *mut abi::fi_info,
    fabric: *mut abi::fid_fabric,
    domain: *mut abi::fid_domain,
    peq: *mut abi::fid_eq,
    pep: *mut abi::fid_pep,
    eqs: [*mut abi::fid_eq; 2],
    cqs: [*mut abi::fid_cq; 2],
    eps: [*mut abi::fid_ep; 2],
}

impl Run {
    fn new() -> Run {
        Run {
            src: ptr::null_mut(),
            dest: ptr::null_mut(),
            accepted: ptr::null_mut(),
            fabric: ptr::null_mut(),
            domain: ptr::null_mut(),
            peq: ptr::null_mut(),
            pep: ptr::null_mut(),
            eqs: [ptr::null_mut(); 2],
            cqs: [ptr::null_mut(); 2],
            eps: [ptr::null_mut(); 2],
        }
    }
}

/// Closes an object if it was opened.
fn close(fid: *mut abi::fid) {
    if !fid.is_null() {
        // SAFETY: An object this run opened and nothing uses any more.
        unsafe { abi::fi_close(fid) };
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        for i in 0..2 {
            close(self.eps[i].cast());
        }
        close(self.pep.cast());
        for i in 0..2 {
            close(self.cqs[i].cast());
            close(self.eqs[i].cast());
        }
        close(self.peq.cast());
        close(self.domain.cast());
        close(self.fabric.cast());
        // SAFETY: Infos from fi_getinfo or an FI_CONNREQ, freed once.
        unsafe {
            abi::fi_freeinfo(self.src);
            abi::fi_freeinfo(self.dest);
            abi::fi_freeinfo(self.accepted);
        }
    }
}

/// The "sock" info for 127.0.0.1:7700, as source (`flags` FI_SOURCE) or
/// destination.
fn info(flags: u64) -> Result<*mut abi::fi_info> {
    // SAFETY: No preconditions; the hints are ours and freed below.
    let hints = unsafe { abi::fi_allocinfo() };
    if hints.is_null() {
        return Err(ENOMEM);
    }
    let mut out = ptr::null_mut();
    // SAFETY: `hints` has all its attrs; the strings are kmalloc'ed copies
    // that fi_freeinfo frees.
    let ret = unsafe {
        (*(*hints).ep_attr).type_ = abi::fi_ep_type_FI_EP_MSG;
        (*hints).caps = flags::FI_MSG;
        (*(*hints).fabric_attr).prov_name =
            abi::kstrdup(c_str!("sock").as_char_ptr(), kernel::bindings::GFP_KERNEL);
        abi::fi_getinfo(
            VERSION,
            c_str!("127.0.0.1").as_char_ptr(),
            c_str!("7700").as_char_ptr(),
            flags,
            hints,
            &mut out,
        )
    };
    // SAFETY: Ours.
    unsafe { abi::fi_freeinfo(hints) };
    to_result(ret)?;
    Ok(out)
}

/// Waits for `want` on `eq`; the entry's private data length.
fn wait_cm(eq: *mut abi::fid_eq, want: u32, ev: &mut CmEvent) -> Result<usize> {
    let mut event = 0u32;
    // SAFETY: `eq` is open; `ev` is a writable buffer of its size.
    let n = unsafe {
        abi::fi_eq_sread(
            eq,
            &mut event,
            ptr::from_mut(ev).cast(),
            core::mem::size_of::<CmEvent>(),
            WAIT_MS,
            0,
        )
    };
    if n < 0 {
        return Err(Error::from_errno(n as i32));
    }
    if event != want {
        return Err(Error::from_errno(-(abi::FI_EPROTO as i32)));
    }
    Ok(n as usize - core::mem::size_of::<abi::fi_eq_cm_entry>())
}

/// Waits for one completion on `cq`.
fn wait_cq(cq: *mut abi::fid_cq) -> Result {
    let mut e = abi::fi_cq_data_entry::default();
    // SAFETY: `cq` is open; `e` holds one entry of its format.
    let n = unsafe { abi::fi_cq_sread(cq, ptr::from_mut(&mut e).cast(), 1, ptr::null(), WAIT_MS) };
    if n == 1 {
        Ok(())
    } else {
        Err(Error::from_errno(n as i32))
    }
}

/// Opens an EQ and a CQ for endpoint `i`, and the endpoint for `info`.
fn open_end(r: &mut Run, i: usize, info: *mut abi::fi_info) -> Result {
    let eq_attr = abi::fi_eq_attr::default();
    let cq_attr = abi::fi_cq_attr {
        format: abi::fi_cq_format_FI_CQ_FORMAT_DATA,
        ..Default::default()
    };
    // SAFETY: The fabric and domain are open; the attrs and out pointers are ours.
    unsafe {
        to_result(abi::fi_eq_open(
            r.fabric,
            ptr::from_ref(&eq_attr).cast_mut(),
            &mut r.eqs[i],
            ptr::null_mut(),
        ))?;
        to_result(abi::fi_cq_open(
            r.domain,
            ptr::from_ref(&cq_attr).cast_mut(),
            &mut r.cqs[i],
            ptr::null_mut(),
        ))?;
        to_result(abi::fi_endpoint(
            r.domain,
            info,
            &mut r.eps[i],
            ptr::null_mut(),
        ))?;
        to_result(abi::fi_ep_bind(r.eps[i], r.eqs[i].cast(), 0))?;
        to_result(abi::fi_ep_bind(
            r.eps[i],
            r.cqs[i].cast(),
            flags::FI_SEND | flags::FI_RECV,
        ))?;
        to_result(abi::fi_enable(r.eps[i]))
    }
}

fn pingpong() -> Result {
    let mut r = Run::new();
    let mut ev = CmEvent {
        entry: abi::fi_eq_cm_entry {
            fid: ptr::null_mut(),
            info: ptr::null_mut(),
            data: abi::__IncompleteArrayField::new(),
        },
        data: [0; abi::KOFI_CM_DATA_MAX as usize],
    };
    r.src = info(flags::FI_SOURCE)?;
    r.dest = info(0)?;
    let eq_attr = abi::fi_eq_attr::default();
    // SAFETY: `r.src` is a valid info; out pointers are ours.
    unsafe {
        to_result(abi::fi_fabric(
            (*r.src).fabric_attr,
            &mut r.fabric,
            ptr::null_mut(),
        ))?;
        to_result(abi::fi_domain(
            r.fabric,
            r.src,
            &mut r.domain,
            ptr::null_mut(),
        ))?;
        to_result(abi::fi_eq_open(
            r.fabric,
            ptr::from_ref(&eq_attr).cast_mut(),
            &mut r.peq,
            ptr::null_mut(),
        ))?;
        to_result(abi::fi_passive_ep(
            r.fabric,
            r.src,
            &mut r.pep,
            ptr::null_mut(),
        ))?;
        to_result(abi::fi_pep_bind(r.pep, r.peq.cast(), 0))?;
        to_result(abi::fi_listen(r.pep))?;
    }
    // Endpoint 0 connects; endpoint 1 accepts.
    let dest = r.dest;
    open_end(&mut r, 0, dest)?;
    let hello = b"from rust\0";
    // SAFETY: The endpoint is enabled; the private data outlives the call.
    to_result(unsafe {
        abi::fi_connect(r.eps[0], ptr::null(), hello.as_ptr().cast(), hello.len())
    })?;
    let n = wait_cm(r.peq, abi::FI_CONNREQ, &mut ev)?;
    if ev.data[..n] != hello[..] {
        return Err(Error::from_errno(-(abi::FI_EPROTO as i32)));
    }
    r.accepted = ev.entry.info;
    let accepted = r.accepted;
    open_end(&mut r, 1, accepted)?;
    // SAFETY: The endpoint is enabled, opened for the request.
    to_result(unsafe { abi::fi_accept(r.eps[1], ptr::null(), 0) })?;
    wait_cm(r.eqs[1], abi::FI_CONNECTED, &mut ev)?;
    wait_cm(r.eqs[0], abi::FI_CONNECTED, &mut ev)?;

    let mut ping = KVec::new();
    let mut back = KVec::new();
    let mut relay = KVec::new();
    ping.extend_with(SIZE, 0u8, GFP_KERNEL)?;
    back.extend_with(SIZE, 0u8, GFP_KERNEL)?;
    relay.extend_with(SIZE, 0u8, GFP_KERNEL)?;
    let start = Stamp::now();
    for round in 0..ITERS {
        for (i, b) in ping.iter_mut().enumerate() {
            *b = (round * 31 + i) as u8;
        }
        let (p, b, rl) = (ping.as_ptr(), back.as_mut_ptr(), relay.as_mut_ptr());
        let none: *mut c_void = ptr::null_mut();
        // SAFETY: The endpoints are connected; every buffer outlives its
        // operation, which completes before the next round.
        unsafe {
            to_result(abi::fi_recv(r.eps[1], rl.cast(), SIZE, none, 0, none) as i32)?;
            to_result(abi::fi_recv(r.eps[0], b.cast(), SIZE, none, 0, none) as i32)?;
            to_result(abi::fi_send(r.eps[0], p.cast(), SIZE, none, 0, none) as i32)?;
        }
        wait_cq(r.cqs[1])?;
        // SAFETY: As above: the relay buffer goes back to its sender.
        to_result(unsafe { abi::fi_send(r.eps[1], rl.cast(), SIZE, none, 0, none) } as i32)?;
        wait_cq(r.cqs[1])?;
        wait_cq(r.cqs[0])?;
        wait_cq(r.cqs[0])?;
        if back != ping {
            return Err(EIO);
        }
    }
    let ms = start.elapsed_ms();
    pr_info!(
        "{} round trips of {} bytes through kofi from Rust: {} us each\n",
        ITERS,
        SIZE,
        ms * 1000 / ITERS as i64
    );
    Ok(())
}

struct RustPingpong;

impl kernel::Module for RustPingpong {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        pingpong()?;
        Ok(RustPingpong)
    }
}
