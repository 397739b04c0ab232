// SPDX-License-Identifier: GPL-2.0

//! Bounded queues over caller-provided storage, the heart of the completion
//! and event queues. Pure logic without kernel dependencies, so the host
//! crate (`kofi/host`) tests it with `cargo test`.

use core::ops::DerefMut;

/// A bounded FIFO in a slice of slots.
///
/// # Invariants
///
/// `head < slots.len()` (when non-empty), `len <= slots.len()`, and exactly
/// the `len` slots from `head` (wrapping) are `Some`.
pub(crate) struct Ring<T, S: DerefMut<Target = [Option<T>]>> {
    slots: S,
    head: usize,
    len: usize,
}

impl<T, S: DerefMut<Target = [Option<T>]>> Ring<T, S> {
    /// A ring over `slots`, which must all be `None`.
    pub(crate) fn new(slots: S) -> Self {
        debug_assert!(slots.iter().all(Option::is_none));
        Ring {
            slots,
            head: 0,
            len: 0,
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn index(&self, i: usize) -> usize {
        // `head + i` stays below twice the capacity (`i <= len`): one
        // subtraction wraps it, where `%` would divide (and keep a
        // division-by-zero panic path in every caller).
        let at = self.head + i;
        if at >= self.slots.len() {
            at - self.slots.len()
        } else {
            at
        }
    }

    /// Appends `value`, or gives it back when the ring is full.
    pub(crate) fn push(&mut self, value: T) -> Result<(), T> {
        if self.len == self.slots.len() {
            return Err(value);
        }
        let i = self.index(self.len);
        self.slots[i] = Some(value);
        self.len += 1;
        Ok(())
    }

    pub(crate) fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let value = self.slots[self.head].take();
        self.head = self.index(1);
        self.len -= 1;
        value
    }

    pub(crate) fn front(&self) -> Option<&T> {
        if self.len == 0 {
            None
        } else {
            self.slots[self.head].as_ref()
        }
    }

    #[allow(dead_code)] // kofi_verbs' send queue.
    pub(crate) fn front_mut(&mut self) -> Option<&mut T> {
        if self.len == 0 {
            None
        } else {
            self.slots[self.head].as_mut()
        }
    }

    pub(crate) fn back_mut(&mut self) -> Option<&mut T> {
        if self.len == 0 {
            return None;
        }
        let i = self.index(self.len - 1);
        self.slots[i].as_mut()
    }

    /// Keeps the values `keep` approves, in their order; drops the others.
    #[allow(dead_code)] // The event queue's; providers compile this file too.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        for _ in 0..self.len {
            if let Some(v) = self.pop() {
                if keep(&v) {
                    // Cannot fail: a value was just popped.
                    let _ = self.push(v);
                }
            }
        }
    }
}

/// One entry of a completion or event queue.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Slot<C, E> {
    /// A successful completion or an event.
    Done(C),
    /// An error entry, read with readerr.
    Failed(E),
    /// Entries were lost because the queue was full: `lost` of them.
    Overrun { lost: u64 },
}

/// Why an entry was not queued.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Overrun;

/// A completion queue's entries: at most `capacity - 1` entries, plus one
/// slot kept for the overrun marker, so that an overrun is reported in order,
/// after the entries that did fit, and never silently.
pub(crate) struct CompletionRing<C, E, S: DerefMut<Target = [Option<Slot<C, E>>]>> {
    ring: Ring<Slot<C, E>, S>,
}

impl<C, E, S: DerefMut<Target = [Option<Slot<C, E>>]>> CompletionRing<C, E, S> {
    /// A queue over `slots` (all `None`); it holds `slots.len() - 1` entries.
    pub(crate) fn new(slots: S) -> Self {
        debug_assert!(slots.len() >= 2);
        CompletionRing {
            ring: Ring::new(slots),
        }
    }

    /// Entries it holds before it overruns.
    pub(crate) fn size(&self) -> usize {
        self.ring.capacity() - 1
    }

    /// Entries queued now, errors and an overrun marker included.
    #[allow(dead_code)] // The CQ's; providers compile this file too.
    pub(crate) fn len(&self) -> usize {
        self.ring.len()
    }

    /// Queues `slot`. When the queue is full the entry is lost: an overrun
    /// marker takes the reserved slot (or counts one more loss) and the
    /// caller learns of it. An entry the caller gets back is returned too.
    pub(crate) fn post(&mut self, slot: Slot<C, E>) -> Result<(), (Overrun, Slot<C, E>)> {
        if self.ring.len() < self.size() {
            // Cannot fail: there is room.
            return self.ring.push(slot).map_err(|s| (Overrun, s));
        }
        if self.ring.len() == self.size() {
            let _ = self.ring.push(Slot::Overrun { lost: 1 });
        } else if let Some(Slot::Overrun { lost }) = self.ring.back_mut() {
            *lost += 1;
        }
        Err((Overrun, slot))
    }

    /// Pops up to `max` successful entries from the head, into `out`; stops
    /// at an error or overrun entry. Returns how many it popped.
    pub(crate) fn pop_done(&mut self, max: usize, mut out: impl FnMut(C)) -> usize {
        let mut n = 0;
        while n < max {
            match self.ring.front() {
                Some(Slot::Done(_)) => {}
                _ => break,
            }
            if let Some(Slot::Done(c)) = self.ring.pop() {
                out(c);
                n += 1;
            }
        }
        n
    }

    /// The successful entry at the head, if that is what it is.
    pub(crate) fn front_done(&self) -> Option<&C> {
        match self.ring.front() {
            Some(Slot::Done(c)) => Some(c),
            _ => None,
        }
    }

    /// Whether the head is an error or overrun entry (read -FI_EAVAIL).
    pub(crate) fn error_at_head(&self) -> bool {
        matches!(
            self.ring.front(),
            Some(Slot::Failed(_)) | Some(Slot::Overrun { .. })
        )
    }

    /// Keeps the entries `keep` approves (and every overrun marker), in
    /// their order; drops the others.
    #[allow(dead_code)] // The event queue's; providers compile this file too.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&Slot<C, E>) -> bool) {
        self.ring
            .retain(|s| matches!(s, Slot::Overrun { .. }) || keep(s));
    }

    /// Pops the error or overrun entry at the head, if that is what it is.
    pub(crate) fn pop_error(&mut self) -> Option<Slot<C, E>> {
        if self.error_at_head() {
            self.ring.pop()
        } else {
            None
        }
    }
}
