use crate::wire::*;

#[test]
fn header_round_trips() {
    let h = Header {
        op: OP_MSG,
        flags: FLAG_FIRST | FLAG_LAST | FLAG_CQ_DATA,
        credits: 17,
        len: 1 << 20,
        data: 0x0123_4567_89ab_cdef,
        tag: 0,
    };
    let b = h.encode();
    assert_eq!(b.len(), HEADER_LEN);
    assert_eq!(Header::decode(&b), Some(h));
    // Little endian on the wire, whatever the host.
    assert_eq!(&b[2..4], &[17, 0]);
    assert_eq!(&b[4..8], &[0, 0, 0x10, 0]);
    assert_eq!(b[8], 0xef);
    assert_eq!(h.tag(), None);
}

#[test]
fn tagged_messages_carry_their_tag() {
    for op in [OP_MSG, OP_RTS] {
        let h = Header {
            op,
            flags: FLAG_FIRST | FLAG_TAGGED,
            len: 5,
            tag: 0xfeed_0000_0000_0042,
            ..Default::default()
        };
        let b = h.encode();
        assert_eq!(b[16], 0x42);
        assert_eq!(
            Header::decode(&b).and_then(|h| h.tag()),
            Some(0xfeed_0000_0000_0042)
        );
    }
    // Nothing else is tagged.
    for op in [OP_WRITE_DATA, OP_CREDIT, OP_FIN, OP_CTS, OP_WFIN, OP_CLOSE] {
        let h = Header {
            op,
            flags: FLAG_TAGGED,
            ..Default::default()
        };
        assert_eq!(Header::decode(&h.encode()), None, "op {op}");
    }
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
    // Too short (a peer's SEND of fewer than HEADER_LEN bytes).
    let b = Header::default().encode();
    for n in 0..HEADER_LEN {
        assert_eq!(Header::decode(&b[..n]), None);
    }
    // Unknown operations.
    for op in [0u8, 9, 0x80, 0xff] {
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

/// The nonce of the tables below, and a key of theirs with delta 0x123.
const NONCE: u64 = 0x5a5a;
const KEY: u64 = KEY_TABLE | NONCE << KEY_NONCE_SHIFT | 0x123 << 32 | 0x99;

/// A key table as kofi_verbs_glue.c writes it.
fn table_bytes(count: u32, end: u64, pieces: &[(u64, u32)]) -> Vec<u8> {
    let mut b = vec![0u8; TABLE_LEN];
    b[..4].copy_from_slice(&TABLE_MAGIC.to_le_bytes());
    b[4..8].copy_from_slice(&count.to_le_bytes());
    b[8..16].copy_from_slice(&NONCE.to_le_bytes());
    b[16..24].copy_from_slice(&end.to_le_bytes());
    for (i, (start, rkey)) in pieces.iter().enumerate() {
        b[24 + 16 * i..32 + 16 * i].copy_from_slice(&start.to_le_bytes());
        b[32 + 16 * i..36 + 16 * i].copy_from_slice(&rkey.to_le_bytes());
    }
    b
}

#[test]
fn a_key_table_splits_an_access_at_its_pieces() {
    // Three pieces of a region at offset 1000: 3096 bytes, then 1 MiB, then
    // the rest up to 1000 + 2.5 MiB.
    let (a, b, c, end) = (1000u64, 4096u64, 4096 + (1 << 20), 1000 + (5 << 19));
    let t = KeyTable::decode(
        KEY,
        &table_bytes(3, end, &[(a, 0x11), (b, 0x22), (c, 0x33)]),
    )
    .unwrap();
    assert_eq!(t.piece_at(a), Some((0x11, b - a)));
    assert_eq!(t.piece_at(b - 1), Some((0x11, 1)));
    assert_eq!(t.piece_at(b), Some((0x22, 1 << 20)));
    assert_eq!(t.piece_at(end - 1), Some((0x33, 1)));
    assert_eq!(t.piece_at(a - 1), None);
    assert_eq!(t.piece_at(end), None);
    // Each piece's key keeps the delta, without the table bit or nonce.
    let key = KEY;
    let mut got = Vec::new();
    let whole = t.split(key, b - 10, (1 << 20) + 20, |addr, len, k| {
        got.push((addr, len, k));
        true
    });
    assert_eq!(whole, Some(()));
    assert_eq!(
        got,
        vec![
            (b - 10, 10, 0x123 << 32 | 0x11),
            (b, 1 << 20, 0x123 << 32 | 0x22),
            (c, 10, 0x123 << 32 | 0x33),
        ]
    );
    // Past the end, or stopped by the caller: no.
    assert_eq!(t.split(key, end - 4, 8, |_, _, _| true), None);
    assert_eq!(t.split(key, a, 8, |_, _, _| false), None);
    // Nothing to access: one empty piece.
    let mut empty = Vec::new();
    assert_eq!(
        t.split(key, end, 0, |a, l, k| {
            empty.push((a, l, k));
            true
        }),
        Some(())
    );
    assert_eq!(empty, vec![(end, 0, 0x123 << 32 | 0x11)]);
}

#[test]
fn a_malformed_key_table_is_refused() {
    let good = table_bytes(2, 300, &[(0, 1), (100, 2)]);
    assert!(KeyTable::decode(KEY, &good).is_some());
    assert!(KeyTable::decode(KEY, &good[..TABLE_LEN - 1]).is_none());
    // Another key's table (its nonce differs), as after the rkey's reuse.
    assert!(KeyTable::decode(KEY ^ 1 << KEY_NONCE_SHIFT, &good).is_none());
    let mut bad_magic = good.clone();
    bad_magic[0] ^= 1;
    assert!(KeyTable::decode(KEY, &bad_magic).is_none());
    assert!(KeyTable::decode(KEY, &table_bytes(0, 300, &[])).is_none());
    let too_many = table_bytes(PIECES_MAX as u32 + 1, 300, &[(0, 1)]);
    assert!(KeyTable::decode(KEY, &too_many).is_none());
    let unordered = table_bytes(2, 300, &[(100, 1), (100, 2)]);
    assert!(KeyTable::decode(KEY, &unordered).is_none());
    assert!(KeyTable::decode(KEY, &table_bytes(2, 100, &[(0, 1), (100, 2)])).is_none());
}

#[test]
fn a_key_names_its_rkey_and_the_address_delta() {
    // rkey 0x1234, and 0x40 added to every address (the in-page offset).
    let key = 0x40 << 32 | 0x1234;
    assert_eq!(remote(key, 0), (0x40, 0x1234));
    assert_eq!(remote(key, 4096), (4096 + 0x40, 0x1234));
    // The device's addresses wrap as the key's owner computed them.
    assert_eq!(remote(key, u64::MAX), (0x3f, 0x1234));
}
