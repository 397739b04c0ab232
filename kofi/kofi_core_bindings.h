/* SPDX-License-Identifier: GPL-2.0 */
/* What bindgen reads for the core: the ABI plus the core's private C helpers. */
#include <kofi/kofi_bindings.h>
#include <linux/uio.h>
#include <kofi/kofi_netlink.h>
#include "kofi_glue.h"
