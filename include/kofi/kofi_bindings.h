/* SPDX-License-Identifier: GPL-2.0 */
/* What bindgen reads to give Rust code (core and providers) the kofi ABI. */
#include <kofi/fabric.h>
#include <kofi/fi_errno.h>
#include <kofi/fi_domain.h>
#include <kofi/fi_endpoint.h>
#include <kofi/fi_cm.h>
#include <kofi/fi_eq.h>
#include <kofi/fi_rma.h>
#include <kofi/fi_tagged.h>
#include <kofi/fi_atomic.h>
#include <kofi/kofi_provider.h>
