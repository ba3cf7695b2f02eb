/* The set-up that the C programs of the measuring scripts share (scripts/compare-peers.d/
 * peers.c, scripts/scale.d/scale.c): open the test device, find the GID to connect from,
 * move an RC QP to INIT and from there to RTS. Set-up only: what a program measures stays
 * in the program (scale's phases time these calls, the same libibverbs calls with the same
 * attributes as before they were shared). Every function dies (perror, exit 1) on a
 * failure. Included as "../common/rdma_setup.h": the scripts' cc lines need no -I. */
#ifndef RDMA_SETUP_H
#define RDMA_SETUP_H

#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void die(const char *what) { perror(what); exit(1); }

/* A PD on the device IBVERBS_TEST_DEVICE names (default rxe0); its context is pd->context. */
static inline struct ibv_pd *open_test_device(void) {
	const char *name = getenv("IBVERBS_TEST_DEVICE");
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	if (!name) name = "rxe0";
	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name)) ctx = ibv_open_device(list[i]);
	if (!ctx) die("ibv_open_device");
	if (!(pd = ibv_alloc_pd(ctx))) die("ibv_alloc_pd");
	return pd;
}

/* Port 1's GID at the index the environment variable env names (default 0), into gid:
 * the index. */
static inline int test_gid(struct ibv_context *ctx, const char *env, union ibv_gid *gid) {
	const char *value = getenv(env);
	int index = value ? atoi(value) : 0;
	if (ibv_query_gid(ctx, 1, index, gid)) die("ibv_query_gid");
	return index;
}

/* RESET -> INIT on port 1, local and remote writes allowed. */
static inline void qp_to_init(struct ibv_qp *qp) {
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE };
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS)) die("INIT");
}

/* Where an RC QP connects to and with what: the rest is fixed (RNR timer 12, hop limit 1,
 * port 1, timeout 14, 7 retries and RNR retries, PSNs 0). */
struct qp_path {
	uint32_t dest_qp_num;
	const union ibv_gid *gid; /* the destination's, on the same port */
	int gid_index;            /* the source GID */
	enum ibv_mtu mtu;
	uint8_t max_dest_rd_atomic, max_rd_atomic;
};

/* INIT -> RTR -> RTS along path. */
static inline void qp_to_rts(struct ibv_qp *qp, const struct qp_path *path) {
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RTR };
	attr.path_mtu = path->mtu;
	attr.dest_qp_num = path->dest_qp_num;
	attr.max_dest_rd_atomic = path->max_dest_rd_atomic;
	attr.min_rnr_timer = 12;
	attr.ah_attr.is_global = 1;
	attr.ah_attr.grh.dgid = *path->gid;
	attr.ah_attr.grh.hop_limit = 1;
	attr.ah_attr.grh.sgid_index = path->gid_index;
	attr.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER)) die("RTR");
	memset(&attr, 0, sizeof attr);
	attr.qp_state = IBV_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = path->max_rd_atomic;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) die("RTS");
}

#endif
