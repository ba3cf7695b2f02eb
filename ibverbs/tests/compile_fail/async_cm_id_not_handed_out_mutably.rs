// (features `tokio`, `cm`) An `AsyncCmId`'s `CmId` is never handed out mutably (`id_mut` is
// private; `AsyncCmId::create_qp` and `take_qp` are the calls that need it): a `&mut CmId`
// could be swapped with an id of another channel, whose events this id's channel never
// sees, so its futures would wait for them forever.
use rdma_verbs::tokio::cm::AsyncCmId;

fn swap(mut a: AsyncCmId, mut b: AsyncCmId) {
    std::mem::swap(a.id_mut(), b.id_mut());
}

fn main() {}
