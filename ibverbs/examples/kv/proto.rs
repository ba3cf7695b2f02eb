//! The wire format: requests and responses are small sends of at most [`MSG`] bytes,
//! little-endian. Values up to [`INLINE`] bytes travel in them; larger ones by RDMA in
//! the client's value region, which every request names.

use rdma_verbs::RemoteMemory;

/// The size of every receive buffer, so the largest message.
pub const MSG: usize = 512;
/// Values up to this many bytes travel inside the messages.
pub const INLINE: usize = 256;
/// The longest key.
pub const MAX_KEY: usize = 64;
/// The largest value the server stores.
pub const MAX_VALUE: usize = 64 * 1024;
/// Requests a client has in flight on a connection at most (the server posts this many
/// receives, and one more for [`Op::Done`]).
pub const MAX_DEPTH: usize = 16;

/// The request header: op, key length, tag, value length, region address, rkey, length.
const REQ_HEADER: usize = 32;
/// The response header: status, tag, value length.
const RESP_HEADER: usize = 12;

/// What a client asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// The value of a key: inline in the response, or RDMA-written into the region.
    Get = 1,
    /// Stores a value: inline in the request, or RDMA-read from the region.
    Put = 2,
    /// The last message of a client that was told [`Status::Shutdown`]: it sends nothing
    /// more, and the server disconnects once it has answered everything before it.
    Done = 3,
}

/// What the server answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Done (a get's value follows).
    Ok = 0,
    /// A get of a key never put.
    NotFound = 1,
    /// Not an answer: the server is shutting down; send [`Op::Done`] and nothing more.
    Shutdown = 2,
    /// A malformed request (a key or value too long, a region too small).
    Invalid = 3,
}

/// A request as read from a receive buffer.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub op: Op,
    /// Echoed in the response.
    pub tag: u32,
    pub key: Vec<u8>,
    /// The value's length (a put's, or for a get 0).
    pub len: usize,
    /// The client's value region for this request.
    pub region: RemoteMemory,
    /// A put's value of at most [`INLINE`] bytes.
    pub inline: Vec<u8>,
}

/// A response as read from a receive buffer.
#[derive(Debug, PartialEq, Eq)]
pub struct Response {
    pub status: Status,
    pub tag: u32,
    /// The value's length (of a get).
    pub len: usize,
    /// A get's value of at most [`INLINE`] bytes.
    pub inline: Vec<u8>,
}

fn u32_at(buf: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(buf[at..at + 4].try_into().expect("4 bytes"))
}

impl Request {
    /// The message's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut buf = vec![self.op as u8, 0];
        buf.extend((self.key.len() as u16).to_le_bytes());
        buf.extend(self.tag.to_le_bytes());
        buf.extend((self.len as u32).to_le_bytes());
        buf.extend(self.region.rkey.to_le_bytes());
        buf.extend(self.region.addr.to_le_bytes());
        buf.extend((self.region.len as u32).to_le_bytes());
        buf.extend([0; 4]);
        buf.extend(&self.key);
        buf.extend(&self.inline);
        buf
    }

    /// Parses the `len` bytes a receive got.
    pub fn decode(buf: &[u8]) -> Result<Request, String> {
        if buf.len() < REQ_HEADER {
            return Err(format!("a request of {} bytes", buf.len()));
        }
        let op = match buf[0] {
            1 => Op::Get,
            2 => Op::Put,
            3 => Op::Done,
            other => return Err(format!("unknown op {other}")),
        };
        let key_len = usize::from(u16::from_le_bytes([buf[2], buf[3]]));
        let len = u32_at(buf, 8) as usize;
        let inline_len = if op == Op::Put && len <= INLINE {
            len
        } else {
            0
        };
        if key_len > MAX_KEY || buf.len() != REQ_HEADER + key_len + inline_len {
            return Err(format!("a request of {} bytes, key {key_len}", buf.len()));
        }
        let key_end = REQ_HEADER + key_len;
        Ok(Request {
            op,
            tag: u32_at(buf, 4),
            key: buf[REQ_HEADER..key_end].to_vec(),
            len,
            region: RemoteMemory::new(
                u64::from_le_bytes(buf[16..24].try_into().expect("8 bytes")),
                u32_at(buf, 24).into(),
                u32_at(buf, 12),
            ),
            inline: buf[key_end..].to_vec(),
        })
    }
}

impl Response {
    /// The message's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut buf = vec![self.status as u8, 0, 0, 0];
        buf.extend(self.tag.to_le_bytes());
        buf.extend((self.len as u32).to_le_bytes());
        buf.extend(&self.inline);
        buf
    }

    /// Parses the bytes a receive got.
    pub fn decode(buf: &[u8]) -> Result<Response, String> {
        if buf.len() < RESP_HEADER {
            return Err(format!("a response of {} bytes", buf.len()));
        }
        let status = match buf[0] {
            0 => Status::Ok,
            1 => Status::NotFound,
            2 => Status::Shutdown,
            3 => Status::Invalid,
            other => return Err(format!("unknown status {other}")),
        };
        let len = u32_at(buf, 8) as usize;
        let inline_len = if status == Status::Ok && len <= INLINE {
            len
        } else {
            0
        };
        if buf.len() != RESP_HEADER + inline_len {
            return Err(format!("a response of {} bytes, value {len}", buf.len()));
        }
        Ok(Response {
            status,
            tag: u32_at(buf, 4),
            len,
            inline: buf[RESP_HEADER..].to_vec(),
        })
    }
}

impl Response {
    /// A response of `status` to `tag`, with no value.
    pub fn new(status: Status, tag: u32) -> Response {
        Response {
            status,
            tag,
            len: 0,
            inline: Vec::new(),
        }
    }
}
