//! The failover stream's frames, inside each path's byte stream: an 8-byte header (kind,
//! three zero bytes, the body's length as a little-endian `u32`) and the body.

use std::io;

use crate::stream::setup::invalid_data;

/// Bytes of a frame's header.
pub(crate) const HEADER: usize = 8;
/// Bytes of a group token.
pub(crate) const TOKEN: usize = 16;

/// A group's token: random, sent in the hello of each of its paths.
pub(crate) type Token = [u8; TOKEN];

const DATA: u8 = 1;
const ACK: u8 = 2;
const END: u8 = 3;
const HELLO: u8 = 4;
const RESUME: u8 = 5;
const UNKNOWN: u8 = 6;
const CLOSED: u8 = 7;

/// What a hello asks of the listener.
const HELLO_NEW: u8 = 0;
const HELLO_JOIN: u8 = 1;

/// Bytes of a hello's body: the token, what it asks, the bytes received.
const HELLO_BODY: usize = TOKEN + 1 + 8;

/// A frame whose header was read: its kind and body, checked.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame<'a> {
    /// The next bytes of the stream (their offset is the bytes that came before).
    Data(&'a [u8]),
    /// The sender received every byte before this offset.
    Ack(u64),
    /// The sender's bytes end at this offset (its shutdown).
    End(u64),
    /// A path's first frame, from the connecting side: its group's token, whether it joins
    /// a group (a path of a stream that exists) or starts one, and the bytes it received.
    Hello {
        token: Token,
        join: bool,
        received: u64,
    },
    /// The answer to a hello: the bytes the listener's side received.
    Resume(u64),
    /// The answer to a hello that joins a group the listener does not know.
    Unknown,
    /// The answer to an end: the sender has every byte before this offset, and the end.
    Closed(u64),
}

/// A frame, encoded: header and body.
pub(crate) fn encode(frame: &Frame<'_>) -> Vec<u8> {
    let (kind, body): (u8, Vec<u8>) = match frame {
        Frame::Data(bytes) => (DATA, bytes.to_vec()),
        Frame::Ack(offset) => (ACK, offset.to_le_bytes().to_vec()),
        Frame::End(offset) => (END, offset.to_le_bytes().to_vec()),
        Frame::Resume(offset) => (RESUME, offset.to_le_bytes().to_vec()),
        Frame::Closed(offset) => (CLOSED, offset.to_le_bytes().to_vec()),
        Frame::Unknown => (UNKNOWN, Vec::new()),
        Frame::Hello {
            token,
            join,
            received,
        } => {
            let mut body = token.to_vec();
            body.push(if *join { HELLO_JOIN } else { HELLO_NEW });
            body.extend_from_slice(&received.to_le_bytes());
            (HELLO, body)
        }
    };
    let mut out = header(kind, body.len());
    out.extend_from_slice(&body);
    out
}

/// The header of a data frame of `len` bytes (its body goes after it).
pub(crate) fn data_header(len: usize) -> Vec<u8> {
    header(DATA, len)
}

fn header(kind: u8, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + len);
    out.extend_from_slice(&[kind, 0, 0, 0]);
    // Every body is at most a data frame's largest, which the config keeps within u32.
    out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes());
    out
}

/// The length of the frame whose header starts `bytes` (header included), checked against
/// its kind (a data frame at most `max_data` bytes of body): `Ok(None)` while the header
/// is incomplete.
pub(crate) fn frame_len(bytes: &[u8], max_data: usize) -> io::Result<Option<usize>> {
    let Some(head) = bytes.get(..HEADER) else {
        return Ok(None);
    };
    let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    let fits = match head[0] {
        DATA => (1..=max_data).contains(&len),
        ACK | END | RESUME | CLOSED => len == 8,
        HELLO => len == HELLO_BODY,
        UNKNOWN => len == 0,
        _ => false,
    };
    if head[1..4] != [0, 0, 0] || !fits {
        return Err(invalid_data(format!(
            "the failover peer sent a frame header of kind {} with {len} bytes of body \
             (kinds 1 to 7; a data frame 1 to {max_data} bytes)",
            head[0]
        )));
    }
    Ok(Some(HEADER + len))
}

/// The frame `bytes` holds whole (its length from [`frame_len`]).
pub(crate) fn decode(bytes: &[u8]) -> Frame<'_> {
    let body = &bytes[HEADER..];
    let offset = || {
        let mut word = [0; 8];
        word.copy_from_slice(&body[body.len() - 8..]);
        u64::from_le_bytes(word)
    };
    match bytes[0] {
        DATA => Frame::Data(body),
        ACK => Frame::Ack(offset()),
        END => Frame::End(offset()),
        RESUME => Frame::Resume(offset()),
        CLOSED => Frame::Closed(offset()),
        HELLO => {
            let mut token = [0; TOKEN];
            token.copy_from_slice(&body[..TOKEN]);
            Frame::Hello {
                token,
                join: body[TOKEN] == HELLO_JOIN,
                received: offset(),
            }
        }
        _ => Frame::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let frames = [
            Frame::Data(b"bytes"),
            Frame::Ack(7),
            Frame::End(u64::MAX),
            Frame::Resume(3),
            Frame::Unknown,
            Frame::Closed(5),
            Frame::Hello {
                token: [9; TOKEN],
                join: true,
                received: 42,
            },
        ];
        for frame in frames {
            let bytes = encode(&frame);
            assert_eq!(frame_len(&bytes, 64).unwrap(), Some(bytes.len()));
            assert_eq!(decode(&bytes), frame);
        }
    }

    #[test]
    fn hostile_headers_are_invalid_data() {
        let oversize = data_header(65);
        let zero = data_header(0);
        let mut bad_kind = encode(&Frame::Ack(1));
        bad_kind[0] = 9;
        let mut short_ack = encode(&Frame::Ack(1));
        short_ack[4] = 7;
        for bytes in [oversize, zero, bad_kind, short_ack] {
            let err = frame_len(&bytes, 64).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
        }
        assert_eq!(frame_len(&[DATA, 0, 0], 64).unwrap(), None);
    }
}
