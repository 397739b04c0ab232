/* SPDX-License-Identifier: GPL-2.0 */
/* The kofi test provider's limits and test hooks (see kofi_test_provider.c). */
#ifndef _KOFI_TEST_PROVIDER_H
#define _KOFI_TEST_PROVIDER_H

#include <kofi/fi_endpoint.h>

#define TEST_MAX_MSG		65536
#define TEST_IOV_LIMIT		4
#define TEST_INJECT_SIZE	64

int kofi_test_open_fabrics(void);
int kofi_test_connreq_released(void);
int kofi_test_inject_connreq(struct fid_pep *pep, const void *data, size_t len);

#endif
