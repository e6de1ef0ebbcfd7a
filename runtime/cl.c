/* cl.c: the OpenCL device layer: device enumeration and selection, program
 * build with an in-memory and on-disk binary cache, kernel lookup, launches,
 * buffers. */
#include "kiln_internal.h"
#include <clblast_c.h>
#include "kiln_db.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct kiln_embedded_kernel { const char *name; const char *source; };
extern const struct kiln_embedded_kernel kiln_embedded_kernels[];

const char *kiln__clerror(cl_int e) {
  switch (e) {
#define C(x) case x: return #x;
    C(CL_SUCCESS) C(CL_DEVICE_NOT_FOUND) C(CL_DEVICE_NOT_AVAILABLE) C(CL_COMPILER_NOT_AVAILABLE)
    C(CL_MEM_OBJECT_ALLOCATION_FAILURE) C(CL_OUT_OF_RESOURCES) C(CL_OUT_OF_HOST_MEMORY)
    C(CL_BUILD_PROGRAM_FAILURE) C(CL_INVALID_VALUE) C(CL_INVALID_DEVICE) C(CL_INVALID_CONTEXT)
    C(CL_INVALID_COMMAND_QUEUE) C(CL_INVALID_MEM_OBJECT) C(CL_INVALID_BINARY) C(CL_INVALID_BUILD_OPTIONS)
    C(CL_INVALID_PROGRAM) C(CL_INVALID_PROGRAM_EXECUTABLE) C(CL_INVALID_KERNEL_NAME) C(CL_INVALID_KERNEL)
    C(CL_INVALID_ARG_INDEX) C(CL_INVALID_ARG_VALUE) C(CL_INVALID_ARG_SIZE) C(CL_INVALID_KERNEL_ARGS)
    C(CL_INVALID_WORK_DIMENSION) C(CL_INVALID_WORK_GROUP_SIZE) C(CL_INVALID_WORK_ITEM_SIZE)
    C(CL_INVALID_GLOBAL_OFFSET) C(CL_INVALID_BUFFER_SIZE) C(CL_INVALID_GLOBAL_WORK_SIZE)
#undef C
  }
  return "unknown OpenCL error";
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void fill_info(cl_platform_id p, cl_device_id d, kiln_device_info *in) {
  memset(in, 0, sizeof *in);
  clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof in->platform - 1, in->platform, NULL);
  clGetDeviceInfo(d, CL_DEVICE_VENDOR, sizeof in->vendor - 1, in->vendor, NULL);
  clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof in->name - 1, in->name, NULL);
  clGetDeviceInfo(d, CL_DRIVER_VERSION, sizeof in->driver - 1, in->driver, NULL);
  clGetDeviceInfo(d, CL_DEVICE_VERSION, sizeof in->version - 1, in->version, NULL);
  cl_uint u = 0; cl_ulong ul = 0; size_t sz = 0; cl_device_type t = 0;
  clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof u, &u, NULL); in->compute_units = (int)u;
  clGetDeviceInfo(d, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof u, &u, NULL); in->max_clock_mhz = (int)u;
  clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof ul, &ul, NULL); in->global_mem = ul;
  clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof ul, &ul, NULL); in->local_mem = ul;
  clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof ul, &ul, NULL); in->max_alloc = ul;
  clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof sz, &sz, NULL); in->max_work_group = sz;
  clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof t, &t, NULL); in->is_gpu = (t & CL_DEVICE_TYPE_GPU) != 0;
  u = 0;
  clGetDeviceInfo(d, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof u, &u, NULL); in->native_vec_float = (int)u;
}

#define NO_PLATFORM_MSG "no OpenCL platform found: install an OpenCL driver (on Debian: apt-get install pocl-opencl-icd for the CPU, or your GPU vendor's OpenCL driver)"

static int file_mentions(const char *path, const char *needle) {
  char line[1024];
  int found = 0;
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, needle) != NULL;
  fclose(f);
  return found;
}

/* Whether an ICD file in dir mentions needle (dir may be one file, as
 * OCL_ICD_VENDORS may name). */
static int icd_names(const char *dir, const char *needle) {
  struct stat sb;
  if (stat(dir, &sb) != 0) return 0;
  if (!S_ISDIR(sb.st_mode)) return file_mentions(dir, needle);
  DIR *dp = opendir(dir);
  if (!dp) return 0;
  char path[1024];
  int found = 0;
  for (struct dirent *de; !found && (de = readdir(dp));) {
    size_t l = strlen(de->d_name);
    if (l < 4 || strcmp(de->d_name + l - 4, ".icd")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    found = file_mentions(path, needle);
  }
  closedir(dp);
  return found;
}

const char *kiln_unregistered_gpu_driver(void) {
  static const char *const libs[] = {
    "/usr/local/nvidia/lib64/libnvidia-opencl.so.1", "/usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1",
    "/usr/lib64/libnvidia-opencl.so.1", "/usr/lib/aarch64-linux-gnu/libnvidia-opencl.so.1"};
  const char *env = getenv("OCL_ICD_VENDORS");
  const char *dir = env && *env ? env : "/etc/OpenCL/vendors";
  for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
    struct stat sb;
    if (stat(libs[i], &sb) == 0) return icd_names(dir, "nvidia-opencl") ? NULL : libs[i];
  }
  return NULL;
}

/* No platform: a GPU driver's OpenCL library may be installed with no ICD
 * file naming it (containers that mount NVIDIA's driver folder). The message
 * then says where the library is and how to register it. */
static int no_platform(kiln_error *err) {
  const char *lib = kiln_unregistered_gpu_driver();
  if (lib)
    return kiln__err(err, KILN_ENODEVICE,
                     "no OpenCL platform found, but NVIDIA's OpenCL library is installed at %s and no ICD file names it: "
                     "echo %s > /etc/OpenCL/vendors/nvidia.icd (or put that file in a directory and set OCL_ICD_VENDORS to it)",
                     lib, lib);
  return kiln__err(err, KILN_ENODEVICE, NO_PLATFORM_MSG);
}

int kiln_device_list(kiln_device_info *infos, int cap, int *count, kiln_error *err) {
  cl_platform_id plats[16];
  cl_uint np = 0;
  kiln__cpu_driver_env();
  cl_int e = clGetPlatformIDs(16, plats, &np);
  *count = 0;
  if (e != CL_SUCCESS || np == 0) return no_platform(err);
  for (cl_uint p = 0; p < np; p++) {
    cl_device_id devs[16];
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS) continue;
    for (cl_uint k = 0; k < nd; k++) {
      if (*count < cap) {
        fill_info(plats[p], devs[k], &infos[*count]);
        infos[*count].platform_index = (int)p;
        infos[*count].device_index = (int)k;
      }
      (*count)++;
    }
  }
  if (*count == 0) return kiln__err(err, KILN_ENODEVICE, "OpenCL platforms found but no devices: install pocl-opencl-icd or a GPU driver");
  return 0;
}

static int ci_contains(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (; *hay; hay++)
    if (strncasecmp(hay, needle, n) == 0) return 1;
  return 0;
}

int kiln_device_open(const char *sel, kiln_device **out, kiln_error *err) {
  kiln_device_info infos[64];
  int count = 0, rc = kiln_device_list(infos, 64, &count, err);
  if (rc) return rc;
  if (count > 64) count = 64;
  int pick = -1;
  if (!sel || !*sel) {
    for (int i = 0; i < count && pick < 0; i++) if (infos[i].is_gpu) pick = i;
    if (pick < 0) pick = 0;
  } else if (strchr(sel, ':') && isdigit((unsigned char)sel[0])) {
    int p = atoi(sel), d = atoi(strchr(sel, ':') + 1);
    for (int i = 0; i < count; i++) if (infos[i].platform_index == p && infos[i].device_index == d) pick = i;
  } else if (isdigit((unsigned char)sel[0])) {
    int k = atoi(sel);
    if (k >= 0 && k < count) pick = k;
  } else {
    for (int i = 0; i < count && pick < 0; i++)
      if (ci_contains(infos[i].name, sel) || ci_contains(infos[i].platform, sel) || ci_contains(infos[i].vendor, sel)) pick = i;
  }
  if (pick < 0) { /* name the devices there are, as P:D selectors */
    char have[700] = "";
    size_t o = 0;
    for (int i = 0; i < count && o < sizeof have; i++)
      o += (size_t)snprintf(have + o, sizeof have - o, "%s%d:%d %s", i ? ", " : "", infos[i].platform_index, infos[i].device_index, infos[i].name);
    return kiln__err(err, KILN_ENODEVICE, "no OpenCL device matches '%s'; the devices: %s (`kiln devices` for details)", sel, have);
  }
  kiln_device *d = calloc(1, sizeof *d);
  if (!d) return kiln__err(err, KILN_ENOMEM, "out of memory");
  d->info = infos[pick];
  cl_platform_id plats[16];
  cl_uint np = 0;
  clGetPlatformIDs(16, plats, &np);
  d->platform = plats[d->info.platform_index];
  cl_device_id devs[16];
  cl_uint nd = 0;
  clGetDeviceIDs(d->platform, CL_DEVICE_TYPE_ALL, 16, devs, &nd);
  d->dev = devs[d->info.device_index];
  cl_int e;
  d->ctx = clCreateContext(NULL, 1, &d->dev, NULL, NULL, &e);
  if (e != CL_SUCCESS) { rc = kiln__err(err, KILN_ECL, "clCreateContext on %s: %s", d->info.name, kiln__clerror(e)); goto fail_ctx; }
  d->q = clCreateCommandQueue(d->ctx, d->dev, CL_QUEUE_PROFILING_ENABLE, &e);
  if (e != CL_SUCCESS) { rc = kiln__err(err, KILN_ECL, "clCreateCommandQueue on %s: %s", d->info.name, kiln__clerror(e)); goto fail_q; }
  char ext[8192] = "";
  clGetDeviceInfo(d->dev, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL);
  d->has_fp64 = strstr(ext, "cl_khr_fp64") != NULL;
  cl_device_fp_config fpc = 0;
  d->has_fma = clGetDeviceInfo(d->dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fpc, &fpc, NULL) == CL_SUCCESS && (fpc & CL_FP_FMA);
  kiln_device_set_options(d, NULL, NULL); /* the defaults */
  *out = d;
  return 0;
fail_q:
  clReleaseContext(d->ctx);
fail_ctx:
  free(d);
  return rc;
}

void kiln_device_close(kiln_device *d) {
  if (!d) return;
  if (d->evict) clReleaseMemObject(d->evict);
  for (int i = 0; i < d->nprogs; i++) {
    for (int k = 0; k < d->progs[i].nkerns; k++) { clReleaseKernel(d->progs[i].kerns[k].k); free(d->progs[i].kerns[k].name); }
    free(d->progs[i].kerns);
    clReleaseProgram(d->progs[i].prog);
    free(d->progs[i].key);
  }
  free(d->progs);
  free(d->seen);
  /* CLBlast keeps the programs it built in a process-wide cache that its
   * destructor releases at exit, after this context is gone: with Oclgrind
   * that freed the runtime's memory twice (kiln tune on a GEMM aborted at
   * exit, "corrupted double-linked list", losing its buffered output). Its
   * programs go with the context instead; another open device rebuilds. */
  CLBlastClearCache();
  clReleaseCommandQueue(d->q);
  clReleaseContext(d->ctx);
  free(d);
}

const kiln_device_info *kiln_device_get_info(const kiln_device *d) { return &d->info; }

const char *kiln_cl_source(const char *file, char **owned) { return kiln_cl_source_in(NULL, file, owned); }

const char *kiln_cl_source_in(const char *dir, const char *file, char **owned) {
  /* Development override: dir/<file> (kiln_options.kernel_dir) wins over the
   * embedded copy (read anew on every call, into *owned for the caller to free). */
  *owned = NULL;
  if (dir && *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "rb");
    if (f) {
      char *src = NULL;
      long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
      if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (src = malloc((size_t)n + 1)) && fread(src, 1, (size_t)n, f) == (size_t)n) {
        src[n] = 0;
        fclose(f);
        return *owned = src;
      }
      free(src);
      fclose(f);
    }
  }
  for (int i = 0; kiln_embedded_kernels[i].name; i++)
    if (!strcmp(kiln_embedded_kernels[i].name, file)) return kiln_embedded_kernels[i].source;
  return NULL;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ull; }
  return h;
}

static void mkdirs(const char *path) {
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') { *p = 0; mkdir(tmp, 0755); *p = '/'; }
  mkdir(tmp, 0755);
}

/* Binary cache: files under the user's own cache_dir ($KILN_CACHE_DIR, else
 * ~/.cache/kiln/programs), one per key (a hash of source, options, device and
 * driver). What a run compiles goes there, never into a tuning database (which
 * may be a shared, read-only file); binaries that a database carries (an
 * export made --with-binaries, or one written by an older kiln) are read when
 * the file cache lacks them (kiln_device_set_binary_db). */
static int cache_get(kiln_device *d, const char *key, unsigned char **bin, size_t *len) {
  if (!d->cache_dir[0]) return d->bin_db && d->bin_src && d->bin_src->binary_get(d->bin_db, key, bin, len) == 0 ? 0 : -1;
  char path[700];
  snprintf(path, sizeof path, "%s/%s.bin", d->cache_dir, key);
  FILE *f = fopen(path, "rb");
  if (!f) return d->bin_db && d->bin_src && d->bin_src->binary_get(d->bin_db, key, bin, len) == 0 ? 0 : -1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  *bin = n > 0 ? malloc((size_t)n) : NULL;
  int ok = *bin && fread(*bin, 1, (size_t)n, f) == (size_t)n;
  fclose(f);
  if (!ok) { free(*bin); *bin = NULL; return -1; }
  *len = (size_t)n;
  return 0;
}

static void cache_put(kiln_device *d, const char *key, const unsigned char *bin, size_t len) {
  if (!d->cache_dir[0]) return;
  char path[700], tmp[760];
  snprintf(path, sizeof path, "%s/%s.bin", d->cache_dir, key);
  mkdirs(d->cache_dir);
  /* a name of its own: two sessions of one process (threads) may store the
   * same program at once, and a shared "<pid>.tmp" got both writers */
  snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
  int fd = mkstemp(tmp);
  FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
  if (!f) { if (fd >= 0) { close(fd); remove(tmp); } return; }
  int ok = fwrite(bin, 1, len, f) == len;
  if (fclose(f) == 0 && ok) rename(tmp, path);
  else remove(tmp);
}

void kiln__device_limit_builds(kiln_device *d, double seconds, volatile const int *stop) {
  d->build_deadline_ms = seconds > 0 ? now_ms() + seconds * 1e3 : 0;
  d->build_stop = stop;
}

void kiln_device_set_binary_db(kiln_device *d, struct kiln_db *db, const kiln_record_source *src) {
  d->bin_db = db;
  d->bin_src = src;
}

static cl_program build_program_opts(kiln_device *d, const char *file, const char *src, const char *opts, const char *bopts,
                                     const char *key, int keep, bool *deferred, kiln_error *err);

void kiln__device_defer_binaries(kiln_device *d, bool defer, bool save) {
  d->defer_binaries = defer;
  d->save_used = save;
}

/* Stores a built program's binary under key in the file cache. Fetching the
 * binary is part of compiling (counted in compile_ms): POCL generates the
 * machine code of every kernel in the program then (a build only makes LLVM
 * IR), often several times the build's own time. */
static void save_binary(kiln_device *d, cl_program prog, const char *key) {
  if (!d->cache_dir[0]) return;
  double t0 = now_ms();
  size_t len = 0;
  clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL);
  unsigned char *bin = len ? malloc(len) : NULL;
  if (bin && clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS) cache_put(d, key, bin, len);
  free(bin);
  d->compile_ms += now_ms() - t0;
}

/* Files prepended to a program whose source names one of their functions:
 * kernels/half_io.cl (fp16 storage's kiln_ldh / kiln_svh / kiln_vldhN /
 * kiln_vsthN), kernels/fastmath.cl (kiln_expN, kiln_erfN, KMAD) and
 * kernels/vec_io.cl (GLDU / GSTU), one definition each for the kernel files
 * and the generated fused and epilogue code. kiln_source_hash counts them
 * with the file that uses them. */
static const struct {
  const char *file;
  const char *names[4];
} preludes[] = {
  {"half_io.cl", {"kiln_ldh", "kiln_svh", "kiln_vldh", "kiln_vsth"}},
  {"fastmath.cl", {"kiln_exp", "kiln_erf", "KMAD", NULL}},
  {"vec_io.cl", {"GLDU", "GSTU", NULL, NULL}},
};

/* 1 when src names one of prelude k's functions */
static int prelude_used(size_t k, const char *src) {
  for (int q = 0; q < 4 && preludes[k].names[q]; q++)
    if (strstr(src, preludes[k].names[q])) return 1;
  return 0;
}

/* *out = src with the preludes it uses before it, a "#line 1" between so
 * that build logs keep the file's line numbers; NULL when it uses none:
 * those programs keep their source, and their cache keys, as they were.
 * 0 or a status. */
static int with_preludes(kiln_device *d, const char *src, char **out, kiln_error *err) {
  *out = NULL;
  const char *pre[sizeof preludes / sizeof preludes[0]] = {NULL};
  char *owned[sizeof preludes / sizeof preludes[0]] = {NULL};
  size_t lp = 0;
  int rc = 0;
  for (size_t k = 0; k < sizeof preludes / sizeof preludes[0]; k++) {
    if (!prelude_used(k, src)) continue;
    pre[k] = kiln_cl_source_in(d->opt.kernel_dir, preludes[k].file, &owned[k]);
    if (!pre[k]) { rc = kiln__err(err, KILN_EINTERNAL, "kernel file %s is not embedded", preludes[k].file); break; }
    lp += strlen(pre[k]) + 1;
  }
  if (!rc && lp) {
    static const char line[] = "\n#line 1\n";
    size_t ll = sizeof line - 1, ls = strlen(src), o = 0;
    char *all = malloc(lp + ll + ls + 1);
    if (!all) rc = kiln__err(err, KILN_ENOMEM, "out of memory");
    else {
      for (size_t k = 0; k < sizeof preludes / sizeof preludes[0]; k++)
        if (pre[k]) {
          size_t n = strlen(pre[k]);
          memcpy(all + o, pre[k], n);
          all[o + n] = '\n';
          o += n + 1;
        }
      memcpy(all + o, line, ll);
      memcpy(all + o + ll, src, ls + 1);
      *out = all;
    }
  }
  for (size_t k = 0; k < sizeof preludes / sizeof preludes[0]; k++) free(owned[k]);
  return rc;
}

/* Options every program is built with. -cl-denorms-are-zero: single-precision
 * denormals may be flushed to zero, as GPUs do by default. On a CPU device
 * a denormal operand or result costs a microcode assist: on this machine's
 * POCL (which then runs the kernel with FTZ/DAZ set) a depthwise conv + SiLU
 * whose large negative inputs make the logistic's 1 / (1 + e^-x) denormal
 * took 285 us against 115 with the option. Results differ from IEEE only
 * below 1.2e-38. */
#define BUILD_OPTS_ALWAYS " -w -cl-denorms-are-zero"

/* Builds src0 (with the preludes it uses) with opts, from the binary cache when it has the program; keep:
 * a program built from source is stored there. */
static cl_program build_program(kiln_device *d, const char *file, const char *src0, const char *opts, int keep, char bkey[24], bool *deferred,
                                kiln_error *err) {
  char *full;
  if (with_preludes(d, src0, &full, err)) return NULL;
  const char *src = full ? full : src0;
  /* fma() where the device has the instruction: POCL's mad() is a multiply
   * and an add (no contraction), half the arithmetic rate of an FMA unit, and
   * it defines no FP_FAST_FMAF; only programs that ask (name KILN_FMA) get
   * the define, so the others keep their cache keys. */
  char *fopts = NULL;
  if (d->has_fma && strstr(src, "KILN_FMA")) {
    size_t ol = strlen(opts);
    if (!(fopts = malloc(ol + 16))) { free(full); kiln__err(err, KILN_ENOMEM, "out of memory"); return NULL; }
    memcpy(fopts, opts, ol);
    memcpy(fopts + ol, " -DKILN_FMA=1", 14);
    opts = fopts;
  }
  uint64_t h = 1469598103934665603ull;
  h = fnv1a(h, src, strlen(src));
  h = fnv1a(h, "\1", 1);
  h = fnv1a(h, opts, strlen(opts));
  h = fnv1a(h, BUILD_OPTS_ALWAYS, strlen(BUILD_OPTS_ALWAYS)); /* -cl-denorms-are-zero changes code */
  h = fnv1a(h, d->info.name, strlen(d->info.name));
  h = fnv1a(h, d->info.driver, strlen(d->info.driver));
  h = fnv1a(h, d->info.platform, strlen(d->info.platform));
  char key[24];
  snprintf(key, sizeof key, "%016llx", (unsigned long long)h);
  memcpy(bkey, key, sizeof key);
  /* -w: compiler warnings are for kiln's developers (clang on the .cl files),
   * not for users; POCL's clang otherwise prints "N warnings generated" for
   * e.g. 16-wide vectors on an AVX2 target (-Wpsabi); with the rest of
   * BUILD_OPTS_ALWAYS (hashed into the key above). */
  size_t olen = strlen(opts);
  char *bopts = malloc(olen + sizeof BUILD_OPTS_ALWAYS);
  if (!bopts) { free(full); free(fopts); kiln__err(err, KILN_ENOMEM, "out of memory"); return NULL; }
  memcpy(bopts, opts, olen);
  memcpy(bopts + olen, BUILD_OPTS_ALWAYS, sizeof BUILD_OPTS_ALWAYS);
  cl_program prog = build_program_opts(d, file, src, opts, bopts, key, keep, deferred, err);
  free(bopts);
  free(full);
  free(fopts);
  return prog;
}

static cl_program build_program_opts(kiln_device *d, const char *file, const char *src, const char *opts, const char *bopts,
                                     const char *key, int keep, bool *deferred, kiln_error *err) {
  cl_int e;
  *deferred = false;
  cl_program prog = NULL;
  unsigned char *bin = NULL;
  size_t blen = 0;
  if (cache_get(d, key, &bin, &blen) == 0) {
    const unsigned char *bp = bin;
    cl_int st;
    prog = clCreateProgramWithBinary(d->ctx, 1, &d->dev, &blen, &bp, &st, &e);
    if (e != CL_SUCCESS || st != CL_SUCCESS || clBuildProgram(prog, 1, &d->dev, bopts, NULL, NULL) != CL_SUCCESS) {
      if (prog) clReleaseProgram(prog);
      prog = NULL;
    }
    free(bin);
    if (prog) { d->programs_from_cache++; return prog; }
  }
  double t0 = now_ms();
  /* a build expected to end past the deadline (at this device's mean compile time so far) is not started */
  double expect = d->programs_compiled ? d->compile_ms / d->programs_compiled : 0;
  if ((d->build_deadline_ms > 0 && t0 + expect > d->build_deadline_ms) || (d->build_stop && *d->build_stop)) {
    d->builds_refused++;
    kiln__err(err, KILN_ELIMIT, "kernels/%s not compiled: the time budget is spent (%d programs compiled before, kept in the program cache)", file,
              d->programs_compiled);
    return NULL;
  }
  prog = clCreateProgramWithSource(d->ctx, 1, &src, NULL, &e);
  if (e != CL_SUCCESS) { kiln__err(err, KILN_ECL, "%s: clCreateProgramWithSource: %s", file, kiln__clerror(e)); return NULL; }
  e = clBuildProgram(prog, 1, &d->dev, bopts, NULL, NULL);
  d->programs_compiled++;
  if (e != CL_SUCCESS) {
    d->compile_ms += now_ms() - t0;
    char log[4096] = "";
    clGetProgramBuildInfo(prog, d->dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    kiln__err(err, KILN_ECL, "kernels/%s (options '%s') failed to build: %s\n%s", file, opts, kiln__clerror(e), log);
    clReleaseProgram(prog);
    return NULL;
  }
  d->compile_ms += now_ms() - t0;
  if (keep && d->cache_dir[0]) {
    if (d->defer_binaries) *deferred = true;
    else save_binary(d, prog, key);
  }
  return prog;
}

static cl_kernel get_kernel(kiln_device *d, const char *file, const char *gen_src, const char *options, const char *name, int keep,
                            kiln_error *err);

cl_kernel kiln_cl_kernel(kiln_device *d, const char *file, const char *options, const char *name, kiln_error *err) {
  return get_kernel(d, file, NULL, options, name, 1, err);
}

cl_kernel kiln_cl_kernel_once(kiln_device *d, const char *file, const char *options, const char *name, kiln_error *err) {
  return get_kernel(d, file, NULL, options, name, 0, err);
}

void kiln_cl_src_key(const char *src, char key[24]) {
  snprintf(key, 24, "gen:%016llx", (unsigned long long)fnv1a(1469598103934665603ull, src, strlen(src)));
}

cl_kernel kiln_cl_kernel_src(kiln_device *d, const char *key, const char *src, const char *options, const char *name, kiln_error *err) {
  return get_kernel(d, key, src, options, name, 1, err);
}

static cl_kernel get_kernel(kiln_device *d, const char *file, const char *gen_src, const char *options, const char *name, int keep,
                            kiln_error *err) {
  /* This runs before every launch, also between the kernels of one node,
   * where its time is inside the node's profiled span: no allocation, and
   * a hash compare per program rather than a string compare (the option
   * strings of a tuning run's thousands of programs share long prefixes). */
  const char *opts = options ? options : "";
  size_t fl = strlen(file), ol = strlen(opts);
  uint64_t h = fnv1a(fnv1a(fnv1a(1469598103934665603ull, file, fl), "\n", 1), opts, ol);
  kiln_cl_prog *p = NULL;
  for (int i = 0; i < d->nprogs; i++) {
    const char *k = d->progs[i].key;
    if (d->progs[i].hash == h && !strncmp(k, file, fl) && k[fl] == '\n' && !strcmp(k + fl + 1, opts)) { p = &d->progs[i]; break; }
  }
  if (!p) {
    char *key = malloc(fl + ol + 2);
    if (!key) { kiln__err(err, KILN_ENOMEM, "out of memory"); return NULL; }
    snprintf(key, fl + ol + 2, "%s\n%s", file, opts);
    char *owned = NULL;
    const char *src = gen_src ? gen_src : kiln_cl_source_in(d->opt.kernel_dir, file, &owned);
    if (!src) { free(key); kiln__err(err, KILN_EINTERNAL, "kernel file %s is not embedded", file); return NULL; }
    char bkey[24];
    bool deferred;
    cl_program prog = build_program(d, file, src, opts, keep, bkey, &deferred, err);
    free(owned);
    if (!prog) { free(key); return NULL; }
    if (d->nprogs == d->capprogs) {
      int cap = d->capprogs ? d->capprogs * 2 : 32;
      kiln_cl_prog *np = realloc(d->progs, (size_t)cap * sizeof *np);
      if (!np) { clReleaseProgram(prog); free(key); kiln__err(err, KILN_ENOMEM, "out of memory"); return NULL; }
      d->progs = np;
      d->capprogs = cap;
    }
    p = &d->progs[d->nprogs++];
    memset(p, 0, sizeof *p);
    p->key = key;
    p->hash = h;
    p->prog = prog;
    memcpy(p->bkey, bkey, sizeof bkey);
    p->unsaved = deferred;
  }
  if (p->unsaved && d->save_used) {
    save_binary(d, p->prog, p->bkey);
    p->unsaved = false;
  }
  for (int i = 0; i < p->nkerns; i++)
    if (!strcmp(p->kerns[i].name, name)) return p->kerns[i].k;
  cl_int e;
  cl_kernel k = clCreateKernel(p->prog, name, &e);
  if (e != CL_SUCCESS) { kiln__err(err, KILN_ECL, "kernels/%s: kernel %s: %s", file, name, kiln__clerror(e)); return NULL; }
  struct kiln_cl_kern *nk = realloc(p->kerns, (size_t)(p->nkerns + 1) * sizeof *nk);
  if (!nk) { clReleaseKernel(k); kiln__err(err, KILN_ENOMEM, "out of memory"); return NULL; }
  p->kerns = nk;
  p->kerns[p->nkerns].name = strdup(name);
  p->kerns[p->nkerns].k = k;
  p->nkerns++;
  return k;
}

cl_int kiln_cl_arg(cl_kernel k, cl_uint idx, size_t sz, const void *p) {
  cl_int e = clSetKernelArg(k, idx, sz, p);
  if (e == CL_SUCCESS) kiln__rec_arg(k, idx, sz, p);
  return e;
}

int kiln_cl_args(cl_kernel k, kiln_error *err, ...) {
  va_list ap;
  va_start(ap, err);
  cl_uint idx = 0;
  for (;;) {
    size_t sz = va_arg(ap, size_t);
    if (!sz) break;
    const void *p = va_arg(ap, const void *);
    cl_int e = kiln_cl_arg(k, idx, sz, p);
    if (e != CL_SUCCESS) {
      va_end(ap);
      char name[128] = "?";
      clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name - 1, name, NULL);
      return kiln__err(err, KILN_ECL, "kernel %s: argument %u: %s", name, idx, kiln__clerror(e));
    }
    idx++;
  }
  va_end(ap);
  return 0;
}

int kiln_cl_launch(kiln_device *d, cl_kernel k, int dims, const size_t *gws, const size_t *lws, kiln_error *err) {
  return kiln_cl_launch_ev(d, k, dims, gws, lws, NULL, err);
}

void kiln_source_hash(const kiln_device *d, const char *files, char *buf, size_t len) {
  kiln_source_hash_in(d ? d->opt.kernel_dir : NULL, files, buf, len);
}

void kiln_source_hash_in(const char *dir, const char *files, char *buf, size_t len) {
  /* a comma list: the sources chained into one hash (one file: its own hash) */
  uint64_t h = 1469598103934665603ull;
  for (const char *f = files; f && *f;) {
    const char *e = strchr(f, ',');
    size_t n = e ? (size_t)(e - f) : strlen(f);
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name - 1 ? n : sizeof name - 1), f);
    char *owned;
    const char *src = kiln_cl_source_in(dir, name, &owned);
    h = fnv1a(h, src ? src : "", src ? strlen(src) : 0);
    /* the preludes the file uses are part of its code: an edit to them makes its records stale */
    for (size_t k = 0; src && k < sizeof preludes / sizeof preludes[0]; k++) {
      if (!prelude_used(k, src)) continue;
      char *po;
      const char *ps = kiln_cl_source_in(dir, preludes[k].file, &po);
      if (ps) h = fnv1a(h, ps, strlen(ps));
      free(po);
    }
    free(owned);
    f = e ? e + 1 : f + n;
  }
  snprintf(buf, len, "%016llx", (unsigned long long)h);
}

static size_t smallest_factor(size_t v) {
  for (size_t f = 2; f * f <= v; f++)
    if (v % f == 0) return f;
  return v;
}

/* Work-group shape for a launch the caller left to the implementation, on a
 * CPU device, where the implementation would give it at most two groups.
 * POCL makes work-groups of up to 4096 items: a range of at most 4096 items
 * runs as one group (392 x 8, 32) or two (2048, 64 x 4), so on one core or
 * with no room to balance (resnet18's direct convolution read 16 ms as one
 * group of 392 x 8, 8-10 ms in groups of 64), while larger ranges get two or
 * more (16 x 512: 2, 784 x 64: 16, 112 x 147: 294). Only the small ranges
 * are split: every dimension starts whole and the outermost one still larger
 * than 1 is divided by its smallest factor until there are CPU_GROUPS_PER_CU
 * groups per compute unit (dimension 0, which POCL vectorises across, is
 * divided last); each local size divides its global size, so no kernel sees
 * items past its range. Splitting every launch this way measured no better
 * on the VAE decoder (per-node medians, 3 alternating rounds: 0.98x in all,
 * single nodes 0.8x to 1.9x either way). Returns 0 to leave the choice to
 * the implementation (a larger range, a kernel with a required size, or a
 * failed query). */
#define CPU_GROUPS_PER_CU 4
static int cpu_local_size(kiln_device *d, cl_kernel k, int dims, const size_t *g, size_t *l) {
  size_t want = (size_t)(d->info.compute_units > 0 ? d->info.compute_units : 1) * CPU_GROUPS_PER_CU, items = 1;
  for (int i = 0; i < dims; i++) items *= g[i];
  if (items < 2 * want || (d->info.max_work_group && items > d->info.max_work_group)) return 0;
  size_t req[3] = {0, 0, 0}, kmax = 0;
  if (clGetKernelWorkGroupInfo(k, d->dev, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof req, req, NULL) != CL_SUCCESS || req[0]) return 0;
  if (clGetKernelWorkGroupInfo(k, d->dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax, NULL) != CL_SUCCESS || items > kmax) return 0;
  for (int i = 0; i < dims; i++) l[i] = g[i];
  for (;;) {
    size_t groups = 1;
    for (int i = 0; i < dims; i++) groups *= g[i] / l[i];
    if (groups >= want) return 1;
    int i = dims - 1;
    while (i > 0 && l[i] == 1) i--;
    if (l[i] == 1) return 1; /* single items: nothing left to divide */
    l[i] /= smallest_factor(l[i]);
  }
}

/* Some drivers generate a kernel's machine code at its first launch with a
 * work-group shape, not when the program is built (POCL does, per local
 * size). That is compiling too, and on a cold cache it is seconds of a first
 * run: a launch of a (kernel, shape) pair not seen before runs on an empty
 * queue, and its wait between being queued and starting is counted in
 * compile_ms (and codegen_ms). Returns 1 if the pair is new (recorded). */
static int first_launch(kiln_device *d, cl_kernel k, int dims, const size_t *g, const size_t *lws) {
  uint64_t h = 1469598103934665603ull;
  uintptr_t kp = (uintptr_t)k;
  h = fnv1a(h, &kp, sizeof kp);
  for (int i = 0; i < dims; i++) {
    size_t v = lws ? lws[i] : g[i]; /* no local size given: the driver picks one from the global size */
    h = fnv1a(h, &v, sizeof v);
  }
  if (!h) h = 1;
  if (2 * (d->nseen + 1) > d->capseen) { /* grow and rehash */
    int nc = d->capseen ? 2 * d->capseen : 256;
    uint64_t *ns = calloc((size_t)nc, sizeof *ns);
    if (!ns) return 0; /* not counted: the launch itself goes on */
    for (int i = 0; i < d->capseen; i++)
      if (d->seen[i]) {
        int j = (int)(d->seen[i] & (uint64_t)(nc - 1));
        while (ns[j]) j = (j + 1) & (nc - 1);
        ns[j] = d->seen[i];
      }
    free(d->seen);
    d->seen = ns;
    d->capseen = nc;
  }
  int j = (int)(h & (uint64_t)(d->capseen - 1));
  while (d->seen[j]) {
    if (d->seen[j] == h) return 0;
    j = (j + 1) & (d->capseen - 1);
  }
  d->seen[j] = h;
  d->nseen++;
  return 1;
}

static void count_codegen(kiln_device *d, cl_event e) {
  cl_ulong q = 0, s = 0;
  clWaitForEvents(1, &e);
  if (clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_QUEUED, sizeof q, &q, NULL) == CL_SUCCESS &&
      clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL) == CL_SUCCESS && s > q) {
    d->codegen_ms += (double)(s - q) / 1e6;
    d->compile_ms += (double)(s - q) / 1e6;
  }
}

bool kiln_cl_auto_lws(kiln_device *d, cl_kernel k, int dims, const size_t *gws, size_t *l) {
  for (int i = 0; i < dims; i++)
    if (gws[i] == 0) return false;
  return !d->info.is_gpu && cpu_local_size(d, k, dims, gws, l);
}

void kiln_cl_mark_launched(kiln_device *d, cl_kernel k, int dims, const size_t *gws, const size_t *lws) {
  size_t g[3];
  for (int i = 0; i < dims; i++) g[i] = lws && lws[i] ? (gws[i] + lws[i] - 1) / lws[i] * lws[i] : gws[i];
  (void)first_launch(d, k, dims, g, lws);
}

int kiln_cl_launch_ev(kiln_device *d, cl_kernel k, int dims, const size_t *gws, const size_t *lws, cl_event *ev, kiln_error *err) {
  if (ev) *ev = NULL;
  kiln__rec_launch(k, dims, gws, lws);
  size_t g[3], l[3];
  for (int i = 0; i < dims; i++) {
    if (gws[i] == 0) return 0;
    g[i] = gws[i];
    if (lws && lws[i]) g[i] = (gws[i] + lws[i] - 1) / lws[i] * lws[i];
  }
  if (!lws && !d->info.is_gpu && cpu_local_size(d, k, dims, g, l)) lws = l;
  cl_event fe = NULL;
  int first = first_launch(d, k, dims, g, lws);
  if (first) clFinish(d->q);
  cl_int e = clEnqueueNDRangeKernel(d->q, k, (cl_uint)dims, NULL, g, lws, 0, NULL, ev ? ev : first ? &fe : NULL);
  if (e == CL_SUCCESS && first) count_codegen(d, ev ? *ev : fe);
  if (fe) clReleaseEvent(fe);
  if (e != CL_SUCCESS) {
    char name[128] = "?";
    clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name - 1, name, NULL);
    return kiln__err(err, KILN_ECL, "launch of kernel %s: %s", name, kiln__clerror(e));
  }
  d->launches++;
  return 0;
}

const char *kiln_cl_type(int dt) {
  switch (dt) {
  case KILN_DT_FLOAT: return "float"; case KILN_DT_DOUBLE: return "double";
  case KILN_DT_INT64: return "long"; case KILN_DT_UINT64: return "ulong";
  case KILN_DT_INT32: return "int"; case KILN_DT_UINT32: return "uint";
  case KILN_DT_INT16: return "short"; case KILN_DT_UINT16: return "ushort";
  case KILN_DT_INT8: return "char"; case KILN_DT_UINT8: return "uchar"; case KILN_DT_BOOL: return "uchar";
  case KILN_DT_FLOAT16: return "ushort"; /* storage only */
  }
  return NULL;
}

const char *kiln_cl_utype(size_t bytes) {
  return bytes == 1 ? "uchar" : bytes == 2 ? "ushort" : bytes == 4 ? "uint" : bytes == 8 ? "ulong" : NULL;
}

const char *kiln_cl_type_opts(int dt, char *buf, size_t len) {
  const char *t = kiln_cl_type(dt);
  snprintf(buf, len, "-DT=%s -DT_IS_FLOAT=%d -DT_IS_DOUBLE=%d -DT_IS_BOOL=%d -DT_IS_SIGNED=%d -DT_DTYPE=%d", t ? t : "float",
           dt == KILN_DT_FLOAT || dt == KILN_DT_DOUBLE, dt == KILN_DT_DOUBLE, dt == KILN_DT_BOOL,
           dt == KILN_DT_INT8 || dt == KILN_DT_INT16 || dt == KILN_DT_INT32 || dt == KILN_DT_INT64, dt);
  return buf;
}

cl_mem kiln_cl_alloc(kiln_device *d, size_t bytes, kiln_error *err) {
  if (bytes > d->info.max_alloc)
    { kiln__err(err, KILN_ELIMIT, "buffer of %zu bytes exceeds the device's max allocation of %llu bytes", bytes, (unsigned long long)d->info.max_alloc); return NULL; }
  cl_int e;
  cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, &e);
  if (e != CL_SUCCESS) { kiln__err(err, KILN_ECL, "clCreateBuffer(%zu bytes): %s", bytes, kiln__clerror(e)); return NULL; }
  return m;
}

int kiln_cl_write(kiln_device *d, cl_mem b, const void *src, size_t bytes, kiln_error *err) {
  if (!bytes) return 0;
  kiln__rec_other();
  cl_int e = clEnqueueWriteBuffer(d->q, b, CL_FALSE, 0, bytes, src, 0, NULL, NULL);
  if (e != CL_SUCCESS) return kiln__err(err, KILN_ECL, "clEnqueueWriteBuffer(%zu bytes): %s", bytes, kiln__clerror(e));
  /* the host pointer must stay valid until the copy: callers keep it alive until the next clFinish */
  return 0;
}

int kiln_cl_read(kiln_device *d, cl_mem b, void *dst, size_t bytes, kiln_error *err) {
  if (!bytes) return 0;
  kiln__rec_other();
  cl_int e = clEnqueueReadBuffer(d->q, b, CL_TRUE, 0, bytes, dst, 0, NULL, NULL);
  if (e != CL_SUCCESS) return kiln__err(err, KILN_ECL, "clEnqueueReadBuffer(%zu bytes): %s", bytes, kiln__clerror(e));
  return 0;
}
