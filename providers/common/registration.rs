// SPDX-License-Identifier: GPL-2.0

//! A provider's registration with the core, and the kernel module that
//! holds it ([`module_kofi_provider!`]).

use super::adapter::Adapter;
use super::provider::Provider;
use crate::abi;
use core::marker::PhantomData;
use core::ptr;
use kernel::error::to_result;
use kernel::prelude::*;

/// A provider's registration with the core; deregisters on drop.
///
/// # Invariants
///
/// `table` was registered with the core and stays put (boxed) until drop.
pub(crate) struct Registration<P: Provider> {
    table: KBox<abi::kofi_provider>,
    _provider: PhantomData<P>,
}

// SAFETY: The table is only read by the core after registration.
unsafe impl<P: Provider> Send for Registration<P> {}
// SAFETY: As above.
unsafe impl<P: Provider> Sync for Registration<P> {}

impl<P: Provider> Registration<P> {
    /// Registers provider `P` of `module` with the core.
    pub(crate) fn register(module: &'static ThisModule) -> Result<Self> {
        let mut table = KBox::new(
            abi::kofi_provider {
                name: P::NAME.as_char_ptr(),
                version: P::VERSION,
                owner: module.as_ptr().cast(),
                priority: P::PRIORITY,
                getinfo: Some(Adapter::<P>::getinfo),
                freeinfo: None,
                fabric: Some(Adapter::<P>::fabric),
                fabric_close: Some(Adapter::<P>::fabric_close),
                cleanup: None,
                domain_ops: &Adapter::<P>::DOMAIN_OPS,
                ep_ops: &Adapter::<P>::EP_OPS,
                pep_ops: if P::HAS_PASSIVE_EP {
                    &Adapter::<P>::PEP_OPS
                } else {
                    ptr::null()
                },
                core_private: ptr::null_mut(),
            },
            GFP_KERNEL,
        )?;
        // SAFETY: The table is complete and stays boxed until `drop`
        // deregisters it.
        to_result(unsafe { abi::kofi_provider_register(abi::KOFI_ABI_VERSION, &mut *table) })?;
        Ok(Registration {
            table,
            _provider: PhantomData,
        })
    }
}

impl<P: Provider> Drop for Registration<P> {
    fn drop(&mut self) {
        // SAFETY: Registered in `register` (type invariants).
        unsafe { abi::kofi_provider_deregister(&mut *self.table) };
    }
}

/// The kernel module of a provider, declared by [`module_kofi_provider!`]:
/// the provider's module state and its registration. Fields drop in order:
/// the provider is deregistered before its state goes, and no connection
/// may outlive the state.
pub(crate) struct ProviderModule<P: Provider> {
    _registration: Registration<P>,
    _state: P::ModuleState,
    _census: super::census::UnloadCheck,
}

impl<P: Provider> kernel::Module for ProviderModule<P> {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let state = P::module_state()?;
        Ok(ProviderModule {
            _registration: Registration::register(module)?,
            _state: state,
            _census: super::census::UnloadCheck::new(),
        })
    }
}

/// Declares the kernel module of a provider: `provider:` names the type
/// implementing [`Provider`], the other fields are `module!`'s but the
/// author, which the layer gives (`compat::kofi_modinfo!`) as the kernels
/// spell it differently. The crate root holds the provider layer as `mod kofi`
/// and the compatibility layer as `mod compat`.
///
/// ```ignore
/// kofi::module_kofi_provider! {
///     provider: Sock,
///     name: "kofi_sock",
///     description: "kofi provider over kernel TCP sockets",
///     license: "GPL",
/// }
/// ```
macro_rules! module_kofi_provider {
    (provider: $provider:ty, $($fields:tt)*) => {
        type KofiProviderModule = $crate::kofi::ProviderModule<$provider>;

        ::kernel::prelude::module! {
            type: KofiProviderModule,
            $($fields)*
        }
    };
}
pub(crate) use module_kofi_provider;
