/* SPDX-License-Identifier: GPL-2.0 */
/* What bindgen reads for kofi_blk: the consumer ABI and the wire protocol. */
#include <kofi/kofi_bindings.h>
#include <linux/slab.h>
#include "../kofi_blk_proto.h"
