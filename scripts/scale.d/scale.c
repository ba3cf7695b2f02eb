/* The C twin of examples/verbs_scale.rs for scripts/scale: the same measurements through
 * plain libibverbs, printing the same lines.
 *   scale qps N [warm]   N create_us connect_us destroy_us rss_kib kernel_kib  (per QP;
 *                        create = ibv_create_qp + to INIT, connect = to RTR and RTS;
 *                        warm: one QP made, connected and destroyed first, untimed)
 *   scale mr SIZE ITERS  SIZE reg_dereg_us
 * QPs: RC, 128 sends and 128 receives of one SGE, one shared CQ, each connected to itself
 * with the crate's ConnectOptions::default() (the port's active MTU, timeout 14, retries 7,
 * RNR timer 12, read/atomic depth 16 clamped to the device) from GID SCALE_GID_INDEX (the
 * one the crate picks: the script reads it from `verbs_scale info`). */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/rdma_setup.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;

static double now_us(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* A field of a /proc file of "Name:   value kB" lines, in KiB. */
static long kib(const char *path, const char *field) {
	char line[256];
	long v = -1;
	size_t len = strlen(field);
	FILE *f = fopen(path, "r");
	if (!f) die(path);
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, field, len) && line[len] == ':') v = atol(line + len + 1);
	fclose(f);
	if (v < 0) die(field);
	return v;
}

static void memory(long *rss, long *kernel) {
	/* smaps_rollup counts from the page tables; VmRSS lags before kernel 6.2. */
	*rss = kib("/proc/self/smaps_rollup", "Rss");
	*kernel = kib("/proc/meminfo", "Slab") + kib("/proc/meminfo", "VmallocUsed");
}

static void open_device(void) {
	pd = open_test_device();
	ctx = pd->context;
}

static unsigned clamp16(int max) { return max < 16 ? max : 16; }

/* INIT -> RTR -> RTS, to itself. */
static void connect_self(struct ibv_qp *qp, struct ibv_port_attr *port,
			 struct ibv_device_attr *dev, union ibv_gid *gid, int index) {
	struct qp_path path = { .dest_qp_num = qp->qp_num, .gid = gid, .gid_index = index,
		.mtu = port->active_mtu, .max_dest_rd_atomic = clamp16(dev->max_qp_rd_atom),
		.max_rd_atomic = clamp16(dev->max_qp_init_rd_atom) };
	qp_to_rts(qp, &path);
}

/* An RC QP of 128 sends and 128 receives of one SGE, moved to INIT, as the crate's
 * QueuePairBuilder::build does (its create phase includes it). */
static struct ibv_qp *create_qp(struct ibv_cq *cq) {
	struct ibv_qp_init_attr attr = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 128, .max_recv_wr = 128, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &attr);
	if (!qp) die("ibv_create_qp");
	qp_to_init(qp);
	return qp;
}

static void qps(long n, int warm) {
	struct ibv_cq *cq = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	struct ibv_qp **qp = calloc(n, sizeof *qp);
	struct ibv_port_attr port;
	struct ibv_device_attr dev;
	union ibv_gid gid;
	long rss0, kernel0, rss1, kernel1;
	if (!cq || !qp) die("ibv_create_cq");
	if (ibv_query_port(ctx, 1, &port) || ibv_query_device(ctx, &dev)) die("ibv_query");
	int index = test_gid(ctx, "SCALE_GID_INDEX", &gid);
	if (warm) { /* one QP made, connected and destroyed before the clock */
		struct ibv_qp *w = create_qp(cq);
		connect_self(w, &port, &dev, &gid, index);
		if (ibv_destroy_qp(w)) die("ibv_destroy_qp");
	}
	memory(&rss0, &kernel0);
	double t0 = now_us();
	for (long i = 0; i < n; i++) qp[i] = create_qp(cq);
	double t1 = now_us();
	for (long i = 0; i < n; i++) connect_self(qp[i], &port, &dev, &gid, index);
	double t2 = now_us();
	memory(&rss1, &kernel1);
	for (long i = 0; i < n; i++)
		if (ibv_destroy_qp(qp[i])) die("ibv_destroy_qp");
	double t3 = now_us();
	printf("%ld %.1f %.1f %.1f %.1f %.1f\n", n, (t1 - t0) / n, (t2 - t1) / n, (t3 - t2) / n,
	       (double)(rss1 > rss0 ? rss1 - rss0 : 0) / n,
	       (double)(kernel1 > kernel0 ? kernel1 - kernel0 : 0) / n);
}

static void mr(size_t size, long iters) {
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	char *buf = malloc(size);
	struct ibv_mr *m;
	if (!buf) die("malloc");
	memset(buf, 0x5a, size);
	for (long i = -1; i < iters; i++) { /* round -1: untimed, faults the pages in */
		static double t0;
		if (i == 0) t0 = now_us();
		if (!(m = ibv_reg_mr(pd, buf, size, access))) die("ibv_reg_mr");
		if (ibv_dereg_mr(m)) die("ibv_dereg_mr");
		if (i == iters - 1) printf("%zu %.1f\n", size, (now_us() - t0) / iters);
	}
}

int main(int argc, char **argv) {
	int warm = argc == 4 && !strcmp(argv[3], "warm");
	if ((argc == 3 || warm) && !strcmp(argv[1], "qps") && atol(argv[2]) > 0) {
		open_device();
		qps(atol(argv[2]), warm);
	} else if (argc == 4 && !strcmp(argv[1], "mr") && atol(argv[3]) > 0) {
		open_device();
		mr(strtoull(argv[2], NULL, 10), atol(argv[3]));
	} else {
		fprintf(stderr, "usage: scale qps N [warm] | mr SIZE ITERS\n");
		return 2;
	}
	return 0;
}
