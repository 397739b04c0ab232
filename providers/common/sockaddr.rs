// SPDX-License-Identifier: GPL-2.0

//! Socket addresses (IPv4 and IPv6) for the IP providers, parsed and sized
//! by the core (`kofi_sockaddr_parse`, `kofi_sockaddr_len`).

use super::Info;
use crate::abi;
use kernel::error::to_result;
use kernel::prelude::*;

/// fi_getinfo's `service` as a port: decimal, 0 without one.
pub(crate) fn port_of(service: Option<&CStr>) -> Result<u16> {
    let Some(s) = service else {
        return Ok(0);
    };
    let s = s.to_str().map_err(|_| EINVAL)?;
    s.parse::<u16>().map_err(|_| EINVAL)
}

/// Gives `info` `local` and `peer` as its source and destination address.
pub(crate) fn set_info_addrs(
    info: &mut Info,
    local: Option<&SockAddr>,
    peer: Option<&SockAddr>,
) -> Result {
    if let Some(a) = local {
        info.set_src_addr(a.bytes())?;
    }
    if let Some(a) = peer {
        info.set_dest_addr(a.bytes())?;
    }
    Ok(())
}

/// A socket address (IPv4 or IPv6), as `struct sockaddr_storage`.
#[derive(Clone, Copy)]
pub(crate) struct SockAddr(pub(crate) abi::__kernel_sockaddr_storage);

// SAFETY: Plain bytes; the storage's pointer member only sets its alignment
// and is never used as a pointer.
unsafe impl Send for SockAddr {}
// SAFETY: As above.
unsafe impl Sync for SockAddr {}

impl SockAddr {
    /// Parses a numeric `node` (None: any address) and a port.
    pub(crate) fn parse(node: Option<&CStr>, port: u16) -> Result<SockAddr> {
        let mut ss = abi::__kernel_sockaddr_storage::default();
        let node = node.map_or(core::ptr::null(), |n| n.as_char_ptr());
        // SAFETY: `node` is null or a string; `ss` is ours.
        to_result(unsafe { abi::kofi_sockaddr_parse(node, port, &mut ss) })?;
        Ok(SockAddr(ss))
    }

    /// From the bytes of an address of `family`'s format.
    pub(crate) fn from_bytes(b: &[u8]) -> Result<SockAddr> {
        let mut ss = abi::__kernel_sockaddr_storage::default();
        if b.len() < 2 || b.len() > core::mem::size_of::<abi::__kernel_sockaddr_storage>() {
            return Err(EINVAL);
        }
        // SAFETY: `ss` has room for `b` (checked).
        unsafe {
            core::ptr::copy_nonoverlapping(b.as_ptr(), core::ptr::from_mut(&mut ss).cast(), b.len())
        };
        let a = SockAddr(ss);
        if a.len() != b.len() {
            return Err(EINVAL);
        }
        Ok(a)
    }

    pub(crate) fn family(&self) -> u16 {
        // SAFETY: The family overlays the start of the storage, always
        // initialised (the storage starts zeroed).
        unsafe { self.0.__bindgen_anon_1.__bindgen_anon_1.ss_family }
    }

    pub(crate) fn is_ipv6(&self) -> bool {
        u32::from(self.family()) == abi::AF_INET6
    }

    /// Bytes of an address of the family: sockaddr_in6, else sockaddr_in.
    pub(crate) fn len_of(ipv6: bool) -> usize {
        if ipv6 {
            core::mem::size_of::<abi::sockaddr_in6>()
        } else {
            core::mem::size_of::<abi::sockaddr_in>()
        }
    }

    /// Bytes of the address proper (sockaddr_in or sockaddr_in6).
    pub(crate) fn len(&self) -> usize {
        // SAFETY: `self.0` is a valid sockaddr_storage.
        unsafe { abi::kofi_sockaddr_len(&self.0) }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `self.0` holds at least `len()` initialised bytes.
        unsafe { core::slice::from_raw_parts(core::ptr::from_ref(&self.0).cast(), self.len()) }
    }
}
