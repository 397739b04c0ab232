// SPDX-License-Identifier: GPL-2.0

//! What the kernel's `Vec` of 6.12 lacks and the core's queues need.

use core::ptr;
use kernel::alloc::{Allocator, Vec};
use kernel::prelude::*;

pub(crate) trait VecExt<T> {
    /// Removes the last element.
    fn pop(&mut self) -> Option<T>;
    /// Removes element `i`, keeping the order of the rest.
    ///
    /// # Panics
    ///
    /// If `i` is out of bounds.
    fn remove(&mut self, i: usize) -> T;
    /// Inserts `v` at `i`, keeping the order of the rest.
    fn insert(&mut self, i: usize, v: T, flags: kernel::alloc::Flags) -> Result;
    /// Drops every element.
    fn clear(&mut self);
}

impl<T, A: Allocator> VecExt<T> for Vec<T, A> {
    fn pop(&mut self) -> Option<T> {
        let len = self.len();
        if len == 0 {
            return None;
        }
        // SAFETY: Element `len - 1` is initialised; shrinking the length
        // first hands its ownership to us.
        unsafe {
            self.set_len(len - 1);
            Some(ptr::read(self.as_ptr().add(len - 1)))
        }
    }

    fn remove(&mut self, i: usize) -> T {
        self.as_mut_slice()[i..].rotate_left(1);
        match self.pop() {
            Some(x) => x,
            None => unreachable!(),
        }
    }

    fn insert(&mut self, i: usize, v: T, flags: kernel::alloc::Flags) -> Result {
        self.push(v, flags)?;
        self.as_mut_slice()[i..].rotate_right(1);
        Ok(())
    }

    fn clear(&mut self) {
        while self.pop().is_some() {}
    }
}
