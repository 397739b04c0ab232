/* SPDX-License-Identifier: GPL-2.0 */
/* What bindgen reads for the Rust pingpong: the consumer ABI. */
#include <kofi/kofi_bindings.h>
#include <linux/slab.h>
#include <linux/uio.h>
