//===- TensorCoreLaunch.cpp - launching the MLIR tensor-core kernels ------===//
//
// `xfc --target cuda-sm_80 --gpu-matmul=tf32|bf16` builds the qualifying GEMMs and prefill
// attentions as PTX made by MLIR (compiler/lib/Target/Cuda/TensorCore*.cpp); each one's host
// function hands its PTX, entry name and Halide buffers here. The module is loaded once per CUDA context with
// cuModuleLoadData and launched with cuLaunchKernel — the driver functions Halide's CUDA
// runtime uses (halide_cuda_get_symbol, CudaDriver.cpp: the launches are counted), in
// Halide's context and on its stream, so the kernel is ordered with Halide's kernels and
// --profile's events. docs/gpu.md, "Tensor cores".
//
//===----------------------------------------------------------------------===//

#include "HalideBufferLayout.h"
#include "xfrt/CudaDriver.h"

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>

extern "C" {
__attribute__((weak)) void halide_error(void *, const char *);
void *halide_cuda_get_symbol(void *, const char *); // CudaDriver.cpp
}

namespace {

using xfrt::HalideBuffer;

// What the compiler's launcher passes (TensorCoreGemmLauncher.cpp launchFlags).
constexpr int64_t kBias = 1, kResidual = 2, kBf16Weights = 4, kGated = 8, kWeightNK = 16;
constexpr int kNotTaken = 1, kFailed = -1;
// The kernels' tiling (TensorCoreGemm.h): 64 × 64 tiles of out (`<entry>`) or 32 × 64
// (`<entry>32`, below tallRows rows), 128 threads.
constexpr int64_t kTileRows = 64, kShortTileRows = 32, kTileCols = 64, kThreads = 128;

struct Driver {
  int (*currentContext)(void **) = nullptr;
  int (*loadData)(void **, const void *) = nullptr;
  int (*getFunction)(void **, void *, const char *) = nullptr;
  int (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                void *, void **, void **) = nullptr;
  bool found() const { return currentContext && loadData && getFunction && launch; }
};

Driver lookUpDriver() {
  Driver d;
  auto symbol = [](const char *name) { return halide_cuda_get_symbol(nullptr, name); };
  d.currentContext = reinterpret_cast<int (*)(void **)>(symbol("cuCtxGetCurrent"));
  d.loadData = reinterpret_cast<int (*)(void **, const void *)>(symbol("cuModuleLoadData"));
  d.getFunction =
      reinterpret_cast<int (*)(void **, void *, const char *)>(symbol("cuModuleGetFunction"));
  d.launch = reinterpret_cast<decltype(d.launch)>(symbol("cuLaunchKernel"));
  return d;
}

std::mutex functionsLock;
std::map<std::pair<void *, const char *>, void *> modules;   // (context, PTX) → CUmodule
std::map<std::pair<void *, std::string>, void *> functions; // (CUmodule, entry) → CUfunction

int fail(const std::string &message) {
  if (halide_error)
    halide_error(nullptr, message.c_str());
  return kFailed;
}

// A memref<?xT> descriptor as the kernel's parameters: allocated and aligned pointer,
// offset, size, stride (MLIR's expanded calling convention, 5 × 8 bytes).
struct Memref {
  uint64_t allocated, aligned;
  int64_t offset, size, stride;
};

// Row stride of a [rows, cols] buffer (dim 0 = cols, stride 1).
int64_t rowStride(const HalideBuffer *b) { return b->dimensions > 1 ? b->dim[1].stride : 0; }
// Stride of dimension `i` (0 where the buffer has fewer).
int64_t strideOf(const HalideBuffer *b, int i) { return b->dimensions > i ? b->dim[i].stride : 0; }

// Why the kernel cannot read `b` (its 16- or 8-byte vector accesses), or "": its address and
// the strides of its dimensions above the first.
std::string misaligned(const char *what, const HalideBuffer *b, int elementBytes, int vector) {
  int64_t bytes = int64_t(vector) * elementBytes;
  bool strides = true;
  for (int i = 1; i < b->dimensions; ++i)
    strides &= b->dim[i].stride % vector == 0;
  if (b->device % uint64_t(bytes) != 0 || !strides)
    return std::string(what) + " is not aligned to " + std::to_string(bytes) +
           " bytes per row (address and row stride)";
  return "";
}

// The elements from a buffer's start to past its last (any strides).
int64_t span(const HalideBuffer *b) {
  int64_t last = 0;
  for (int i = 0; i < b->dimensions; ++i)
    last += (b->dim[i].extent - 1) * b->dim[i].stride;
  return last + 1;
}

// The CUfunction of `entry` in `ptx` for the current context, loading the module once.
int functionOf(const Driver &d, void *context, const char *ptx, const std::string &entry,
               void **fn) {
  std::lock_guard<std::mutex> guard(functionsLock);
  void *&module = modules[{context, ptx}];
  if (!module)
    if (int rc = d.loadData(&module, ptx)) {
      modules.erase({context, ptx});
      return rc;
    }
  void *&function = functions[{module, entry}];
  if (!function)
    if (int rc = d.getFunction(&function, module, entry.c_str())) {
      functions.erase({module, entry});
      return rc;
    }
  *fn = function;
  return 0;
}

// The kernel's launch: N/64 × ⌈M/tileRows⌉ blocks of 128 threads; its parameters are the
// five memrefs (absent bias or residual: out's, never read), M, the row strides and K.
int launchKernel(const Driver &d, void *fn, void *stream, int64_t n, int64_t k, int64_t flags,
                 int64_t rows, int64_t tileRows, const HalideBuffer *x, const HalideBuffer *w,
                 const HalideBuffer *bias, const HalideBuffer *residual, const HalideBuffer *out) {
  auto memref = [](const HalideBuffer *b, int64_t elements) {
    return Memref{b->device, b->device, 0, elements, 1};
  };
  const int64_t wCols = (flags & kGated) ? 2 * n : n;
  Memref mx = memref(x, rows * rowStride(x)),
         mw = memref(w, ((flags & kWeightNK) ? wCols : k) * rowStride(w)),
         mo = memref(out, rows * rowStride(out));
  Memref mb = (flags & kBias) ? memref(bias, wCols) : mo;
  Memref mr = (flags & kResidual) ? memref(residual, rows * rowStride(residual)) : mo;
  int64_t scalars[6] = {rows, rowStride(x), rowStride(w),
                        (flags & kResidual) ? rowStride(residual) : 0, rowStride(out), k};
  void *params[32] = {}; // null-terminated, as Halide's launches pass them
  int p = 0;
  for (Memref *m : {&mx, &mw, &mb, &mr, &mo})
    for (void *field : {(void *)&m->allocated, (void *)&m->aligned, (void *)&m->offset,
                        (void *)&m->size, (void *)&m->stride})
      params[p++] = field;
  for (int64_t &s : scalars)
    params[p++] = &s;
  unsigned gridX = unsigned(n / kTileCols), gridY = unsigned((rows + tileRows - 1) / tileRows);
  return d.launch(fn, gridX, gridY, 1, unsigned(kThreads), 1, 1, 0, stream, params, nullptr);
}

} // namespace

// Loads `kernel` of `ptx` in Halide's context and launches it on Halide's stream
// (CudaDriver.cpp), so the kernel is ordered with Halide's, captured into CUDA graphs with them
// and timed by --profile's events. 0 when launched; else an error through halide_error, `what`
// first.
static int launchInHalideContext(const char *ptx, const std::string &kernel,
                                 const std::string &what,
                                 const std::function<int(const Driver &, void *, void *)> &launch) {
  static const Driver driver = lookUpDriver();
  if (!driver.found())
    return fail(what + "the CUDA driver lacks cuModuleLoadData/cuLaunchKernel");
  std::string error;
  bool launched = xfrt::inHalideContext([&](void *stream) {
    void *context = nullptr, *fn = nullptr;
    int rc = driver.currentContext(&context);
    if (rc == 0 && (rc = functionOf(driver, context, ptx, kernel, &fn)) != 0)
      error = "loading its PTX failed with CUDA error " + std::to_string(rc);
    else if (rc == 0 && (rc = launch(driver, fn, stream)) != 0)
      error = "cuLaunchKernel failed with CUDA error " + std::to_string(rc);
    return rc == 0;
  });
  if (!launched)
    return fail(what + (error.empty() ? "no CUDA context" : error));
  return 0;
}

// Runs the GEMM's tensor-core kernel, or answers kNotTaken for Halide's pipeline (fewer
// than minRows rows). 0 when launched; an error (reported through halide_error) otherwise.
extern "C" int xfrt_tensor_core_gemm(const char *ptx, const char *entry, int64_t n, int64_t k,
                                     int64_t flags, int64_t minRows, int64_t tallRows,
                                     HalideBuffer *x,
                                     HalideBuffer *w, HalideBuffer *bias, HalideBuffer *residual,
                                     HalideBuffer *out) {
  const int64_t rows = x->dim[1].extent;
  if (rows < minRows)
    return kNotTaken;
  const bool tall = rows >= tallRows;
  const std::string kernel = std::string(entry) + (tall ? "" : "32");
  std::string what = "tensor-core GEMM " + kernel + ": ";
  for (const std::string &why :
       {misaligned("x", x, 4, 4), misaligned("the weight", w, (flags & kBf16Weights) ? 2 : 4, 4),
        misaligned("out", out, 4, 2), (flags & kBias) ? misaligned("the bias", bias, 4, 2) : "",
        (flags & kResidual) ? misaligned("the residual", residual, 4, 2) : ""})
    if (!why.empty())
      return fail(what + why);
  return launchInHalideContext(ptx, kernel, what, [&](const Driver &d, void *fn, void *stream) {
    return launchKernel(d, fn, stream, n, k, flags, rows, tall ? kTileRows : kShortTileRows, x, w,
                        bias, residual, out);
  });
}

// The attention kernel's launch (TensorCoreAttention.h): ⌈M/64⌉ × H blocks of 128 threads;
// its parameters are the memrefs q, k, v, out and M, Mz, the row stride of q, the key and
// head strides of k and of v, the row stride of out.
static int launchAttention(const Driver &d, void *fn, void *stream, int64_t heads,
                           const HalideBuffer *q, const HalideBuffer *k, const HalideBuffer *v,
                           const HalideBuffer *out) {
  auto memref = [](const HalideBuffer *b) { return Memref{b->device, b->device, 0, span(b), 1}; };
  Memref mq = memref(q), mk = memref(k), mv = memref(v), mo = memref(out);
  const int64_t rows = q->dim[1].extent;
  int64_t scalars[8] = {rows,          k->dim[1].extent, rowStride(q),   strideOf(k, 1),
                        strideOf(k, 2), strideOf(v, 1),  strideOf(v, 2), rowStride(out)};
  void *params[32] = {};
  int p = 0;
  for (Memref *m : {&mq, &mk, &mv, &mo})
    for (void *field : {(void *)&m->allocated, (void *)&m->aligned, (void *)&m->offset,
                        (void *)&m->size, (void *)&m->stride})
      params[p++] = field;
  for (int64_t &s : scalars)
    params[p++] = &s;
  constexpr int64_t kQueries = 64; // kTcAttentionQueries
  unsigned gridX = unsigned((rows + kQueries - 1) / kQueries);
  return d.launch(fn, gridX, unsigned(heads), 1, unsigned(kThreads), 1, 1, 0, stream, params,
                  nullptr);
}

// Runs the prefill attention's tensor-core kernel, or answers kNotTaken for Halide's pipeline
// (fewer than minRows query rows: a decode step's merge of its key ranges). q: [M, H·d];
// k, v: (column, key, K/V head); out: [M, H·d]. 0 when launched; an error otherwise.
extern "C" int xfrt_tensor_core_attention(const char *ptx, const char *entry, int64_t heads,
                                          int64_t headSize, int64_t minRows, HalideBuffer *q,
                                          HalideBuffer *k, HalideBuffer *v, HalideBuffer *out) {
  const int64_t rows = q->dim[1].extent;
  if (rows < minRows)
    return kNotTaken;
  std::string what = std::string("tensor-core attention ") + entry + ": ";
  if (k->dim[0].extent != headSize || v->dim[0].extent != headSize || k->dimensions != 3 ||
      v->dimensions != 3)
    return fail(what + "K and V are not (" + std::to_string(headSize) + ", keys, heads)");
  for (const std::string &why : {misaligned("q", q, 4, 4), misaligned("K", k, 4, 4),
                                 misaligned("V", v, 4, 4), misaligned("out", out, 4, 2)})
    if (!why.empty())
      return fail(what + why);
  return launchInHalideContext(ptx, entry, what, [&](const Driver &d, void *fn, void *stream) {
    return launchAttention(d, fn, stream, heads, q, k, v, out);
  });
}
