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
 *   launch <kernel entry> grid <x> <y> <z> block <x> <y> <z> shared <bytes>
 * and a last line `launches <n>`. Events (cuEventRecord) are stamped with the number of
 * launches so far; cuEventElapsedTime reports 1 µs per launch between two events, so a
 * profile's device times are launch counts the tests can check exactly.
 *
 * Used by the lit tests of test/Gpu and by test/gpu/replay.sh --dry-run, through
 * $XF_CUDA_DRIVER (the runtime opens it for Halide too); never a real driver.
 *===----------------------------------------------------------------------===*/

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
enum { kSuccess = 0, kInvalidValue = 1, kNotSupported = 801 };

static unsigned long long launches;
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
    fclose(f);
  }
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

/* An H100/H200-like device: 132 SMs, capability 9.0. */
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
  case 16:
    *value = 132;
    break; /* multiprocessors */
  case 75:
    *value = 9;
    break; /* capability major */
  case 76:
    *value = 0;
    break; /* capability minor */
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
CUresult cuCtxPopCurrent_v2(void **ctx) {
  if (ctx)
    *ctx = &contextObject;
  return kSuccess;
}
CUresult cuCtxSynchronize(void) { return kSuccess; }
CUresult cuStreamSynchronize(void *stream) {
  (void)stream;
  return kSuccess;
}
CUresult cuPointerGetAttribute(void *result, int query, CUdeviceptr ptr) {
  (void)query, (void)ptr;
  *(void **)result = &contextObject;
  return kSuccess;
}

static int moduleObject;
CUresult cuModuleLoadData(void **module, const void *image) {
  (void)image;
  *module = &moduleObject;
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
/* A function handle is its entry's name, so a launch can say which kernel it was. */
CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  (void)module;
  *function = strdup(name);
  return *function ? kSuccess : kInvalidValue;
}

CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 256, bytes ? bytes : 1))
    return 2; /* out of memory */
  memset(p, 0, bytes);
  *ptr = (CUdeviceptr)(uintptr_t)p;
  return kSuccess;
}
CUresult cuMemFree_v2(CUdeviceptr ptr) {
  free((void *)(uintptr_t)ptr);
  return kSuccess;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  memcpy((void *)(uintptr_t)dst, src, n);
  return kSuccess;
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  memcpy(dst, (void *)(uintptr_t)src, n);
  return kSuccess;
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  memmove((void *)(uintptr_t)dst, (void *)(uintptr_t)src, n);
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
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void *s) {
  (void)s;
  return cuMemcpyDtoD_v2(dst, src, n);
}
CUresult cuMemcpy3D_v2(const void *copy) {
  (void)copy;
  return kNotSupported;
}

CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *stream, void **params,
                        void **extra) {
  (void)stream, (void)params, (void)extra;
  if (!function || gx == 0 || gy == 0 || gz == 0 || bx * by * bz == 0 || bx * by * bz > 1024 ||
      shared > 49152)
    return kInvalidValue;
  ++launches;
  FILE *f = launchLog();
  if (f)
    fprintf(f, "launch %s grid %u %u %u block %u %u %u shared %u\n", (const char *)function, gx, gy,
            gz, bx, by, bz, shared);
  return kSuccess;
}

/* Events: stamped with the launches before them (1 µs each between two events). */
CUresult cuEventCreate(unsigned long long **event, unsigned flags) {
  (void)flags;
  *event = calloc(1, sizeof(unsigned long long));
  return *event ? kSuccess : 2;
}
CUresult cuEventDestroy_v2(unsigned long long *event) {
  free(event);
  return kSuccess;
}
CUresult cuEventRecord(unsigned long long *event, void *stream) {
  (void)stream;
  *event = launches;
  return kSuccess;
}
CUresult cuEventSynchronize(unsigned long long *event) {
  (void)event;
  return kSuccess;
}
CUresult cuEventElapsedTime(float *ms, unsigned long long *start, unsigned long long *end) {
  *ms = (float)(*end - *start) / 1000.0f;
  return kSuccess;
}
