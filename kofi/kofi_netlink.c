// SPDX-License-Identifier: GPL-2.0
/*
 * kofi's generic netlink family (include/kofi/kofi_netlink.h), the C half:
 * the family, its policy and its dump callbacks, and the message helpers the
 * Rust half (netlink.rs) writes the answers with. genetlink's structures and
 * most of its calls are inline, so they stay on this side.
 */
#include <net/genetlink.h>
#include <kofi/fabric.h>
#include <kofi/kofi_netlink.h>
#include "kofi_glue.h"

/* What a request may carry: the hints of KOFI_CMD_GET_INFO. Strict: any
 * other attribute in a request is refused with -EINVAL. */
static const struct nla_policy kofi_nl_policy[KOFI_A_MAX + 1] = {
	[KOFI_A_PROV_NAME] = { .type = NLA_NUL_STRING, .len = FI_NAME_MAX - 1 },
	[KOFI_A_NODE] = { .type = NLA_NUL_STRING, .len = 255 },
	[KOFI_A_SERVICE] = { .type = NLA_NUL_STRING, .len = 31 },
	[KOFI_A_CAPS] = { .type = NLA_U64 },
	[KOFI_A_EP_TYPE] = NLA_POLICY_MAX(NLA_U32, FI_EP_RDM),
};

static int kofi_nl_providers_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	return kofi_nl_fill_providers(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
				      &cb->args[0]);
}

static int kofi_nl_infos_start(struct netlink_callback *cb)
{
	struct nlattr **tb = genl_info_dump(cb)->attrs;
	struct kofi_nl_hints hints = {};
	int err = 0;

	if (tb[KOFI_A_PROV_NAME])
		hints.prov_name = nla_data(tb[KOFI_A_PROV_NAME]);
	if (tb[KOFI_A_NODE])
		hints.node = nla_data(tb[KOFI_A_NODE]);
	if (tb[KOFI_A_SERVICE])
		hints.service = nla_data(tb[KOFI_A_SERVICE]);
	if (tb[KOFI_A_EP_TYPE]) {
		hints.has_ep_type = true;
		hints.ep_type = nla_get_u32(tb[KOFI_A_EP_TYPE]);
	}
	if (tb[KOFI_A_CAPS]) {
		hints.has_caps = true;
		hints.caps = nla_get_u64(tb[KOFI_A_CAPS]);
	}
	cb->args[0] = (long)kofi_nl_collect_infos(&hints, &err);
	return err;
}

static int kofi_nl_infos_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	return kofi_nl_fill_infos(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
				  (void *)cb->args[0]);
}

static int kofi_nl_infos_done(struct netlink_callback *cb)
{
	kofi_nl_release_infos((void *)cb->args[0]);
	return 0;
}

static const struct genl_ops kofi_nl_ops[] = {
	{
		.cmd = KOFI_CMD_GET_PROVIDERS,
		.dumpit = kofi_nl_providers_dump,
	},
	{
		.cmd = KOFI_CMD_GET_INFO,
		.start = kofi_nl_infos_start,
		.dumpit = kofi_nl_infos_dump,
		.done = kofi_nl_infos_done,
	},
};

/*
 * parallel_ops: the dumps take the registry's own lock; under genetlink's
 * global mutex, a provider's getinfo (rdma_cm resolving an address) would
 * hold up every other family's requests. Not netnsok: kofi's providers
 * work in the initial network namespace, so the family is seen there only
 * (another namespace would be shown a fabric it cannot reach).
 */
static struct genl_family kofi_nl_family = {
	.name = KOFI_GENL_NAME,
	.version = KOFI_GENL_VERSION,
	.maxattr = KOFI_A_MAX,
	.policy = kofi_nl_policy,
	.parallel_ops = true,
	.module = THIS_MODULE,
	.ops = kofi_nl_ops,
	.n_ops = ARRAY_SIZE(kofi_nl_ops),
};

int kofi_nl_register(void)
{
	return genl_register_family(&kofi_nl_family);
}

void kofi_nl_unregister(void)
{
	genl_unregister_family(&kofi_nl_family);
}

void *kofi_nl_msg_begin(struct sk_buff *skb, u32 portid, u32 seq, u8 cmd)
{
	return genlmsg_put(skb, portid, seq, &kofi_nl_family, NLM_F_MULTI, cmd);
}

void kofi_nl_msg_end(struct sk_buff *skb, void *hdr)
{
	genlmsg_end(skb, hdr);
}

void kofi_nl_msg_cancel(struct sk_buff *skb, void *hdr)
{
	genlmsg_cancel(skb, hdr);
}

int kofi_nl_put(struct sk_buff *skb, int type, const void *data, int len)
{
	return nla_put(skb, type, len, data);
}

int kofi_nl_put_u64(struct sk_buff *skb, int type, u64 value)
{
	return nla_put_u64_64bit(skb, type, value, KOFI_A_PAD);
}

void *kofi_nl_nest_start(struct sk_buff *skb, int type)
{
	return nla_nest_start(skb, type);
}

void kofi_nl_nest_end(struct sk_buff *skb, void *nest)
{
	nla_nest_end(skb, nest);
}

int kofi_nl_len(const struct sk_buff *skb)
{
	return skb->len;
}
