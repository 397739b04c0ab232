// SPDX-License-Identifier: GPL-2.0

//! The names of kofi's flags and enumerations, as `include/kofi/fabric.h`
//! spells them (a test reads the header), for printing and for parsing the
//! filters a user types.

/// A flag or an enumeration value and its name.
pub type Name = (u64, &'static str);

/// Capabilities (`caps` of an info and its attrs).
pub const CAPS: &[Name] = &[
    (1 << 1, "FI_MSG"),
    (1 << 2, "FI_RMA"),
    (1 << 3, "FI_TAGGED"),
    (1 << 4, "FI_ATOMIC"),
    (1 << 8, "FI_READ"),
    (1 << 9, "FI_WRITE"),
    (1 << 10, "FI_RECV"),
    (1 << 11, "FI_SEND"),
    (1 << 12, "FI_REMOTE_READ"),
    (1 << 13, "FI_REMOTE_WRITE"),
    (1 << 16, "FI_MULTI_RECV"),
    (1 << 17, "FI_REMOTE_CQ_DATA"),
    (1 << 51, "FI_LOCAL_COMM"),
    (1 << 52, "FI_REMOTE_COMM"),
    (1 << 56, "FI_RMA_EVENT"),
    (1 << 57, "FI_SOURCE"),
    (1 << 58, "FI_NAMED_RX_CTX"),
    (1 << 59, "FI_DIRECTED_RECV"),
];

/// Operation flags (`op_flags`): the capabilities' bits and these.
pub const OP_FLAGS: &[Name] = &[
    (1 << 18, "FI_MORE"),
    (1 << 19, "FI_PEEK"),
    (1 << 20, "FI_TRIGGER"),
    (1 << 21, "FI_FENCE"),
    (1 << 24, "FI_COMPLETION"),
    (1 << 25, "FI_INJECT"),
    (1 << 26, "FI_INJECT_COMPLETE"),
    (1 << 27, "FI_TRANSMIT_COMPLETE"),
    (1 << 28, "FI_DELIVERY_COMPLETE"),
];

/// Modes.
pub const MODES: &[Name] = &[
    (1 << 55, "FI_LOCAL_MR"),
    (1 << 56, "FI_RX_CQ_DATA"),
    (1 << 57, "FI_ASYNC_IOV"),
    (1 << 58, "FI_MSG_PREFIX"),
    (1 << 59, "FI_CONTEXT"),
];

/// Registration modes (`mr_mode`).
pub const MR_MODES: &[Name] = &[
    (1 << 0, "FI_MR_LOCAL"),
    (1 << 1, "FI_MR_RAW"),
    (1 << 2, "FI_MR_VIRT_ADDR"),
    (1 << 3, "FI_MR_ALLOCATED"),
    (1 << 4, "FI_MR_PROV_KEY"),
    (1 << 5, "FI_MR_MMU_NOTIFY"),
    (1 << 6, "FI_MR_RMA_EVENT"),
    (1 << 7, "FI_MR_ENDPOINT"),
];

/// Message and completion orders (`msg_order`, `comp_order`).
pub const ORDERS: &[Name] = &[
    (1 << 0, "FI_ORDER_RAR"),
    (1 << 1, "FI_ORDER_RAW"),
    (1 << 2, "FI_ORDER_RAS"),
    (1 << 3, "FI_ORDER_WAR"),
    (1 << 4, "FI_ORDER_WAW"),
    (1 << 5, "FI_ORDER_WAS"),
    (1 << 6, "FI_ORDER_SAR"),
    (1 << 7, "FI_ORDER_SAW"),
    (1 << 8, "FI_ORDER_SAS"),
    (1 << 16, "FI_ORDER_DATA"),
];

pub const EP_TYPES: &[Name] = &[
    (0, "FI_EP_UNSPEC"),
    (1, "FI_EP_MSG"),
    (2, "FI_EP_DGRAM"),
    (3, "FI_EP_RDM"),
];

pub const ADDR_FORMATS: &[Name] = &[
    (0, "FI_FORMAT_UNSPEC"),
    (1, "FI_SOCKADDR"),
    (2, "FI_SOCKADDR_IN"),
    (3, "FI_SOCKADDR_IN6"),
    (4, "FI_SOCKADDR_IB"),
];

pub const THREADING: &[Name] = &[
    (0, "FI_THREAD_UNSPEC"),
    (1, "FI_THREAD_SAFE"),
    (2, "FI_THREAD_FID"),
    (3, "FI_THREAD_DOMAIN"),
    (4, "FI_THREAD_COMPLETION"),
    (5, "FI_THREAD_ENDPOINT"),
];

pub const PROGRESS: &[Name] = &[
    (0, "FI_PROGRESS_UNSPEC"),
    (1, "FI_PROGRESS_AUTO"),
    (2, "FI_PROGRESS_MANUAL"),
];

pub const RESOURCE_MGMT: &[Name] = &[
    (0, "FI_RM_UNSPEC"),
    (1, "FI_RM_DISABLED"),
    (2, "FI_RM_ENABLED"),
];

pub const AV_TYPES: &[Name] = &[(0, "FI_AV_UNSPEC"), (1, "FI_AV_MAP"), (2, "FI_AV_TABLE")];

pub const PROTOCOLS: &[Name] = &[
    (0, "FI_PROTO_UNSPEC"),
    (1, "FI_PROTO_RDMA_CM_IB_RC"),
    (2, "FI_PROTO_IWARP"),
    (10, "FI_PROTO_SOCK_TCP"),
    (0x4b52, "FI_PROTO_KOFI_RDM"),
];

/// Object classes, as the open-object counts name them.
pub const CLASSES: &[Name] = &[
    (1, "FI_CLASS_FABRIC"),
    (2, "FI_CLASS_DOMAIN"),
    (3, "FI_CLASS_EP"),
    (4, "FI_CLASS_SEP"),
    (5, "FI_CLASS_RX_CTX"),
    (6, "FI_CLASS_SRX_CTX"),
    (7, "FI_CLASS_TX_CTX"),
    (8, "FI_CLASS_STX_CTX"),
    (9, "FI_CLASS_PEP"),
    (10, "FI_CLASS_INTERFACE"),
    (11, "FI_CLASS_AV"),
    (12, "FI_CLASS_MR"),
    (13, "FI_CLASS_EQ"),
    (14, "FI_CLASS_CQ"),
    (15, "FI_CLASS_CNTR"),
    (16, "FI_CLASS_WAIT"),
    (17, "FI_CLASS_POLL"),
    (18, "FI_CLASS_CONNREQ"),
];

/// `value`'s name in `table`, or the number.
pub fn name_of(table: &[Name], value: u64) -> String {
    table
        .iter()
        .find(|(v, _)| *v == value)
        .map_or_else(|| format!("{value:#x}"), |(_, n)| n.to_string())
}

/// The names of the bits of `flags`, as fi_tostr lists them:
/// `[ FI_MSG, FI_RMA ]`; a bit no table names is shown as a number.
pub fn flag_list(tables: &[&[Name]], flags: u64) -> String {
    let mut names = Vec::new();
    let mut left = flags;
    for table in tables {
        for (bit, name) in table.iter() {
            if *bit != 0 && left & bit == *bit {
                names.push(name.to_string());
                left &= !bit;
            }
        }
    }
    if left != 0 {
        names.push(format!("{left:#x}"));
    }
    format!("[ {} ]", names.join(", "))
}

/// Looks a name a user typed up in `table`: case does not matter, nor the
/// `prefix` (`FI_`, `FI_EP_`).
pub fn parse_name(table: &[Name], prefix: &str, word: &str) -> Option<u64> {
    let word = word.trim().to_ascii_uppercase();
    table
        .iter()
        .find(|(_, n)| *n == word || n.strip_prefix(prefix) == Some(word.as_str()))
        .map(|(v, _)| *v)
}

/// Parses `FI_MSG|FI_RMA` (or `,` between names) into capability bits.
pub fn parse_caps(list: &str) -> Result<u64, String> {
    let mut caps = 0;
    for word in list.split(['|', ',']) {
        if word.trim().is_empty() {
            return Err(format!("empty capability in '{list}'"));
        }
        caps |= parse_name(CAPS, "FI_", word)
            .ok_or_else(|| format!("unknown capability '{}'", word.trim()))?;
    }
    Ok(caps)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of `name` in include/kofi/fabric.h: a `#define NAME (1ULL <<
    /// n)` or a member of an enum (counted from the previous explicit value).
    fn header_value(header: &str, name: &str) -> Option<u64> {
        for line in header.lines() {
            let mut w = line.split_whitespace();
            if w.next() == Some("#define") && w.next() == Some(name) {
                let rest: String = w.collect::<Vec<_>>().join(" ");
                let rest = rest.trim_matches(|c| c == '(' || c == ')');
                if let Some(shift) = rest.split("<<").nth(1) {
                    return Some(1 << shift.trim().parse::<u32>().ok()?);
                }
                return rest.trim_end_matches("ULL").parse().ok();
            }
        }
        let mut next = 0;
        let mut in_enum = false;
        for line in header.lines() {
            let t = line.trim();
            if t.starts_with("enum") && t.ends_with('{') {
                in_enum = true;
                next = 0;
                continue;
            }
            if in_enum && t.starts_with("};") {
                in_enum = false;
                continue;
            }
            if !in_enum || !t.starts_with("FI_") {
                continue;
            }
            let item = t
                .split(',')
                .next()
                .unwrap()
                .split("/*")
                .next()
                .unwrap()
                .trim();
            let (n, v) = match item.split_once('=') {
                Some((n, v)) => {
                    let v = v.trim();
                    let v = match v.strip_prefix("0x") {
                        Some(h) => u64::from_str_radix(h, 16).ok()?,
                        None => v.parse().ok()?,
                    };
                    (n.trim(), v)
                }
                None => (item, next),
            };
            next = v + 1;
            if n == name {
                return Some(v);
            }
        }
        None
    }

    #[test]
    fn every_name_is_the_headers() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../include/kofi/fabric.h");
        let header = std::fs::read_to_string(path).expect("include/kofi/fabric.h");
        let tables = [
            CAPS,
            OP_FLAGS,
            MODES,
            MR_MODES,
            ORDERS,
            EP_TYPES,
            ADDR_FORMATS,
            THREADING,
            PROGRESS,
            RESOURCE_MGMT,
            AV_TYPES,
            PROTOCOLS,
            CLASSES,
        ];
        for table in tables {
            for (value, name) in table {
                assert_eq!(header_value(&header, name), Some(*value), "{name}");
            }
        }
    }

    #[test]
    fn flags_print_as_fi_tostr_does() {
        assert_eq!(flag_list(&[CAPS], 0), "[  ]");
        assert_eq!(
            flag_list(&[CAPS], (1 << 1) | (1 << 3)),
            "[ FI_MSG, FI_TAGGED ]"
        );
        assert_eq!(
            flag_list(&[CAPS], (1 << 1) | (1 << 40)),
            "[ FI_MSG, 0x10000000000 ]"
        );
        assert_eq!(name_of(EP_TYPES, 3), "FI_EP_RDM");
        assert_eq!(name_of(EP_TYPES, 9), "0x9");
    }

    #[test]
    fn typed_names_parse() {
        assert_eq!(parse_caps("FI_MSG|FI_RMA"), Ok((1 << 1) | (1 << 2)));
        assert_eq!(parse_caps("msg,tagged"), Ok((1 << 1) | (1 << 3)));
        assert!(parse_caps("FI_MSG|FI_BOGUS")
            .unwrap_err()
            .contains("FI_BOGUS"));
        assert!(parse_caps("FI_MSG||FI_RMA").is_err());
        assert_eq!(parse_name(EP_TYPES, "FI_EP_", "FI_EP_RDM"), Some(3));
        assert_eq!(parse_name(EP_TYPES, "FI_EP_", "msg"), Some(1));
        assert_eq!(parse_name(EP_TYPES, "FI_EP_", "stream"), None);
    }
}
