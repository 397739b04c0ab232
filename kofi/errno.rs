// SPDX-License-Identifier: GPL-2.0

//! kofi's error numbers (`fi_errno.h`) as kernel [`Error`]s, and `fi_strerror`.
//!
//! kofi's own numbers (FI_EAVAIL, FI_ETRUNC, ...) lie between 256 and
//! MAX_ERRNO, so they are valid kernel error codes.

use crate::abi;
use kernel::c_str;
use kernel::error::Error;
use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;

pub(crate) use crate::fi_error::fi_error as fi;

macro_rules! fi_errors {
    ($($fn:ident => $code:ident),* $(,)?) => {
        $(
            #[doc = concat!("`-", stringify!($code), "`.")]
            pub(crate) fn $fn() -> Error {
                fi(abi::$code)
            }
        )*
    };
}

fi_errors! {
    eagain => FI_EAGAIN,
    eavail => FI_EAVAIL,
    ebadflags => FI_EBADFLAGS,
    ebusy => FI_EBUSY,
    emsgsize => FI_EMSGSIZE,
    enocq => FI_ENOCQ,
    enodata => FI_ENODATA,
    enoeq => FI_ENOEQ,
    enokey => FI_ENOKEY,
    enosys => FI_ENOSYS,
    eopbadstate => FI_EOPBADSTATE,
    eopnotsupp => FI_EOPNOTSUPP,
    eoverrun => FI_EOVERRUN,
    etoosmall => FI_ETOOSMALL,
    eacces => FI_EACCES,
    enospc => FI_ENOSPC,
    enoent => FI_ENOENT,
    enomsg => FI_ENOMSG,
    enoav => FI_ENOAV,
    eaddrnotavail => FI_EADDRNOTAVAIL,
    etimedout => FI_ETIMEDOUT,
    enoprotoopt => FI_ENOPROTOOPT,
}

/// A C call's return (0 or a negative errno) as a result.
pub(crate) fn from_c(ret: c_int) -> Result {
    if ret == 0 {
        Ok(())
    } else {
        Err(Error::from_errno(ret))
    }
}

/// Stores a new object's pointer for the consumer: the C return of an
/// open call.
pub(crate) fn out<T>(dst: *mut *mut T, result: Result<*mut T>) -> c_int {
    match result {
        Ok(p) => {
            // SAFETY: The callers check `dst` is non-null before any work.
            unsafe { *dst = p };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// The C return value of a call that returns nothing on success.
pub(crate) fn to_c(result: Result) -> c_int {
    match result {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The C return value of a call that returns a count on success.
pub(crate) fn to_c_ssize(result: Result<usize>) -> isize {
    match result {
        Ok(n) => n as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// The descriptions of kofi's own errors, from FI_ERRNO_OFFSET on.
const KOFI_ERRORS: [&CStr; 13] = [
    c_str!("Unspecified error"),
    c_str!("Provided buffer is too small"),
    c_str!("Operation not permitted in current state"),
    c_str!("Error available"),
    c_str!("Flags not supported"),
    c_str!("Missing or unavailable event queue"),
    c_str!("Invalid resource domain"),
    c_str!("Missing or unavailable completion queue"),
    c_str!("CRC error"),
    c_str!("Truncation error"),
    c_str!("Required key not available"),
    c_str!("Missing or unavailable address vector"),
    c_str!("Queue has been overrun"),
];

/// The kernel errnos kofi's calls return, with their descriptions.
const KERNEL_ERRORS: [(u32, &CStr); 43] = [
    (abi::FI_EPERM, c_str!("Operation not permitted")),
    (abi::FI_ENOENT, c_str!("No such file or directory")),
    (abi::FI_EINTR, c_str!("Interrupted system call")),
    (abi::FI_EIO, c_str!("I/O error")),
    (abi::FI_E2BIG, c_str!("Argument list too long")),
    (abi::FI_EBADF, c_str!("Bad file number")),
    (abi::FI_EAGAIN, c_str!("Try again")),
    (abi::FI_ENOMEM, c_str!("Out of memory")),
    (abi::FI_EACCES, c_str!("Permission denied")),
    (abi::FI_EFAULT, c_str!("Bad address")),
    (abi::FI_EBUSY, c_str!("Device or resource busy")),
    (abi::FI_ENODEV, c_str!("No such device")),
    (abi::FI_EINVAL, c_str!("Invalid argument")),
    (abi::FI_EMFILE, c_str!("Too many open files")),
    (abi::FI_ENOSPC, c_str!("No space left on device")),
    (abi::FI_ENOSYS, c_str!("Function not implemented")),
    (abi::FI_ENOMSG, c_str!("No message of desired type")),
    (abi::FI_ENODATA, c_str!("No data available")),
    (
        abi::FI_EOVERFLOW,
        c_str!("Value too large for defined data type"),
    ),
    (abi::FI_EMSGSIZE, c_str!("Message too long")),
    (abi::FI_ENOPROTOOPT, c_str!("Protocol not available")),
    (
        abi::FI_EOPNOTSUPP,
        c_str!("Operation not supported on transport endpoint"),
    ),
    (abi::FI_EADDRINUSE, c_str!("Address already in use")),
    (
        abi::FI_EADDRNOTAVAIL,
        c_str!("Cannot assign requested address"),
    ),
    (abi::FI_ENETDOWN, c_str!("Network is down")),
    (abi::FI_ENETUNREACH, c_str!("Network is unreachable")),
    (
        abi::FI_ECONNABORTED,
        c_str!("Software caused connection abort"),
    ),
    (abi::FI_ECONNRESET, c_str!("Connection reset by peer")),
    (abi::FI_ENOBUFS, c_str!("No buffer space available")),
    (
        abi::FI_EISCONN,
        c_str!("Transport endpoint is already connected"),
    ),
    (
        abi::FI_ENOTCONN,
        c_str!("Transport endpoint is not connected"),
    ),
    (
        abi::FI_ESHUTDOWN,
        c_str!("Cannot send after transport endpoint shutdown"),
    ),
    (abi::FI_ETIMEDOUT, c_str!("Connection timed out")),
    (abi::FI_ECONNREFUSED, c_str!("Connection refused")),
    (abi::FI_EHOSTDOWN, c_str!("Host is down")),
    (abi::FI_EHOSTUNREACH, c_str!("No route to host")),
    (abi::FI_EALREADY, c_str!("Operation already in progress")),
    (abi::FI_EINPROGRESS, c_str!("Operation now in progress")),
    (abi::FI_ECANCELED, c_str!("Operation canceled")),
    (abi::FI_EKEYREJECTED, c_str!("Key was rejected by service")),
    (abi::FI_EPROTO, c_str!("Protocol error")),
    (0, c_str!("Success")),
    (512, c_str!("Interrupted, to be restarted")),
];

/// `fi_strerror()`: a readable name for a kofi error, positive or negative.
#[no_mangle]
pub(crate) extern "C" fn fi_strerror(errnum: c_int) -> *const c_char {
    let n = errnum.unsigned_abs();
    let offset = abi::FI_ERRNO_OFFSET;
    let text = if (offset..abi::FI_ERRNO_MAX).contains(&n) {
        KOFI_ERRORS[(n - offset) as usize]
    } else {
        KERNEL_ERRORS
            .iter()
            .find(|(code, _)| *code == n)
            .map_or(c_str!("Unknown error"), |(_, text)| *text)
    };
    text.as_char_ptr()
}
