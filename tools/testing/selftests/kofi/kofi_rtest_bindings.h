/* SPDX-License-Identifier: GPL-2.0 */
/* What bindgen reads for the Rust test provider: the ABI and the layer's needs. */
#include <kofi/kofi_bindings.h>
#include <linux/slab.h>
#include <linux/socket.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/string.h>
#include <linux/uio.h>
