// SPDX-License-Identifier: GPL-2.0

//! Counters (fi_cntr(3)), generic in the core as CQs are: a count of
//! completed operations and a count of failed ones. An endpoint bound to a
//! counter for an operation kind (FI_SEND, FI_RECV, FI_READ, FI_WRITE,
//! FI_REMOTE_READ, FI_REMOTE_WRITE) has every report of that kind counted
//! (`report.rs`), whether or not the operation asked for a CQ entry.
//! fi_cntr_wait sleeps on the counter's wait queue until the count reaches a
//! threshold, the error count changes, a timeout passes or a signal comes.

use crate::abi;
use crate::errno::{self, to_c};
use crate::flags::*;
use crate::lock::{new_bh_spinlock, BhSpinLock};
use crate::object::{arc_of, fid_head, lookup, publish, Domain, Object, Users};
use crate::queue::{can_wait, sleep, timeout_jiffies, Wait};
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::sync::{new_condvar, Arc, CondVar};
use kernel::types::Opaque;

/// The operation kinds a counter can be bound for, in the order of an
/// endpoint's counter slots ([`crate::object::Bindings::cntrs`]).
pub(crate) const EVENTS: [u64; 6] = [
    FI_SEND,
    FI_RECV,
    FI_READ,
    FI_WRITE,
    FI_REMOTE_READ,
    FI_REMOTE_WRITE,
];

/// The bind flags that name counter events.
pub(crate) const BIND_EVENTS: u64 =
    FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

/// The counter slot of a completion reported with `flags`: its first kind
/// bit in the order of [`EVENTS`] (a report carries exactly one).
pub(crate) fn slot_of(flags: u64) -> Option<usize> {
    EVENTS.iter().position(|&kind| flags & kind != 0)
}

struct Counts {
    value: u64,
    err: u64,
    /// Changes of `err` so far: fi_cntr_wait returns when it moves, even if
    /// fi_cntr_seterr wrote the value it had.
    err_changes: u64,
}

/// A counter.
#[repr(C)]
#[pin_data]
pub(crate) struct Cntr {
    public: Opaque<abi::fid_cntr>,
    pub(crate) domain: Arc<Domain>,
    /// Endpoints bound to it, and threads in fi_cntr_wait.
    pub(crate) users: Users,
    can_wait: bool,
    #[pin]
    counts: BhSpinLock<Counts>,
    #[pin]
    waiters: CondVar,
}

// SAFETY: `Cntr` is `#[repr(C)]` with `fid_cntr` first, of class CNTR.
unsafe impl Object for Cntr {
    type Public = abi::fid_cntr;
    const CLASS: u32 = abi::FI_CLASS_CNTR;
}
// SAFETY: The head is written only before publication; the counts are locked.
unsafe impl Send for Cntr {}
// SAFETY: As for `Send`.
unsafe impl Sync for Cntr {}

impl Cntr {
    fn new(
        domain: Arc<Domain>,
        attr: &abi::fi_cntr_attr,
        context: *mut c_void,
    ) -> Result<impl PinInit<Self, Error>> {
        match attr.events {
            abi::fi_cntr_events_FI_CNTR_EVENTS_COMP => {}
            abi::fi_cntr_events_FI_CNTR_EVENTS_BYTES => return Err(errno::enosys()),
            _ => return Err(EINVAL),
        }
        let can_wait = can_wait(attr.wait_obj)?;
        if attr.flags != 0 {
            return Err(errno::ebadflags());
        }
        if !attr.wait_set.is_null() {
            return Err(EINVAL);
        }
        Ok(try_pin_init!(Cntr {
            public: Opaque::new(abi::fid_cntr {
                fid: fid_head(abi::FI_CLASS_CNTR, context),
            }),
            domain,
            users: Users::default(),
            can_wait,
            counts <- new_bh_spinlock!(
                Counts {
                    value: 0,
                    err: 0,
                    err_changes: 0,
                },
                "kofi_cntr"
            ),
            waiters <- new_condvar!("kofi_cntr_waiters"),
        }? Error))
    }

    /// Changes the counts under the lock, then wakes the waiters.
    fn update(&self, f: impl FnOnce(&mut Counts)) {
        f(&mut self.counts.lock());
        self.waiters.notify_all();
    }

    /// One operation done (`failed`: in error). Any context.
    pub(crate) fn count(&self, failed: bool) {
        if failed {
            self.update(|c| {
                c.err = c.err.wrapping_add(1);
                c.err_changes = c.err_changes.wrapping_add(1);
            });
        } else {
            self.update(|c| c.value = c.value.wrapping_add(1));
        }
    }

    fn read(&self) -> u64 {
        self.counts.lock().value
    }

    fn read_err(&self) -> u64 {
        self.counts.lock().err
    }

    fn add(&self, n: u64) {
        self.update(|c| c.value = c.value.wrapping_add(n));
    }

    fn set(&self, n: u64) {
        self.update(|c| c.value = n);
    }

    fn add_err(&self, n: u64) {
        self.update(|c| {
            c.err = c.err.wrapping_add(n);
            c.err_changes = c.err_changes.wrapping_add(1);
        });
    }

    fn set_err(&self, n: u64) {
        self.update(|c| {
            c.err = n;
            c.err_changes = c.err_changes.wrapping_add(1);
        });
    }

    /// fi_cntr_wait.
    fn wait(&self, threshold: u64, timeout_ms: i32) -> Result {
        if !self.can_wait {
            return Err(errno::enosys());
        }
        // fi_close refuses the counter while we may sleep on it.
        let _sleeping = self.users.hold();
        let mut left = timeout_jiffies(timeout_ms);
        let mut counts = self.counts.lock();
        let errors_seen = counts.err_changes;
        loop {
            if counts.value >= threshold {
                return Ok(());
            }
            if counts.err_changes != errors_seen {
                return Err(errno::eavail());
            }
            match sleep(&self.waiters, &mut counts, left) {
                Wait::Again(l) => left = l,
                Wait::TimedOut => return Err(errno::etimedout()),
                Wait::Interrupted => return Err(EINTR),
            }
        }
    }
}

/// Closes a counter the consumer gives up; -EBUSY while an endpoint is bound
/// to it or a thread waits on it.
///
/// # Safety
///
/// `fid` is a kofi fid of class CNTR, not used after when this succeeds.
pub(crate) unsafe fn close(fid: *mut abi::fid) -> Result {
    // SAFETY: The caller's guarantee.
    let c = unsafe { lookup::<Cntr>(fid.cast()) }?;
    c.users.check_idle()?;
    c.domain.users.put();
    c.domain.fabric.provider().count(abi::FI_CLASS_CNTR, false);
    // SAFETY: The consumer's reference, not used after.
    drop(unsafe { crate::object::reclaim::<Cntr>(fid.cast()) });
    Ok(())
}

fn open(
    domain: *mut abi::fid_domain,
    attr: *mut abi::fi_cntr_attr,
    context: *mut c_void,
) -> Result<*mut abi::fid_cntr> {
    // SAFETY: `domain` is null or a kofi fid the consumer keeps open.
    let d = unsafe { lookup::<Domain>(domain) }?;
    // SAFETY: `attr` is null or valid (ABI).
    let a = unsafe { attr.as_ref() }.ok_or(EINVAL)?;
    // SAFETY: `d` was published.
    let cntr = Arc::pin_init(Cntr::new(unsafe { arc_of(d) }, a, context)?, GFP_KERNEL)?;
    d.users.get();
    d.fabric.provider().count(abi::FI_CLASS_CNTR, true);
    Ok(publish(cntr))
}

/// `fi_cntr_open()`: opens a counter of `domain`.
#[no_mangle]
pub(crate) extern "C" fn fi_cntr_open(
    domain: *mut abi::fid_domain,
    attr: *mut abi::fi_cntr_attr,
    cntr_out: *mut *mut abi::fid_cntr,
    context: *mut c_void,
) -> c_int {
    if cntr_out.is_null() {
        return EINVAL.to_errno();
    }
    crate::errno::out(cntr_out, open(domain, attr, context))
}

/// The counter behind the consumer's pointer.
fn cntr<'a>(cntr: *mut abi::fid_cntr) -> Result<&'a Cntr> {
    // SAFETY: `cntr` is null or a kofi fid the consumer keeps open.
    unsafe { lookup::<Cntr>(cntr) }
}

/// `fi_cntr_read()`: the count of completed operations (0 for a pointer
/// that is not an open counter: the call has no way to say more).
#[no_mangle]
pub(crate) extern "C" fn fi_cntr_read(c: *mut abi::fid_cntr) -> u64 {
    cntr(c).map_or(0, Cntr::read)
}

/// `fi_cntr_readerr()`: the count of failed operations (0 as for
/// fi_cntr_read).
#[no_mangle]
pub(crate) extern "C" fn fi_cntr_readerr(c: *mut abi::fid_cntr) -> u64 {
    cntr(c).map_or(0, Cntr::read_err)
}

/// `fi_cntr_add()`: adds `value` to the count, waking waiters.
#[no_mangle]
pub(crate) extern "C" fn fi_cntr_add(c: *mut abi::fid_cntr, value: u64) -> c_int {
    to_c(cntr(c).map(|c| c.add(value)))
}

/// `fi_cntr_adderr()`: adds `value` to the error count, waking waiters.
#[no_mangle]
pub(crate) extern "C" fn fi_cntr_adderr(c: *mut abi::fid_cntr, value: u64) -> c_int {
    to_c(cntr(c).map(|c| c.add_err(value)))
}

/// `fi_cntr_set()`: sets the count, waking waiters.
#[no_mangle]
pub(crate) extern "C" fn fi_cntr_set(c: *mut abi::fid_cntr, value: u64) -> c_int {
    to_c(cntr(c).map(|c| c.set(value)))
}

/// `fi_cntr_seterr()`: sets the error count, waking waiters.
#[no_mangle]
pub(crate) extern "C" fn fi_cntr_seterr(c: *mut abi::fid_cntr, value: u64) -> c_int {
    to_c(cntr(c).map(|c| c.set_err(value)))
}

/// `fi_cntr_wait()`: see `fi_domain.h`.
#[no_mangle]
pub(crate) extern "C" fn fi_cntr_wait(
    c: *mut abi::fid_cntr,
    threshold: u64,
    timeout: c_int,
) -> c_int {
    // SAFETY: No preconditions.
    if !unsafe { abi::kofi_in_task() } {
        return EINVAL.to_errno();
    }
    to_c(cntr(c).and_then(|c| c.wait(threshold, timeout)))
}
