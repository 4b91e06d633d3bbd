/*===- cuda_stand_in.c - a CUDA driver library with no GPU behind it -------===//
 *
 * Stands in for libcuda.so.1 so that a CUDA build (xfc --target cuda) runs its host code on a
 * machine without a GPU: the driver calls Halide's CUDA runtime and libxfrt make succeed,
 * device memory is host memory (copies are memcpy), and a kernel launch is accepted and
 * recorded but never executed, so outputs are meaningless. What it checks is the host side:
 * how many kernels a forward pass or decode step launches and with what grid, that profiling
 * and events work, that the runtime's device calls are well-formed.
 *
 * $XF_CUDA_STAND_IN_LOG names a file that gets, at exit, one line per launch:
 *   launch <kernel entry> grid <x> <y> <z> block <x> <y> <z> shared <bytes> args <a>...
 * (arguments: device addresses as d<allocation>+<offset>, scalars as integers),
 * then `launches <n>` (kernels launched one by one). Events (cuEventRecord) are stamped with the
 * number of launches so far; cuEventElapsedTime reports 1 µs per launch between two events, so a
 * profile's device times are launch counts the tests can check exactly. A device-to-device copy
 * takes no time unless $XF_CUDA_STAND_IN_COPY_GBS=R gives it 2n/R ns (the GPU roofline's
 * bandwidth measurement then reads R GB/s). $XF_CUDA_STAND_IN_BLOCK_NS=N adds N ns per thread block
 * to each launch one by one, so that schedules launching fewer blocks time as faster (the CUDA
 * tuner's tests: a made-up cost model, no GPU's). $XF_CUDA_STAND_IN_HOST_NS=N adds N ns per
 * cuModuleGetFunction (which Halide's runtime calls before each launch): the device idling
 * while the host prepares a launch, which --profile must not count as the kernel's time.
 *
 * Streams, stream capture and CUDA graphs (cuStreamBeginCapture_v2 ... cuGraphLaunch): a kernel
 * launched on a capturing stream becomes a node (logged `capture <entry> grid ...`), nothing
 * else may happen while a capture is active — a copy, a synchronisation, an allocation or an
 * event on the capturing stream invalidates it (error 900, then 901 from cuStreamEndCapture),
 * stricter than a real driver, which captures copies and events too — and a graph launch logs
 * `graph-launch <n> kernels` and each node as `graph-kernel <entry> grid ...` with its
 * parameters as last set (cuGraphExecKernelNodeSetParams). $XF_CUDA_STAND_IN_NO_CAPTURE=1 makes
 * cuStreamBeginCapture fail (801, not supported), as a driver without graphs would;
 * $XF_CUDA_STAND_IN_REFUSE_CAPTURED=N refuses the N-th launch of a capture (900). The last
 * lines of the log count them: `graph-launches <n> kernels <k>`, `captured <n>`,
 * `param-updates <n>`, `graph-execs-live-most <n>` (executable graphs alive at once).
 *
 * $XF_CUDA_STAND_IN_GUARD=1 makes device memory unreadable to the host: each allocation is
 * its own mapping without access (PROT_NONE), opened only inside the stand-in's own copies, so
 * host code that reads or writes device memory (a real GPU's addresses are not host memory)
 * dies with SIGSEGV instead of reading the stand-in's host memory.
 *
 * $XF_CUDA_STAND_IN_CAPABILITY=NN makes the device one of capability N.N (default 90: 9.0).
 *
 * $XF_CUDA_STAND_IN_MAX_ALLOC=N refuses allocations of more than N bytes (error 2, out of
 * memory), as a GPU whose memory is full would.
 *
 * Used by the lit tests of test/Gpu and by test/gpu/replay.sh --dry-run, through
 * $XF_CUDA_DRIVER (the runtime opens it for Halide too); never a real driver.
 *===----------------------------------------------------------------------===*/

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
enum {
  kSuccess = 0,
  kInvalidValue = 1,
  kNotFound = 500,
  kIllegalState = 401,
  kNotSupported = 801,
  kCaptureUnsupported = 900,
  kCaptureInvalidated = 901
};
/* An H100's / H200's shared memory a block may opt in to (227 KiB). */
enum { kSharedOptIn = 232448 };

static unsigned long long blockNanoseconds; /* $XF_CUDA_STAND_IN_BLOCK_NS per block launched */
/* $XF_CUDA_STAND_IN_HOST_NS per cuModuleGetFunction: the host's work before a launch */
static unsigned long long hostNanoseconds;
static unsigned long long launches, graphLaunches, graphKernels, capturedLaunches, paramUpdates;
/* Executable graphs alive now, and at most (the runtime bounds the graphs it keeps). */
static unsigned long long liveExecs, mostLiveExecs;
static FILE *logFile;
static int logOpened;

static FILE *launchLog(void) {
  if (!logOpened) {
    const char *path = getenv("XF_CUDA_STAND_IN_LOG");
    logFile = path && *path ? fopen(path, "w") : NULL;
    logOpened = 1;
  }
  return logFile;
}

__attribute__((destructor)) static void finish(void) {
  FILE *f = launchLog();
  if (f) {
    fprintf(f, "launches %llu\n", launches);
    fprintf(f, "graph-launches %llu kernels %llu\n", graphLaunches, graphKernels);
    fprintf(f, "captured %llu\n", capturedLaunches);
    fprintf(f, "param-updates %llu\n", paramUpdates);
    fprintf(f, "graph-execs-live-most %llu\n", mostLiveExecs);
    fclose(f);
  }
}

/* A graph: its kernel nodes in launch order (each node allocated on its own, so a handle
 * stays valid as the graph grows). An executable graph copies the nodes' launch settings and
 * keeps the graph's node handles to find them by (cuGraphExecKernelNodeSetParams). */
typedef struct {
  const char *function;
  unsigned grid[3], block[3], shared;
  char arguments[512];
} Node;
typedef struct {
  Node **nodes;
  size_t count;
} Graph;
typedef struct {
  Node **handles; /* the graph's nodes */
  Node *settings; /* as last set */
  size_t count;
} GraphExec;

static void *capturingStream;
static Graph *capture;
static int captureInvalid;

/* Anything but a kernel launch while a capture is active invalidates it. */
static int refusedByCapture(void) {
  if (!capture)
    return 0;
  captureInvalid = 1;
  return 1;
}

/* $XF_CUDA_STAND_IN_REFUSE_CAPTURED=N: the N-th launch of each capture is refused (900) and
 * invalidates it, as an operation a capture cannot take would. */
static size_t refusedCapturedLaunch(void) {
  const char *n = getenv("XF_CUDA_STAND_IN_REFUSE_CAPTURED");
  return n && *n ? (size_t)strtoul(n, NULL, 10) : 0;
}

static unsigned dynamicSharedOf(const void *function);

/* Dynamic shared memory past 48 KiB only where the function was allowed it
 * (cuFuncSetAttribute), as a real driver refuses such a launch otherwise. */
static int validLaunch(const void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned shared) {
  unsigned limit = dynamicSharedOf(function);
  return function && gx && gy && gz && bx * by * bz != 0 && bx * by * bz <= 1024 &&
         shared <= (limit > 49152 ? limit : 49152);
}

CUresult cuInit(unsigned flags) {
  (void)flags;
  return kSuccess;
}
CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return kSuccess;
}
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return kSuccess;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  (void)dev;
  snprintf(name, (size_t)len, "xf CUDA stand-in (no GPU)");
  return kSuccess;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  (void)dev;
  *bytes = (size_t)1 << 34;
  return kSuccess;
}

/* An H100/H200-like device: 132 SMs, capability 9.0 ($XF_CUDA_STAND_IN_CAPABILITY). */
CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice dev) {
  (void)dev;
  switch (attribute) {
  case 1:
    *value = 1024;
    break; /* threads per block */
  case 2:
  case 3:
    *value = 1024;
    break; /* block dims x, y */
  case 4:
    *value = 64;
    break; /* block dim z */
  case 5:
    *value = 2147483647;
    break; /* grid x */
  case 6:
  case 7:
    *value = 65535;
    break; /* grid y, z */
  case 8:
    *value = 49152;
    break; /* shared memory per block */
  case 9:
    *value = 65536;
    break; /* constant memory */
  case 10:
    *value = 32;
    break; /* warp size */
  case 13:
    *value = 1980000;
    break; /* clock rate, kHz */
  case 16:
    *value = 132;
    break; /* multiprocessors */
  case 75: /* capability major, minor: 9.0, or $XF_CUDA_STAND_IN_CAPABILITY (e.g. 80: 8.0) */
  case 76: {
    const char *text = getenv("XF_CUDA_STAND_IN_CAPABILITY");
    int capability = text && *text ? atoi(text) : 90;
    *value = attribute == 75 ? capability / 10 : capability % 10;
    break;
  }
  case 97:
    *value = kSharedOptIn;
    break; /* shared memory per block, opted in */
  default:
    *value = 0;
    break;
  }
  return kSuccess;
}

static int contextObject;
CUresult cuCtxCreate_v2(void **ctx, unsigned flags, CUdevice dev) {
  (void)flags, (void)dev;
  *ctx = &contextObject;
  return kSuccess;
}
CUresult cuCtxDestroy_v2(void *ctx) {
  (void)ctx;
  return kSuccess;
}
CUresult cuProfilerStop(void) { return kSuccess; }
CUresult cuCtxGetApiVersion(void *ctx, unsigned *version) {
  (void)ctx;
  *version = 12000;
  return kSuccess;
}
CUresult cuCtxGetDevice(CUdevice *device) {
  *device = 0;
  return kSuccess;
}
CUresult cuCtxPushCurrent_v2(void *ctx) {
  (void)ctx;
  return kSuccess;
}
CUresult cuCtxGetCurrent(void **ctx) {
  *ctx = &contextObject;
  return kSuccess;
}
CUresult cuCtxPopCurrent_v2(void **ctx) {
  if (ctx)
    *ctx = &contextObject;
  return kSuccess;
}
CUresult cuCtxSynchronize(void) { return refusedByCapture() ? kCaptureUnsupported : kSuccess; }
CUresult cuStreamSynchronize(void *stream) {
  (void)stream;
  return refusedByCapture() ? kCaptureUnsupported : kSuccess;
}
CUresult cuPointerGetAttribute(void *result, int query, CUdeviceptr ptr) {
  (void)query, (void)ptr;
  *(void **)result = &contextObject;
  return kSuccess;
}

/* A module is its image: a function must be an entry of a PTX image (Halide's modules and
   the tensor-core GEMMs' are PTX text), so a launcher naming a kernel its PTX lacks fails. */
CUresult cuModuleLoadData(void **module, const void *image) {
  if (!image)
    return kInvalidValue;
  *module = (void *)image;
  return kSuccess;
}
CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned n, int *options,
                            void **values) {
  (void)n, (void)options, (void)values;
  return cuModuleLoadData(module, image);
}
CUresult cuModuleUnload(void *module) {
  (void)module;
  return kSuccess;
}
/* Each entry's parameter sizes in bytes, read from its PTX (`.param .u8 ...`), so that a 1-byte
 * scalar (Halide's bools) is logged as its byte: the bytes after it are not the kernel's. */
typedef struct {
  unsigned char sizes[256];
  size_t count; /* 0: not known (an image that is not PTX); every scalar read as 4 bytes */
} ParamSizes;
static char *functionNames[4096];
static ParamSizes functionParams[4096];
static unsigned functionDynamicShared[4096]; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
static size_t functionCount;

static void readParamSizes(const char *entry, ParamSizes *out) {
  const char *end = strchr(entry, ')');
  out->count = 0;
  for (const char *p = strstr(entry, ".param ."); p && end && p < end && out->count < 256;
       p = strstr(p + 1, ".param .")) {
    const char *type = p + strlen(".param .");
    int bits = atoi(type + 1); /* u8, b16, s32, f32, u64, ... */
    out->sizes[out->count++] = (unsigned char)(bits >= 8 ? bits / 8 : 4);
  }
}

static const ParamSizes *paramSizesOf(const void *function) {
  for (size_t i = 0; i < functionCount; ++i)
    if (functionNames[i] == function)
      return &functionParams[i];
  return NULL;
}

static unsigned dynamicSharedOf(const void *function) {
  for (size_t i = 0; i < functionCount; ++i)
    if (functionNames[i] == function)
      return functionDynamicShared[i];
  return 0;
}

/* Only MAX_DYNAMIC_SHARED_SIZE_BYTES (8), up to an H100/H200's opt-in limit; logged. */
CUresult cuFuncSetAttribute(void *function, int attribute, int value) {
  size_t i = 0;
  while (i < functionCount && functionNames[i] != function)
    ++i;
  if (i == functionCount || attribute != 8 || value < 0 || value > kSharedOptIn)
    return kInvalidValue;
  functionDynamicShared[i] = (unsigned)value;
  FILE *f = launchLog();
  if (f)
    fprintf(f, "attribute %s max dynamic shared %d\n", (const char *)function, value);
  return kSuccess;
}

/* A function handle is its entry's name, so a launch can say which kernel it was; the same
 * name gives the same handle, as a real driver's module gives its function's (its parameter
 * sizes those of the module loaded last). */
CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  const char *hostNs = getenv("XF_CUDA_STAND_IN_HOST_NS");
  if (hostNs)
    hostNanoseconds += strtoull(hostNs, NULL, 10);
  const char *ptx = (const char *)module;
  const char *found = NULL;
  if (strstr(ptx, ".version") && strstr(ptx, ".entry")) {
    char entry[512];
    snprintf(entry, sizeof entry, ".entry %s(", name);
    if (!(found = strstr(ptx, entry)))
      return kNotFound;
  }
  size_t i = 0;
  while (i < functionCount && strcmp(functionNames[i], name) != 0)
    ++i;
  if (i == functionCount) {
    if (functionCount == sizeof functionNames / sizeof functionNames[0] ||
        !(functionNames[functionCount] = strdup(name)))
      return kInvalidValue;
    ++functionCount;
  }
  if (found)
    readParamSizes(found, &functionParams[i]);
  *function = functionNames[i];
  return kSuccess;
}

/* Every allocation in order, so that a kernel argument pointing into one can be logged as
 * `d<index>+<offset>`, the same from run to run (addresses are not). */
typedef struct {
  uintptr_t base;
  size_t bytes;
} Allocation;
static Allocation *allocations;
static size_t allocationCount;

static int guarded(void) {
  const char *g = getenv("XF_CUDA_STAND_IN_GUARD");
  return g && *g == '1';
}
static size_t pageRound(size_t bytes) {
  return (bytes + 4095) / 4096 * 4096;
}
/* $XF_CUDA_STAND_IN_GUARD: the allocations holding [p, p + n) opened to the host (access 1) or
 * closed again (0), around a copy of the stand-in's own. */
static void openDevice(uintptr_t p, size_t n, int access) {
  if (!guarded())
    return;
  for (size_t j = 0; j < allocationCount; ++j) {
    uintptr_t base = allocations[j].base, end = base + allocations[j].bytes;
    if (allocations[j].bytes && p < end && p + n > base)
      mprotect((void *)base, pageRound(allocations[j].bytes),
               access ? PROT_READ | PROT_WRITE : PROT_NONE);
  }
}

static void noteAllocation(uintptr_t base, size_t bytes) {
  Allocation *grown = realloc(allocations, (allocationCount + 1) * sizeof(Allocation));
  if (!grown)
    return;
  allocations = grown;
  allocations[allocationCount++] = (Allocation){base, bytes};
}

/* A launch's arguments as text: Halide's argument array ends with a null pointer; each is a
 * device address (8 bytes, logged as d<index>+<offset>) or a 4-byte scalar (logged as an
 * integer; a float's bits read as one), or a 1- or 2-byte one where the entry's PTX says so.
 * Only 8 bytes are read of each, which Halide's argument storage has. */
static void describeArguments(const void *function, void **params, char *text, size_t size) {
  const ParamSizes *sizes = paramSizesOf(function);
  size_t used = 0;
  text[0] = 0;
  for (size_t i = 0; params && params[i] && used + 32 < size; ++i) {
    uint64_t wide;
    int32_t narrow;
    memcpy(&wide, params[i], sizeof wide);
    memcpy(&narrow, params[i], sizeof narrow);
    const unsigned bytes = sizes && i < sizes->count ? sizes->sizes[i] : 8;
    if (bytes == 1)
      narrow = *(const uint8_t *)params[i];
    else if (bytes == 2)
      narrow = *(const int16_t *)params[i];
    size_t a = allocationCount;
    for (size_t j = 0; j < allocationCount && bytes == 8; ++j)
      if (wide >= allocations[j].base && wide - allocations[j].base < allocations[j].bytes) {
        a = j;
        break;
      }
    int n = a < allocationCount ? snprintf(text + used, size - used, " d%zu+%llu", a,
                                           (unsigned long long)(wide - allocations[a].base))
                                : snprintf(text + used, size - used, " %d", narrow);
    used += n > 0 ? (size_t)n : 0;
  }
}

CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes) {
  void *p = NULL;
  const char *most = getenv("XF_CUDA_STAND_IN_MAX_ALLOC");
  if (refusedByCapture())
    return kCaptureUnsupported;
  if (most && *most && bytes > (size_t)strtoull(most, NULL, 10))
    return 2; /* out of memory */
  if (guarded()) { /* zeros, no access */
    p = mmap(NULL, pageRound(bytes ? bytes : 1), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      return 2;
  } else if (posix_memalign(&p, 256, bytes ? bytes : 1)) {
    return 2; /* out of memory */
  } else {
    memset(p, 0, bytes);
  }
  noteAllocation((uintptr_t)p, bytes);
  *ptr = (CUdeviceptr)(uintptr_t)p;
  return kSuccess;
}
CUresult cuMemFree_v2(CUdeviceptr ptr) {
  if (refusedByCapture())
    return kCaptureUnsupported;
  size_t bytes = 0;
  for (size_t j = 0; j < allocationCount; ++j)
    if (allocations[j].base == (uintptr_t)ptr)
      bytes = allocations[j].bytes, allocations[j].bytes = 0;
  if (guarded())
    munmap((void *)(uintptr_t)ptr, pageRound(bytes ? bytes : 1));
  else
    free((void *)(uintptr_t)ptr);
  return kSuccess;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  if (refusedByCapture())
    return kCaptureUnsupported;
  openDevice(dst, n, 1);
  memcpy((void *)(uintptr_t)dst, src, n);
  openDevice(dst, n, 0);
  return kSuccess;
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  if (refusedByCapture())
    return kCaptureUnsupported;
  openDevice(src, n, 1);
  memcpy(dst, (void *)(uintptr_t)src, n);
  openDevice(src, n, 0);
  return kSuccess;
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (refusedByCapture())
    return kCaptureUnsupported;
  openDevice(dst, n, 1);
  openDevice(src, n, 1);
  memmove((void *)(uintptr_t)dst, (void *)(uintptr_t)src, n);
  openDevice(src, n, 0);
  openDevice(dst, n, 0);
  return kSuccess;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *s) {
  (void)s;
  return cuMemcpyHtoD_v2(dst, src, n);
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *s) {
  (void)s;
  return cuMemcpyDtoH_v2(dst, src, n);
}
/* Nanoseconds the device copies took on the event clock (below). */
static unsigned long long copyNanoseconds;
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void *s) {
  (void)s;
  const char *rate = getenv("XF_CUDA_STAND_IN_COPY_GBS");
  if (rate && atof(rate) > 0)
    copyNanoseconds += (unsigned long long)(2.0 * (double)n / atof(rate));
  return cuMemcpyDtoD_v2(dst, src, n);
}
CUresult cuMemcpy3D_v2(const void *copy) {
  (void)copy;
  return kNotSupported;
}

CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *stream, void **params,
                        void **extra) {
  (void)extra;
  if (!validLaunch(function, gx, gy, gz, bx, by, bz, shared))
    return kInvalidValue;
  FILE *f = launchLog();
  /* As many arguments as the entry's PTX declares (null-terminated, as Halide's and libxfrt's
   * launches pass them): a launcher out of step with its kernels' parameters fails here. */
  const ParamSizes *sizes = paramSizesOf(function);
  size_t count = 0;
  while (params && params[count])
    ++count;
  if (sizes && sizes->count && count != sizes->count) {
    if (f)
      fprintf(f, "invalid launch %s: %zu arguments, its PTX declares %zu\n", (const char *)function,
              count, sizes->count);
    return kInvalidValue;
  }
  char arguments[512];
  describeArguments(function, params, arguments, sizeof arguments);
  if (capture && stream == capturingStream) {
    if (captureInvalid)
      return kCaptureInvalidated;
    if (capture->count + 1 == refusedCapturedLaunch()) {
      captureInvalid = 1;
      return kCaptureUnsupported;
    }
    Node *node = malloc(sizeof(Node));
    Node **grown = realloc(capture->nodes, (capture->count + 1) * sizeof(Node *));
    if (!node || !grown)
      return 2;
    *node = (Node){(const char *)function, {gx, gy, gz}, {bx, by, bz}, shared, ""};
    memcpy(node->arguments, arguments, sizeof arguments);
    capture->nodes = grown;
    capture->nodes[capture->count++] = node;
    ++capturedLaunches;
    if (f)
      fprintf(f, "capture %s grid %u %u %u block %u %u %u shared %u args%s\n",
              (const char *)function, gx, gy, gz, bx, by, bz, shared, arguments);
    return kSuccess;
  }
  if (refusedByCapture()) /* a launch elsewhere during a global-mode capture */
    return kCaptureUnsupported;
  ++launches;
  {
    const char *perBlock = getenv("XF_CUDA_STAND_IN_BLOCK_NS");
    if (perBlock && *perBlock)
      blockNanoseconds += (unsigned long long)gx * gy * gz * strtoull(perBlock, NULL, 10);
  }
  if (f)
    fprintf(f, "launch %s grid %u %u %u block %u %u %u shared %u args%s\n", (const char *)function,
            gx, gy, gz, bx, by, bz, shared, arguments);
  return kSuccess;
}

/* Events: stamped in nanoseconds with the kernels launched before them, one by one or in graphs
 * (1 µs each between two events), and with $XF_CUDA_STAND_IN_COPY_GBS=R the asynchronous
 * device copies (2n bytes, read and written, at R GB/s). */
/* Every live handle (events, graphs, their executables) stays reachable from here: a driver
 * frees them when the process exits, so a program that keeps them to the end (libxfrt's
 * --profile event pool, its graphs per step) leaks nothing, and LeakSanitizer must not say
 * otherwise. */
static void **liveHandles;
static size_t liveHandleCount, liveHandleCapacity;

static int keepLive(void *handle) {
  if (liveHandleCount == liveHandleCapacity) {
    size_t capacity = liveHandleCapacity ? 2 * liveHandleCapacity : 64;
    void **grown = realloc(liveHandles, capacity * sizeof *grown);
    if (!grown)
      return 0;
    liveHandles = grown;
    liveHandleCapacity = capacity;
  }
  liveHandles[liveHandleCount++] = handle;
  return 1;
}

static void dropLive(void *handle) {
  for (size_t i = 0; i < liveHandleCount; ++i)
    if (liveHandles[i] == handle) {
      liveHandles[i] = liveHandles[--liveHandleCount];
      return;
    }
}

CUresult cuEventCreate(unsigned long long **event, unsigned flags) {
  (void)flags;
  *event = calloc(1, sizeof(unsigned long long));
  if (!*event || !keepLive(*event)) {
    free(*event);
    return 2;
  }
  return kSuccess;
}
CUresult cuEventDestroy_v2(unsigned long long *event) {
  dropLive(event);
  free(event);
  return kSuccess;
}
CUresult cuEventRecord(unsigned long long *event, void *stream) {
  if (capture && stream == capturingStream && refusedByCapture())
    return kCaptureUnsupported;
  *event = (launches + graphKernels) * 1000ull + copyNanoseconds + blockNanoseconds +
           hostNanoseconds;
  return kSuccess;
}
CUresult cuEventSynchronize(unsigned long long *event) {
  (void)event;
  return refusedByCapture() ? kCaptureUnsupported : kSuccess;
}
CUresult cuEventElapsedTime(float *ms, unsigned long long *start, unsigned long long *end) {
  *ms = (float)((double)(*end - *start) / 1e6);
  return kSuccess;
}

/* Streams of the runtime's own; the legacy stream (NULL) cannot be captured. */
CUresult cuStreamCreate(void **stream, unsigned flags) {
  (void)flags;
  *stream = malloc(1);
  return *stream ? kSuccess : 2;
}
CUresult cuStreamDestroy_v2(void *stream) {
  free(stream);
  return kSuccess;
}

static void freeGraph(Graph *graph) {
  dropLive(graph);
  for (size_t i = 0; graph && i < graph->count; ++i)
    free(graph->nodes[i]);
  if (graph)
    free(graph->nodes);
  free(graph);
}

CUresult cuStreamBeginCapture_v2(void *stream, int mode) {
  (void)mode;
  const char *off = getenv("XF_CUDA_STAND_IN_NO_CAPTURE");
  if (off && *off && strcmp(off, "0") != 0)
    return kNotSupported;
  if (!stream)
    return kCaptureUnsupported;
  if (capture)
    return kIllegalState;
  capture = calloc(1, sizeof(Graph));
  if (!capture)
    return 2;
  capturingStream = stream;
  captureInvalid = 0;
  return kSuccess;
}

/* status: 0 none, 1 active, 2 invalidated; the dependencies of the next node: the last one. */
CUresult cuStreamGetCaptureInfo_v2(void *stream, int *status, unsigned long long *id, void **graph,
                                   Node *const **dependencies, size_t *count) {
  static Node *last;
  int active = capture && stream == capturingStream;
  *status = !active ? 0 : captureInvalid ? 2 : 1;
  if (id)
    *id = active ? 1 : 0;
  if (graph)
    *graph = active ? capture : NULL;
  last = active && capture->count ? capture->nodes[capture->count - 1] : NULL;
  if (dependencies)
    *dependencies = last ? &last : NULL;
  if (count)
    *count = last ? 1 : 0;
  return kSuccess;
}

CUresult cuStreamEndCapture(void *stream, Graph **graph) {
  if (!capture || stream != capturingStream)
    return kIllegalState;
  Graph *done = capture;
  int invalid = captureInvalid;
  capture = NULL, capturingStream = NULL, captureInvalid = 0;
  if (invalid) {
    freeGraph(done);
    *graph = NULL;
    return kCaptureInvalidated;
  }
  if (!keepLive(done)) {
    freeGraph(done);
    return 2;
  }
  *graph = done;
  return kSuccess;
}

CUresult cuGraphDestroy(Graph *graph) {
  freeGraph(graph);
  return kSuccess;
}

CUresult cuGraphInstantiateWithFlags(GraphExec **exec, Graph *graph, unsigned long long flags) {
  (void)flags;
  if (!graph || refusedByCapture())
    return kInvalidValue;
  GraphExec *e = calloc(1, sizeof(GraphExec));
  if (!e)
    return 2;
  e->count = graph->count;
  e->handles = malloc((graph->count + 1) * sizeof(Node *));
  e->settings = malloc((graph->count + 1) * sizeof(Node));
  if (!e->handles || !e->settings)
    return 2;
  for (size_t i = 0; i < graph->count; ++i)
    e->handles[i] = graph->nodes[i], e->settings[i] = *graph->nodes[i];
  if (!keepLive(e))
    return 2;
  if (++liveExecs > mostLiveExecs)
    mostLiveExecs = liveExecs;
  *exec = e;
  return kSuccess;
}

CUresult cuGraphExecDestroy(GraphExec *exec) {
  dropLive(exec);
  if (exec) {
    --liveExecs;
    free(exec->handles);
    free(exec->settings);
  }
  free(exec);
  return kSuccess;
}

/* CUDA_KERNEL_NODE_PARAMS (the first version, which cuGraphExecKernelNodeSetParams takes). */
typedef struct {
  void *function;
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  void **kernelParams, **extra;
} KernelNodeParams;

/* A node keeps its kernel: the stand-in refuses another function (the runtime never asks). */
CUresult cuGraphExecKernelNodeSetParams(GraphExec *exec, Node *node, const KernelNodeParams *p) {
  if (!exec || !p ||
      !validLaunch(p->function, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
                   p->blockDimZ, p->sharedMemBytes))
    return kInvalidValue;
  for (size_t i = 0; i < exec->count; ++i)
    if (exec->handles[i] == node) {
      if (strcmp((const char *)p->function, exec->settings[i].function) != 0)
        return kInvalidValue;
      Node *n = &exec->settings[i];
      memcpy(n->grid, (unsigned[]){p->gridDimX, p->gridDimY, p->gridDimZ}, sizeof n->grid);
      memcpy(n->block, (unsigned[]){p->blockDimX, p->blockDimY, p->blockDimZ}, sizeof n->block);
      n->shared = p->sharedMemBytes;
      describeArguments(p->function, p->kernelParams, n->arguments, sizeof n->arguments);
      ++paramUpdates;
      return kSuccess;
    }
  return kInvalidValue;
}

CUresult cuGraphLaunch(GraphExec *exec, void *stream) {
  (void)stream;
  if (!exec || refusedByCapture())
    return kInvalidValue;
  ++graphLaunches;
  graphKernels += exec->count;
  FILE *f = launchLog();
  if (f) {
    fprintf(f, "graph-launch %zu kernels\n", exec->count);
    for (size_t i = 0; i < exec->count; ++i) {
      const Node *n = &exec->settings[i];
      fprintf(f, "graph-kernel %s grid %u %u %u block %u %u %u shared %u args%s\n", n->function,
              n->grid[0], n->grid[1], n->grid[2], n->block[0], n->block[1], n->block[2], n->shared,
              n->arguments);
    }
  }
  return kSuccess;
}
