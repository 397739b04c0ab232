// SPDX-License-Identifier: GPL-2.0

//! kofi: kernel OpenFabrics Interfaces, the core module.
//!
//! Exports the `fi_*` calls to kernel consumers (through `kofi_exports.c`)
//! and dispatches them to providers.

use kernel::prelude::*;

mod abi;

module! {
    type: Kofi,
    name: "kofi",
    author: "kofi developers",
    description: "kofi: kernel OpenFabrics Interfaces core",
    license: "GPL",
}

/// `fi_version()`: the ABI version of this core, `FI_VERSION(major, minor)`.
#[no_mangle]
pub extern "C" fn fi_version() -> u32 {
    abi::KOFI_ABI_VERSION
}

struct Kofi;

impl kernel::Module for Kofi {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        pr_info!(
            "core loaded, ABI version {}.{}\n",
            abi::FI_MAJOR_VERSION,
            abi::FI_MINOR_VERSION
        );
        Ok(Kofi)
    }
}

impl Drop for Kofi {
    fn drop(&mut self) {
        pr_info!("core unloaded\n");
    }
}
