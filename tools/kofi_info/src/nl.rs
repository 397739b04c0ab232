// SPDX-License-Identifier: GPL-2.0

//! Generic netlink, as much as kofi_info needs: find kofi's family, send a
//! dump request with attributes, read the answer as attribute sets. The
//! answer's datagrams can be recorded to a text file (a line of hex each)
//! and replayed from one, which is how the host tests read a real kernel's
//! answers.

use crate::abi::*;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::FromRawFd;

/// What went wrong talking to the kernel.
#[derive(Debug)]
pub enum Error {
    /// The kernel answered a negative errno.
    Kernel(i32),
    /// No kofi family: kofi.ko is not loaded.
    NoFamily,
    Io(io::Error),
    /// An answer this program cannot read.
    Malformed(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Kernel(e) => {
                let text = io::Error::from_raw_os_error(-e).to_string();
                // std says "No data available (os error 61)": the errno is there already.
                let text = text.split(" (os error").next().unwrap_or_default();
                write!(f, "{e} ({text})")
            }
            Error::NoFamily => write!(
                f,
                "no generic netlink family \"{KOFI_GENL_NAME}\": is kofi.ko loaded?"
            ),
            Error::Io(e) => write!(f, "{e}"),
            Error::Malformed(what) => write!(f, "malformed answer: {what}"),
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}

/// One attribute's payload.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attr(pub Vec<u8>);

impl Attr {
    pub fn u32(&self) -> Option<u32> {
        Some(u32::from_ne_bytes(self.0.get(..4)?.try_into().ok()?))
    }

    pub fn u64(&self) -> Option<u64> {
        Some(u64::from_ne_bytes(self.0.get(..8)?.try_into().ok()?))
    }

    /// A NUL-terminated string attribute.
    pub fn str(&self) -> Option<String> {
        let s = self.0.split(|b| *b == 0).next()?;
        String::from_utf8(s.to_vec()).ok()
    }

    /// A nested attribute's attributes.
    pub fn nested(&self) -> Result<Attrs, Error> {
        parse_attrs(&self.0)
    }
}

/// A message's attributes by type (the last of a type wins). kofi's
/// `KOFI_A_PAD` is kept like any other: nobody asks for it.
pub type Attrs = BTreeMap<u16, Attr>;

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn parse_attrs(mut b: &[u8]) -> Result<Attrs, Error> {
    let mut attrs = Attrs::new();
    while b.len() >= 4 {
        let len = u16::from_ne_bytes([b[0], b[1]]) as usize;
        let ty = u16::from_ne_bytes([b[2], b[3]]) & NLA_TYPE_MASK;
        if len < 4 || len > b.len() {
            return Err(Error::Malformed(format!("attribute {ty} of length {len}")));
        }
        attrs.insert(ty, Attr(b[4..len].to_vec()));
        b = &b[align4(len).min(b.len())..];
    }
    Ok(attrs)
}

/// Appends attribute `ty` holding `payload` to `buf`.
pub fn put_attr(buf: &mut Vec<u8>, ty: u16, payload: &[u8]) {
    let len = 4 + payload.len();
    buf.extend_from_slice(&(len as u16).to_ne_bytes());
    buf.extend_from_slice(&ty.to_ne_bytes());
    buf.extend_from_slice(payload);
    buf.resize(align4(buf.len()), 0);
}

/// A string attribute, NUL-terminated as the kernel's policy wants.
pub fn put_str(buf: &mut Vec<u8>, ty: u16, s: &str) {
    let mut payload = s.as_bytes().to_vec();
    payload.push(0);
    put_attr(buf, ty, &payload);
}

/// A generic netlink request: the headers and `attrs`.
fn request(family: u16, flags: u16, cmd: u8, version: u8, attrs: &[u8]) -> Vec<u8> {
    let len = NLMSG_HDRLEN + GENL_HDRLEN + attrs.len();
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&(len as u32).to_ne_bytes());
    m.extend_from_slice(&family.to_ne_bytes());
    m.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
    m.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    m.extend_from_slice(&0u32.to_ne_bytes()); // port: the kernel picks
    m.extend_from_slice(&[cmd, version, 0, 0]);
    m.extend_from_slice(attrs);
    m
}

/// What one datagram said: messages of the answer (their attributes each),
/// and whether it ended the answer (a dump's end, or a request's ack).
#[derive(Debug, Default, PartialEq)]
pub struct Part {
    pub messages: Vec<Attrs>,
    pub done: bool,
}

/// Reads one datagram of answers.
pub fn parse_datagram(mut b: &[u8]) -> Result<Part, Error> {
    let mut part = Part::default();
    while b.len() >= NLMSG_HDRLEN {
        let len = u32::from_ne_bytes(b[0..4].try_into().unwrap()) as usize;
        let ty = u16::from_ne_bytes([b[4], b[5]]);
        if len < NLMSG_HDRLEN || len > b.len() {
            return Err(Error::Malformed(format!("message of length {len}")));
        }
        let body = &b[NLMSG_HDRLEN..len];
        if ty == NLMSG_ERROR || ty == NLMSG_DONE {
            let err = body
                .get(..4)
                .map_or(0, |e| i32::from_ne_bytes(e.try_into().unwrap()));
            if err < 0 {
                return Err(Error::Kernel(err));
            }
            part.done = true;
            return Ok(part);
        }
        let attrs = body
            .get(GENL_HDRLEN..)
            .ok_or_else(|| Error::Malformed("short generic netlink message".into()))?;
        part.messages.push(parse_attrs(attrs)?);
        b = &b[align4(len).min(b.len())..];
    }
    Ok(part)
}

/// Where answers come from: the kernel, or a recording of its answers.
pub enum Source {
    Kernel {
        sock: File,
        family: u16,
        record: Option<File>,
    },
    Replay(Vec<Vec<u8>>),
}

extern "C" {
    fn socket(domain: i32, ty: i32, protocol: i32) -> i32;
}

impl Source {
    /// A socket talking to kofi's family; `record` gets every datagram of
    /// the answers to come.
    pub fn kernel(record: Option<File>) -> Result<Source, Error> {
        // SAFETY: socket(2) takes no pointers; the result is checked.
        let fd = unsafe { socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC) };
        if fd < 0 {
            return Err(io::Error::last_os_error().into());
        }
        // SAFETY: `fd` is a new descriptor nothing else owns. Unbound and
        // unconnected, a netlink socket writes to and reads from the kernel.
        let mut sock = unsafe { File::from_raw_fd(fd) };
        let mut attrs = Vec::new();
        put_str(&mut attrs, CTRL_ATTR_FAMILY_NAME, KOFI_GENL_NAME);
        sock.write_all(&request(GENL_ID_CTRL, 0, CTRL_CMD_GETFAMILY, 1, &attrs))?;
        let mut buf = vec![0u8; 65536];
        let n = sock.read(&mut buf)?;
        let family = match parse_datagram(&buf[..n]) {
            Ok(part) => part
                .messages
                .first()
                .and_then(|a| a.get(&CTRL_ATTR_FAMILY_ID))
                .and_then(|a| a.0.get(..2).map(|b| u16::from_ne_bytes([b[0], b[1]])))
                .ok_or_else(|| Error::Malformed("no family id".into()))?,
            Err(Error::Kernel(-2)) => return Err(Error::NoFamily),
            Err(e) => return Err(e),
        };
        Ok(Source::Kernel {
            sock,
            family,
            record,
        })
    }

    /// A recording: a line of hex per datagram; `#` lines are comments.
    pub fn replay(text: &str) -> Result<Source, Error> {
        let mut datagrams = Vec::new();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            datagrams.push(unhex(line).ok_or_else(|| Error::Malformed("recording".into()))?);
        }
        Ok(Source::Replay(datagrams))
    }

    /// Sends dump `cmd` with `attrs` and collects every message of the answer.
    pub fn dump(&mut self, cmd: u8, attrs: &[u8]) -> Result<Vec<Attrs>, Error> {
        let mut all = Vec::new();
        match self {
            Source::Kernel {
                sock,
                family,
                record,
            } => {
                sock.write_all(&request(*family, NLM_F_DUMP, cmd, KOFI_GENL_VERSION, attrs))?;
                let mut buf = vec![0u8; 65536];
                loop {
                    let n = sock.read(&mut buf)?;
                    if let Some(r) = record {
                        writeln!(r, "{}", hex(&buf[..n]))?;
                    }
                    let part = parse_datagram(&buf[..n])?;
                    all.extend(part.messages);
                    if part.done {
                        return Ok(all);
                    }
                }
            }
            Source::Replay(datagrams) => {
                for d in datagrams.drain(..) {
                    let part = parse_datagram(&d)?;
                    all.extend(part.messages);
                    if part.done {
                        return Ok(all);
                    }
                }
                Err(Error::Malformed(
                    "the recording ends before the answer".into(),
                ))
            }
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(ty: u16, body: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&((NLMSG_HDRLEN + body.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&ty.to_ne_bytes());
        m.extend_from_slice(&[0; 10]);
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn attributes_round_trip() {
        let mut a = Vec::new();
        put_str(&mut a, 2, "sock");
        put_attr(&mut a, 1, &[]); // KOFI_A_PAD before a u64
        put_attr(&mut a, 10, &7u64.to_ne_bytes());
        let mut nest = Vec::new();
        put_attr(&mut nest, 3, &5u32.to_ne_bytes());
        put_attr(&mut a, 7 | 0x8000, &nest);
        let mut body = vec![2, 1, 0, 0];
        body.extend_from_slice(&a);
        let mut datagram = message(0x20, &body);
        datagram.extend(message(NLMSG_DONE, &0i32.to_ne_bytes()));
        let part = parse_datagram(&datagram).unwrap();
        assert!(part.done);
        let m = part.messages;
        assert_eq!(m.len(), 1);
        assert_eq!(m[0][&2].str().as_deref(), Some("sock"));
        assert_eq!(m[0][&10].u64(), Some(7));
        assert_eq!(m[0][&1], Attr(vec![]));
        assert_eq!(m[0][&7].nested().unwrap()[&3].u32(), Some(5));
    }

    #[test]
    fn errors_and_ends_are_read() {
        let err = message(NLMSG_ERROR, &(-61i32).to_ne_bytes());
        let e = parse_datagram(&err).unwrap_err();
        assert!(matches!(e, Error::Kernel(-61)));
        assert_eq!(e.to_string(), "-61 (No data available)");
        for ty in [NLMSG_DONE, NLMSG_ERROR] {
            let part = parse_datagram(&message(ty, &0i32.to_ne_bytes())).unwrap();
            assert!(part.done && part.messages.is_empty());
        }
    }

    #[test]
    fn malformed_answers_are_refused() {
        let mut m = message(0x20, &[2, 1, 0, 0, 200, 0, 2, 0]);
        assert!(matches!(parse_datagram(&m), Err(Error::Malformed(_))));
        m.truncate(10);
        assert_eq!(parse_datagram(&m).unwrap(), Part::default());
        let mut long = message(0x20, &[]);
        long[0] = 200;
        assert!(matches!(parse_datagram(&long), Err(Error::Malformed(_))));
        assert!(Source::replay("0g\n").is_err());
        let mut r = Source::replay("# nothing\n").unwrap();
        assert!(matches!(r.dump(1, &[]), Err(Error::Malformed(_))));
    }
}
