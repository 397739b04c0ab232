// SPDX-License-Identifier: GPL-2.0

//! How kofi_info prints what the kernel said: providers as `fi_info -l`
//! lists them, infos in fi_info's short form or, verbose, as fi_tostr
//! prints a `struct fi_info`.

use crate::abi::attr;
use crate::names::{self, name_of};
use crate::nl::{Attrs, Error};
use std::fmt::Write;
use std::net::{Ipv4Addr, Ipv6Addr};

/// A message's attributes, read by name.
struct View<'a>(&'a Attrs);

impl View<'_> {
    fn get(&self, name: &str) -> Result<&crate::nl::Attr, Error> {
        self.0
            .get(&attr(name))
            .ok_or_else(|| Error::Malformed(format!("no {name}")))
    }

    fn u32(&self, name: &str) -> Result<u32, Error> {
        self.get(name)?
            .u32()
            .ok_or_else(|| Error::Malformed(format!("{name} is no u32")))
    }

    fn u64(&self, name: &str) -> Result<u64, Error> {
        self.get(name)?
            .u64()
            .ok_or_else(|| Error::Malformed(format!("{name} is no u64")))
    }

    fn str(&self, name: &str) -> Result<String, Error> {
        self.get(name)?
            .str()
            .ok_or_else(|| Error::Malformed(format!("{name} is no string")))
    }

    /// A 32-bit version as `major.minor`.
    fn version(&self, name: &str) -> Result<String, Error> {
        let v = self.u32(name)?;
        Ok(format!("{}.{}", v >> 16, v & 0xffff))
    }
}

/// The registered providers; `detail` adds each one's priority, ABI,
/// module references and open objects.
pub fn providers(msgs: &[Attrs], detail: bool) -> Result<String, Error> {
    let mut out = String::new();
    for m in msgs {
        let v = View(m);
        writeln!(out, "{}:", v.str("KOFI_A_PROV_NAME")?).unwrap();
        writeln!(out, "    version: {}", v.version("KOFI_A_PROV_VERSION")?).unwrap();
        if !detail {
            continue;
        }
        writeln!(
            out,
            "    priority: {}",
            v.u32("KOFI_A_PROV_PRIORITY")? as i32
        )
        .unwrap();
        writeln!(
            out,
            "    abi_version: {}",
            v.version("KOFI_A_PROV_ABI_VERSION")?
        )
        .unwrap();
        writeln!(
            out,
            "    module_refs: {}",
            v.u32("KOFI_A_PROV_MODULE_REFS")?
        )
        .unwrap();
        let objects = v.get("KOFI_A_PROV_OBJECTS")?.nested()?;
        let open: Vec<_> = objects
            .iter()
            .filter_map(|(class, n)| Some((*class, n.u32()?)))
            .filter(|(_, n)| *n > 0)
            .collect();
        if open.is_empty() {
            writeln!(out, "    open_objects: none").unwrap();
        } else {
            writeln!(out, "    open_objects:").unwrap();
            for (class, n) in open {
                writeln!(
                    out,
                    "        {}: {n}",
                    name_of(names::CLASSES, class.into())
                )
                .unwrap();
            }
        }
    }
    Ok(out)
}

/// An address as fi_tostr shows it.
fn address(format: u32, bytes: Option<&crate::nl::Attr>) -> String {
    let Some(b) = bytes.map(|a| a.0.as_slice()) else {
        return "(null)".into();
    };
    let port = |b: &[u8]| u16::from_be_bytes([b[2], b[3]]);
    match format {
        2 if b.len() >= 8 => {
            let ip = Ipv4Addr::new(b[4], b[5], b[6], b[7]);
            format!("fi_sockaddr_in://{ip}:{}", port(b))
        }
        3 if b.len() >= 24 => {
            let ip: [u8; 16] = b[8..24].try_into().unwrap();
            format!("fi_sockaddr_in6://[{}]:{}", Ipv6Addr::from(ip), port(b))
        }
        _ => {
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            format!(
                "{}://{hex}",
                name_of(names::ADDR_FORMATS, format.into()).to_lowercase()
            )
        }
    }
}

/// One info in fi_info's short form.
fn info_short(out: &mut String, v: &View) -> Result<(), Error> {
    writeln!(out, "provider: {}", v.str("KOFI_A_PROV_NAME")?).unwrap();
    writeln!(out, "    fabric: {}", v.str("KOFI_A_FABRIC_NAME")?).unwrap();
    writeln!(out, "    domain: {}", v.str("KOFI_A_DOMAIN_NAME")?).unwrap();
    writeln!(out, "    version: {}", v.version("KOFI_A_PROV_VERSION")?).unwrap();
    writeln!(
        out,
        "    type: {}",
        name_of(names::EP_TYPES, v.u32("KOFI_A_EP_TYPE")?.into())
    )
    .unwrap();
    let protocol = v.u32("KOFI_A_EP_PROTOCOL")?.into();
    writeln!(out, "    protocol: {}", name_of(names::PROTOCOLS, protocol)).unwrap();
    Ok(())
}

/// One info as fi_tostr prints a `struct fi_info`.
fn info_verbose(out: &mut String, v: &View) -> Result<(), Error> {
    use names::*;
    let caps: &[&[Name]] = &[CAPS];
    let ops: &[&[Name]] = &[CAPS, OP_FLAGS];
    let modes: &[&[Name]] = &[MODES];
    let orders: &[&[Name]] = &[ORDERS];
    let format = v.u32("KOFI_A_ADDR_FORMAT")?;
    let src = v.0.get(&attr("KOFI_A_SRC_ADDR"));
    let dest = v.0.get(&attr("KOFI_A_DEST_ADDR"));
    let mut lines: Vec<(usize, String, String)> = Vec::new();
    let mut line = |depth: usize, key: &str, value: String| lines.push((depth, key.into(), value));
    line(0, "fi_info", String::new());
    line(1, "caps", flag_list(caps, v.u64("KOFI_A_CAPS")?));
    line(1, "mode", flag_list(modes, v.u64("KOFI_A_MODE")?));
    line(1, "addr_format", name_of(ADDR_FORMATS, format.into()));
    line(1, "src_addrlen", src.map_or(0, |a| a.0.len()).to_string());
    line(1, "dest_addrlen", dest.map_or(0, |a| a.0.len()).to_string());
    line(1, "src_addr", address(format, src));
    line(1, "dest_addr", address(format, dest));
    for (side, fields) in [
        (
            "tx",
            &["inject_size", "size", "iov_limit", "rma_iov_limit"][..],
        ),
        ("rx", &["total_buffered_recv", "size", "iov_limit"][..]),
    ] {
        let a = |f: &str| format!("KOFI_A_{}_{}", side.to_uppercase(), f.to_uppercase());
        line(1, &format!("fi_{side}_attr"), String::new());
        line(2, "caps", flag_list(caps, v.u64(&a("caps"))?));
        line(2, "mode", flag_list(modes, v.u64(&a("mode"))?));
        line(2, "op_flags", flag_list(ops, v.u64(&a("op_flags"))?));
        line(2, "msg_order", flag_list(orders, v.u64(&a("msg_order"))?));
        line(2, "comp_order", flag_list(orders, v.u64(&a("comp_order"))?));
        for f in fields {
            line(2, f, v.u64(&a(f))?.to_string());
        }
    }
    line(1, "fi_ep_attr", String::new());
    line(
        2,
        "type",
        name_of(EP_TYPES, v.u32("KOFI_A_EP_TYPE")?.into()),
    );
    line(
        2,
        "protocol",
        name_of(PROTOCOLS, v.u32("KOFI_A_EP_PROTOCOL")?.into()),
    );
    let pv = v.u32("KOFI_A_EP_PROTOCOL_VERSION")?;
    line(2, "protocol_version", pv.to_string());
    for f in [
        "max_msg_size",
        "msg_prefix_size",
        "max_order_raw_size",
        "max_order_war_size",
        "max_order_waw_size",
    ] {
        line(
            2,
            f,
            v.u64(&format!("KOFI_A_EP_{}", f.to_uppercase()))?
                .to_string(),
        );
    }
    line(
        2,
        "mem_tag_format",
        format!("{:#018x}", v.u64("KOFI_A_EP_MEM_TAG_FORMAT")?),
    );
    line(2, "tx_ctx_cnt", v.u64("KOFI_A_EP_TX_CTX_CNT")?.to_string());
    line(2, "rx_ctx_cnt", v.u64("KOFI_A_EP_RX_CTX_CNT")?.to_string());
    line(1, "fi_domain_attr", String::new());
    line(2, "name", v.str("KOFI_A_DOMAIN_NAME")?);
    let d = |f: &str| format!("KOFI_A_DOMAIN_{}", f.to_uppercase());
    line(
        2,
        "threading",
        name_of(THREADING, v.u32(&d("threading"))?.into()),
    );
    line(
        2,
        "control_progress",
        name_of(PROGRESS, v.u32(&d("control_progress"))?.into()),
    );
    line(
        2,
        "data_progress",
        name_of(PROGRESS, v.u32(&d("data_progress"))?.into()),
    );
    line(
        2,
        "resource_mgmt",
        name_of(RESOURCE_MGMT, v.u32(&d("resource_mgmt"))?.into()),
    );
    line(
        2,
        "av_type",
        name_of(AV_TYPES, v.u32(&d("av_type"))?.into()),
    );
    line(
        2,
        "mr_mode",
        flag_list(&[MR_MODES], v.u32(&d("mr_mode"))?.into()),
    );
    for f in [
        "mr_key_size",
        "cq_data_size",
        "cq_cnt",
        "ep_cnt",
        "tx_ctx_cnt",
        "rx_ctx_cnt",
        "max_ep_tx_ctx",
        "max_ep_rx_ctx",
        "mr_iov_limit",
    ] {
        line(2, f, v.u64(&d(f))?.to_string());
    }
    line(2, "caps", flag_list(caps, v.u64(&d("caps"))?));
    line(2, "mode", flag_list(modes, v.u64(&d("mode"))?));
    line(2, "mr_cnt", v.u64(&d("mr_cnt"))?.to_string());
    line(1, "fi_fabric_attr", String::new());
    line(2, "name", v.str("KOFI_A_FABRIC_NAME")?);
    line(2, "prov_name", v.str("KOFI_A_PROV_NAME")?);
    line(2, "prov_version", v.version("KOFI_A_PROV_VERSION")?);
    line(2, "api_version", v.version("KOFI_A_FABRIC_API_VERSION")?);
    out.push_str("---\n");
    for (depth, key, value) in lines {
        let pad = "    ".repeat(depth);
        if value.is_empty() {
            writeln!(out, "{pad}{key}:").unwrap();
        } else {
            writeln!(out, "{pad}{key}: {value}").unwrap();
        }
    }
    Ok(())
}

/// The infos, short or verbose.
pub fn infos(msgs: &[Attrs], verbose: bool) -> Result<String, Error> {
    let mut out = String::new();
    for m in msgs {
        let v = View(m);
        if verbose {
            info_verbose(&mut out, &v)?;
        } else {
            info_short(&mut out, &v)?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nl::Attr;

    #[test]
    fn addresses_print_as_fi_tostr_does() {
        let mut v4 = vec![2, 0, 0x1d, 0x2f, 10, 0, 2, 15];
        v4.extend([0; 8]);
        assert_eq!(
            address(2, Some(&Attr(v4))),
            "fi_sockaddr_in://10.0.2.15:7471"
        );
        let mut v6 = vec![10, 0, 0x1d, 0x2f, 0, 0, 0, 0, 0xfd];
        v6.extend([0; 14]);
        v6.push(0x10);
        v6.extend([0; 4]);
        assert_eq!(
            address(3, Some(&Attr(v6))),
            "fi_sockaddr_in6://[fd00::10]:7471"
        );
        assert_eq!(address(4, Some(&Attr(vec![1, 2]))), "fi_sockaddr_ib://0102");
        assert_eq!(address(2, None), "(null)");
    }

    #[test]
    fn a_missing_attribute_is_an_error() {
        let mut m = Attrs::new();
        m.insert(attr("KOFI_A_PROV_NAME"), Attr(b"sock\0".to_vec()));
        let e = providers(&[m], false).unwrap_err().to_string();
        assert!(e.contains("KOFI_A_PROV_VERSION"), "{e}");
    }
}
