// SPDX-License-Identifier: GPL-2.0
/*
 * A hostile peer for kofi_blk's tests (test_blk.sh), speaking its wire
 * protocol (blockdev/kofi_blk_proto.h) wrongly on purpose.
 *
 * mode=initiator: connects to the export "disk0" of kofi_blkt on
 * 127.0.0.1:port and checks that the target answers each bad command with
 * the error it documents (EOPNOTSUPP, EINVAL, ERANGE, EIO for a bad key),
 * still serves good ones, refuses bad handshakes (the reason in the
 * rejection's private data), and ends a connection that sends a command of
 * the wrong size or a tag out of range; inline reads only as the connect
 * offered them, their data in the response. Loading fails if any check
 * does.
 *
 * mode=target: listens on 127.0.0.1:port as an export of 2048 sectors and
 * answers every command wrongly, as answer= says: badtag (a tag out of
 * range), short (8 bytes), stalegen (the tag's previous generation),
 * status (EIO for every command, well-formed), shortdata (inline reads
 * offered, and every answer a success followed by 512 bytes fewer than
 * the command moves, or 8 for a flush) or twice (inline writes offered,
 * and every command answered with a success twice).
 * It stays until unloaded.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/workqueue.h>
#include <kofi/fabric.h>
#include <kofi/fi_cm.h>
#include <kofi/fi_domain.h>
#include <kofi/fi_endpoint.h>
#include <kofi/fi_eq.h>
#include <kofi/fi_rma.h>
#include "../../../../blockdev/kofi_blk_proto.h"

static char *mode = "initiator";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "initiator (attack kofi_blkt) or target (answer kofi_blk wrongly)");
static char *answer = "badtag";
module_param(answer, charp, 0444);
MODULE_PARM_DESC(answer, "target mode: badtag, short, stalegen, status, shortdata or twice");
static char *port = "4470";
module_param(port, charp, 0444);
MODULE_PARM_DESC(port, "the export's port (initiator) or ours (target)");

#define WAIT_MS 5000
#define DEPTH 4
#define TARGET_CONNS 16
#define TARGET_RECVS 32

struct cm_event {
	struct fi_eq_cm_entry entry;
	u8 data[KOFI_CM_DATA_MAX];
};

/* What both modes open: an info, fabric, domain and EQ. */
static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_eq *eq;

static void hostile_close(struct fid *fid)
{
	if (fid)
		fi_close(fid);
}

static int open_common(u64 flags, kofi_eq_handler_t handler)
{
	struct fi_eq_attr eq_attr = { .event_handler = handler };
	struct fi_info *hints = fi_allocinfo();
	int ret;

	if (!hints)
		return -ENOMEM;
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_RMA;
	hints->fabric_attr->prov_name = kstrdup("sock", GFP_KERNEL);
	ret = fi_getinfo(KOFI_ABI_VERSION, "127.0.0.1", port, flags, hints, &info);
	fi_freeinfo(hints);
	if (!ret)
		ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (!ret)
		ret = fi_domain(fabric, info, &domain, NULL);
	return ret ?: fi_eq_open(fabric, &eq_attr, &eq, NULL);
}

static void close_common(void)
{
	hostile_close(eq ? &eq->fid : NULL);
	hostile_close(domain ? &domain->fid : NULL);
	hostile_close(fabric ? &fabric->fid : NULL);
	fi_freeinfo(info);
}

/* ---- mode=initiator: bad commands against kofi_blkt ---- */

struct conn {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct kofi_blk_resp resp;
	u8 *rx_data;			/* an inline read's data, past resp */
	struct kofi_blk_accept acc;
};

static int failures;

#define CHECK(cond, what)                                                     \
	do {                                                                  \
		if (!(cond)) {                                                \
			failures++;                                           \
			pr_err("kofi_blk_hostile: check failed: %s\n", what); \
		}                                                             \
	} while (0)

static void conn_close(struct conn *c)
{
	hostile_close(c->ep ? &c->ep->fid : NULL);
	hostile_close(c->cq ? &c->cq->fid : NULL);
	kfree(c->rx_data);
	c->ep = NULL;
	c->cq = NULL;
	c->rx_data = NULL;
}

/* Posts the receive of the next response: the response, then a page. */
static int post_resp(struct conn *c)
{
	struct kvec iov[2] = {
		{ &c->resp, sizeof(c->resp) },
		{ c->rx_data, PAGE_SIZE },
	};

	return fi_recvv(c->ep, iov, NULL, 2, 0, c);
}

/*
 * Connects with @req; 0 and the accept in @c, or the rejection's status
 * (positive) in *@reject and -ECONNREFUSED.
 */
static int conn_open(struct conn *c, const struct kofi_blk_connect *req, int *reject)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG };
	struct kofi_blk_reject rej = {};
	struct fi_eq_err_entry err = { .err_data = &rej, .err_data_size = sizeof(rej) };
	struct cm_event *ev = kzalloc(sizeof(*ev), GFP_KERNEL);
	u32 event;
	ssize_t n;
	int ret;

	if (!ev)
		return -ENOMEM;
	c->rx_data = kmalloc(PAGE_SIZE, GFP_KERNEL);
	ret = c->rx_data ? fi_cq_open(domain, &cq_attr, &c->cq, NULL) : -ENOMEM;
	if (!ret)
		ret = fi_endpoint(domain, info, &c->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(c->ep, &eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(c->ep, &c->cq->fid, FI_SEND | FI_RECV);
	if (!ret)
		ret = fi_enable(c->ep);
	if (!ret)
		ret = post_resp(c);
	if (!ret)
		ret = fi_connect(c->ep, info->dest_addr, req, sizeof(*req));
	if (ret)
		goto out;
	n = fi_eq_sread(eq, &event, ev, sizeof(*ev), WAIT_MS, 0);
	if (n == -FI_EAVAIL && fi_eq_readerr(eq, &err, 0) > 0) {
		*reject = le32_to_cpu(rej.magic) == KOFI_BLK_MAGIC ? le32_to_cpu(rej.status) : 0;
		ret = -ECONNREFUSED;
	} else if (n < (ssize_t)(sizeof(ev->entry) + sizeof(c->acc)) || event != FI_CONNECTED) {
		ret = n < 0 ? n : -EPROTO;
	} else {
		memcpy(&c->acc, ev->data, sizeof(c->acc));
	}
out:
	kfree(ev);
	if (ret)
		conn_close(c);
	return ret;
}

static struct kofi_blk_connect good_request(void)
{
	struct kofi_blk_connect req = {
		.magic = cpu_to_le32(KOFI_BLK_MAGIC),
		.version = cpu_to_le16(KOFI_BLK_VERSION),
		.depth = cpu_to_le16(DEPTH),
	};

	strscpy(req.name, "disk0", sizeof(req.name));
	return req;
}

/*
 * Waits for the response to @cmd, with @data_len bytes behind it when it
 * is a success (an inline read's, in c->rx_data): the status, or -errno.
 */
static int await_response(struct conn *c, const struct kofi_blk_cmd *cmd, size_t data_len)
{
	struct fi_cq_msg_entry e;
	ssize_t n = fi_cq_sread(c->cq, &e, 1, NULL, WAIT_MS);

	if (n != 1)
		return n < 0 ? n : -EPROTO;
	if (c->resp.status)
		data_len = 0;
	if (e.len != sizeof(c->resp) + data_len || c->resp.tag != cmd->tag ||
	    c->resp.gen != cmd->gen)
		return -EPROTO;
	n = post_resp(c);
	return n < 0 ? n : le32_to_cpu(c->resp.status);
}

/*
 * Sends @cmd, followed by @len bytes of @data in its message when @len (an
 * inline write), and waits for its response: the status, or -errno.
 */
static int command_with(struct conn *c, const struct kofi_blk_cmd *cmd, const void *data,
			size_t len)
{
	u8 *msg = kmalloc(sizeof(*cmd) + len, GFP_KERNEL);
	ssize_t n;

	if (!msg)
		return -ENOMEM;
	memcpy(msg, cmd, sizeof(*cmd));
	memcpy(msg + sizeof(*cmd), data, len);
	n = fi_inject(c->ep, msg, sizeof(*cmd) + len, 0);
	kfree(msg);
	return n < 0 ? n : await_response(c, cmd, 0);
}

/* Sends @cmd, an inline read, and waits for its response and data. */
static int inline_read(struct conn *c, const struct kofi_blk_cmd *cmd)
{
	ssize_t n = fi_inject(c->ep, cmd, sizeof(*cmd), 0);

	return n < 0 ? n : await_response(c, cmd, le32_to_cpu(cmd->len));
}

/* Sends @cmd and waits for its response: the status, or -errno. */
static int command(struct conn *c, const struct kofi_blk_cmd *cmd)
{
	return command_with(c, cmd, NULL, 0);
}

/* After a protocol break: the target ends the connection. */
static bool ended_by_target(struct conn *c)
{
	struct cm_event *ev = kzalloc(sizeof(*ev), GFP_KERNEL);
	struct fi_eq_err_entry err = {};
	bool ended = false;
	u32 event;
	ssize_t n;

	if (!ev)
		return false;
	n = fi_eq_sread(eq, &event, ev, sizeof(*ev), WAIT_MS, 0);
	if (n == -FI_EAVAIL)
		ended = fi_eq_readerr(eq, &err, 0) > 0;
	else
		ended = n >= (ssize_t)sizeof(ev->entry) && event == FI_SHUTDOWN;
	kfree(ev);
	return ended;
}

static int attack_target(void)
{
	struct kofi_blk_connect req = good_request();
	struct conn c = {};
	struct fid_mr *mr = NULL;
	void *buf = kzalloc(PAGE_SIZE, GFP_KERNEL);
	struct kofi_blk_cmd cmd;
	u8 *data = NULL;
	u64 sectors;
	int reject = 0, ret;

	if (!buf)
		return -ENOMEM;
	ret = open_common(0, NULL);
	if (ret)
		goto out;

	/* Handshakes: a wrong magic, an unknown export. */
	req.magic = 0;
	CHECK(conn_open(&c, &req, &reject) == -ECONNREFUSED && reject == EPROTO,
	      "a wrong magic is refused with EPROTO");
	req = good_request();
	strscpy(req.name, "nosuch", sizeof(req.name));
	CHECK(conn_open(&c, &req, &reject) == -ECONNREFUSED && reject == ENOENT,
	      "an unknown export is refused with ENOENT");
	req = good_request();
	req.depth = cpu_to_le16(KOFI_BLK_DEPTH_MAX + 1);
	CHECK(conn_open(&c, &req, &reject) == -ECONNREFUSED && reject == EINVAL,
	      "a depth over the maximum is refused with EINVAL");

	req = good_request();
	ret = conn_open(&c, &req, &reject);
	CHECK(!ret, "a good handshake is accepted");
	if (ret)
		goto out;
	sectors = le64_to_cpu(c.acc.sectors);
	CHECK(sectors > 0 && le32_to_cpu(c.acc.block_size) == 512, "the accept describes the disk");
	ret = fi_mr_reg(domain, buf, PAGE_SIZE, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			NULL);
	if (ret)
		goto out;

	memset(&cmd, 0, sizeof(cmd));
	cmd.key = cpu_to_le64(fi_mr_key(mr));
	cmd.opcode = 99;
	CHECK(command(&c, &cmd) == EOPNOTSUPP, "an unknown opcode: EOPNOTSUPP");
	cmd.opcode = KOFI_BLK_READ;
	cmd.gen = cpu_to_le32(1);
	CHECK(command(&c, &cmd) == EINVAL, "a read of 0 bytes: EINVAL");
	cmd.len = cpu_to_le32(100);
	CHECK(command(&c, &cmd) == EINVAL, "a read of part of a block: EINVAL");
	cmd.len = cpu_to_le32(PAGE_SIZE);
	cmd.sector = cpu_to_le64(sectors);
	CHECK(command(&c, &cmd) == ERANGE, "a read past the end: ERANGE");
	cmd.sector = cpu_to_le64(U64_MAX - 2);
	CHECK(command(&c, &cmd) == ERANGE, "a sector that wraps: ERANGE");
	cmd.sector = 0;
	cmd.len = cpu_to_le32(1 << 30);
	CHECK(command(&c, &cmd) == EINVAL, "a read over max_io: EINVAL");
	cmd.len = cpu_to_le32(PAGE_SIZE);
	cmd.opcode = KOFI_BLK_WRITE;
	cmd.flags = 0x80;
	CHECK(command(&c, &cmd) == EINVAL, "an unknown flag: EINVAL");
	cmd.flags = 0;
	cmd.key = cpu_to_le64(fi_mr_key(mr) ^ 0x5a5a);
	CHECK(command(&c, &cmd) == EIO, "a write from a bad key: EIO");
	cmd.key = cpu_to_le64(fi_mr_key(mr));
	cmd.opcode = KOFI_BLK_FLUSH;
	cmd.len = 0;
	CHECK(command(&c, &cmd) == 0, "a flush succeeds");
	cmd.opcode = KOFI_BLK_WRITE;
	cmd.len = cpu_to_le32(PAGE_SIZE);
	cmd.sector = cpu_to_le64(8);
	memset(buf, 0xa5, PAGE_SIZE);
	CHECK(command(&c, &cmd) == 0, "a good write succeeds");
	memset(buf, 0, PAGE_SIZE);
	cmd.opcode = KOFI_BLK_READ;
	CHECK(command(&c, &cmd) == 0 && memchr_inv(buf, 0xa5, PAGE_SIZE) == NULL,
	      "a good read brings the written bytes back");

	/* Inline writes: the data in the command's message. */
	CHECK(le32_to_cpu(c.acc.inline_max) >= PAGE_SIZE, "the accept offers inline writes");
	data = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!data) {
		ret = -ENOMEM;
		goto out;
	}
	memset(data, 0x3c, PAGE_SIZE);
	cmd.opcode = KOFI_BLK_WRITE;
	cmd.flags = KOFI_BLK_INLINE;
	cmd.key = 0;
	CHECK(command_with(&c, &cmd, data, PAGE_SIZE) == 0, "a good inline write succeeds");
	cmd.opcode = KOFI_BLK_READ;
	cmd.flags = 0;
	cmd.key = cpu_to_le64(fi_mr_key(mr));
	CHECK(command(&c, &cmd) == 0 && memchr_inv(buf, 0x3c, PAGE_SIZE) == NULL,
	      "a read brings the inline write's bytes back");
	cmd.opcode = KOFI_BLK_WRITE;
	cmd.flags = KOFI_BLK_INLINE;
	cmd.len = cpu_to_le32(100);
	CHECK(command_with(&c, &cmd, data, 100) == EINVAL,
	      "an inline write of part of a block: EINVAL");
	cmd.len = cpu_to_le32(PAGE_SIZE);

	/* Inline reads: the data in the response's message, as offered. */
	CHECK(!c.acc.read_inline_max, "no inline reads unless the connect offers them");
	cmd.opcode = KOFI_BLK_READ;
	CHECK(command(&c, &cmd) == EINVAL, "an inline read not offered: EINVAL");
	conn_close(&c);
	req.read_inline_max = cpu_to_le32(1 << 20);
	CHECK(!conn_open(&c, &req, &reject), "a connection offering inline reads is accepted");
	CHECK(le32_to_cpu(c.acc.read_inline_max) == PAGE_SIZE,
	      "the accept takes inline reads of a page at most");
	memset(c.rx_data, 0, PAGE_SIZE);
	CHECK(inline_read(&c, &cmd) == 0 && !memchr_inv(c.rx_data, 0x3c, PAGE_SIZE),
	      "an inline read brings its bytes in its response");
	cmd.len = cpu_to_le32(2 * PAGE_SIZE);
	CHECK(inline_read(&c, &cmd) == EINVAL, "an inline read over the offer: EINVAL");
	cmd.len = cpu_to_le32(PAGE_SIZE);
	cmd.sector = cpu_to_le64(sectors);
	CHECK(inline_read(&c, &cmd) == ERANGE, "a failed inline read's response comes alone");
	cmd.sector = cpu_to_le64(8);
	cmd.opcode = KOFI_BLK_WRITE;
	req = good_request();

	/* Protocol breaks, each ending its connection. */
	CHECK(command_with(&c, &cmd, data, 512) < 0 && ended_by_target(&c),
	      "an inline write shorter than its length ends the connection");
	conn_close(&c);
	CHECK(!conn_open(&c, &req, &reject), "a new connection is accepted");
	cmd.opcode = KOFI_BLK_READ;
	CHECK(command_with(&c, &cmd, data, PAGE_SIZE) < 0 && ended_by_target(&c),
	      "an inline read ends the connection");
	conn_close(&c);
	CHECK(!conn_open(&c, &req, &reject), "a new connection is accepted");
	cmd.opcode = KOFI_BLK_WRITE;
	cmd.flags = 0;
	CHECK(fi_inject(c.ep, &cmd, 12, 0) == 0 && ended_by_target(&c),
	      "a short command ends the connection");
	conn_close(&c);
	ret = conn_open(&c, &req, &reject);
	CHECK(!ret, "a second connection is accepted");
	if (!ret) {
		cmd.tag = cpu_to_le16(DEPTH);
		CHECK(fi_inject(c.ep, &cmd, sizeof(cmd), 0) == 0 && ended_by_target(&c),
		      "a tag out of range ends the connection");
	}
	ret = 0;
out:
	hostile_close(mr ? &mr->fid : NULL);
	conn_close(&c);
	close_common();
	kfree(buf);
	kfree(data);
	if (ret)
		return ret;
	return failures ? -EIO : 0;
}

/* ---- mode=target: wrong answers to kofi_blk ---- */

struct tconn {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct kofi_blk_cmd recvs[TARGET_RECVS];
	/* Where every receive puts an inline write's data: not read. */
	u8 *scratch;
};

static struct fid_pep *pep;
static struct tconn tconns[TARGET_CONNS];
static struct work_struct target_work;
static bool target_stopping;

static void target_event(struct fid_eq *q)
{
	if (!READ_ONCE(target_stopping))
		queue_work(system_wq, &target_work);
}

static void target_cq_event(struct fid_cq *q)
{
	target_event(NULL);
}

/* Posts the receive of a command into @cmd, an inline write's data after it. */
static int post_command_recv(struct tconn *t, struct kofi_blk_cmd *cmd)
{
	struct kvec iov[2] = {
		{ cmd, sizeof(*cmd) },
		{ t->scratch, PAGE_SIZE },
	};

	return fi_recvv(t->ep, iov, NULL, 2, 0, cmd);
}

static void target_accept(struct fi_info *req_info)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG, .comp_handler = target_cq_event };
	struct kofi_blk_accept acc = {
		.magic = cpu_to_le32(KOFI_BLK_MAGIC),
		.version = cpu_to_le16(KOFI_BLK_VERSION),
		.sectors = cpu_to_le64(2048),
		.block_size = cpu_to_le32(512),
		.max_io = cpu_to_le32(4096),
		.inline_max = cpu_to_le32(strcmp(answer, "twice") ? 0 : PAGE_SIZE),
		.read_inline_max = cpu_to_le32(strcmp(answer, "shortdata") ? 0 : PAGE_SIZE),
	};
	struct tconn *t = NULL;
	int i, ret;

	for (i = 0; i < TARGET_CONNS && !t; i++)
		if (!tconns[i].ep)
			t = &tconns[i];
	if (!t) {
		fi_reject(pep, req_info->handle, NULL, 0);
		return;
	}
	if (!t->scratch)
		t->scratch = kmalloc(PAGE_SIZE, GFP_KERNEL);
	ret = t->scratch ? fi_cq_open(domain, &cq_attr, &t->cq, NULL) : -ENOMEM;
	if (!ret)
		ret = fi_endpoint(domain, req_info, &t->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(t->ep, &eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(t->ep, &t->cq->fid, FI_SEND | FI_RECV);
	if (!ret)
		ret = fi_enable(t->ep);
	for (i = 0; !ret && i < TARGET_RECVS; i++)
		ret = post_command_recv(t, &t->recvs[i]);
	if (!ret)
		ret = fi_accept(t->ep, &acc, sizeof(acc));
	if (ret) {
		hostile_close(t->ep ? &t->ep->fid : NULL);
		hostile_close(t->cq ? &t->cq->fid : NULL);
		t->ep = NULL;
		t->cq = NULL;
	}
}

/* The wrong answer to @cmd. */
static void answer_wrongly(struct tconn *t, const struct kofi_blk_cmd *cmd)
{
	struct kofi_blk_resp resp = { .tag = cmd->tag, .gen = cmd->gen };
	u32 len = le32_to_cpu(cmd->len);

	if (!strcmp(answer, "shortdata")) {
		size_t n = sizeof(resp) + (len >= 512 ? len - 512 : 8);
		u8 *msg = kzalloc(n, GFP_KERNEL);

		if (msg) {
			memcpy(msg, &resp, sizeof(resp));
			fi_inject(t->ep, msg, n, 0);
			kfree(msg);
		}
		return;
	}

	if (!strcmp(answer, "badtag"))
		resp.tag = cpu_to_le16(le16_to_cpu(cmd->tag) + 1000);
	else if (!strcmp(answer, "stalegen"))
		resp.gen = cpu_to_le32(le32_to_cpu(cmd->gen) - 1);
	else if (!strcmp(answer, "status"))
		resp.status = cpu_to_le32(EIO);
	else if (!strcmp(answer, "twice"))
		fi_inject(t->ep, &resp, sizeof(resp), 0);
	fi_inject(t->ep, &resp, !strcmp(answer, "short") ? 8 : sizeof(resp), 0);
}

static void target_poll(struct tconn *t)
{
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	ssize_t n;

	while ((n = fi_cq_read(t->cq, &e, 1)) != -FI_EAGAIN) {
		if (n == -FI_EAVAIL) {
			fi_cq_readerr(t->cq, &err, 0);
			continue;
		}
		if (n != 1)
			break;
		if (e.op_context) {
			struct kofi_blk_cmd *cmd = e.op_context;

			answer_wrongly(t, cmd);
			post_command_recv(t, cmd);
		}
	}
}

static void target_work_fn(struct work_struct *work)
{
	struct cm_event *ev = kzalloc(sizeof(*ev), GFP_KERNEL);
	struct fi_eq_err_entry err;
	u32 event;
	ssize_t n;
	int i;

	while (ev && (n = fi_eq_read(eq, &event, ev, sizeof(*ev), 0)) != -FI_EAGAIN) {
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_eq_readerr(eq, &err, 0);
			continue;
		}
		if (n < (ssize_t)sizeof(ev->entry))
			break;
		if (event == FI_CONNREQ) {
			target_accept(ev->entry.info);
			fi_freeinfo(ev->entry.info);
		}
	}
	kfree(ev);
	for (i = 0; i < TARGET_CONNS; i++)
		if (tconns[i].ep)
			target_poll(&tconns[i]);
}

static int start_target(void)
{
	int ret = open_common(FI_SOURCE, target_event);

	INIT_WORK(&target_work, target_work_fn);
	if (!ret)
		ret = fi_passive_ep(fabric, info, &pep, NULL);
	if (!ret)
		ret = fi_pep_bind(pep, &eq->fid, 0);
	if (!ret)
		ret = fi_listen(pep);
	if (ret) {
		hostile_close(pep ? &pep->fid : NULL);
		close_common();
	}
	return ret;
}

static void stop_target(void)
{
	int i;

	WRITE_ONCE(target_stopping, true);
	cancel_work_sync(&target_work);
	hostile_close(&pep->fid);
	for (i = 0; i < TARGET_CONNS; i++) {
		hostile_close(tconns[i].ep ? &tconns[i].ep->fid : NULL);
		hostile_close(tconns[i].cq ? &tconns[i].cq->fid : NULL);
		kfree(tconns[i].scratch);
	}
	cancel_work_sync(&target_work);
	close_common();
}

static bool is_target;

static int __init hostile_init(void)
{
	if (!strcmp(mode, "initiator"))
		return attack_target();
	if (strcmp(mode, "target") || (strcmp(answer, "badtag") && strcmp(answer, "short") &&
				       strcmp(answer, "stalegen") && strcmp(answer, "status") &&
				       strcmp(answer, "shortdata") && strcmp(answer, "twice")))
		return -EINVAL;
	is_target = true;
	return start_target();
}

static void __exit hostile_exit(void)
{
	if (is_target)
		stop_target();
}

module_init(hostile_init);
module_exit(hostile_exit);
MODULE_DESCRIPTION("kofi_blk's tests: a peer that speaks the protocol wrongly");
MODULE_AUTHOR("kofi developers");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(KOFI_NS);
