// SPDX-License-Identifier: GPL-2.0

//! Endpoint names for connectionless endpoints: IPv4 and IPv6 socket
//! addresses in a canonical form (unused fields zeroed), so that two names
//! of one endpoint compare equal byte for byte. Pure logic, tested on the
//! host.

/// `AF_INET`.
pub(crate) const AF_INET: u16 = 2;
/// `AF_INET6`.
pub(crate) const AF_INET6: u16 = 10;
/// Bytes of `struct sockaddr_in`.
pub(crate) const SIN_LEN: usize = 16;
/// Bytes of `struct sockaddr_in6`.
pub(crate) const SIN6_LEN: usize = 28;

/// Why bytes are not a name.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) enum BadName {
    /// Fewer bytes than the family's sockaddr.
    Short,
    /// Neither AF_INET nor AF_INET6.
    Family,
}

/// A canonical IPv4 or IPv6 socket address.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Name {
    len: u8,
    bytes: [u8; SIN6_LEN],
}

impl Name {
    /// The name at the start of `raw` (a sockaddr_in or sockaddr_in6, its
    /// family in host order as the kernel keeps it).
    pub(crate) fn parse(raw: &[u8]) -> Result<Name, BadName> {
        if raw.len() < 2 {
            return Err(BadName::Short);
        }
        let family = u16::from_ne_bytes([raw[0], raw[1]]);
        let mut bytes = [0u8; SIN6_LEN];
        let len = match family {
            AF_INET => {
                if raw.len() < SIN_LEN {
                    return Err(BadName::Short);
                }
                // Family, port and address; sin_zero stays zero.
                bytes[..8].copy_from_slice(&raw[..8]);
                SIN_LEN
            }
            AF_INET6 => {
                if raw.len() < SIN6_LEN {
                    return Err(BadName::Short);
                }
                // Family, port, address and scope; the flow label is not
                // part of the name.
                bytes[..4].copy_from_slice(&raw[..4]);
                bytes[8..].copy_from_slice(&raw[8..SIN6_LEN]);
                SIN6_LEN
            }
            _ => return Err(BadName::Family),
        };
        Ok(Name {
            len: len as u8,
            bytes,
        })
    }

    /// The sockaddr's bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// The host part: the family and the IP address, without the port.
    fn host(&self) -> &[u8] {
        if self.len as usize == SIN_LEN {
            &self.bytes[4..8]
        } else {
            &self.bytes[8..24]
        }
    }

    /// Whether `other` names an endpoint on the same host (same family and
    /// IP address; any port).
    pub(crate) fn same_host(&self, other: &Name) -> bool {
        self.len == other.len && self.host() == other.host()
    }

    /// Whether the address is the wildcard (0.0.0.0 or ::), which no peer
    /// can reach.
    pub(crate) fn is_wildcard(&self) -> bool {
        self.host().iter().all(|b| *b == 0)
    }
}
