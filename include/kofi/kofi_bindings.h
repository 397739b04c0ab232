/* SPDX-License-Identifier: GPL-2.0 */
/* What bindgen reads to give Rust code (core and providers) the kofi ABI. */
#include <kofi/fabric.h>
