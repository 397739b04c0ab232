/* SPDX-License-Identifier: GPL-2.0 */
/* What bindgen reads for kofi_sock: the ABI, the layer's needs, the socket glue. */
#include <kofi/kofi_bindings.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uio.h>
#include <linux/socket.h>
#include <linux/in.h>
#include <linux/in6.h>
#include "kofi_sock_glue.h"
#include "../common/kofi_timer.h"
