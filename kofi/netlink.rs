// SPDX-License-Identifier: GPL-2.0

//! kofi's generic netlink family, the Rust half: what `KOFI_CMD_GET_PROVIDERS`
//! and `KOFI_CMD_GET_INFO` answer (`include/kofi/kofi_netlink.h`), for
//! `tools/kofi_info`. The family and its callbacks are in `kofi_netlink.c`,
//! which calls the `kofi_nl_*` functions here; [`Dump`] and [`Message`] are
//! the one place that writes into genetlink's buffers.

use crate::abi;
use crate::compat::CStrBytes;
use crate::errno;
use crate::info;
use crate::registry::{self, Provider, Registry};
use core::ptr::{self, NonNull};
use kernel::ffi::{c_int, c_long, c_void};
use kernel::prelude::*;
use kernel::str::CString;

/// The reply buffer of a dump callback in progress.
///
/// # Invariants
///
/// `skb` is the socket buffer genetlink passed to the running dump callback,
/// which outlives the `Dump`.
struct Dump {
    skb: *mut abi::sk_buff,
    portid: u32,
    seq: u32,
}

impl Dump {
    /// # Safety
    ///
    /// `skb` is the buffer of the dump callback running now, and the `Dump`
    /// is dropped before that callback returns.
    unsafe fn new(skb: *mut abi::sk_buff, portid: u32, seq: u32) -> Dump {
        // INVARIANT: The caller's guarantee.
        Dump { skb, portid, seq }
    }

    /// Starts a message of `cmd` for the requester; `EMSGSIZE` when the
    /// buffer is full.
    fn message(&mut self, cmd: u32) -> Result<Message<'_>> {
        // SAFETY: `skb` is the running dump's buffer (type invariants);
        // genetlink's commands fit a u8.
        let hdr = unsafe { abi::kofi_nl_msg_begin(self.skb, self.portid, self.seq, cmd as u8) };
        let hdr = NonNull::new(hdr).ok_or_else(errno::emsgsize)?;
        Ok(Message {
            dump: self,
            hdr,
            ended: false,
        })
    }

    /// The bytes written so far: what a dump callback returns.
    fn len(&self) -> c_int {
        // SAFETY: `skb` is the running dump's buffer (type invariants).
        unsafe { abi::kofi_nl_len(self.skb) }
    }
}

/// An `nla_put*` result: its only failure is a full buffer.
fn room(r: c_int) -> Result {
    if r == 0 {
        Ok(())
    } else {
        Err(errno::emsgsize())
    }
}

/// A message being written into a [`Dump`]; taken back out unless ended.
struct Message<'a> {
    dump: &'a mut Dump,
    hdr: NonNull<c_void>,
    ended: bool,
}

impl Message<'_> {
    fn put(&mut self, ty: u32, data: &[u8]) -> Result {
        let len = c_int::try_from(data.len()).map_err(|_| errno::emsgsize())?;
        // SAFETY: The dump's buffer (see `Dump`); `data` is valid for `len`
        // bytes, which `nla_put` copies.
        let r = unsafe { abi::kofi_nl_put(self.dump.skb, ty as c_int, data.as_ptr().cast(), len) };
        room(r)
    }

    fn put_u32(&mut self, ty: u32, value: u32) -> Result {
        self.put(ty, &value.to_ne_bytes())
    }

    fn put_u64(&mut self, ty: u32, value: u64) -> Result {
        // SAFETY: The dump's buffer (see `Dump`).
        let r = unsafe { abi::kofi_nl_put_u64(self.dump.skb, ty as c_int, value) };
        room(r)
    }

    /// A string attribute from a C string of an info; none for NULL.
    fn put_c_string(&mut self, ty: u32, s: *const kernel::ffi::c_char) -> Result {
        if s.is_null() {
            return Ok(());
        }
        // SAFETY: A non-null string of an info is NUL-terminated and owned
        // by the info, which outlives this call.
        self.put(ty, unsafe { CStr::from_char_ptr(s) }.cstr_bytes_with_nul())
    }

    /// A nested attribute `ty` holding what `fill` puts.
    fn nest(&mut self, ty: u32, fill: impl FnOnce(&mut Self) -> Result) -> Result {
        // SAFETY: The dump's buffer (see `Dump`).
        let nest = unsafe { abi::kofi_nl_nest_start(self.dump.skb, ty as c_int) };
        if nest.is_null() {
            return Err(errno::emsgsize());
        }
        fill(self)?;
        // SAFETY: `nest` was started in this buffer and not ended.
        unsafe { abi::kofi_nl_nest_end(self.dump.skb, nest) };
        Ok(())
    }

    fn end(mut self) {
        // SAFETY: `hdr` begun this message in the dump's buffer.
        unsafe { abi::kofi_nl_msg_end(self.dump.skb, self.hdr.as_ptr()) };
        self.ended = true;
    }
}

impl Drop for Message<'_> {
    fn drop(&mut self) {
        if !self.ended {
            // SAFETY: `hdr` begun this message, the last in the buffer.
            unsafe { abi::kofi_nl_msg_cancel(self.dump.skb, self.hdr.as_ptr()) };
        }
    }
}

fn put_provider(dump: &mut Dump, p: &Provider, refs: i32) -> Result {
    let mut m = dump.message(abi::KOFI_CMD_GET_PROVIDERS)?;
    m.put(abi::KOFI_A_PROV_NAME, p.name.cstr_bytes_with_nul())?;
    m.put_u32(abi::KOFI_A_PROV_VERSION, p.version)?;
    m.put_u32(abi::KOFI_A_PROV_PRIORITY, p.priority as u32)?;
    m.put_u32(abi::KOFI_A_PROV_MODULE_REFS, refs.max(0) as u32)?;
    m.put_u32(
        abi::KOFI_A_PROV_ABI_VERSION,
        abi::FI_MAJOR_VERSION << 16 | p.abi_minor,
    )?;
    m.nest(abi::KOFI_A_PROV_OBJECTS, |m| {
        (1..registry::OBJECT_CLASSES as u32)
            .try_for_each(|class| m.put_u32(class, p.open(class) as u32))
    })?;
    m.end();
    Ok(())
}

/// `KOFI_CMD_GET_PROVIDERS`: the registered providers from `*cursor` on, as
/// many as fit; `*cursor` moves past them.
#[no_mangle]
pub(crate) extern "C" fn kofi_nl_fill_providers(
    skb: *mut abi::sk_buff,
    portid: u32,
    seq: u32,
    cursor: *mut c_long,
) -> c_int {
    // SAFETY: genetlink's buffer for this dump call; `dump` ends with it.
    let mut dump = unsafe { Dump::new(skb, portid, seq) };
    // SAFETY: `cursor` is the dump's `cb->args[0]`, ours between its calls.
    let cursor = unsafe { &mut *cursor };
    let Ok(registry) = Registry::get() else {
        return 0;
    };
    let mut full = false;
    let taken = registry.visit(*cursor as usize, |p, refs| {
        put_provider(&mut dump, p, refs).inspect_err(|_| full = true)
    });
    if full && taken == 0 && dump.len() == 0 {
        return errno::emsgsize().to_errno();
    }
    *cursor += taken as c_long;
    dump.len()
}

/// The infos of one `KOFI_CMD_GET_INFO` dump, and the next to send.
///
/// # Invariants
///
/// `head` is a list from fi_getinfo, owned; `next` is null or in it.
struct InfoDump {
    head: *mut abi::fi_info,
    next: *mut abi::fi_info,
    /// The provider asked for, if one was.
    provider: Option<CString>,
}

impl InfoDump {
    /// Whether `info` is of the provider asked for.
    fn wanted(&self, info: &abi::fi_info) -> bool {
        let Some(name) = &self.provider else {
            return true;
        };
        // SAFETY: fi_getinfo's infos are well formed and stamped with their
        // provider's name.
        let prov = unsafe { CStr::from_char_ptr((*info.fabric_attr).prov_name) };
        prov.cstr_bytes().eq_ignore_ascii_case(name.cstr_bytes())
    }
}

impl Drop for InfoDump {
    fn drop(&mut self) {
        info::fi_freeinfo(self.head);
    }
}

fn collect_infos(h: &abi::kofi_nl_hints) -> Result<KBox<InfoDump>> {
    // The provider is picked from fi_getinfo's answer rather than named in
    // its hints: a name there loads the provider's module on demand, and a
    // module registering a genetlink family would wait for this request.
    let provider = if h.prov_name.is_null() {
        None
    } else {
        // SAFETY: The policy made it a NUL-terminated string of the request.
        let name = unsafe { CStr::from_char_ptr(h.prov_name) };
        Some(name.to_cstring()?)
    };
    let mut dump = KBox::new(
        InfoDump {
            head: ptr::null_mut(),
            next: ptr::null_mut(),
            provider,
        },
        GFP_KERNEL,
    )?;
    let mut hints = ptr::null_mut();
    if h.has_ep_type || h.has_caps {
        hints = info::alloc_info();
        if hints.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: A fresh info of ours with every attr allocated.
        unsafe {
            (*hints).caps = h.caps;
            (*(*hints).ep_attr).type_ = h.ep_type;
        }
    }
    let r = crate::getinfo::getinfo(
        abi::KOFI_ABI_VERSION,
        h.node,
        h.service,
        0,
        hints,
        &mut dump.head,
    );
    info::fi_freeinfo(hints);
    r?;
    // INVARIANT: `head` is fi_getinfo's list, now the dump's.
    dump.next = dump.head;
    let mut i = dump.head;
    // SAFETY: `i` walks the list the dump owns.
    while let Some(info) = unsafe { i.as_ref() } {
        if dump.wanted(info) {
            return Ok(dump);
        }
        i = info.next;
    }
    Err(errno::enodata())
}

fn put_info(dump: &mut Dump, info: &abi::fi_info) -> Result {
    // SAFETY: fi_getinfo's infos are well formed: every attr is there.
    let (tx, rx, ep, dom, fab) = unsafe {
        (
            &*info.tx_attr,
            &*info.rx_attr,
            &*info.ep_attr,
            &*info.domain_attr,
            &*info.fabric_attr,
        )
    };
    let mut m = dump.message(abi::KOFI_CMD_GET_INFO)?;
    m.put_c_string(abi::KOFI_A_PROV_NAME, fab.prov_name)?;
    m.put_c_string(abi::KOFI_A_FABRIC_NAME, fab.name)?;
    m.put_c_string(abi::KOFI_A_DOMAIN_NAME, dom.name)?;
    let words = [
        (abi::KOFI_A_PROV_VERSION, fab.prov_version),
        (abi::KOFI_A_FABRIC_API_VERSION, fab.api_version),
        (abi::KOFI_A_ADDR_FORMAT, info.addr_format),
        (abi::KOFI_A_EP_TYPE, ep.type_),
        (abi::KOFI_A_EP_PROTOCOL, ep.protocol),
        (abi::KOFI_A_EP_PROTOCOL_VERSION, ep.protocol_version),
        (abi::KOFI_A_DOMAIN_THREADING, dom.threading),
        (abi::KOFI_A_DOMAIN_CONTROL_PROGRESS, dom.control_progress),
        (abi::KOFI_A_DOMAIN_DATA_PROGRESS, dom.data_progress),
        (abi::KOFI_A_DOMAIN_RESOURCE_MGMT, dom.resource_mgmt),
        (abi::KOFI_A_DOMAIN_AV_TYPE, dom.av_type),
        (abi::KOFI_A_DOMAIN_MR_MODE, dom.mr_mode as u32),
    ];
    for (ty, value) in words {
        m.put_u32(ty, value)?;
    }
    let quads = [
        (abi::KOFI_A_CAPS, info.caps),
        (abi::KOFI_A_MODE, info.mode),
        (abi::KOFI_A_TX_CAPS, tx.caps),
        (abi::KOFI_A_TX_MODE, tx.mode),
        (abi::KOFI_A_TX_OP_FLAGS, tx.op_flags),
        (abi::KOFI_A_TX_MSG_ORDER, tx.msg_order),
        (abi::KOFI_A_TX_COMP_ORDER, tx.comp_order),
        (abi::KOFI_A_TX_INJECT_SIZE, tx.inject_size as u64),
        (abi::KOFI_A_TX_SIZE, tx.size as u64),
        (abi::KOFI_A_TX_IOV_LIMIT, tx.iov_limit as u64),
        (abi::KOFI_A_TX_RMA_IOV_LIMIT, tx.rma_iov_limit as u64),
        (abi::KOFI_A_RX_CAPS, rx.caps),
        (abi::KOFI_A_RX_MODE, rx.mode),
        (abi::KOFI_A_RX_OP_FLAGS, rx.op_flags),
        (abi::KOFI_A_RX_MSG_ORDER, rx.msg_order),
        (abi::KOFI_A_RX_COMP_ORDER, rx.comp_order),
        (
            abi::KOFI_A_RX_TOTAL_BUFFERED_RECV,
            rx.total_buffered_recv as u64,
        ),
        (abi::KOFI_A_RX_SIZE, rx.size as u64),
        (abi::KOFI_A_RX_IOV_LIMIT, rx.iov_limit as u64),
        (abi::KOFI_A_EP_MAX_MSG_SIZE, ep.max_msg_size as u64),
        (abi::KOFI_A_EP_MSG_PREFIX_SIZE, ep.msg_prefix_size as u64),
        (
            abi::KOFI_A_EP_MAX_ORDER_RAW_SIZE,
            ep.max_order_raw_size as u64,
        ),
        (
            abi::KOFI_A_EP_MAX_ORDER_WAR_SIZE,
            ep.max_order_war_size as u64,
        ),
        (
            abi::KOFI_A_EP_MAX_ORDER_WAW_SIZE,
            ep.max_order_waw_size as u64,
        ),
        (abi::KOFI_A_EP_MEM_TAG_FORMAT, ep.mem_tag_format),
        (abi::KOFI_A_EP_TX_CTX_CNT, ep.tx_ctx_cnt as u64),
        (abi::KOFI_A_EP_RX_CTX_CNT, ep.rx_ctx_cnt as u64),
        (abi::KOFI_A_DOMAIN_MR_KEY_SIZE, dom.mr_key_size as u64),
        (abi::KOFI_A_DOMAIN_CQ_DATA_SIZE, dom.cq_data_size as u64),
        (abi::KOFI_A_DOMAIN_CQ_CNT, dom.cq_cnt as u64),
        (abi::KOFI_A_DOMAIN_EP_CNT, dom.ep_cnt as u64),
        (abi::KOFI_A_DOMAIN_TX_CTX_CNT, dom.tx_ctx_cnt as u64),
        (abi::KOFI_A_DOMAIN_RX_CTX_CNT, dom.rx_ctx_cnt as u64),
        (abi::KOFI_A_DOMAIN_MAX_EP_TX_CTX, dom.max_ep_tx_ctx as u64),
        (abi::KOFI_A_DOMAIN_MAX_EP_RX_CTX, dom.max_ep_rx_ctx as u64),
        (abi::KOFI_A_DOMAIN_MR_IOV_LIMIT, dom.mr_iov_limit as u64),
        (abi::KOFI_A_DOMAIN_CAPS, dom.caps),
        (abi::KOFI_A_DOMAIN_MODE, dom.mode),
        (abi::KOFI_A_DOMAIN_MR_CNT, dom.mr_cnt as u64),
    ];
    for (ty, value) in quads {
        m.put_u64(ty, value)?;
    }
    for (ty, addr, len) in [
        (abi::KOFI_A_SRC_ADDR, info.src_addr, info.src_addrlen),
        (abi::KOFI_A_DEST_ADDR, info.dest_addr, info.dest_addrlen),
    ] {
        if !addr.is_null() && len > 0 {
            // SAFETY: An info owns its addresses, `len` bytes each.
            m.put(ty, unsafe {
                core::slice::from_raw_parts(addr.cast::<u8>(), len)
            })?;
        }
    }
    m.end();
    Ok(())
}

/// Starts a `KOFI_CMD_GET_INFO` dump: fi_getinfo with the request's hints.
/// Returns the dump's state, or null with `*err` set.
#[no_mangle]
pub(crate) extern "C" fn kofi_nl_collect_infos(
    hints: *const abi::kofi_nl_hints,
    err: *mut c_int,
) -> *mut c_void {
    // SAFETY: The C half passes its hints, valid during this call.
    let hints = unsafe { &*hints };
    match collect_infos(hints) {
        Ok(dump) => KBox::into_raw(dump).cast(),
        Err(e) => {
            // SAFETY: `err` is the C half's, valid for write.
            unsafe { *err = e.to_errno() };
            ptr::null_mut()
        }
    }
}

/// `KOFI_CMD_GET_INFO`: the dump's infos from where the last call stopped,
/// as many as fit.
#[no_mangle]
pub(crate) extern "C" fn kofi_nl_fill_infos(
    skb: *mut abi::sk_buff,
    portid: u32,
    seq: u32,
    infos: *mut c_void,
) -> c_int {
    // SAFETY: genetlink's buffer for this dump call; `dump` ends with it.
    let mut dump = unsafe { Dump::new(skb, portid, seq) };
    // SAFETY: `infos` came from `kofi_nl_collect_infos` for this dump and is
    // released only at its end; dump calls do not overlap.
    let state = unsafe { &mut *infos.cast::<InfoDump>() };
    // SAFETY: `next` is null or in the list the state owns (invariants).
    while let Some(info) = unsafe { state.next.as_ref() } {
        if state.wanted(info) {
            if let Err(e) = put_info(&mut dump, info) {
                return if dump.len() == 0 {
                    e.to_errno()
                } else {
                    dump.len()
                };
            }
        }
        state.next = info.next;
    }
    dump.len()
}

/// Ends a `KOFI_CMD_GET_INFO` dump: frees what `kofi_nl_collect_infos` made.
#[no_mangle]
pub(crate) extern "C" fn kofi_nl_release_infos(infos: *mut c_void) {
    if !infos.is_null() {
        // SAFETY: From `KBox::into_raw` in `kofi_nl_collect_infos`, released
        // once, at the dump's end.
        drop(unsafe { KBox::from_raw(infos.cast::<InfoDump>()) });
    }
}
