// SPDX-License-Identifier: GPL-2.0

//! The kernel's side of the conversation: netlink's and genetlink's
//! constants, and kofi's family from `include/kofi/kofi_netlink.h` (a test
//! reads the header, so the two cannot drift apart).

pub const NETLINK_GENERIC: i32 = 16;
pub const AF_NETLINK: i32 = 16;
pub const SOCK_RAW: i32 = 3;
pub const SOCK_CLOEXEC: i32 = 0o2000000;

pub const NLMSG_HDRLEN: usize = 16;
pub const GENL_HDRLEN: usize = 4;
pub const NLMSG_ERROR: u16 = 2;
pub const NLMSG_DONE: u16 = 3;
pub const NLM_F_REQUEST: u16 = 0x1;
pub const NLM_F_DUMP: u16 = 0x300;
/// Attribute type bits that are flags, not the type.
pub const NLA_TYPE_MASK: u16 = 0x3fff;

pub const GENL_ID_CTRL: u16 = 0x10;
pub const CTRL_CMD_GETFAMILY: u8 = 3;
pub const CTRL_ATTR_FAMILY_ID: u16 = 1;
pub const CTRL_ATTR_FAMILY_NAME: u16 = 2;

pub const KOFI_GENL_NAME: &str = "kofi";
pub const KOFI_GENL_VERSION: u8 = 1;

pub const KOFI_CMD_GET_PROVIDERS: u8 = 1;
pub const KOFI_CMD_GET_INFO: u8 = 2;

/// kofi's attributes, in the header's order (`KOFI_A_UNSPEC` is 0).
pub const KOFI_ATTRS: &[&str] = &[
    "KOFI_A_UNSPEC",
    "KOFI_A_PAD",
    "KOFI_A_PROV_NAME",
    "KOFI_A_PROV_VERSION",
    "KOFI_A_PROV_PRIORITY",
    "KOFI_A_PROV_MODULE_REFS",
    "KOFI_A_PROV_ABI_VERSION",
    "KOFI_A_PROV_OBJECTS",
    "KOFI_A_NODE",
    "KOFI_A_SERVICE",
    "KOFI_A_CAPS",
    "KOFI_A_MODE",
    "KOFI_A_ADDR_FORMAT",
    "KOFI_A_SRC_ADDR",
    "KOFI_A_DEST_ADDR",
    "KOFI_A_TX_CAPS",
    "KOFI_A_TX_MODE",
    "KOFI_A_TX_OP_FLAGS",
    "KOFI_A_TX_MSG_ORDER",
    "KOFI_A_TX_COMP_ORDER",
    "KOFI_A_TX_INJECT_SIZE",
    "KOFI_A_TX_SIZE",
    "KOFI_A_TX_IOV_LIMIT",
    "KOFI_A_TX_RMA_IOV_LIMIT",
    "KOFI_A_RX_CAPS",
    "KOFI_A_RX_MODE",
    "KOFI_A_RX_OP_FLAGS",
    "KOFI_A_RX_MSG_ORDER",
    "KOFI_A_RX_COMP_ORDER",
    "KOFI_A_RX_TOTAL_BUFFERED_RECV",
    "KOFI_A_RX_SIZE",
    "KOFI_A_RX_IOV_LIMIT",
    "KOFI_A_EP_TYPE",
    "KOFI_A_EP_PROTOCOL",
    "KOFI_A_EP_PROTOCOL_VERSION",
    "KOFI_A_EP_MAX_MSG_SIZE",
    "KOFI_A_EP_MSG_PREFIX_SIZE",
    "KOFI_A_EP_MAX_ORDER_RAW_SIZE",
    "KOFI_A_EP_MAX_ORDER_WAR_SIZE",
    "KOFI_A_EP_MAX_ORDER_WAW_SIZE",
    "KOFI_A_EP_MEM_TAG_FORMAT",
    "KOFI_A_EP_TX_CTX_CNT",
    "KOFI_A_EP_RX_CTX_CNT",
    "KOFI_A_DOMAIN_NAME",
    "KOFI_A_DOMAIN_THREADING",
    "KOFI_A_DOMAIN_CONTROL_PROGRESS",
    "KOFI_A_DOMAIN_DATA_PROGRESS",
    "KOFI_A_DOMAIN_RESOURCE_MGMT",
    "KOFI_A_DOMAIN_AV_TYPE",
    "KOFI_A_DOMAIN_MR_MODE",
    "KOFI_A_DOMAIN_MR_KEY_SIZE",
    "KOFI_A_DOMAIN_CQ_DATA_SIZE",
    "KOFI_A_DOMAIN_CQ_CNT",
    "KOFI_A_DOMAIN_EP_CNT",
    "KOFI_A_DOMAIN_TX_CTX_CNT",
    "KOFI_A_DOMAIN_RX_CTX_CNT",
    "KOFI_A_DOMAIN_MAX_EP_TX_CTX",
    "KOFI_A_DOMAIN_MAX_EP_RX_CTX",
    "KOFI_A_DOMAIN_MR_IOV_LIMIT",
    "KOFI_A_DOMAIN_CAPS",
    "KOFI_A_DOMAIN_MODE",
    "KOFI_A_DOMAIN_MR_CNT",
    "KOFI_A_FABRIC_NAME",
    "KOFI_A_FABRIC_API_VERSION",
];

/// The number of kofi attribute `name`.
///
/// # Panics
///
/// On a name not in [`KOFI_ATTRS`]: a typo in this program.
pub fn attr(name: &str) -> u16 {
    KOFI_ATTRS
        .iter()
        .position(|a| *a == name)
        .unwrap_or_else(|| panic!("no attribute {name}")) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names of an anonymous enum of `header` whose first member is `first`.
    pub fn enum_members(header: &str, first: &str) -> Vec<String> {
        let start = header.find(&format!("\t{first},")).expect("enum in header");
        let body = &header[start..header[start..].find("};").unwrap() + start];
        body.lines()
            .filter_map(|l| l.split_whitespace().next())
            .map(|w| w.trim_end_matches(',').to_string())
            .filter(|w| w.starts_with("KOFI_") && !w.starts_with("__"))
            .collect()
    }

    fn header() -> String {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../include/kofi/kofi_netlink.h"
        );
        std::fs::read_to_string(path).expect("include/kofi/kofi_netlink.h")
    }

    #[test]
    fn attributes_are_the_headers() {
        assert_eq!(enum_members(&header(), "KOFI_A_UNSPEC"), KOFI_ATTRS);
    }

    #[test]
    fn commands_and_family_are_the_headers() {
        let h = header();
        let cmds = enum_members(&h, "KOFI_CMD_UNSPEC");
        assert_eq!(
            cmds[KOFI_CMD_GET_PROVIDERS as usize],
            "KOFI_CMD_GET_PROVIDERS"
        );
        assert_eq!(cmds[KOFI_CMD_GET_INFO as usize], "KOFI_CMD_GET_INFO");
        assert!(h.contains(&format!("#define KOFI_GENL_NAME\t\t\"{KOFI_GENL_NAME}\"")));
        assert!(h.contains(&format!("#define KOFI_GENL_VERSION\t{KOFI_GENL_VERSION}")));
    }
}
