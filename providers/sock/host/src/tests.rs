use crate::wire::*;

const LIMITS: Limits = Limits { max_msg: 65536 };

fn roundtrip(h: Header) -> Result<Header, WireError> {
    Header::parse(&h.encode(), &LIMITS)
}

#[test]
fn every_op_round_trips() {
    let cases = [
        Header {
            len: 256,
            ..Header::new(Op::Connect)
        },
        Header {
            len: 3,
            ..Header::new(Op::Accept)
        },
        Header {
            status: 111,
            len: 4,
            ..Header::new(Op::Reject)
        },
        Header {
            len: 4096,
            flags: FLAG_CQ_DATA,
            data: 7,
            ..Header::new(Op::Send)
        },
        Header {
            len: 10,
            rma_len: 10,
            key: 5,
            addr: 100,
            id: 9,
            ..Header::new(Op::Write)
        },
        Header {
            status: 126,
            id: 9,
            ..Header::new(Op::WriteAck)
        },
        Header {
            rma_len: 100,
            key: 5,
            addr: 1 << 40,
            id: 3,
            ..Header::new(Op::ReadReq)
        },
        Header {
            len: 100,
            id: 3,
            ..Header::new(Op::ReadResp)
        },
        Header {
            status: 22,
            id: 3,
            ..Header::new(Op::ReadResp)
        },
        Header::new(Op::Shutdown),
    ];
    for h in cases {
        assert_eq!(roundtrip(h), Ok(h), "{h:?}");
    }
}

#[test]
fn refuses_what_a_peer_gets_wrong() {
    let send = Header {
        len: 10,
        ..Header::new(Op::Send)
    };
    let mut b = send.encode();
    b[0] ^= 1;
    assert_eq!(Header::parse(&b, &LIMITS), Err(WireError::BadMagic));
    let mut b = send.encode();
    b[4] = 2;
    assert_eq!(Header::parse(&b, &LIMITS), Err(WireError::BadVersion(2)));
    let mut b = send.encode();
    b[5] = 0;
    assert_eq!(Header::parse(&b, &LIMITS), Err(WireError::BadOp(0)));
    b[5] = 200;
    assert_eq!(Header::parse(&b, &LIMITS), Err(WireError::BadOp(200)));
    let mut b = send.encode();
    b[7] = 0x80;
    assert_eq!(Header::parse(&b, &LIMITS), Err(WireError::BadFlags(0x8000)));
    let mut b = send.encode();
    b[13] = 1;
    assert_eq!(Header::parse(&b, &LIMITS), Err(WireError::Reserved));
}

#[test]
fn refuses_lengths_out_of_limits() {
    let bad = [
        Header {
            len: 257,
            ..Header::new(Op::Connect)
        },
        Header {
            len: 65537,
            ..Header::new(Op::Send)
        },
        Header {
            len: u64::MAX,
            ..Header::new(Op::Send)
        },
        Header {
            len: 10,
            rma_len: 11,
            ..Header::new(Op::Write)
        },
        Header {
            len: 10,
            rma_len: 10,
            addr: u64::MAX - 5,
            ..Header::new(Op::Write)
        },
        Header {
            len: 1,
            rma_len: 1,
            ..Header::new(Op::ReadReq)
        },
        Header {
            rma_len: 65537,
            ..Header::new(Op::ReadReq)
        },
        Header {
            rma_len: 10,
            addr: u64::MAX - 5,
            ..Header::new(Op::ReadReq)
        },
        Header {
            status: 5,
            len: 10,
            ..Header::new(Op::ReadResp)
        },
        Header {
            len: 1,
            ..Header::new(Op::WriteAck)
        },
        Header {
            len: 1,
            ..Header::new(Op::Shutdown)
        },
        Header {
            rma_len: 1,
            ..Header::new(Op::Send)
        },
    ];
    for h in bad {
        assert_eq!(roundtrip(h), Err(WireError::BadLength), "{h:?}");
    }
}

#[test]
fn refuses_misplaced_status_and_flags() {
    assert_eq!(
        roundtrip(Header {
            status: 1,
            ..Header::new(Op::Send)
        }),
        Err(WireError::BadStatus)
    );
    assert_eq!(
        roundtrip(Header {
            status: 5000,
            ..Header::new(Op::WriteAck)
        }),
        Err(WireError::BadStatus)
    );
    assert_eq!(
        roundtrip(Header {
            flags: FLAG_CQ_DATA,
            ..Header::new(Op::ReadReq)
        }),
        Err(WireError::BadFlags(FLAG_CQ_DATA))
    );
}

/// A tagged message carries its tag in `key`; only a Send may be tagged.
#[test]
fn tagged_sends_only() {
    let h = Header {
        flags: FLAG_TAGGED | FLAG_CQ_DATA,
        key: 0xfeed_0000_0000_0001,
        data: 7,
        len: 3,
        ..Header::new(Op::Send)
    };
    let back = roundtrip(h).expect("a tagged send parses");
    assert_eq!(back.tag(), Some(0xfeed_0000_0000_0001));
    assert_eq!(back.data, 7);
    assert_eq!(Header::new(Op::Send).tag(), None);
    refused_on(
        FLAG_TAGGED,
        &[Op::Write, Op::ReadReq, Op::WriteAck, Op::Connect],
    );
}

/// `flag` is refused on each of `ops`.
fn refused_on(flag: u16, ops: &[Op]) {
    for &op in ops {
        assert_eq!(
            roundtrip(Header {
                flags: flag,
                ..Header::new(op)
            }),
            Err(WireError::BadFlags(flag)),
            "{op:?} may not carry flag {flag:#x}"
        );
    }
}

/// Only a Write may go unanswered.
#[test]
fn unanswered_writes_only() {
    let h = Header {
        flags: FLAG_NO_ANSWER | FLAG_CQ_DATA,
        len: 8,
        rma_len: 8,
        ..Header::new(Op::Write)
    };
    assert_eq!(roundtrip(h), Ok(h));
    refused_on(
        FLAG_NO_ANSWER,
        &[Op::Send, Op::ReadReq, Op::WriteAck, Op::ReadResp],
    );
}

/// A deterministic random walk over header bytes: the parser never panics,
/// and what it accepts round-trips (the fuzz target's property, checked on
/// every `cargo test` too).
#[test]
fn random_headers_never_break_the_parser() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut accepted = 0;
    for i in 0..200_000u32 {
        let mut b = Header {
            len: 8,
            ..Header::new(Op::Send)
        }
        .encode();
        // Mostly small mutations of a valid header, sometimes pure noise.
        let mutations = if i % 10 == 0 {
            HEADER_LEN
        } else {
            1 + (i as usize % 3)
        };
        for _ in 0..mutations {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b[(x % HEADER_LEN as u64) as usize] = (x >> 32) as u8;
        }
        crate::parse_any(&b);
        accepted += usize::from(Header::parse(&b, &LIMITS).is_ok());
    }
    assert!(accepted > 0, "the walk should reach valid headers too");
}
