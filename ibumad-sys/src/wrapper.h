#include <infiniband/umad.h>
