use crate::info_match::{check, provider_order, InfoView, Mismatch};
use crate::ring::{CompletionRing, Overrun, Ring, Slot};
use std::cmp::Ordering;

fn slots<T>(n: usize) -> Vec<Option<T>> {
    (0..n).map(|_| None).collect()
}

#[test]
fn ring_is_fifo_and_bounded() {
    let mut r = Ring::new(slots::<u32>(3));
    assert_eq!(r.capacity(), 3);
    assert!(r.push(1).is_ok() && r.push(2).is_ok() && r.push(3).is_ok());
    assert_eq!(r.push(4), Err(4));
    assert_eq!(r.pop(), Some(1));
    assert!(r.push(4).is_ok());
    assert_eq!(r.len(), 3);
    assert_eq!(
        (r.pop(), r.pop(), r.pop(), r.pop()),
        (Some(2), Some(3), Some(4), None)
    );
}

#[test]
fn ring_wraps_many_times() {
    let mut r = Ring::new(slots::<usize>(5));
    let mut next_out = 0;
    for i in 0..1000 {
        r.push(i).unwrap();
        if i % 3 != 0 {
            assert_eq!(r.pop(), Some(next_out));
            next_out += 1;
        }
        if r.len() == 5 {
            while let Some(v) = r.pop() {
                assert_eq!(v, next_out);
                next_out += 1;
            }
        }
    }
}

type Cq = CompletionRing<u32, &'static str, Vec<Option<Slot<u32, &'static str>>>>;

#[test]
fn completion_ring_reports_overrun_after_what_fit() {
    let mut q: Cq = CompletionRing::new(slots(4));
    assert_eq!(q.size(), 3);
    for i in 0..3 {
        q.post(Slot::Done(i)).unwrap();
    }
    assert_eq!(q.post(Slot::Done(3)), Err((Overrun, Slot::Done(3))));
    assert!(q.post(Slot::Done(4)).is_err());
    let mut got = Vec::new();
    assert_eq!(q.pop_done(10, |c| got.push(c)), 3);
    assert_eq!(got, [0, 1, 2]);
    assert!(q.error_at_head());
    assert_eq!(q.pop_error(), Some(Slot::Overrun { lost: 2 }));
    assert!(!q.error_at_head());
    q.post(Slot::Done(5)).unwrap();
    assert_eq!(q.front_done(), Some(&5));
}

#[test]
fn completion_ring_errors_block_successes_behind_them() {
    let mut q: Cq = CompletionRing::new(slots(8));
    q.post(Slot::Done(1)).unwrap();
    q.post(Slot::Failed("eio")).unwrap();
    q.post(Slot::Done(2)).unwrap();
    let mut got = Vec::new();
    assert_eq!(q.pop_done(10, |c| got.push(c)), 1);
    assert_eq!(q.pop_done(10, |c| got.push(c)), 0);
    assert!(q.error_at_head());
    assert_eq!(q.pop_error(), Some(Slot::Failed("eio")));
    assert_eq!(q.pop_error(), None);
    assert_eq!(q.pop_done(10, |c| got.push(c)), 1);
    assert_eq!(got, [1, 2]);
}

#[test]
fn completion_ring_pop_done_respects_max() {
    let mut q: Cq = CompletionRing::new(slots(8));
    for i in 0..5 {
        q.post(Slot::Done(i)).unwrap();
    }
    let mut got = Vec::new();
    assert_eq!(q.pop_done(2, |c| got.push(c)), 2);
    assert_eq!(q.pop_done(0, |c| got.push(c)), 0);
    assert_eq!(got, [0, 1]);
}

const MSG: u64 = 1 << 1;
const RMA: u64 = 1 << 2;
const ATOMIC: u64 = 1 << 4;
const CONTEXT: u64 = 1 << 59;

fn offer() -> InfoView<'static> {
    InfoView {
        caps: MSG | RMA,
        mode: CONTEXT,
        ep_type: 1,
        addr_format: 2,
        prov_name: Some(b"sock"),
        fabric_name: Some(b"tcp"),
        domain_name: Some(b"eth0"),
    }
}

#[test]
fn no_constraints_match_when_modes_are_supported() {
    let hints = InfoView {
        mode: CONTEXT,
        ..InfoView::default()
    };
    assert_eq!(check(&hints, &offer()), Ok(()));
}

#[test]
fn caps_must_be_a_subset() {
    let mut hints = InfoView {
        caps: MSG,
        mode: CONTEXT,
        ..InfoView::default()
    };
    assert_eq!(check(&hints, &offer()), Ok(()));
    hints.caps = MSG | ATOMIC;
    assert_eq!(check(&hints, &offer()), Err(Mismatch::Caps(ATOMIC)));
}

#[test]
fn required_modes_must_be_supported() {
    let hints = InfoView::default();
    assert_eq!(check(&hints, &offer()), Err(Mismatch::Mode(CONTEXT)));
}

#[test]
fn types_formats_and_names() {
    let base = InfoView {
        mode: CONTEXT,
        ..InfoView::default()
    };
    let cases: [(InfoView<'static>, Result<(), Mismatch>); 7] = [
        (InfoView { ep_type: 3, ..base }, Err(Mismatch::EpType)),
        (InfoView { ep_type: 1, ..base }, Ok(())),
        (
            InfoView {
                addr_format: 3,
                ..base
            },
            Err(Mismatch::AddrFormat),
        ),
        (
            InfoView {
                prov_name: Some(b"SOCK"),
                ..base
            },
            Ok(()),
        ),
        (
            InfoView {
                prov_name: Some(b"verbs"),
                ..base
            },
            Err(Mismatch::ProvName),
        ),
        (
            InfoView {
                fabric_name: Some(b"ib"),
                ..base
            },
            Err(Mismatch::FabricName),
        ),
        (
            InfoView {
                domain_name: Some(b"eth1"),
                ..base
            },
            Err(Mismatch::DomainName),
        ),
    ];
    for (hints, want) in cases {
        assert_eq!(check(&hints, &offer()), want, "{hints:?}");
    }
    let unnamed = InfoView {
        domain_name: None,
        ..offer()
    };
    let hints = InfoView {
        domain_name: Some(b"eth0"),
        ..base
    };
    assert_eq!(check(&hints, &unnamed), Err(Mismatch::DomainName));
}

#[test]
fn providers_order_by_priority_then_registration() {
    let mut v = vec![(0, 3u64), (10, 5), (0, 1), (10, 2)];
    v.sort_by(|a, b| provider_order(*a, *b));
    assert_eq!(v, [(10, 2), (10, 5), (0, 1), (0, 3)]);
    assert_eq!(provider_order((1, 0), (1, 0)), Ordering::Equal);
}
