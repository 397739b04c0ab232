use crate::wire::*;

#[test]
fn header_round_trips() {
    let h = Header {
        op: OP_MSG,
        flags: FLAG_FIRST | FLAG_LAST | FLAG_CQ_DATA,
        credits: 17,
        len: 1 << 20,
        data: 0x0123_4567_89ab_cdef,
    };
    let b = h.encode();
    assert_eq!(b.len(), HEADER_LEN);
    assert_eq!(Header::decode(&b), Some(h));
    // Little endian on the wire, whatever the host.
    assert_eq!(&b[2..4], &[17, 0]);
    assert_eq!(&b[4..8], &[0, 0, 0x10, 0]);
    assert_eq!(b[8], 0xef);
}

#[test]
fn a_payload_after_the_header_is_not_read() {
    let mut b = Header {
        op: OP_WRITE_DATA,
        len: 16,
        data: 99,
        ..Default::default()
    }
    .encode()
    .to_vec();
    b.extend_from_slice(b"payload");
    let h = Header::decode(&b).unwrap();
    assert_eq!((h.op, h.len, h.data), (OP_WRITE_DATA, 16, 99));
}

#[test]
fn malformed_headers_are_refused() {
    // Too short (a peer's SEND of fewer than 16 bytes).
    let b = Header::default().encode();
    for n in 0..HEADER_LEN {
        assert_eq!(Header::decode(&b[..n]), None);
    }
    // Unknown operations.
    for op in [0u8, 6, 0x80, 0xff] {
        let h = Header {
            op,
            ..Default::default()
        };
        assert_eq!(Header::decode(&h.encode()), None);
    }
}

#[test]
fn any_accepted_header_encodes_back() {
    // Every op byte and a spread of the other bytes.
    for op in 0..=255u8 {
        for seed in 0..64u8 {
            let mut b = [0u8; HEADER_LEN];
            for (i, x) in b.iter_mut().enumerate() {
                *x = seed.wrapping_mul(31).wrapping_add(i as u8 * 7);
            }
            b[0] = op;
            if let Some(h) = Header::decode(&b) {
                assert_eq!(h.encode(), b);
            }
        }
    }
}

#[test]
fn private_data_round_trips() {
    let d = CmData::encode(b"from client").unwrap();
    assert_eq!(d.as_bytes().len(), 12);
    assert_eq!(cm_data_decode(d.as_bytes()), b"from client");
    assert_eq!(cm_data_decode(CmData::encode(&[]).unwrap().as_bytes()), b"");
    let max = [7u8; CM_DATA_MAX];
    assert_eq!(
        cm_data_decode(CmData::encode(&max).unwrap().as_bytes()),
        &max[..]
    );
    assert!(CmData::encode(&[0; CM_DATA_MAX + 1]).is_none());
}

#[test]
fn private_data_carries_its_length() {
    // As sent: a length byte, then the bytes.
    assert_eq!(cm_data_decode(&[3, b'a', b'b', b'c']), b"abc");
    // IB pads private data to a fixed size: the padding is not data.
    let mut padded = vec![2, b'h', b'i'];
    padded.resize(56, 0);
    assert_eq!(cm_data_decode(&padded), b"hi");
    // Nothing, or a length longer than what came: no data.
    assert_eq!(cm_data_decode(&[]), b"");
    assert_eq!(cm_data_decode(&[0]), b"");
    assert_eq!(cm_data_decode(&[9, 1, 2]), b"");
}

#[test]
fn rendezvous_body_round_trips() {
    let b = RtsBody {
        key: 0x0000_0123_0000_4567,
        cookie: 42,
    };
    let bytes = b.encode();
    assert_eq!(RtsBody::decode(&bytes), Some(b));
    // A short body (a broken peer) is refused.
    assert_eq!(RtsBody::decode(&bytes[..RTS_BODY_LEN - 1]), None);
}
