/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kofi: connection management, after libfabric's <rdma/fi_cm.h>. Private
 * data travels with connect, accept and reject: at most KOFI_CM_DATA_MAX
 * bytes (the provider may allow less: FI_OPT_CM_DATA_SIZE).
 */
#ifndef _KOFI_FI_CM_H
#define _KOFI_FI_CM_H

#include <kofi/fi_endpoint.h>

int fi_listen(struct fid_pep *pep);
int fi_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen);
int fi_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int fi_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen);
int fi_shutdown(struct fid_ep *ep, u64 flags);
int fi_getname(struct fid *fid, void *addr, size_t *addrlen);
int fi_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);

#endif /* _KOFI_FI_CM_H */
