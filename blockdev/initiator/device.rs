// SPDX-License-Identifier: GPL-2.0

//! A kofi_blk device: the export it reaches, its queues, and what happens
//! when the target goes away.
//!
//! When a queue loses its connection its requests go back to blk-mq, which
//! offers them again every few milliseconds (`queue_rq` hands them back
//! while there is no connection). The device's reconnect work tries to
//! connect every lost queue, with a growing pause between tries; when the
//! device has been without a full set of queues for `reconnect_timeout`
//! seconds it is marked dead and every request fails with EIO. After a
//! failed try it opens the provider's domain afresh, for the next tries and
//! the connections after: the device under the old one may have gone (an
//! RDMA link deleted and added again).

use crate::compat::Stamp;
use crate::control::Spec;
use crate::errno;
use crate::fabric::{Domain, Info};
use crate::mq::{self, Timeout};
use crate::proto::Accept;
use crate::queue::{self, Queue, RequestData, MAX_PAGES};
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::{Arc, ArcBorrow, SpinLock};
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};
use kernel::{bindings, new_spinlock};

/// The pause between reconnection tries, first and longest.
const BACKOFF_MIN_MS: u32 = 100;
const BACKOFF_MAX_MS: u32 = 2000;

struct DevState {
    /// The device is being removed: every request fails.
    removing: bool,
    /// The target stayed away past the timeout: every request fails.
    dead: bool,
    /// The reconnect work is queued or running.
    reconnecting: bool,
    /// Since when a queue has been without a connection.
    lost_at: Option<Stamp>,
    /// The device as the target described it.
    geometry: Option<Accept>,
    /// Where new connections are opened (each holds the one it was
    /// opened on).
    domain: Arc<Domain>,
}

/// A kofi_blk device.
#[pin_data]
pub(crate) struct Device {
    pub(crate) name: CString,
    pub(crate) spec: Spec,
    pub(crate) queues: KVec<Arc<Queue>>,
    /// Buffers one registration takes, on the first domain.
    mr_iov_limit: usize,
    #[pin]
    state: SpinLock<DevState>,
    #[pin]
    reconnect: Work<Device>,
}

impl_has_work! {
    impl HasWork<Self> for Device { self.reconnect }
}

impl Device {
    /// Connects every queue of `spec`'s export; the device, not yet added.
    pub(crate) fn connect(name: CString, spec: Spec) -> Result<Arc<Device>> {
        let domain = Domain::open(Info::msg(&spec.provider, &spec.addr, &spec.port)?)?;
        let mr_iov_limit = domain.info().mr_iov_limit();
        let mut queues = KVec::with_capacity(spec.queues.into(), GFP_KERNEL)?;
        for i in 0..spec.queues {
            queues.push(Queue::new(i, spec.depth)?, GFP_KERNEL)?;
        }
        // No queue is connected yet: a failed init leaves nothing open.
        let dev = Arc::pin_init(
            pin_init!(Device {
                name,
                spec,
                queues,
                mr_iov_limit,
                state <- new_spinlock!(
                    DevState {
                        removing: false,
                        dead: false,
                        reconnecting: false,
                        lost_at: None,
                        geometry: None,
                        domain,
                    },
                    "kofi_blk::Device::state"
                ),
                reconnect <- new_work!("kofi_blk::Device::reconnect"),
            }),
            GFP_KERNEL,
        )?;
        if let Err(e) = dev.connect_all() {
            dev.shut_down();
            return Err(e);
        }
        Ok(dev)
    }

    /// Bytes one request may move: the target's bound, within the pages one
    /// registration of the provider takes (a request's bytes may start
    /// inside a page).
    pub(crate) fn max_io(&self) -> Option<u32> {
        let pages = self.mr_iov_limit.clamp(2, MAX_PAGES) as u32 - 1;
        let g = self.geometry()?;
        Some(g.max_io.min(pages * bindings::PAGE_SIZE as u32))
    }

    /// The device as the target described it (set by the first connection).
    pub(crate) fn geometry(&self) -> Option<Accept> {
        self.state.lock().geometry
    }

    /// Connects every queue without a connection; every one must see the
    /// device the first one saw.
    fn connect_all(&self) -> Result {
        let domain = self.state.lock().domain.clone();
        for q in self.queues.iter().filter(|q| !q.connected()) {
            let accept = q.connect(&domain, &self.spec.export)?;
            let mut s = self.state.lock();
            match s.geometry {
                None => s.geometry = Some(accept),
                Some(g) if g == accept => {}
                Some(_) => {
                    drop(s);
                    pr_warn!("{}: the export changed; not using it\n", &*self.name);
                    q.disconnect(false);
                    return Err(errno::eproto());
                }
            }
        }
        Ok(())
    }

    /// Opens the domain afresh for the connections to come; keeps the old
    /// one when the provider has none to offer now.
    fn renew_domain(&self) {
        let Ok(info) = Info::msg(&self.spec.provider, &self.spec.addr, &self.spec.port) else {
            return;
        };
        let Ok(domain) = Domain::open(info) else {
            return;
        };
        // Dropped outside the lock: closing a domain may sleep.
        let _old = core::mem::replace(&mut self.state.lock().domain, domain);
    }

    /// Whether requests may still go to the target.
    fn usable(&self) -> bool {
        let s = self.state.lock();
        !s.removing && !s.dead
    }

    /// The device's state as `devices` shows it: live, reconnecting or dead.
    pub(crate) fn status(&self) -> &'static str {
        let s = self.state.lock();
        if s.dead {
            "dead"
        } else if s.lost_at.is_some() {
            "reconnecting"
        } else {
            "live"
        }
    }

    /// A queue has no connection: starts the reconnect work unless running.
    fn queue_lost(this: ArcBorrow<'_, Self>) {
        {
            let mut s = this.state.lock();
            if s.removing || s.dead || s.reconnecting {
                return;
            }
            s.reconnecting = true;
            if s.lost_at.is_none() {
                s.lost_at = Some(Stamp::now());
            }
        }
        let this: Arc<Device> = this.into();
        if crate::workqueue().enqueue(this.clone()).is_err() {
            this.state.lock().reconnecting = false;
        }
    }

    /// Before the disk goes: no request waits any more, every queue is
    /// closed, and in-flight requests fail.
    pub(crate) fn shut_down(&self) {
        self.state.lock().removing = true;
        for q in self.queues.iter() {
            q.disconnect(true);
        }
    }
}

impl WorkItem for Device {
    type Pointer = Arc<Device>;

    fn run(this: Arc<Device>) {
        let mut backoff = BACKOFF_MIN_MS;
        loop {
            let lost_at = {
                let s = this.state.lock();
                if s.removing {
                    drop(s);
                    this.state.lock().reconnecting = false;
                    return;
                }
                s.lost_at.unwrap_or_else(Stamp::now)
            };
            match this.connect_all() {
                Ok(()) => {
                    let mut s = this.state.lock();
                    s.lost_at = None;
                    s.reconnecting = false;
                    drop(s);
                    pr_info!("{}: reconnected\n", &*this.name);
                    return;
                }
                Err(e) => pr_info!("{}: reconnecting failed: {:?}\n", &*this.name, e),
            }
            this.renew_domain();
            let waited = lost_at.elapsed_ms();
            let timeout = i64::from(this.spec.reconnect_timeout_s) * 1000;
            if waited >= timeout {
                let mut s = this.state.lock();
                s.dead = true;
                s.reconnecting = false;
                drop(s);
                pr_warn!(
                    "{}: target gone for {} s: I/O fails from now on\n",
                    &*this.name,
                    waited / 1000
                );
                return;
            }
            // Not past the deadline: the device is declared dead when its
            // held requests start failing, not a backoff later.
            let pause = (timeout - waited).clamp(1, i64::from(backoff)) as u32;
            // SAFETY: No preconditions; the work may sleep.
            unsafe { bindings::msleep(pause) };
            backoff = (backoff * 2).min(BACKOFF_MAX_MS);
        }
    }
}

/// kofi_blk's blk-mq driver.
pub(crate) struct Driver;

impl mq::Operations for Driver {
    type Data = Device;
    type RequestData = RequestData;

    fn queue_rq(
        dev: ArcBorrow<'_, Device>,
        queue: u32,
        rq: mq::Request<Driver>,
        _last: bool,
    ) -> Result<(), mq::Request<Driver>> {
        let Some(q) = dev.queues.get(queue as usize) else {
            queue::end(rq, Err(EIO));
            return Ok(());
        };
        let mut rq = rq;
        // Gone, or held too long: connections that come back but never
        // answer it (a broken target) do not hold a request forever.
        if !dev.usable() || queue::held_for(&mut rq, i64::from(dev.spec.reconnect_timeout_s) * 1000)
        {
            queue::end(rq, Err(EIO));
            return Ok(());
        }
        let rq = match q.submit(rq) {
            Ok(()) => return Ok(()),
            Err(rq) => rq,
        };
        // Offered again shortly; without a connection, after the reconnect
        // work has made one.
        if !q.connected() {
            Device::queue_lost(dev);
        }
        Err(queue::hold(rq))
    }

    fn timed_out(dev: ArcBorrow<'_, Device>, queue: u32, tag: u32) -> Timeout {
        // The target holds a command too long: as when the connection is
        // lost, the queue's requests (this one too) wait for a new one.
        match dev.queues.get(queue as usize) {
            Some(q) if q.holds(tag) => {
                pr_warn!("{}: queue {}: I/O timed out\n", &*dev.name, queue);
                q.disconnect(false);
                Device::queue_lost(dev);
                Timeout::Done
            }
            // Not sent (waiting for a connection): blk-mq offers it again.
            _ => Timeout::ResetTimer,
        }
    }
}
