// SPDX-License-Identifier: GPL-2.0

//! kofi: kernel OpenFabrics Interfaces, the core module.
//!
//! Exports the `fi_*` calls to kernel consumers and `kofi_provider_*` and
//! the reporting calls to providers (the exports are in `kofi_glue.c`), and
//! dispatches consumers' calls to providers. See
//! `Documentation/kofi/overview.rst`.

use kernel::prelude::*;
use kernel::{bindings, c_str};

mod abi;
mod addr;
mod api_atomic;
mod api_cm;
mod api_data;
mod api_objects;
mod api_queues;
mod api_tagged;
mod av;
mod backend;
mod cntr;
#[path = "../include/kofi/rust/compat.rs"]
#[allow(dead_code)]
mod compat;
#[path = "../include/kofi/rust/context.rs"]
mod context;
mod ep_cm;
mod ep_data;
mod errno;
#[path = "../include/kofi/rust/fi_error.rs"]
mod fi_error;
#[path = "../include/kofi/rust/flags.rs"]
mod flags;
mod getinfo;
mod info;
mod info_match;
mod iov;
#[path = "../include/kofi/rust/iovec.rs"]
#[allow(dead_code)]
mod iovec;
mod lifecycle;
mod lock;
mod mr;
mod msg;
mod netlink;
mod object;
mod provider_ops;
mod queue;
mod rdm;
mod registry;
mod report;
#[path = "../include/kofi/rust/ring.rs"]
mod ring;
#[path = "../include/kofi/rust/workqueue.rs"]
mod workqueue;

module! {
    type: Kofi,
    name: "kofi",
    description: "kofi: kernel OpenFabrics Interfaces core",
    license: "GPL",
}

compat::kofi_modinfo!();

/// `fi_version()`: the ABI version of this core, `FI_VERSION(major, minor)`.
#[no_mangle]
pub extern "C" fn fi_version() -> u32 {
    abi::KOFI_ABI_VERSION
}

struct Kofi {
    _registry: Pin<KBox<registry::Registry>>,
    // Last: what the RDM layer queued runs before its code goes.
    _queue: workqueue::OwnQueue,
}

impl kernel::Module for Kofi {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // The RDM layer's progress, off the consumers' threads.
        let queue = workqueue::OwnQueue::new(c_str!("kofi_rdm"), bindings::wq_flags_WQ_UNBOUND)?;
        let registry = registry::Registry::install()?;
        // SAFETY: No preconditions; undone in `drop`. The family's callbacks
        // need the registry, installed above.
        let r = unsafe { abi::kofi_nl_register() };
        if r != 0 {
            registry::Registry::uninstall();
            return Err(Error::from_errno(r));
        }
        // SAFETY: No preconditions; undone in `drop`.
        unsafe { abi::kofi_debugfs_init() };
        pr_info!(
            "core loaded, ABI version {}.{}\n",
            abi::FI_MAJOR_VERSION,
            abi::FI_MINOR_VERSION
        );
        Ok(Kofi {
            _registry: registry,
            _queue: queue,
        })
    }
}

impl Drop for Kofi {
    fn drop(&mut self) {
        // Providers import kofi's symbols, so they are all gone by now.
        // SAFETY: Created in `init`; removal waits for readers.
        unsafe { abi::kofi_debugfs_exit() };
        // SAFETY: Registered in `init`; returns once no callback runs.
        unsafe { abi::kofi_nl_unregister() };
        registry::Registry::uninstall();
        pr_info!("core unloaded\n");
    }
}
