/* bench/bench_device.h: the benchmarks' device, opened as the CLI opens it:
 * with the KILN_* environment applied (KILN_KERNEL_DIR, KILN_CACHE_DIR, ...),
 * so that an A/B of kernel sources with KILN_KERNEL_DIR measures what it says. */
#ifndef KILN_BENCH_DEVICE_H
#define KILN_BENCH_DEVICE_H
#include "kiln.h"

static inline int bench_device_open(const char *sel, kiln_device **d, kiln_error *err) {
  kiln_options o;
  if (kiln_options_from_env(&o, err)) return 1;
  if (kiln_device_open(sel, d, err)) return 1;
  if (kiln_device_set_options(*d, &o, err)) { kiln_device_close(*d); *d = NULL; return 1; }
  return 0;
}
#endif
