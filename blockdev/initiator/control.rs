// SPDX-License-Identifier: GPL-2.0

//! What a user writes to /sys/kernel/kofi_blk/add_device: one line of
//! `key=value` words (Documentation/kofi/blk.rst), parsed and checked here.

use crate::proto;
use kernel::prelude::*;
use kernel::str::CString;

/// A device to add.
pub(crate) struct Spec {
    /// The target's export name.
    pub(crate) export: CString,
    pub(crate) provider: CString,
    pub(crate) addr: CString,
    pub(crate) port: CString,
    pub(crate) queues: u16,
    pub(crate) depth: u16,
    /// How long requests wait for a lost target before they fail.
    pub(crate) reconnect_timeout_s: u32,
    /// How long one request may take before its queue reconnects.
    pub(crate) io_timeout_s: u32,
}

const QUEUES_MAX: u16 = 16;
const DEFAULT_QUEUES: u16 = 2;
const DEFAULT_DEPTH: u16 = 32;
const DEFAULT_RECONNECT_TIMEOUT_S: u32 = 30;
const DEFAULT_IO_TIMEOUT_S: u32 = 30;
const TIMEOUT_MAX_S: u32 = 3600;

fn text(value: &str) -> Result<CString> {
    if value.is_empty() {
        return Err(EINVAL);
    }
    CString::try_from_fmt(format_args!("{value}"))
}

fn number<T: TryFrom<u64>>(value: &str, min: u64, max: u64) -> Result<T> {
    let mut n: u64 = 0;
    if value.is_empty() || value.len() > 10 {
        return Err(EINVAL);
    }
    for c in value.bytes() {
        if !c.is_ascii_digit() {
            return Err(EINVAL);
        }
        n = n * 10 + u64::from(c - b'0');
    }
    if !(min..=max).contains(&n) {
        return Err(ERANGE);
    }
    T::try_from(n).map_err(|_| ERANGE)
}

/// Parses `export=NAME provider=PROV addr=ADDR port=PORT [queues=N]
/// [depth=N] [reconnect_timeout=S] [io_timeout=S]`; says what is wrong.
pub(crate) fn parse(line: &[u8]) -> Result<Spec> {
    let line = core::str::from_utf8(line).map_err(|_| EINVAL)?;
    let (mut export, mut provider, mut addr, mut port) = (None, None, None, None);
    let mut queues = DEFAULT_QUEUES;
    let mut depth = DEFAULT_DEPTH;
    let mut reconnect_timeout_s = DEFAULT_RECONNECT_TIMEOUT_S;
    let mut io_timeout_s = DEFAULT_IO_TIMEOUT_S;
    for word in line.split_ascii_whitespace() {
        let Some((key, value)) = word.split_once('=') else {
            pr_info!("'{word}' is not key=value\n");
            return Err(EINVAL);
        };
        let r = match key {
            "export" if value.len() < proto::NAME_MAX => text(value).map(|v| export = Some(v)),
            "provider" => text(value).map(|v| provider = Some(v)),
            "addr" => text(value).map(|v| addr = Some(v)),
            "port" => number::<u16>(value, 1, 65535)
                .and_then(|_| text(value))
                .map(|v| port = Some(v)),
            "queues" => number(value, 1, QUEUES_MAX.into()).map(|v| queues = v),
            "depth" => number(value, 1, proto::DEPTH_MAX.into()).map(|v| depth = v),
            "reconnect_timeout" => {
                number(value, 0, TIMEOUT_MAX_S.into()).map(|v| reconnect_timeout_s = v)
            }
            "io_timeout" => number(value, 1, TIMEOUT_MAX_S.into()).map(|v| io_timeout_s = v),
            _ => Err(EINVAL),
        };
        if let Err(e) = r {
            pr_info!("bad or unknown '{word}'\n");
            return Err(e);
        }
    }
    match (export, provider, addr, port) {
        (Some(export), Some(provider), Some(addr), Some(port)) => Ok(Spec {
            export,
            provider,
            addr,
            port,
            queues,
            depth,
            reconnect_timeout_s,
            io_timeout_s,
        }),
        _ => {
            pr_info!("add_device needs export, provider, addr and port\n");
            Err(EINVAL)
        }
    }
}
