//! Fork support (`ibv_fork_init`, `ibv_is_fork_initialized`) and thread and parent domains
//! (`ibv_alloc_td`, `ibv_alloc_parent_domain`), which rxe does not have: there they are
//! typed errors.

use rdma_verbs_test_kit::{assert_clean_drops, open};

use rdma_verbs::{fork_init, fork_status, Error, ForkStatus, QpType};

use crate::common::ALL;

#[test]
fn fork_init_is_unneeded_on_current_kernels() {
    // Both guest kernels (6.1, 7.3) keep pinned pages with the parent across fork().
    assert_eq!(fork_status(), ForkStatus::Unneeded);
    // Even after memory was registered (rdma-core 44's ibv_fork_init would say EINVAL).
    let pd = open().alloc_pd().unwrap();
    let mr = pd.alloc_mr(64, ALL).unwrap();
    fork_init().unwrap();
    drop((mr, pd));
    assert_eq!(fork_status(), ForkStatus::Unneeded);
    assert_clean_drops();
}

#[test]
fn thread_and_parent_domains_or_a_typed_error() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    match ctx.alloc_td() {
        Ok(td) => {
            // SAFETY: the objects of the parent domain are used by this thread only.
            let parent = unsafe { pd.alloc_parent_domain_with_td(&td) }.unwrap();
            let cq = ctx.create_cq(4, None).unwrap();
            let qp = parent.create_qp(QpType::Rc, &cq, &cq).build().unwrap();
            drop((qp, parent, td));
            // A thread domain of another context.
            let other = open().alloc_td().unwrap();
            // SAFETY: nothing is made in the domain (it is refused).
            let got = unsafe { pd.alloc_parent_domain_with_td(&other) };
            assert!(matches!(got, Err(Error::Mismatch { .. })), "{got:?}");
        }
        Err(Error::Unsupported { what, missing }) => {
            assert!(what.contains("ibv_alloc_td"), "{what}");
            eprintln!("ibv_alloc_td: {}", Error::Unsupported { what, missing });
        }
        Err(other) => panic!("ibv_alloc_td: {other:?}"),
    }
    match pd.alloc_parent_domain() {
        Ok(parent) => {
            let cq = ctx.create_cq(4, None).unwrap();
            let mr = parent.alloc_mr(64, ALL).unwrap();
            drop((mr, cq, parent));
        }
        Err(Error::Unsupported { what, missing }) => {
            assert!(what.contains("ibv_alloc_parent_domain"), "{what}");
            eprintln!(
                "ibv_alloc_parent_domain: {}",
                Error::Unsupported { what, missing }
            );
        }
        Err(other) => panic!("ibv_alloc_parent_domain: {other:?}"),
    }
    drop(pd);
    assert_clean_drops();
}
