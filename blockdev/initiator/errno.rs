// SPDX-License-Identifier: GPL-2.0

//! The errnos kofi_blk returns that 6.12's `kernel::error::code` lacks.

use kernel::bindings;
use kernel::prelude::*;

macro_rules! errnos {
    ($($fn:ident => $code:ident),* $(,)?) => {
        $(
            #[doc = concat!("`-", stringify!($code), "`.")]
            pub(crate) fn $fn() -> Error {
                Error::from_errno(-(bindings::$code as i32))
            }
        )*
    };
}

errnos! {
    econnreset => ECONNRESET,
    enametoolong => ENAMETOOLONG,
    enodata => ENODATA,
    enotconn => ENOTCONN,
    eopnotsupp => EOPNOTSUPP,
    eproto => EPROTO,
    eshutdown => ESHUTDOWN,
    etimedout => ETIMEDOUT,
}
