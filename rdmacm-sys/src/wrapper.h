#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <infiniband/ib.h>
