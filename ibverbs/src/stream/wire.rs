//! The stream's wire format: the hello each side sends in its connect or accept private
//! data, and the header in front of every message.

use std::fmt;

/// Bytes of the header in front of every message.
pub(crate) const HEADER: usize = 8;

/// The hello's first bytes: "RVS" and the protocol version.
const MAGIC: [u8; 4] = *b"RVS\x01";

/// Bytes of an encoded [`Hello`].
pub(crate) const HELLO_LEN: usize = 12;

/// The largest receive slot a peer may declare (and this side may use): 16 MiB.
pub(crate) const MAX_SLOT: u32 = 16 << 20;
/// The most data slots a peer may declare.
pub(crate) const MAX_DATA_SLOTS: u16 = 1024;
/// The most control slots a peer may declare.
pub(crate) const MAX_CTRL_SLOTS: u16 = 64;

/// What a side tells its peer of its receive ring: each receive is `slot` bytes (header
/// included), and the peer may have `data` data messages and `ctrl` control messages
/// outstanding to it (`data + ctrl` receives are posted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hello {
    pub(crate) slot: u32,
    pub(crate) data: u16,
    pub(crate) ctrl: u16,
}

impl Hello {
    pub(crate) fn encode(self) -> [u8; HELLO_LEN] {
        let mut out = [0; HELLO_LEN];
        out[..4].copy_from_slice(&MAGIC);
        out[4..8].copy_from_slice(&self.slot.to_le_bytes());
        out[8..10].copy_from_slice(&self.data.to_le_bytes());
        out[10..12].copy_from_slice(&self.ctrl.to_le_bytes());
        out
    }

    /// The hello in a peer's private data (which the CM may pad with zeros), or why it is
    /// none this side accepts.
    pub(crate) fn decode(private_data: &[u8]) -> Result<Hello, String> {
        let Some(bytes) = private_data.get(..HELLO_LEN) else {
            return Err(format!(
                "the peer's private data has {} bytes, not a stream hello of {HELLO_LEN}",
                private_data.len()
            ));
        };
        if bytes[..4] != MAGIC {
            return Err(format!(
                "the peer's private data does not start with the stream hello {MAGIC:?} \
                 (not a stream peer, or another protocol version): {:?}",
                &bytes[..4]
            ));
        }
        let word = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
        let hello = Hello {
            slot: u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
            data: word(8),
            ctrl: word(10),
        };
        hello
            .check()
            .map(|()| hello)
            .map_err(|e| format!("the peer's hello: {e}"))
    }

    /// Whether the ring is one a side may declare.
    pub(crate) fn check(self) -> Result<(), String> {
        let min = HEADER as u32 + 1;
        if !(min..=MAX_SLOT).contains(&self.slot) {
            return Err(format!(
                "slot size {} is out of range {min}..={MAX_SLOT}",
                self.slot
            ));
        }
        if !(1..=MAX_DATA_SLOTS).contains(&self.data) {
            return Err(format!(
                "{} data slots is out of range 1..={MAX_DATA_SLOTS}",
                self.data
            ));
        }
        // Four at least: with fewer, two peers that each used all of the other's control
        // credits could both wait for a control message to return them.
        if !(4..=MAX_CTRL_SLOTS).contains(&self.ctrl) {
            return Err(format!(
                "{} control slots is out of range 4..={MAX_CTRL_SLOTS}",
                self.ctrl
            ));
        }
        Ok(())
    }
}

/// What a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Bytes of the stream (at least one), on a data credit.
    Data = 1,
    /// The end of the sender's bytes (no payload), on a control credit.
    Fin = 2,
    /// Credits only (no payload), on a control credit.
    Ctrl = 3,
}

/// The header of a message: its kind and the receives its sender reposted since its last
/// message (the credits it returns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) kind: Kind,
    pub(crate) data_credits: u32,
    pub(crate) ctrl_credits: u16,
}

impl Header {
    pub(crate) fn encode(self) -> [u8; HEADER] {
        let mut out = [0; HEADER];
        out[..4].copy_from_slice(&self.data_credits.to_le_bytes());
        out[4..6].copy_from_slice(&self.ctrl_credits.to_le_bytes());
        out[6] = self.kind as u8;
        out
    }

    pub(crate) fn decode(bytes: [u8; HEADER]) -> Result<Header, BadHeader> {
        let kind = match bytes[6] {
            1 => Kind::Data,
            2 => Kind::Fin,
            3 => Kind::Ctrl,
            _ => return Err(BadHeader(bytes)),
        };
        if bytes[7] != 0 {
            return Err(BadHeader(bytes));
        }
        Ok(Header {
            kind,
            data_credits: u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            ctrl_credits: u16::from_le_bytes([bytes[4], bytes[5]]),
        })
    }
}

/// A header this side cannot read.
#[derive(Debug)]
pub(crate) struct BadHeader([u8; HEADER]);

impl fmt::Display for BadHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a message header of unknown kind: {:02x?}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_round_trips_and_refuses_what_is_out_of_range() {
        let hello = Hello {
            slot: 65536,
            data: 16,
            ctrl: 4,
        };
        let mut padded = hello.encode().to_vec();
        padded.resize(56, 0); // the CM pads private data
        assert_eq!(Hello::decode(&padded), Ok(hello));
        assert!(Hello::decode(&padded[..11])
            .unwrap_err()
            .contains("11 bytes"));
        let mut other = padded.clone();
        other[3] = 2;
        assert!(Hello::decode(&other)
            .unwrap_err()
            .contains("protocol version"));
        for bad in [
            Hello { slot: 8, ..hello },
            Hello {
                slot: MAX_SLOT + 1,
                ..hello
            },
            Hello { data: 0, ..hello },
            Hello {
                data: MAX_DATA_SLOTS + 1,
                ..hello
            },
            Hello { ctrl: 3, ..hello },
            Hello {
                ctrl: MAX_CTRL_SLOTS + 1,
                ..hello
            },
        ] {
            let err = Hello::decode(&bad.encode()).unwrap_err();
            assert!(err.contains("out of range"), "{err}");
        }
    }

    #[test]
    fn header_round_trips_and_refuses_unknown_kinds() {
        for kind in [Kind::Data, Kind::Fin, Kind::Ctrl] {
            let header = Header {
                kind,
                data_credits: 0x0102_0304,
                ctrl_credits: 7,
            };
            assert_eq!(Header::decode(header.encode()).unwrap(), header);
        }
        let mut bytes = Header {
            kind: Kind::Data,
            data_credits: 1,
            ctrl_credits: 0,
        }
        .encode();
        bytes[6] = 9;
        assert!(Header::decode(bytes).is_err());
        bytes[6] = 1;
        bytes[7] = 1;
        assert!(Header::decode(bytes).is_err());
    }
}
