/* The C baseline of scripts/compare-peers: each operation through plain libibverbs calls,
 * checking every return code as a careful C caller would. Usage: c OP N (OP as in the
 * script's rows). Only the measured_* functions are counted (callgrind --toggle-collect).
 * The CQs and QPs are extended ones (ibv_create_cq_ex, ibv_create_qp_ex), so that the
 * operations through ibv_post_send / ibv_poll_cq and through ibv_wr_* (wr_*) /
 * ibv_start_poll (ex_*) run on the same objects. Laid out as the Rust programs are: the pair
 * (setup), the measured functions, then the frame that frame.rs is for them (the rows, the
 * loop, the output). */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/rdma_setup.h"

#define NOINLINE __attribute__((noinline))

static struct ibv_pd *pd;
static struct ibv_cq_ex *a_cqx;
static struct ibv_cq *a_cq, *b_cq;
static struct ibv_qp *a, *b;
static struct ibv_qp_ex *ax;
static struct ibv_mr *src, *dst;
static char src_buf[64], dst_buf[64];

static struct ibv_qp *make_qp(struct ibv_cq *cq) {
	struct ibv_qp_init_attr_ex init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(pd->context, &init);
	if (!qp) die("ibv_create_qp");
	return qp;
}

/* To RTS, connected to peer (path MTU 1024, one read/atomic in flight each way). */
static void connect_qp(struct ibv_qp *qp, struct ibv_qp *peer, union ibv_gid *gid, int index) {
	struct qp_path path = { .dest_qp_num = peer->qp_num, .gid = gid, .gid_index = index,
		.mtu = IBV_MTU_1024, .max_dest_rd_atomic = 1, .max_rd_atomic = 1 };
	qp_to_init(qp);
	qp_to_rts(qp, &path);
}

static void setup(void) {
	union ibv_gid gid;
	pd = open_test_device();
	struct ibv_context *ctx = pd->context;
	struct ibv_cq_init_attr_ex cq_attr = { .cqe = 64 };
	struct ibv_cq_ex *b_cqx;
	if (!(a_cqx = ibv_create_cq_ex(ctx, &cq_attr))) die("ibv_create_cq_ex");
	if (!(b_cqx = ibv_create_cq_ex(ctx, &cq_attr))) die("ibv_create_cq_ex");
	a_cq = ibv_cq_ex_to_cq(a_cqx);
	b_cq = ibv_cq_ex_to_cq(b_cqx);
	a = make_qp(a_cq);
	b = make_qp(b_cq);
	if (!(ax = ibv_qp_to_qp_ex(a))) die("ibv_qp_to_qp_ex");
	int gid_index = test_gid(ctx, "PEERS_GID_INDEX", &gid);
	connect_qp(a, b, &gid, gid_index);
	connect_qp(b, a, &gid, gid_index);
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	if (!(src = ibv_reg_mr(pd, src_buf, 64, access))) die("ibv_reg_mr");
	if (!(dst = ibv_reg_mr(pd, dst_buf, 64, access))) die("ibv_reg_mr");
}

NOINLINE int measured_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n) {
	return ibv_poll_cq(cq, n, wc);
}

/* Reads every ready completion of an extended CQ: how many succeeded. Steps by
 * ibv_end_poll + ibv_start_poll, not ibv_next_poll: rxe's ibv_next_poll (rdma-core 44)
 * corrupts the CQ when it finds none, and this loop reads until none is left. */
NOINLINE int measured_poll_ex(struct ibv_cq_ex *cq) {
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	int n = 0, rc;
	while (!(rc = ibv_start_poll(cq, &attr))) {
		n += cq->status == IBV_WC_SUCCESS;
		ibv_end_poll(cq);
	}
	return rc == ENOENT ? n : -1;
}

/* Builds count RDMA writes of sge (the last signaled) with ibv_wr_* and posts them. rxe's
 * ibv_wr_set_inline_data leaves IBV_SEND_INLINE out of the request: flags name it. */
NOINLINE int measured_wr_write(struct ibv_sge *sge, int count, int flags) {
	ibv_wr_start(ax);
	for (int i = 0; i < count; i++) {
		ax->wr_id = i;
		ax->wr_flags = flags | (i == count - 1 ? IBV_SEND_SIGNALED : 0);
		ibv_wr_rdma_write(ax, dst->rkey, (uintptr_t)dst_buf);
		if (flags & IBV_SEND_INLINE)
			ibv_wr_set_inline_data(ax, (void *)(uintptr_t)sge->addr, sge->length);
		else
			ibv_wr_set_sge(ax, sge->lkey, sge->addr, sge->length);
	}
	return ibv_wr_complete(ax);
}

/* Builds and posts a receive on b, then a signaled send from a with ibv_wr_*. */
NOINLINE int measured_wr_send_recv(struct ibv_sge *sge, struct ibv_sge *rsge) {
	struct ibv_recv_wr rwr = { .wr_id = 0, .sg_list = rsge, .num_sge = 1 }, *rbad;
	if (ibv_post_recv(b, &rwr, &rbad)) return -1;
	ibv_wr_start(ax);
	ax->wr_id = 0;
	ax->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(ax);
	ibv_wr_set_sge(ax, sge->lkey, sge->addr, sge->length);
	return ibv_wr_complete(ax);
}

static void writes(struct ibv_send_wr *wr, struct ibv_sge *sge, int count, int signal_all, int flags);

/* Builds count RDMA writes of sge (the last signaled) and posts them. */
NOINLINE int measured_write(struct ibv_sge *sge, int count, int flags) {
	struct ibv_send_wr wr[16], *bad;
	writes(wr, sge, count, 0, flags);
	return ibv_post_send(a, wr, &bad);
}

/* Builds and posts a receive on b, then a signaled send from a. */
NOINLINE int measured_send_recv(struct ibv_sge *sge, struct ibv_sge *rsge) {
	struct ibv_recv_wr rwr = { .wr_id = 0, .sg_list = rsge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr swr = { .wr_id = 0, .sg_list = sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *sbad;
	if (ibv_post_recv(b, &rwr, &rbad)) return -1;
	return ibv_post_send(a, &swr, &sbad);
}

NOINLINE int measured_reg(void *buf, size_t len) {
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr) return -1;
	return ibv_dereg_mr(mr);
}

/* Polls cq until n completions arrived, failing on an error status. */
static void drain(struct ibv_cq *cq, int n) {
	struct ibv_wc wc[16];
	while (n > 0) {
		int got = ibv_poll_cq(cq, 16, wc);
		if (got < 0) die("ibv_poll_cq");
		for (int i = 0; i < got; i++)
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "completion: %s\n", ibv_wc_status_str(wc[i].status));
				exit(1);
			}
		n -= got;
	}
}

static inline void writes(struct ibv_send_wr *wr, struct ibv_sge *sge, int count, int signal_all, int flags) {
	for (int i = 0; i < count; i++) {
		memset(&wr[i], 0, sizeof wr[i]);
		wr[i].wr_id = i;
		wr[i].sg_list = sge;
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].send_flags = flags | (signal_all || i == count - 1 ? IBV_SEND_SIGNALED : 0);
		wr[i].wr.rdma.remote_addr = (uintptr_t)dst_buf;
		wr[i].wr.rdma.rkey = dst->rkey;
		wr[i].next = i + 1 < count ? &wr[i + 1] : NULL;
	}
}

/* The frame of the Rust programs (frame.rs), in C: the rows, the loop that runs one N times,
 * the count of short polls. */

/* A row of the script: an operation, and whether it goes through the extended API (ex_:
 * ibv_start_poll, wr_: ibv_wr_*). */
struct row {
	enum { POLL_EMPTY, POLL_16, WRITE, SEND_RECV, REG } op;
	int extended;
	int list, inline_data; /* WRITE: 16 writes in one post (list_16); the data inline */
	size_t len;            /* REG: the buffer's length */
};

/* The row the script names name, into row: 0, or -1 if there is none. */
static int parse_row(const char *name, struct row *row) {
	int ex = !strncmp(name, "ex_", 3), wr_api = !strncmp(name, "wr_", 3);
	const char *base = ex || wr_api ? name + 3 : name;
	memset(row, 0, sizeof *row);
	row->extended = ex || wr_api;
	if (!strcmp(base, "poll_empty")) row->op = POLL_EMPTY;
	else if (!strcmp(base, "poll_16")) row->op = POLL_16;
	else if (!strcmp(base, "write")) row->op = WRITE;
	else if (!strcmp(base, "write_inline")) row->op = WRITE, row->inline_data = 1;
	else if (!strcmp(base, "list_16")) row->op = WRITE, row->list = 1;
	else if (!strcmp(base, "send_recv")) row->op = SEND_RECV;
	else if (!strcmp(base, "reg_4k")) row->op = REG, row->len = 4096;
	else if (!strcmp(base, "reg_1m")) row->op = REG, row->len = 1 << 20;
	else return -1;
	int poll = row->op == POLL_EMPTY || row->op == POLL_16;
	int post = row->op == WRITE || row->op == SEND_RECV;
	return (ex && !poll) || (wr_api && !post) ? -1 : 0;
}

/* Waits for first completions on a's CQ and second on b's. */
static void wait_for(int first, int second) {
	drain(a_cq, first);
	drain(b_cq, second);
}

/* Runs row n times, then says how many polls of poll_16 found fewer than 16 completions
 * ready (each then sleeps 2 ms before the next). */
static void repeat(const struct row *row, long n) {
	struct ibv_sge sge = { (uintptr_t)src_buf, 64, src->lkey };
	struct ibv_sge rsge = { (uintptr_t)dst_buf, 64, dst->lkey };
	struct ibv_send_wr wr[16];
	struct ibv_wc wc[16];
	struct timespec ms = { 0, 2000000 };
	void *reg_buf = NULL;
	long short_polls = 0;
	int ex = row->extended;
	if (row->op == REG) {
		if (posix_memalign(&reg_buf, 4096, row->len)) die("posix_memalign");
		memset(reg_buf, 0, row->len);
	}
	for (long it = 0; it < n; it++) {
		switch (row->op) {
		case POLL_EMPTY:
			if ((ex ? measured_poll_ex(a_cqx) : measured_poll(a_cq, wc, 1)) != 0)
				die("poll_empty");
			break;
		case POLL_16: {
			writes(wr, &sge, 16, 1, 0);
			if (ibv_post_send(a, wr, &(struct ibv_send_wr *){0})) die("post");
			nanosleep(&ms, NULL);
			int got = 0;
			while (got < 16) {
				int r = ex ? measured_poll_ex(a_cqx) : measured_poll(a_cq, wc, 16);
				if (r < 0) die("poll");
				if (r < 16) { short_polls++; nanosleep(&ms, NULL); }
				got += r;
			}
			break;
		}
		case WRITE: {
			int count = row->list ? 16 : 1;
			int flags = row->inline_data ? IBV_SEND_INLINE : 0;
			if ((ex ? measured_wr_write : measured_write)(&sge, count, flags))
				die("post");
			wait_for(1, 0);
			break;
		}
		case SEND_RECV:
			if ((ex ? measured_wr_send_recv : measured_send_recv)(&sge, &rsge))
				die("send_recv");
			wait_for(1, 1);
			break;
		case REG:
			if (measured_reg(reg_buf, row->len)) die("reg");
			break;
		}
	}
	if (short_polls) fprintf(stderr, "short polls: %ld\n", short_polls);
	free(reg_buf);
}

int main(int argc, char **argv) {
	struct row row;
	if (argc != 3) { fprintf(stderr, "usage: c OP N\n"); return 2; }
	if (parse_row(argv[1], &row)) {
		fprintf(stderr, "c: unknown operation %s\n", argv[1]);
		return 2;
	}
	setup();
	repeat(&row, atol(argv[2]));
	return 0;
}
