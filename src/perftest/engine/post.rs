//! Building and posting work requests: one request builder for every verb, the posts of the
//! bandwidth loops (single requests whose addresses cycle, or fixed post lists) and the
//! receives of the send tests.

use rdma_verbs::{AddressHandle, RecvRequest, RemoteMemory, SendRequest, Sge};

use super::Plan;
use crate::perftest::rdma::{Queues, GRH};
use crate::perftest::types::{AtomicOp, Ctx as _, Result, Verb};

/// The peer's side of one QP pair, as the requests address it: the buffer its RDMA
/// requests target and the QP its UD sends go to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Target {
    /// Address of the peer's buffer.
    pub vaddr: u64,
    /// Its remote key.
    pub rkey: u32,
    /// The peer's QP number.
    pub qpn: u32,
    /// The peer QP's Q_Key (UD).
    pub qkey: u32,
}

impl Target {
    /// The `len` bytes at `offset` into the buffer, as the target of RDMA requests. The
    /// address wraps around, as perftest's pointer arithmetic: whatever address the peer
    /// sent, it is the peer's device that rejects a bad one.
    #[inline]
    pub fn remote(&self, offset: u64, len: u64) -> RemoteMemory {
        RemoteMemory::new(self.vaddr.wrapping_add(offset), len, self.rkey)
    }
}

/// One work request of a [`Plan`] to a [`Target`]: the plan's verb, size, inline and
/// atomic operation, with the QP (its index is the work request ID), the offset into the
/// peer's buffer, the UD address and the signaling as setters.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    plan: &'a Plan,
    target: Target,
    qp: usize,
    offset: usize,
    ah: Option<&'a AddressHandle>,
    signaled: bool,
}

impl<'a> Request<'a> {
    /// A request of `plan` to `target` from QP 0, at offset 0, unsignaled, not UD.
    #[inline]
    pub fn new(plan: &'a Plan, target: Target) -> Self {
        Request {
            plan,
            target,
            qp: 0,
            offset: 0,
            ah: None,
            signaled: false,
        }
    }

    /// Posted on QP `q` (the work request ID).
    #[inline]
    pub fn qp(mut self, q: usize) -> Self {
        self.qp = q;
        self
    }

    /// At `offset` into the peer's buffer.
    #[inline]
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }

    /// UD: sent through `ah` (if any) to the target's QP.
    #[inline]
    pub fn ud(mut self, ah: Option<&'a AddressHandle>) -> Self {
        self.ah = ah;
        self
    }

    /// Whether it asks for a completion.
    #[inline]
    pub fn signaled(mut self, signaled: bool) -> Self {
        self.signaled = signaled;
        self
    }

    /// The work request, from the local bytes of `sge`.
    #[inline]
    pub fn build(self, sge: &'a [Sge<'a>]) -> SendRequest<'a> {
        let plan = self.plan;
        let target = self.target.remote(self.offset as u64, plan.size);
        let id = self.qp as u64;
        let mut wr = match plan.verb {
            Verb::Send => SendRequest::send(id, sge),
            Verb::Write => SendRequest::write(id, sge, target),
            Verb::Read => SendRequest::read(id, sge, target),
            Verb::Atomic => match plan.atomic {
                AtomicOp::FetchAndAdd => SendRequest::fetch_add(id, &sge[0], target, 1),
                AtomicOp::CmpAndSwap => SendRequest::compare_swap(id, &sge[0], target, 0, 0),
            },
        };
        if let Some(ah) = self.ah {
            wr = wr.ud(ah, self.target.qpn, self.target.qkey);
        }
        if self.signaled {
            wr = wr.signaled();
        }
        if plan.inline {
            wr = wr.inline();
        }
        wr
    }
}

/// The scatter/gather entry of QP `q`'s send area at `offset`, `plan.size` bytes.
#[inline]
pub fn send_sge<'m>(
    plan: &Plan,
    queues: &'m Queues,
    q: usize,
    offset: usize,
) -> rdma_verbs::Result<Sge<'m>> {
    let local = queues.layout.send_offset(q) + offset;
    queues.mr.sge(local..local + plan.size as usize)
}

/// The scatter/gather entries of post lists: per QP, one per list entry (perftest fills
/// its lists once, with fixed addresses).
pub fn list_sges<'m>(plan: &Plan, queues: &'m Queues) -> Result<Vec<Vec<Sge<'m>>>> {
    if plan.post_list == 1 {
        return Ok(Vec::new());
    }
    (0..queues.qps.len())
        .map(|q| {
            (0..plan.post_list)
                .map(|j| send_sge(plan, queues, q, queues.layout.cycle(plan.size, j)))
                .collect::<rdma_verbs::Result<Vec<_>>>()
        })
        .collect::<rdma_verbs::Result<_>>()
        .ctx("building the post lists")
}

/// Posts the sends of a bandwidth loop: single requests whose addresses cycle with the
/// post count, or the same lists every time.
pub struct Poster<'a> {
    plan: &'a Plan,
    queues: &'a Queues,
    targets: &'a [Target],
    lists: Vec<Vec<SendRequest<'a>>>,
}

impl<'a> Poster<'a> {
    /// Posts `plan`'s requests on `queues` to `targets` (one per QP), with the post lists
    /// of `sges` ([`list_sges`]).
    pub fn new(
        plan: &'a Plan,
        queues: &'a Queues,
        targets: &'a [Target],
        sges: &'a [Vec<Sge<'a>>],
    ) -> Self {
        let lists = sges
            .iter()
            .enumerate()
            .map(|(q, sges)| {
                (0..sges.len())
                    .map(|j| {
                        Request::new(plan, targets[q])
                            .qp(q)
                            .offset(queues.layout.cycle(plan.size, j as u64))
                            .ud(queues.ahs.get(q))
                            .signaled((j as u64 + 1) % plan.cq_mod == 0)
                            .build(&sges[j..=j])
                    })
                    .collect()
            })
            .collect();
        Poster {
            plan,
            queues,
            targets,
            lists,
        }
    }

    /// Posts post `k` of QP `q` (`post_list` requests).
    #[inline]
    pub fn post(&mut self, q: usize, k: u64) -> Result<()> {
        if let Some(list) = self.lists.get_mut(q) {
            return self.queues.qps[q]
                .post_send(list)
                .ctx(format_args!("Couldn't post send: qp {q} scnt={k}"));
        }
        let plan = self.plan;
        let off = self.queues.layout.cycle(plan.size, k);
        let sge = [send_sge(plan, self.queues, q, off).ctx("building the scatter/gather entry")?];
        let mut wr = [Request::new(plan, self.targets[q])
            .qp(q)
            .offset(off)
            .ud(self.queues.ahs.get(q))
            .signaled(plan.signaled(k))
            .build(&sge)];
        self.queues.qps[q]
            .post_send(&mut wr)
            .ctx(format_args!("Couldn't post send: qp {q} scnt={k}"))
    }
}

/// Posts receive `k` of QP `q` for messages of `size` bytes.
pub fn post_recv(queues: &Queues, q: usize, k: u64, size: u64) -> Result<()> {
    let layout = &queues.layout;
    let grh = if layout.ud { GRH as u64 } else { 0 };
    let off = if size + grh <= layout.cycle_buffer as u64 / 2 {
        layout.cycle(size, k)
    } else {
        0
    };
    let start = layout.recv_buffer(q) + off;
    let sge = [queues
        .mr
        .sge(start..start + (size + grh) as usize)
        .ctx("building the receive entry")?];
    queues.qps[q]
        .post_recv(&mut [RecvRequest::new(q as u64, &sge)])
        .ctx(format_args!("Couldn't post recv Qp={q}"))
}

/// Posts `count` receives on every QP for messages of `size` (perftest's
/// `ctx_set_recv_wqes`); bandwidth tests spread them over the cycle buffer.
pub fn post_receives(queues: &Queues, size: u64, count: u64, spread: bool) -> Result<()> {
    for q in 0..queues.qps.len() {
        for k in 0..count {
            post_recv(queues, q, if spread { k } else { 0 }, size)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_targets_wrap() {
        let r = Target {
            vaddr: u64::MAX,
            rkey: 7,
            ..Target::default()
        };
        // This overflowed: a peer decides the address.
        let t = r.remote(64, 8);
        assert_eq!((t.addr, t.len, t.rkey), (63, 8, 7));
    }
}
