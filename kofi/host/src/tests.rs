use crate::info_match::{
    abi_values::*, allows, check, mr_mode_ok, offered_caps, offered_mode, offered_mr_mode,
    provider_order, Attrs, InfoView, Mismatch, PRIMARY_CAPS, SECONDARY_CAPS,
};
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

#[test]
fn ring_retain_keeps_order_and_room() {
    let mut r = Ring::new(slots::<u32>(4));
    // Wrap the ring first, so retain walks across the end of the slots.
    for v in [9, 9, 1, 2] {
        r.push(v).unwrap();
    }
    assert_eq!(r.pop(), Some(9));
    assert_eq!(r.pop(), Some(9));
    for v in [3, 4] {
        r.push(v).unwrap();
    }
    r.retain(|v| v % 2 == 0);
    assert_eq!(r.len(), 2);
    r.push(6).unwrap();
    r.push(8).unwrap();
    assert_eq!(r.push(10), Err(10));
    let got: Vec<u32> = core::iter::from_fn(|| r.pop()).collect();
    assert_eq!(got, [2, 4, 6, 8]);
}

#[test]
fn completion_ring_retain_keeps_overrun_markers() {
    let mut q: Cq = CompletionRing::new(slots(3));
    q.post(Slot::Done(1)).unwrap();
    q.post(Slot::Failed("x")).unwrap();
    assert!(q.post(Slot::Done(2)).is_err());
    q.retain(|s| !matches!(s, Slot::Done(1) | Slot::Failed(_)));
    assert!(q.error_at_head());
    assert_eq!(q.pop_error(), Some(Slot::Overrun { lost: 1 }));
    assert_eq!(q.front_done(), None);
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
const TAGGED: u64 = 1 << 3;
const ATOMIC: u64 = 1 << 4;
const RECV: u64 = 1 << 10;
const SEND: u64 = 1 << 11;
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
        attrs: offered_attrs(),
    }
}

/// Attributes as kofi_sock offers them.
fn offered_attrs() -> Attrs {
    Attrs {
        protocol: 10,
        max_msg_size: 4 << 20,
        tx_msg_order: 0x1ff,
        inject_size: 4096,
        tx_size: 256,
        tx_iov_limit: 16,
        rma_iov_limit: 4,
        rx_size: 256,
        rx_iov_limit: 16,
        threading: FI_THREAD_SAFE,
        control_progress: FI_PROGRESS_AUTO,
        data_progress: FI_PROGRESS_AUTO,
        mr_mode: FI_MR_PROV_KEY | FI_MR_ENDPOINT,
        // FI_COMPLETION, FI_MORE, FI_INJECT_COMPLETE (not
        // FI_DELIVERY_COMPLETE, 1 << 28, nor FI_MULTI_RECV, 1 << 16).
        tx_op_flags: (1 << 24) | (1 << 18) | (1 << 26),
        rx_op_flags: (1 << 24) | (1 << 18),
        cq_data_size: 8,
        mr_iov_limit: 16,
        ..Attrs::default()
    }
}

/// Hints asking for `attrs` (messages and RMA, modes supported).
fn hinting(attrs: Attrs) -> InfoView<'static> {
    InfoView {
        caps: MSG | RMA,
        mode: CONTEXT,
        attrs,
        ..InfoView::default()
    }
}

#[test]
fn attributes_are_minimums_or_choices() {
    let o = offered_attrs();
    // What the offer has, exactly, matches; so does asking for less.
    assert_eq!(check(&hinting(o), &offer()), Ok(()));
    let less = Attrs {
        tx_size: 1,
        rx_iov_limit: 2,
        max_msg_size: 4096,
        threading: FI_THREAD_DOMAIN,
        control_progress: FI_PROGRESS_MANUAL,
        tx_msg_order: 1,
        ..Attrs::default()
    };
    assert_eq!(check(&hinting(less), &offer()), Ok(()));
    let d = Attrs::default();
    let too_much: [(Attrs, &str); 16] = [
        (
            Attrs {
                max_msg_size: (4 << 20) + 1,
                ..d
            },
            "ep_attr.max_msg_size",
        ),
        (Attrs { protocol: 1, ..d }, "ep_attr.protocol"),
        (
            Attrs {
                protocol_version: 1,
                ..d
            },
            "ep_attr.protocol_version",
        ),
        (
            Attrs {
                inject_size: 4097,
                ..d
            },
            "tx_attr.inject_size",
        ),
        (Attrs { tx_size: 257, ..d }, "tx_attr.size"),
        (
            Attrs {
                tx_iov_limit: 17,
                ..d
            },
            "tx_attr.iov_limit",
        ),
        (
            Attrs {
                rma_iov_limit: 5,
                ..d
            },
            "tx_attr.rma_iov_limit",
        ),
        (
            Attrs {
                tx_comp_order: 1,
                ..d
            },
            "tx_attr.comp_order",
        ),
        (
            Attrs {
                tx_op_flags: 1 << 28,
                ..d
            },
            "tx_attr.op_flags",
        ),
        (
            Attrs {
                rx_op_flags: 1 << 16,
                ..d
            },
            "rx_attr.op_flags",
        ),
        (
            Attrs {
                rx_msg_order: 1,
                ..d
            },
            "rx_attr.msg_order",
        ),
        (
            Attrs {
                total_buffered_recv: 1,
                ..d
            },
            "rx_attr.total_buffered_recv",
        ),
        (Attrs { rx_size: 1000, ..d }, "rx_attr.size"),
        (
            Attrs {
                cq_data_size: 16,
                ..d
            },
            "domain_attr.cq_data_size",
        ),
        (
            Attrs {
                mr_iov_limit: 17,
                ..d
            },
            "domain_attr.mr_iov_limit",
        ),
        (Attrs { threading: 9, ..d }, "domain_attr.threading"),
    ];
    for (attrs, name) in too_much {
        assert_eq!(
            check(&hinting(attrs), &offer()),
            Err(Mismatch::Attr(name)),
            "{attrs:?}"
        );
    }
    // Counts the provider leaves at 0 are not limits; others are.
    let counted = Attrs {
        mr_cnt: 1 << 30,
        ..d
    };
    assert_eq!(check(&hinting(counted), &offer()), Ok(()));
    let mut limited = offer();
    limited.attrs.mr_cnt = 100;
    assert_eq!(
        check(&hinting(counted), &limited),
        Err(Mismatch::Attr("domain_attr.mr_cnt"))
    );
}

#[test]
fn threading_and_progress_models() {
    let mut manual = offer();
    manual.attrs.data_progress = FI_PROGRESS_MANUAL;
    manual.attrs.threading = FI_THREAD_DOMAIN;
    let wants = |threading, data_progress| {
        hinting(Attrs {
            threading,
            data_progress,
            ..Attrs::default()
        })
    };
    // Automatic progress serves a consumer that would drive it itself.
    assert_eq!(check(&wants(0, FI_PROGRESS_MANUAL), &offer()), Ok(()));
    assert_eq!(
        check(&wants(0, FI_PROGRESS_AUTO), &manual),
        Err(Mismatch::Attr("domain_attr.data_progress"))
    );
    // A thread-safe provider serves every model; a domain-serialised one
    // only consumers that serialise their domain (or do not say).
    assert_eq!(check(&wants(FI_THREAD_COMPLETION, 0), &offer()), Ok(()));
    assert_eq!(
        check(&wants(FI_THREAD_SAFE, 0), &manual),
        Err(Mismatch::Attr("domain_attr.threading"))
    );
    assert_eq!(
        check(&wants(FI_THREAD_ENDPOINT, 0), &manual),
        Err(Mismatch::Attr("domain_attr.threading"))
    );
    assert_eq!(
        check(&wants(FI_THREAD_DOMAIN, FI_PROGRESS_MANUAL), &manual),
        Ok(())
    );
    // A model the offer leaves unsaid is not held against a hint.
    let mut unsaid = offer();
    unsaid.attrs.resource_mgmt = 0;
    let rm = hinting(Attrs {
        resource_mgmt: FI_RM_ENABLED,
        ..Attrs::default()
    });
    assert_eq!(check(&rm, &unsaid), Ok(()));
    unsaid.attrs.resource_mgmt = FI_RM_DISABLED;
    assert_eq!(
        check(&rm, &unsaid),
        Err(Mismatch::Attr("domain_attr.resource_mgmt"))
    );
}

#[test]
fn registration_modes_as_libfabric_checks_them() {
    let offer = FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    let rma = RMA;
    // Not saying (0) is supporting every mode.
    assert!(mr_mode_ok(0, rma, offer));
    // A consumer choosing its own keys cannot use a provider that picks them.
    assert!(!mr_mode_ok(FI_MR_LOCAL | FI_MR_VIRT_ADDR, rma, offer));
    assert!(mr_mode_ok(
        FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY,
        rma,
        offer
    ));
    // FI_MR_ENDPOINT is optional: required only when listed.
    assert!(mr_mode_ok(FI_MR_PROV_KEY, rma, offer));
    assert!(mr_mode_ok(FI_MR_PROV_KEY | FI_MR_ENDPOINT, rma, offer));
    assert!(!mr_mode_ok(FI_MR_ENDPOINT, rma, offer));
    // Keys matter only to an RMA target: messages alone need no PROV_KEY.
    assert!(mr_mode_ok(FI_MR_LOCAL, MSG, offer));
    assert!(mr_mode_ok(FI_MR_LOCAL, RMA | FI_READ | FI_WRITE, offer));
    assert!(!mr_mode_ok(FI_MR_LOCAL, RMA | FI_REMOTE_WRITE, offer));
    // ... unless the provider needs local registration, which it must get.
    assert!(!mr_mode_ok(
        FI_MR_VIRT_ADDR,
        MSG,
        FI_MR_LOCAL | FI_MR_PROV_KEY
    ));
    assert!(mr_mode_ok(FI_MR_LOCAL, MSG, FI_MR_LOCAL | FI_MR_PROV_KEY));
    let hints = hinting(Attrs {
        mr_mode: FI_MR_LOCAL,
        ..Attrs::default()
    });
    assert_eq!(
        check(&hints, &self::offer()),
        Err(Mismatch::Attr("domain_attr.mr_mode"))
    );
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
fn context_caps_and_counts_bound_the_offer() {
    // As the core completes kofi_sock's offer: one context each way, the
    // transmit and receive capabilities of its caps.
    let mut o = offer();
    o.attrs.tx_caps = MSG | RMA | SEND;
    o.attrs.rx_caps = MSG | RMA | RECV;
    o.attrs.tx_ctx_cnt = 1;
    o.attrs.rx_ctx_cnt = 1;
    o.attrs.max_ep_tx_ctx = 1;
    o.attrs.max_ep_rx_ctx = 1;
    o.attrs.domain_tx_ctx_cnt = 64;
    o.attrs.domain_rx_ctx_cnt = 64;
    let wants = |attrs: Attrs| check(&hinting(attrs), &o);
    assert_eq!(wants(Attrs::default()), Ok(()));
    let asked = Attrs {
        tx_caps: MSG | SEND,
        rx_caps: RECV,
        tx_ctx_cnt: 1,
        rx_ctx_cnt: 1,
        domain_tx_ctx_cnt: 64,
        domain_rx_ctx_cnt: 8,
        ..Attrs::default()
    };
    assert_eq!(wants(asked), Ok(()));
    let too_much = [
        (
            Attrs {
                tx_caps: MSG | TAGGED,
                ..Attrs::default()
            },
            "tx_attr.caps",
        ),
        (
            Attrs {
                rx_caps: RECV | ATOMIC,
                ..Attrs::default()
            },
            "rx_attr.caps",
        ),
        // A scalable endpoint, and a shared context.
        (
            Attrs {
                tx_ctx_cnt: 4,
                ..Attrs::default()
            },
            "ep_attr.tx_ctx_cnt",
        ),
        (
            Attrs {
                rx_ctx_cnt: usize::MAX,
                ..Attrs::default()
            },
            "ep_attr.rx_ctx_cnt",
        ),
        (
            Attrs {
                max_ep_tx_ctx: 2,
                ..Attrs::default()
            },
            "domain_attr.max_ep_tx_ctx",
        ),
        (
            Attrs {
                max_ep_rx_ctx: 2,
                ..Attrs::default()
            },
            "domain_attr.max_ep_rx_ctx",
        ),
        (
            Attrs {
                domain_tx_ctx_cnt: 65,
                ..Attrs::default()
            },
            "domain_attr.tx_ctx_cnt",
        ),
        (
            Attrs {
                domain_rx_ctx_cnt: 65,
                ..Attrs::default()
            },
            "domain_attr.rx_ctx_cnt",
        ),
    ];
    for (attrs, name) in too_much {
        assert_eq!(wants(attrs), Err(Mismatch::Attr(name)), "{name}");
    }
}

#[test]
fn required_modes_must_be_supported() {
    let hints = InfoView::default();
    assert_eq!(check(&hints, &offer()), Err(Mismatch::Mode(CONTEXT)));
}

#[test]
fn optional_modes_stay_only_when_hinted() {
    // FI_RX_CQ_DATA offered: no mismatch without it in the hints, and the
    // offer keeps it only for hints that list it.
    let mut o = offer();
    o.mode = FI_RX_CQ_DATA;
    let mut hints = InfoView::default();
    assert_eq!(check(&hints, &o), Ok(()));
    assert_eq!(offered_mode(hints.mode, o.mode), 0);
    hints.mode = FI_RX_CQ_DATA;
    assert_eq!(check(&hints, &o), Ok(()));
    assert_eq!(offered_mode(hints.mode, o.mode), FI_RX_CQ_DATA);
    // A required mode beside it still counts.
    o.mode |= CONTEXT;
    assert_eq!(check(&hints, &o), Err(Mismatch::Mode(CONTEXT)));
    assert_eq!(offered_mode(0, CONTEXT), CONTEXT);
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

use crate::addr::{BadName, Name, AF_INET, AF_INET6, SIN6_LEN, SIN_LEN};
use crate::rdm_wire::{
    cm_decode, cm_encode, control, control_op, Header, Malformed, HDR_LEN, OP_BYE, OP_BYE_ACK,
};

fn sin(port: u16, addr: [u8; 4], zero: u8) -> Vec<u8> {
    let mut b = vec![zero; SIN_LEN];
    b[..2].copy_from_slice(&AF_INET.to_ne_bytes());
    b[2..4].copy_from_slice(&port.to_be_bytes());
    b[4..8].copy_from_slice(&addr);
    b
}

fn sin6(port: u16, last: u8, flow: u8) -> Vec<u8> {
    let mut b = vec![0u8; SIN6_LEN];
    b[..2].copy_from_slice(&AF_INET6.to_ne_bytes());
    b[2..4].copy_from_slice(&port.to_be_bytes());
    b[4..8].copy_from_slice(&[flow; 4]);
    b[23] = last;
    b
}

#[test]
fn names_are_canonical() {
    // sin_zero and the IPv6 flow label are not part of a name.
    let a = Name::parse(&sin(5000, [127, 0, 0, 1], 0)).unwrap();
    let b = Name::parse(&sin(5000, [127, 0, 0, 1], 0xaa)).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.as_bytes().len(), SIN_LEN);
    assert_eq!(&a.as_bytes()[8..], &[0u8; 8]);
    let c = Name::parse(&sin6(5000, 1, 0)).unwrap();
    let d = Name::parse(&sin6(5000, 1, 7)).unwrap();
    assert_eq!(c, d);
    assert_ne!(a, c);
    assert_ne!(a, Name::parse(&sin(5001, [127, 0, 0, 1], 0)).unwrap());
}

#[test]
fn same_host_ignores_the_port_only() {
    let a = Name::parse(&sin(5000, [10, 0, 2, 10], 0)).unwrap();
    assert!(a.same_host(&Name::parse(&sin(41000, [10, 0, 2, 10], 0)).unwrap()));
    assert!(!a.same_host(&Name::parse(&sin(5000, [10, 0, 2, 11], 0)).unwrap()));
    let c = Name::parse(&sin6(5000, 1, 0)).unwrap();
    assert!(c.same_host(&Name::parse(&sin6(6000, 1, 9)).unwrap()));
    assert!(!c.same_host(&Name::parse(&sin6(5000, 2, 0)).unwrap()));
    // Another family is another host, whatever the bytes.
    assert!(!a.same_host(&c));
}

#[test]
fn bad_names_are_refused() {
    assert_eq!(Name::parse(&[]), Err(BadName::Short));
    assert_eq!(
        Name::parse(&sin(1, [1, 2, 3, 4], 0)[..10]),
        Err(BadName::Short)
    );
    assert_eq!(Name::parse(&sin6(1, 1, 0)[..20]), Err(BadName::Short));
    let mut other = sin(1, [1, 2, 3, 4], 0);
    other[0] = 99;
    other[1] = 0;
    assert_eq!(Name::parse(&other), Err(BadName::Family));
    assert!(Name::parse(&sin(1, [0, 0, 0, 0], 0)).unwrap().is_wildcard());
    assert!(Name::parse(&sin6(1, 0, 0)).unwrap().is_wildcard());
    assert!(!Name::parse(&sin6(1, 1, 0)).unwrap().is_wildcard());
}

#[test]
fn headers_round_trip() {
    for h in [
        Header {
            total: 0,
            data: None,
            tag: None,
        },
        Header {
            total: u32::MAX,
            data: Some(0x1234_5678_9abc_def0),
            tag: None,
        },
        Header {
            total: 16360,
            data: Some(0),
            tag: Some(0),
        },
        Header {
            total: 1,
            data: None,
            tag: Some(u64::MAX - 1),
        },
    ] {
        let b = h.encode();
        assert_eq!(b.len(), HDR_LEN);
        assert_eq!(Header::decode(&b), Ok(h));
    }
}

#[test]
fn malformed_headers_are_refused() {
    let good = Header {
        total: 5,
        data: None,
        tag: Some(3),
    }
    .encode();
    assert_eq!(Header::decode(&good[..HDR_LEN - 1]), Err(Malformed::Short));
    let mut b = good;
    b[0] ^= 1;
    assert_eq!(Header::decode(&b), Err(Malformed::Magic));
    let mut b = good;
    b[1] = 9;
    assert_eq!(Header::decode(&b), Err(Malformed::Op));
    let mut b = good;
    b[2] = 0x80;
    assert_eq!(Header::decode(&b), Err(Malformed::Flags));
    let mut b = good;
    b[3] = 1;
    assert_eq!(Header::decode(&b), Err(Malformed::Flags));
}

#[test]
fn connection_requests_name_the_requester() {
    for raw in [sin(7000, [10, 0, 2, 10], 0), sin6(7000, 1, 0)] {
        let name = Name::parse(&raw).unwrap();
        let (b, len) = cm_encode(&name);
        assert_eq!(cm_decode(&b[..len]), Some(name));
        // Cut short, padded (providers may pad private data), or mistagged.
        assert_eq!(cm_decode(&b[..len - 1]), None);
        let mut padded = b[..len].to_vec();
        padded.push(0);
        assert_eq!(cm_decode(&padded), None);
        let mut bad = b;
        bad[0] = b'x';
        assert_eq!(cm_decode(&bad[..len]), None);
    }
    // A wildcard is no one's name.
    let any = Name::parse(&sin(7000, [0, 0, 0, 0], 0)).unwrap();
    let (b, len) = cm_encode(&any);
    assert_eq!(cm_decode(&b[..len]), None);
    assert_eq!(cm_decode(&[]), None);
}

#[test]
fn control_segments_are_exact() {
    for op in [OP_BYE, OP_BYE_ACK] {
        let b = control(op);
        assert_eq!(control_op(&b), Some(op));
        // Not a message, and nothing but the exact bytes is a control.
        assert_eq!(Header::decode(&b), Err(Malformed::Op));
        let mut longer = b.to_vec();
        longer.push(0);
        assert_eq!(control_op(&longer), None);
        let mut flagged = b;
        flagged[2] = 1;
        assert_eq!(control_op(&flagged), None);
    }
    assert_eq!(
        control_op(
            &Header {
                total: 0,
                data: None,
                tag: None,
            }
            .encode()
        ),
        None
    );
    assert_eq!(control_op(&[]), None);
}

#[test]
fn optional_mr_modes_stay_only_when_hinted() {
    const PROV_KEY: i32 = 1 << 4;
    const ENDPOINT: i32 = 1 << 7;
    // Not hinted: the optional bit goes, required ones stay.
    assert_eq!(offered_mr_mode(0, PROV_KEY | ENDPOINT, ENDPOINT), PROV_KEY);
    assert_eq!(
        offered_mr_mode(PROV_KEY, PROV_KEY | ENDPOINT, ENDPOINT),
        PROV_KEY
    );
    // Hinted: kept.
    assert_eq!(
        offered_mr_mode(ENDPOINT, PROV_KEY | ENDPOINT, ENDPOINT),
        PROV_KEY | ENDPOINT
    );
    // Hinted but not offered: not added.
    assert_eq!(offered_mr_mode(ENDPOINT, PROV_KEY, ENDPOINT), PROV_KEY);
}

mod atomics {
    use crate::rdm_atomic::{apply, op, served, Kind, INT64, UINT64};
    use crate::rdm_wire::{answer_decode, answer_header, AtomicRequest, Malformed, ATOMIC_HDR};

    #[test]
    fn only_64_bit_integers_and_the_right_forms_are_served() {
        assert!(served(INT64, op::SUM, Kind::Plain));
        assert!(served(UINT64, op::BXOR, Kind::Fetch));
        assert!(served(UINT64, op::READ, Kind::Fetch));
        assert!(!served(UINT64, op::READ, Kind::Plain));
        assert!(served(INT64, op::CSWAP, Kind::Compare));
        assert!(!served(INT64, op::CSWAP, Kind::Fetch));
        assert!(!served(INT64, op::SUM, Kind::Compare));
        // FI_INT32, FI_DOUBLE.
        assert!(!served(4, op::SUM, Kind::Plain));
        assert!(!served(9, op::SUM, Kind::Plain));
        assert!(!served(INT64, 19, Kind::Fetch));
    }

    #[test]
    fn each_op_does_what_fi_atomic_says() {
        let neg = (-5i64) as u64;
        assert_eq!(apply(INT64, op::MIN, 3, neg, 0), neg);
        assert_eq!(apply(UINT64, op::MIN, 3, neg, 0), 3);
        assert_eq!(apply(INT64, op::MAX, 3, neg, 0), 3);
        assert_eq!(apply(UINT64, op::MAX, 3, neg, 0), neg);
        assert_eq!(apply(UINT64, op::SUM, u64::MAX, 2, 0), 1);
        assert_eq!(apply(UINT64, op::PROD, 6, 7, 0), 42);
        assert_eq!(apply(UINT64, op::LOR, 0, 9, 0), 1);
        assert_eq!(apply(UINT64, op::LAND, 4, 0, 0), 0);
        assert_eq!(apply(UINT64, op::LXOR, 4, 9, 0), 0);
        assert_eq!(apply(UINT64, op::BOR, 0b1010, 0b0101, 0), 0b1111);
        assert_eq!(apply(UINT64, op::BAND, 0b1010, 0b0110, 0), 0b0010);
        assert_eq!(apply(UINT64, op::BXOR, 0b1010, 0b0110, 0), 0b1100);
        assert_eq!(apply(UINT64, op::READ, 77, 1, 0), 77);
        assert_eq!(apply(UINT64, op::WRITE, 77, 1, 0), 1);
        assert_eq!(apply(UINT64, op::CSWAP, 5, 9, 5), 9);
        assert_eq!(apply(UINT64, op::CSWAP, 5, 9, 4), 5);
        assert_eq!(apply(UINT64, op::CSWAP_NE, 5, 9, 4), 9);
        // compare <= cur, compare < cur, compare >= cur, compare > cur.
        assert_eq!(apply(UINT64, op::CSWAP_LE, 5, 9, 5), 9);
        assert_eq!(apply(UINT64, op::CSWAP_LT, 5, 9, 5), 5);
        assert_eq!(apply(UINT64, op::CSWAP_GE, 5, 9, 6), 9);
        assert_eq!(apply(UINT64, op::CSWAP_GT, 5, 9, 5), 5);
        assert_eq!(apply(INT64, op::CSWAP_GT, neg, 9, 0), 9);
        assert_eq!(apply(UINT64, op::MSWAP, 0xff00, 0x0ff0, 0x00ff), 0xfff0);
    }

    #[test]
    fn atomic_frames_round_trip_and_refuse_garbage() {
        let r = AtomicRequest {
            op: op::CSWAP as u8,
            datatype: UINT64 as u8,
            kind: Kind::Compare as u8,
            id: 0x1_0000_0007,
            addr: 64,
            key: 0xdead,
            count: 2,
        };
        let mut b = r.encode_header().to_vec();
        for v in [1u64, 2, 3, 4] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(b.len(), r.frame_len());
        assert_eq!(AtomicRequest::decode(&b, 64), Ok(r.clone()));
        assert_eq!(r.values(&b, 1), (2, 4));
        assert_eq!(
            AtomicRequest::decode(&b[..b.len() - 1], 64),
            Err(Malformed::Short)
        );
        assert_eq!(AtomicRequest::decode(&b, 1), Err(Malformed::Short));
        let mut bad = b.clone();
        bad[4] = 3;
        assert_eq!(AtomicRequest::decode(&bad, 64), Err(Malformed::Op));
        let mut bad = b.clone();
        bad[13] = 1;
        assert_eq!(AtomicRequest::decode(&bad, 64), Err(Malformed::Flags));
        assert_eq!(
            AtomicRequest::decode(&b[..ATOMIC_HDR - 1], 64),
            Err(Malformed::Short)
        );

        let mut a = answer_header(9, 0).to_vec();
        a.extend_from_slice(&5u64.to_le_bytes());
        assert_eq!(answer_decode(&a), Some((9, 0, &a[16..])));
        assert_eq!(answer_decode(&a[..a.len() - 1]), None);
        assert_eq!(answer_decode(&b), None);
    }
}

#[test]
fn primary_caps_are_only_those_asked_for() {
    let offer = FI_MSG
        | FI_TAGGED
        | FI_RMA
        | FI_SEND
        | FI_RECV
        | FI_READ
        | FI_WRITE
        | FI_REMOTE_READ
        | FI_REMOTE_WRITE
        | FI_RMA_EVENT;
    // No caps hinted: the offer's whole.
    assert_eq!(offered_caps(offer, 0, offer), offer);
    // A class without directions gets the offer's directions for it;
    // secondary caps stay whether asked for or not; FI_TAGGED goes.
    let msg = offered_caps(offer, FI_MSG, offer);
    assert_eq!(msg, FI_MSG | FI_SEND | FI_RECV | FI_RMA_EVENT);
    let rma = offered_caps(offer, FI_MSG | FI_RMA, offer);
    assert_eq!(rma, offer & !FI_TAGGED);
    // Named directions are kept as named, no others added.
    let send_only = offered_caps(offer, FI_MSG | FI_SEND, offer);
    assert_eq!(send_only, FI_MSG | FI_SEND | FI_RMA_EVENT);
    let reads = offered_caps(offer, FI_RMA | FI_READ, offer);
    assert_eq!(reads, FI_RMA | FI_READ | FI_RMA_EVENT);
    // An attr without hints of its own takes the narrowed info's primary
    // caps among its own, and directions of its own only.
    let tx_offer = FI_MSG | FI_TAGGED | FI_RMA | FI_SEND | FI_READ | FI_WRITE;
    assert_eq!(offered_caps(msg, 0, tx_offer), FI_MSG | FI_SEND);
    let rx_offer = FI_MSG | FI_TAGGED | FI_RMA | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE;
    assert_eq!(
        offered_caps(rma, 0, rx_offer),
        FI_MSG | FI_RMA | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE
    );
    // A send-only info's rx attr gets no receive direction.
    assert_eq!(offered_caps(send_only, 0, rx_offer), FI_MSG);
    assert_eq!(offered_caps(send_only, 0, tx_offer), FI_MSG | FI_SEND);
    // A hinted attr's caps are the hint's primary ones.
    assert_eq!(
        offered_caps(rma, FI_MSG | FI_SEND, tx_offer),
        FI_MSG | FI_SEND
    );
    // Secondary caps the offer lacks are not made up.
    assert_eq!(
        offered_caps(offer, FI_MSG | FI_SOURCE, offer) & FI_SOURCE,
        0
    );
    assert_eq!(PRIMARY_CAPS & SECONDARY_CAPS, 0);
}

#[test]
fn named_directions_are_the_only_ones() {
    // None named: every direction of the class.
    for dir in [FI_SEND, FI_RECV, FI_READ, FI_WRITE] {
        assert!(allows(FI_MSG | FI_RMA, dir));
    }
    // Send only: no receives; RMA, naming none, keeps both.
    let send_only = FI_MSG | FI_SEND | FI_RMA;
    assert!(allows(send_only, FI_SEND));
    assert!(!allows(send_only, FI_RECV));
    assert!(allows(send_only, FI_READ) && allows(send_only, FI_WRITE));
    // An RMA target only names a direction: it initiates nothing.
    let target = FI_RMA | FI_REMOTE_READ | FI_REMOTE_WRITE;
    assert!(!allows(target, FI_READ) && !allows(target, FI_WRITE));
    assert!(allows(FI_RMA | FI_READ, FI_READ) && !allows(FI_RMA | FI_READ, FI_WRITE));
}

#[test]
fn rendezvous_frames() {
    use crate::rdm_wire::{rts, rts_decode, Cts, CTS_LEN, OP_CTS, OP_RTS, RTS_LEN};
    let h = Header {
        total: 1 << 20,
        data: Some(7),
        tag: Some(0x1234),
    };
    let b = rts(&h, 0x0000_0005_0000_0009);
    assert_eq!(b.len(), RTS_LEN);
    assert_eq!(b[1], OP_RTS);
    assert_eq!(rts_decode(&b), Ok((h, 0x0000_0005_0000_0009)));
    // Not a segment, and a segment is no announcement.
    assert_eq!(Header::decode(&b), Err(Malformed::Op));
    assert_eq!(rts_decode(&h.encode()), Err(Malformed::Short));
    let mut seg = [0u8; RTS_LEN];
    seg[..HDR_LEN].copy_from_slice(&h.encode());
    assert_eq!(rts_decode(&seg), Err(Malformed::Op));
    let mut bad = b;
    bad[3] = 1;
    assert_eq!(rts_decode(&bad), Err(Malformed::Flags));
    assert_eq!(rts_decode(&b[..RTS_LEN - 1]), Err(Malformed::Short));

    let c = Cts {
        id: 42,
        len: 300 << 10,
    };
    let e = c.encode();
    assert_eq!(e.len(), CTS_LEN);
    assert_eq!(e[1], OP_CTS);
    assert_eq!(Cts::decode(&e), Some(c));
    assert_eq!(Cts::decode(&e[..CTS_LEN - 1]), None);
    let mut bad = e;
    bad[2] = 1;
    assert_eq!(Cts::decode(&bad), None);
    let mut bad = e;
    bad[1] = OP_BYE;
    assert_eq!(Cts::decode(&bad), None);
    // Neither is a control segment.
    assert_eq!(control_op(&e), None);
    assert_eq!(control_op(&b), None);
}
