/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kofi: kernel OpenFabrics Interfaces, fabric-level definitions.
 *
 * Mirrors libfabric's <rdma/fabric.h>. This header is the one source of the
 * kofi ABI: the Rust core and providers read it through bindgen.
 */
#ifndef _KOFI_FABRIC_H
#define _KOFI_FABRIC_H

#include <linux/types.h>

#define FI_MAJOR_VERSION 1
#define FI_MINOR_VERSION 0

#define FI_VERSION(major, minor) (((major) << 16) | (minor))
#define FI_MAJOR(version) ((version) >> 16)
#define FI_MINOR(version) ((version) & 0xFFFF)

/* The version this header describes, for bindgen (it cannot expand FI_VERSION). */
#define KOFI_ABI_VERSION ((FI_MAJOR_VERSION << 16) | FI_MINOR_VERSION)

/**
 * fi_version() - the ABI version of the loaded kofi core
 *
 * Return: FI_VERSION(major, minor). A consumer built against a different
 * major version must not use the core.
 * Context: any.
 */
u32 fi_version(void);

#endif /* _KOFI_FABRIC_H */
