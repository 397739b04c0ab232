// SPDX-License-Identifier: GPL-2.0

//! kofi's error numbers (`fi_errno.h`) as kernel errors, for every kofi
//! crate: kofi's own numbers (FI_EAVAIL, FI_ETRUNC, ...) lie between 256
//! and MAX_ERRNO, so they are valid kernel error codes.

use kernel::error::Error;

/// A positive kofi error number (`FI_E*`, or an errno) as a kernel [`Error`].
pub(crate) fn fi_error(errnum: u32) -> Error {
    // A positive errno below MAX_ERRNO: the conversion is exact.
    Error::from_errno(-(errnum as i32))
}
