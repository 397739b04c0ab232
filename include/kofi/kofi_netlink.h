/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kofi's generic netlink family: what a user-space tool (tools/kofi_info)
 * asks the core, and how the answers are laid out. Stable: attributes and
 * commands are only ever added at the end. Documentation/kofi/kofi-info.rst.
 *
 * Both commands are dumps (NLM_F_DUMP), open to every user:
 *
 * KOFI_CMD_GET_PROVIDERS: a message per registered provider with
 *	KOFI_A_PROV_NAME, KOFI_A_PROV_VERSION, KOFI_A_PROV_PRIORITY,
 *	KOFI_A_PROV_MODULE_REFS, KOFI_A_PROV_ABI_VERSION and KOFI_A_PROV_OBJECTS
 *	(nested: one u32 per object class, its attribute type the FI_CLASS_*
 *	value, the payload the number of open objects of that class).
 *
 * KOFI_CMD_GET_INFO: a message per fi_info that fi_getinfo() gives for the
 *	request's hints: KOFI_A_PROV_NAME (only that provider), KOFI_A_EP_TYPE,
 *	KOFI_A_CAPS, KOFI_A_NODE and KOFI_A_SERVICE, each optional. Every info
 *	attribute below is in every answer (addresses only when the info has
 *	them). Errors are fi_getinfo's: -ENODATA when nothing matches.
 *
 * Integers are host-endian; u64 attributes are 64-bit aligned by
 * KOFI_A_PAD attributes, which a reader skips.
 */
#ifndef _KOFI_NETLINK_H
#define _KOFI_NETLINK_H

#define KOFI_GENL_NAME		"kofi"
#define KOFI_GENL_VERSION	1

enum {
	KOFI_CMD_UNSPEC,
	KOFI_CMD_GET_PROVIDERS,
	KOFI_CMD_GET_INFO,
	__KOFI_CMD_MAX,
};

enum {
	KOFI_A_UNSPEC,
	KOFI_A_PAD,
	/* Providers (also the provider of an info, and a hint). */
	KOFI_A_PROV_NAME,		/* string */
	KOFI_A_PROV_VERSION,		/* u32 */
	KOFI_A_PROV_PRIORITY,		/* s32 */
	KOFI_A_PROV_MODULE_REFS,	/* u32 */
	KOFI_A_PROV_ABI_VERSION,	/* u32: FI_VERSION the provider was built for */
	KOFI_A_PROV_OBJECTS,		/* nested: FI_CLASS_* -> u32 */
	/* Hints only. */
	KOFI_A_NODE,			/* string */
	KOFI_A_SERVICE,			/* string */
	/* struct fi_info */
	KOFI_A_CAPS,			/* u64 (also a hint) */
	KOFI_A_MODE,			/* u64 */
	KOFI_A_ADDR_FORMAT,		/* u32 */
	KOFI_A_SRC_ADDR,		/* binary */
	KOFI_A_DEST_ADDR,		/* binary */
	/* struct fi_tx_attr */
	KOFI_A_TX_CAPS,			/* u64 */
	KOFI_A_TX_MODE,			/* u64 */
	KOFI_A_TX_OP_FLAGS,		/* u64 */
	KOFI_A_TX_MSG_ORDER,		/* u64 */
	KOFI_A_TX_COMP_ORDER,		/* u64 */
	KOFI_A_TX_INJECT_SIZE,		/* u64 */
	KOFI_A_TX_SIZE,			/* u64 */
	KOFI_A_TX_IOV_LIMIT,		/* u64 */
	KOFI_A_TX_RMA_IOV_LIMIT,	/* u64 */
	/* struct fi_rx_attr */
	KOFI_A_RX_CAPS,			/* u64 */
	KOFI_A_RX_MODE,			/* u64 */
	KOFI_A_RX_OP_FLAGS,		/* u64 */
	KOFI_A_RX_MSG_ORDER,		/* u64 */
	KOFI_A_RX_COMP_ORDER,		/* u64 */
	KOFI_A_RX_TOTAL_BUFFERED_RECV,	/* u64 */
	KOFI_A_RX_SIZE,			/* u64 */
	KOFI_A_RX_IOV_LIMIT,		/* u64 */
	/* struct fi_ep_attr */
	KOFI_A_EP_TYPE,			/* u32 (also a hint) */
	KOFI_A_EP_PROTOCOL,		/* u32 */
	KOFI_A_EP_PROTOCOL_VERSION,	/* u32 */
	KOFI_A_EP_MAX_MSG_SIZE,		/* u64 */
	KOFI_A_EP_MSG_PREFIX_SIZE,	/* u64 */
	KOFI_A_EP_MAX_ORDER_RAW_SIZE,	/* u64 */
	KOFI_A_EP_MAX_ORDER_WAR_SIZE,	/* u64 */
	KOFI_A_EP_MAX_ORDER_WAW_SIZE,	/* u64 */
	KOFI_A_EP_MEM_TAG_FORMAT,	/* u64 */
	KOFI_A_EP_TX_CTX_CNT,		/* u64 */
	KOFI_A_EP_RX_CTX_CNT,		/* u64 */
	/* struct fi_domain_attr */
	KOFI_A_DOMAIN_NAME,		/* string */
	KOFI_A_DOMAIN_THREADING,	/* u32 */
	KOFI_A_DOMAIN_CONTROL_PROGRESS,	/* u32 */
	KOFI_A_DOMAIN_DATA_PROGRESS,	/* u32 */
	KOFI_A_DOMAIN_RESOURCE_MGMT,	/* u32 */
	KOFI_A_DOMAIN_AV_TYPE,		/* u32 */
	KOFI_A_DOMAIN_MR_MODE,		/* u32 */
	KOFI_A_DOMAIN_MR_KEY_SIZE,	/* u64 */
	KOFI_A_DOMAIN_CQ_DATA_SIZE,	/* u64 */
	KOFI_A_DOMAIN_CQ_CNT,		/* u64 */
	KOFI_A_DOMAIN_EP_CNT,		/* u64 */
	KOFI_A_DOMAIN_TX_CTX_CNT,	/* u64 */
	KOFI_A_DOMAIN_RX_CTX_CNT,	/* u64 */
	KOFI_A_DOMAIN_MAX_EP_TX_CTX,	/* u64 */
	KOFI_A_DOMAIN_MAX_EP_RX_CTX,	/* u64 */
	KOFI_A_DOMAIN_MR_IOV_LIMIT,	/* u64 */
	KOFI_A_DOMAIN_CAPS,		/* u64 */
	KOFI_A_DOMAIN_MODE,		/* u64 */
	KOFI_A_DOMAIN_MR_CNT,		/* u64 */
	/* struct fi_fabric_attr (KOFI_A_PROV_NAME and _VERSION name its provider) */
	KOFI_A_FABRIC_NAME,		/* string */
	KOFI_A_FABRIC_API_VERSION,	/* u32 */
	__KOFI_A_MAX,
};

#define KOFI_A_MAX (__KOFI_A_MAX - 1)

#endif /* _KOFI_NETLINK_H */
