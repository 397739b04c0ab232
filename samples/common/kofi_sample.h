/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the kofi C samples share, as fabtests' shared.c: waiting for a
 * connection event or a completion and turning error entries into errnos,
 * and opening an endpoint.
 */
#ifndef KOFI_SAMPLE_H
#define KOFI_SAMPLE_H

#include <linux/completion.h>
#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/string.h>
#include <kofi/fabric.h>
#include <kofi/fi_cm.h>
#include <kofi/fi_domain.h>
#include <kofi/fi_endpoint.h>
#include <kofi/fi_eq.h>

/* A CM event with room for the largest private data. */
struct cm_event {
	struct fi_eq_cm_entry entry;
	u8 data[KOFI_CM_DATA_MAX];
};

/* 0 when @want arrives; a connection error entry's error, negated. */
static inline int sample_wait_cm(struct fid_eq *eq, u32 want, struct cm_event *ev,
				 int timeout_ms)
{
	struct fi_eq_err_entry err = {};
	u32 event;
	ssize_t ret = fi_eq_sread(eq, &event, ev, sizeof(*ev), timeout_ms, 0);

	if (ret == -FI_EAVAIL && fi_eq_readerr(eq, &err, 0) > 0)
		return -err.err;
	if (ret < 0)
		return ret;
	return event == want ? 0 : -EPROTO;
}

/* 0 when one completion arrives (of any format up to FI_CQ_FORMAT_DATA); an
 * error entry's error, negated. */
static inline int sample_wait_cq(struct fid_cq *cq, int timeout_ms)
{
	struct fi_cq_data_entry e;
	ssize_t ret = fi_cq_sread(cq, &e, 1, NULL, timeout_ms);

	if (ret == -FI_EAVAIL) {
		struct fi_cq_err_entry err = {};

		fi_cq_readerr(cq, &err, 0);
		return -err.err;
	}
	return ret < 0 ? ret : 0;
}

/* An endpoint for @info on @domain, bound to @eq and to @cq for both
 * directions, and enabled. */
static inline int sample_enable_ep(struct fid_domain *domain, struct fi_info *info,
				   struct fid_eq *eq, struct fid_cq *cq, struct fid_ep **ep)
{
	int ret = fi_endpoint(domain, info, ep, NULL);

	if (!ret)
		ret = fi_ep_bind(*ep, &eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(*ep, &cq->fid, FI_SEND | FI_RECV);
	return ret ?: fi_enable(*ep);
}

struct sample_server_run {
	int (*serve)(struct completion *listening);
	struct completion listening, done;
	int ret;
};

static inline int sample_server_thread(void *arg)
{
	struct sample_server_run *run = arg;

	run->ret = run->serve(&run->listening);
	complete(&run->done);
	return 0;
}

/*
 * Runs a sample as @mode says: "server" (@serve, which completes its
 * argument once it listens; NULL here), "client", or "both" (the server in
 * a thread named @name, the client in the caller once the server listens).
 * Return: 0 when every part succeeded, else the first error.
 */
static inline int sample_run(const char *mode, const char *name,
			     int (*serve)(struct completion *listening), int (*client)(void))
{
	struct sample_server_run run = { .serve = serve };
	struct task_struct *t;
	int ret;

	if (!strcmp(mode, "server"))
		return serve(NULL);
	if (!strcmp(mode, "client"))
		return client();
	if (strcmp(mode, "both"))
		return -EINVAL;
	init_completion(&run.listening);
	init_completion(&run.done);
	t = kthread_run(sample_server_thread, &run, "%s", name);
	if (IS_ERR(t))
		return PTR_ERR(t);
	wait_for_completion(&run.listening);
	ret = client();
	wait_for_completion(&run.done);
	return ret ?: run.ret;
}

#endif /* KOFI_SAMPLE_H */
