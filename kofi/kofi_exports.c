// SPDX-License-Identifier: GPL-2.0
/*
 * Exports of kofi.ko. The calls are #[no_mangle] functions of the Rust crate;
 * an out-of-tree Rust crate cannot emit export entries itself, so this file
 * does, in namespace KOFI: consumers say MODULE_IMPORT_NS(KOFI).
 */
#include <linux/export.h>
#include <kofi/fabric.h>

EXPORT_SYMBOL_NS_GPL(fi_version, KOFI);
