/* SPDX-License-Identifier: GPL-2.0 */
/* What bindgen reads for kofi_verbs: the ABI, the layer's needs, rdma_cm and ib_verbs. */
#include <kofi/kofi_bindings.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uio.h>
#include <linux/socket.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include "kofi_verbs_glue.h"
#include "../common/kofi_timer.h"
