//! Requests in flight on one agent, their answers taken in the order they were sent
//! (libibnetdisc's SMP engine keeps two in flight the same way).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::port::{next_tid, Received, UmadBuf, TID_OFFSET};
use crate::{Address, Agent, Error, Result, MAD_SIZE};

/// Requests sent on an [`Agent`] without waiting for each answer ([`Agent::pipeline`]):
/// [`send`](Pipeline::send) puts one on the wire, [`answer`](Pipeline::answer) waits for the
/// answer to the oldest one in flight. Answers to the others that arrive meanwhile are kept
/// for them; a request unanswered within its timeout is sent again (with a new transaction
/// ID) until its retries are spent. Requests still in flight when it is dropped are left:
/// their answers, if any come, are dropped by later receivers.
#[derive(Debug)]
pub struct Pipeline<'a, 'p> {
    agent: &'a Agent<'p>,
    timeout: Duration,
    retries: u32,
    flight: VecDeque<Flight>,
    send: UmadBuf,
    recv: UmadBuf,
}

/// One request in flight.
#[derive(Debug)]
struct Flight {
    /// The MAD, with the TID of its last try.
    mad: [u8; MAD_SIZE],
    to: Address,
    /// The low 32 bits of the TID of its last try.
    tid: u32,
    /// Times sent.
    tries: u32,
    /// When its last try times out.
    deadline: Instant,
    state: State,
}

#[derive(Debug)]
enum State {
    Waiting,
    /// Handed back by the kernel as timed out.
    HandedBack,
    Answered(Box<[u8; MAD_SIZE]>),
}

impl<'a, 'p> Pipeline<'a, 'p> {
    pub(crate) fn new(agent: &'a Agent<'p>, timeout: Duration, retries: u32) -> Self {
        Pipeline {
            agent,
            timeout,
            retries,
            flight: VecDeque::new(),
            send: UmadBuf::new(),
            recv: UmadBuf::new(),
        }
    }

    /// Sends the request `mad` to `to` behind those in flight (`umad_send`); its TID field is
    /// set here, from a process-wide counter.
    pub fn send(&mut self, mad: &[u8; MAD_SIZE], to: &Address) -> Result<()> {
        let mut flight = Flight {
            mad: *mad,
            to: *to,
            tid: 0,
            tries: 0,
            deadline: Instant::now(),
            state: State::Waiting,
        };
        self.transmit(&mut flight)?;
        self.flight.push_back(flight);
        Ok(())
    }

    /// How many requests are in flight (sent, their answers not yet taken).
    pub fn len(&self) -> usize {
        self.flight.len()
    }

    /// Whether no request is in flight.
    pub fn is_empty(&self) -> bool {
        self.flight.is_empty()
    }

    /// The answer to the oldest request in flight, which leaves the pipeline: the first
    /// response received with its transaction ID, or [`Error::Timeout`] when none came on
    /// any try. `None` when nothing is in flight.
    pub fn answer(&mut self) -> Option<Result<[u8; MAD_SIZE]>> {
        let mut front = self.flight.pop_front()?;
        Some(self.await_answer(&mut front))
    }

    /// Sends `flight` (again), with a new TID.
    fn transmit(&mut self, flight: &mut Flight) -> Result<()> {
        flight.tid = next_tid();
        flight.mad[TID_OFFSET + 4..TID_OFFSET + 8].copy_from_slice(&flight.tid.to_be_bytes());
        self.send.mad_mut().copy_from_slice(&flight.mad);
        self.agent.send(&mut self.send, &flight.to, self.timeout)?;
        flight.tries = flight.tries.saturating_add(1);
        flight.deadline = Instant::now() + self.timeout;
        flight.state = State::Waiting;
        Ok(())
    }

    /// Receives until `front` is answered, or its tries are spent.
    fn await_answer(&mut self, front: &mut Flight) -> Result<[u8; MAD_SIZE]> {
        loop {
            let left = front.deadline.saturating_duration_since(Instant::now());
            match &front.state {
                State::Answered(mad) => return Ok(**mad),
                State::Waiting if !left.is_zero() => {}
                State::Waiting | State::HandedBack => {
                    if front.tries > self.retries {
                        return Err(Error::Timeout { tries: front.tries });
                    }
                    self.transmit(front)?;
                    continue;
                }
            }
            let (tid, state) = match self.agent.receive(&mut self.recv, left)? {
                Received::Nothing | Received::Other => continue,
                Received::Answer(tid) => (tid, State::Answered(Box::new(*self.recv.mad_mut()))),
                Received::HandedBack(tid) => (tid, State::HandedBack),
            };
            let mut known = std::iter::once(&mut *front).chain(self.flight.iter_mut());
            if let Some(flight) = known.find(|f| f.tid == tid) {
                if !matches!(flight.state, State::Answered(_)) {
                    flight.state = state;
                }
            }
        }
    }
}
