//===- TensorCoreLaunch.cpp - launching the MLIR tensor-core kernels ------===//
//
// `xfc --target cuda-sm_80 --gpu-matmul=tf32|bf16` builds the qualifying GEMMs and prefill
// attentions as PTX made by MLIR (compiler/lib/Target/Cuda/TensorCore*.cpp); each one's host
// function hands its PTX, entry name and Halide buffers here. The module is loaded once per CUDA context with
// cuModuleLoadData and launched with cuLaunchKernel — the driver functions Halide's CUDA
// runtime uses (halide_cuda_get_symbol, CudaDriver.cpp: the launches are counted), in
// Halide's context and on its stream, so the kernel is ordered with Halide's kernels and
// --profile's events. docs/gpu.md, "Tensor cores"; where a GEMM's grid has fewer blocks than
// the GPU has SMs, K is split over block z into partials in the host's scratch, and a
// reduction applies the epilogue (docs/gpu.md, "Split-K").
//
//===----------------------------------------------------------------------===//

#include "HalideBufferLayout.h"
#include "xfrt/CudaDriver.h"
#include "xfrt/GpuGemmAbi.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

extern "C" {
__attribute__((weak)) void halide_error(void *, const char *);
void *halide_cuda_get_symbol(void *, const char *); // CudaDriver.cpp
}

namespace {

using xfrt::HalideBuffer;

// The kernels' tiling and the flags the compiler's launcher passes (TensorCoreGemmLauncher.cpp
// launchFlags): xfrt/GpuGemmAbi.h.
using namespace xfrt::gpu_gemm;
constexpr int kFailed = -1;
// allowDynamicShared's answer where the driver has no cuFuncSetAttribute (not a CUresult).
constexpr int kNoSetAttribute = -2;
// The launcher's choice of tiles: 64 × 64 (`<entry>`) from tallRows rows where that grid gives
// every SM kTallBlocksPerSm blocks, else 32 × 64 (`<entry>32`, split over K where its grid
// leaves SMs idle: `<entry>32_splitk` and `<entry>_reduce`); where the module has them,
// 128-row tiles (`<entry>128`, dynamic shared memory) wherever their grid alone gives every
// SM kTallBlocksPerSm blocks.
constexpr int64_t kTallBlocksPerSm = 2;

struct Driver {
  int (*currentContext)(void **) = nullptr;
  int (*loadData)(void **, const void *) = nullptr;
  int (*getFunction)(void **, void *, const char *) = nullptr;
  int (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                void *, void **, void **) = nullptr;
  int (*contextDevice)(int *) = nullptr;
  int (*deviceAttribute)(int *, int, int) = nullptr;
  int (*setFunctionAttribute)(void *, int, int) = nullptr; // only for dynamic shared memory
  bool found() const {
    return currentContext && loadData && getFunction && launch && contextDevice &&
           deviceAttribute;
  }
};

Driver lookUpDriver() {
  Driver d;
  auto symbol = [](const char *name) { return halide_cuda_get_symbol(nullptr, name); };
  d.currentContext = reinterpret_cast<int (*)(void **)>(symbol("cuCtxGetCurrent"));
  d.loadData = reinterpret_cast<int (*)(void **, const void *)>(symbol("cuModuleLoadData"));
  d.getFunction =
      reinterpret_cast<int (*)(void **, void *, const char *)>(symbol("cuModuleGetFunction"));
  d.launch = reinterpret_cast<decltype(d.launch)>(symbol("cuLaunchKernel"));
  d.contextDevice = reinterpret_cast<int (*)(int *)>(symbol("cuCtxGetDevice"));
  d.deviceAttribute = reinterpret_cast<int (*)(int *, int, int)>(symbol("cuDeviceGetAttribute"));
  d.setFunctionAttribute =
      reinterpret_cast<int (*)(void *, int, int)>(symbol("cuFuncSetAttribute"));
  return d;
}

std::mutex functionsLock;
std::map<std::pair<void *, const char *>, void *> modules;   // (context, PTX) → CUmodule
std::map<std::pair<void *, std::string>, void *> functions; // (CUmodule, entry) → CUfunction
std::map<std::pair<void *, int>, int> deviceAttributes;     // (context, attribute) → its value
std::map<void *, unsigned> dynamicShared; // CUfunction → the dynamic shared bytes it may use

int fail(const std::string &message) {
  if (halide_error)
    halide_error(nullptr, message.c_str());
  return kFailed;
}

// `message` on stderr, the first time a call of `key` has one to say.
void noteOnce(const std::string &key, const std::string &message) {
  static std::mutex lock;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> guard(lock);
  if (said.insert(key).second)
    std::fprintf(stderr, "%s\n", message.c_str());
}

// A memref<?xT> descriptor as the kernel's parameters: allocated and aligned pointer,
// offset, size, stride (MLIR's expanded calling convention; 8-byte pointers, 32-bit indices:
// kKernelIndexBits).
struct Memref {
  uint64_t allocated, aligned;
  int32_t offset, size, stride;
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

// Why the kernels' 32-bit indices cannot address `b` (GpuGemmAbi.h's kIndexLimit), or "".
std::string pastIndexRange(const char *what, const HalideBuffer *b) {
  int64_t largestStride = 0;
  for (int i = 0; i < b->dimensions; ++i)
    largestStride = std::max<int64_t>(largestStride, std::abs(int64_t(b->dim[i].stride)));
  if (span(b) + kIndexSlack * largestStride < kIndexLimit)
    return "";
  return std::string(what) + " has more elements than the kernel's 32-bit indices address";
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

// Lets `fn` use `bytes` of dynamic shared memory (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES):
// a kernel may use more than the 48 KiB of static shared memory only by asking, once.
int allowDynamicShared(const Driver &d, void *fn, unsigned bytes) {
  if (bytes <= unsigned(kStaticSharedBytes))
    return 0;
  std::lock_guard<std::mutex> guard(functionsLock);
  unsigned &allowed = dynamicShared[fn];
  if (allowed >= bytes)
    return 0;
  if (!d.setFunctionAttribute)
    return kNoSetAttribute;
  if (int rc = d.setFunctionAttribute(fn, /*MAX_DYNAMIC_SHARED_SIZE_BYTES=*/8, int(bytes)))
    return rc;
  allowed = bytes;
  return 0;
}

// A CU_DEVICE_ATTRIBUTE_* of the context's device, asked once a context.
int deviceAttributeOf(const Driver &d, void *context, int attribute, int *value) {
  std::lock_guard<std::mutex> guard(functionsLock);
  auto known = deviceAttributes.find({context, attribute});
  if (known == deviceAttributes.end()) {
    int device = 0, asked = 0;
    if (int rc = d.contextDevice(&device))
      return rc;
    if (int rc = d.deviceAttribute(&asked, attribute, device))
      return rc;
    known = deviceAttributes.emplace(std::make_pair(context, attribute), asked).first;
  }
  *value = known->second;
  return 0;
}

// The SMs of the context's device (MULTIPROCESSOR_COUNT; at least 1).
int multiprocessorsOf(const Driver &d, void *context, int64_t *sms) {
  int count = 0;
  if (int rc = deviceAttributeOf(d, context, /*MULTIPROCESSOR_COUNT=*/16, &count))
    return rc;
  *sms = count > 0 ? count : 1;
  return 0;
}

// The compute capability of the context's device, 10 · major + minor (90: an H100/H200).
int capabilityOf(const Driver &d, void *context, int *capability) {
  int major = 0, minor = 0;
  if (int rc = deviceAttributeOf(d, context, /*COMPUTE_CAPABILITY_MAJOR=*/75, &major))
    return rc;
  if (int rc = deviceAttributeOf(d, context, /*COMPUTE_CAPABILITY_MINOR=*/76, &minor))
    return rc;
  *capability = 10 * major + minor;
  return 0;
}

// The kernels of one call in Halide's context and stream: each launch finds its function
// (loading the module once) and says in `error` which step failed.
struct Launches {
  const Driver &d;
  void *context, *stream;
  const char *ptx;
  std::string error;
  // `shared`: the kernel's dynamic shared memory in bytes (0: its tiles are static).
  // `module`: the PTX that holds `kernel` where it is not the call's `ptx` (sm_90a's).
  int operator()(const std::string &kernel, unsigned gridX, unsigned gridY, unsigned gridZ,
                 void **params, unsigned shared = 0, unsigned threads = kThreads,
                 const char *module = nullptr) {
    void *fn = nullptr;
    if (int rc = functionOf(d, context, module ? module : ptx, kernel, &fn)) {
      error = "loading " + kernel + " of its PTX failed with CUDA error " + std::to_string(rc);
      return rc;
    }
    if (int rc = allowDynamicShared(d, fn, shared)) {
      error = rc == kNoSetAttribute
                  ? "the CUDA driver lacks cuFuncSetAttribute, which " + kernel +
                        "'s dynamic shared memory needs"
                  : "allowing " + kernel + " " + std::to_string(shared) +
                        " bytes of dynamic shared memory failed with CUDA error " +
                        std::to_string(rc);
      return rc;
    }
    if (int rc =
            d.launch(fn, gridX, gridY, gridZ, threads, 1, 1, shared, stream, params, nullptr)) {
      error = "cuLaunchKernel of " + kernel + " failed with CUDA error " + std::to_string(rc);
      return rc;
    }
    return 0;
  }
};

// A kernel's parameters: memrefs (5 fields each), then index scalars (32-bit; the callers
// checked their operands with pastIndexRange, which bounds every size, stride and extent);
// null-terminated, as Halide's launches pass them. Holds the values the pointers point to.
struct Params {
  static constexpr int kMaxMemrefs = 7, kMaxScalars = 8;
  Memref memrefs[kMaxMemrefs];
  int32_t scalars[kMaxScalars];
  void *pointers[kMaxMemrefs * 5 + kMaxScalars + 1] = {};
  Params(const std::vector<Memref> &ms, std::initializer_list<int64_t> ss) {
    assert(ms.size() <= kMaxMemrefs && ss.size() <= kMaxScalars);
    int p = 0, i = 0;
    for (const Memref &m : ms) {
      memrefs[i] = m;
      Memref &at = memrefs[i++];
      for (void *field : {(void *)&at.allocated, (void *)&at.aligned, (void *)&at.offset,
                          (void *)&at.size, (void *)&at.stride})
        pointers[p++] = field;
    }
    i = 0;
    for (int64_t s : ss) {
      assert(s >= INT32_MIN && s <= INT32_MAX);
      scalars[i] = int32_t(s);
      pointers[p++] = &scalars[i++];
    }
  }
  Params(const Params &) = delete;
};

// How a call splits K: `count` ranges of `sliceK` (a multiple of 32; the last may be shorter),
// or count 1 (no split).
struct Split {
  int64_t count = 1, sliceK = 0;
};

// $`variable` as a whole number from `low` to `high`: 0 unset, -1 anything else.
int64_t wholeNumberOf(const char *variable, long low, long high) {
  const char *text = std::getenv(variable);
  if (!text || !*text)
    return 0;
  char *end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  return *end || errno || v < low || v > high ? -1 : int64_t(v);
}

// $XF_TENSOR_CORE_SPLIT_K (docs/gpu.md, "Split-K"): 0 unset, the forced S (1: never split), or
// -1 when it is not a whole number from 1 to 64.
int64_t forcedSplit() {
  static const int64_t forced = wholeNumberOf("XF_TENSOR_CORE_SPLIT_K", 1, 64);
  return forced;
}

// $XF_GEMM_TILE_ROWS (docs/gpu.md, "Wide tiles"): 0 unset, the rows of the tiles every MLIR
// GEMM's call must take (32, 64, or 128 where the kernel has them), or -1 for another value.
int64_t forcedTileRows() {
  static const int64_t forced = [] {
    int64_t rows = wholeNumberOf("XF_GEMM_TILE_ROWS", 1, 128);
    return rows == 0 || rows == kShortTileRows || rows == kTileRows || rows == kWideTile ? rows
                                                                                         : -1;
  }();
  return forced;
}

// An on/off switch of the environment: 1 unset or "on", 0 "off", -1 anything else.
int onOff(const char *variable) {
  const char *text = std::getenv(variable);
  if (!text || !*text || std::string(text) == "on")
    return 1;
  return std::string(text) == "off" ? 0 : -1;
}

// $XF_MLIR_ATTENTION (docs/gpu.md, "Attention, fp32: the FMA kernel"): "off" runs Halide's
// pipeline beside the prefill attention's MLIR kernel every call (the two timed against each
// other in one run); $XF_MLIR_GEMM ("GEMM, fp32: the FMA kernel") the same for the GEMMs'
// MLIR kernels (fp32 FMA or tensor cores).
int mlirAttention() {
  static const int chosen = onOff("XF_MLIR_ATTENTION");
  return chosen;
}
int mlirGemm() {
  static const int chosen = onOff("XF_MLIR_GEMM");
  return chosen;
}
// $XF_WGMMA (docs/gpu.md, "Warpgroup GEMM (sm_90a)"): unset or "on" 1 (the launcher's choice),
// "off" 0 (the GEMMs that have a `<entry>_wg` keep their mma.sync kernels), "always" 2 (every
// call of such a GEMM on it, whatever its grid: the GPU harness's checks at short lengths),
// anything else -1.
int wgmmaGemm() {
  static const int chosen = [] {
    const char *text = std::getenv("XF_WGMMA");
    return text && std::string(text) == "always" ? 2 : onOff("XF_WGMMA");
  }();
  return chosen;
}

// The split of a 32-row-tile call of `blocks` blocks on `sms` SMs: enough ranges that the
// grid covers every SM once (S = ⌈SMs / blocks⌉), at most kMaxSplit, each range
// kMinSplitSlices slices or more; `forced` instead where set; never more than the partials
// (`capacity` floats) hold nor than K has slices. The count is then ⌈slices / per range⌉ so
// no range is empty.
Split splitOf(int64_t rows, int64_t cols, int64_t k, int64_t blocks, int64_t sms,
              int64_t capacity, int64_t forced) {
  const int64_t slices = k / kSliceK;
  int64_t s = forced;
  if (!forced)
    s = blocks >= sms
            ? 1
            : std::min<int64_t>({(sms + blocks - 1) / blocks, kMaxSplit, slices / kMinSplitSlices});
  s = std::min({s, capacity / (rows * cols), slices});
  if (s < 2)
    return {};
  const int64_t perRange = (slices + s - 1) / s;
  return {(slices + perRange - 1) / perRange, perRange * kSliceK};
}

// The GEMM's operands as xfrt_tensor_core_gemm receives them (absent ones null).
struct GemmBuffers {
  const HalideBuffer *x, *w, *bias, *residual, *gamma, *beta, *out, *partials;
};

// The tiles of a GEMM call's unsplit kernel: its rows (and columns) a block, its threads and
// dynamic shared memory.
struct Tiles {
  int64_t rows, cols = kTileCols, threads = kThreads, shared = 0;
  // `<name>_wg`'s: its entry and its PTX (sm_90a), where the kernel is not one of `ptx`'s.
  std::string kernel = {};
  const char *module = nullptr;
  // The kernel's entry: `<entry>`, `<entry>32`, `<entry>128`, or `kernel`.
  std::string entryOf(const std::string &entry) const {
    return !kernel.empty() ? kernel : rows == kTileRows ? entry : entry + std::to_string(rows);
  }
};

// The GEMM's launches: `<entry>`, `<entry>32`, `<entry>128` or `<name>_wg` (`tiles`), ⌈N/cols⌉ ×
// ⌈M/rows⌉ blocks, with the five memrefs (absent bias or residual: out's, never read), then with a
// norm prologue (kNorm) γ and β (absent: out's), M, the row strides and K; or, split,
// `<entry>32_splitk` with z = S (x, W, the partials, [γ, β]; M, the row strides of x and W, K and a
// range's K) and `<entry>_reduce`, N/64 × ⌈M/4⌉ blocks (the partials, bias, residual, out; M, the
// row strides of the residual and out, S).
int launchGemm(Launches &launch, const std::string &entry, int64_t n, int64_t k, int64_t flags,
               int64_t rows, const Tiles &tiles, Split split, const GemmBuffers &b) {
  auto memref = [](const HalideBuffer *b, int64_t elements) {
    assert(elements < kIndexLimit);
    return Memref{b->device, b->device, 0, int32_t(elements), 1};
  };
  const int64_t wCols = (flags & kGated) ? 2 * n : n;
  Memref mx = memref(b.x, rows * rowStride(b.x)),
         mw = memref(b.w, ((flags & kWeightNK) ? wCols : k) * rowStride(b.w)),
         mo = memref(b.out, rows * rowStride(b.out));
  Memref mb = (flags & kBias) ? memref(b.bias, wCols) : mo;
  Memref mr = (flags & kResidual) ? memref(b.residual, rows * rowStride(b.residual)) : mo;
  std::vector<Memref> norm;
  if (flags & kNorm)
    norm = {b.gamma ? memref(b.gamma, k) : mo, b.beta ? memref(b.beta, k) : mo};
  auto memrefs = [&](std::vector<Memref> first) {
    first.insert(first.end(), norm.begin(), norm.end());
    return first;
  };
  const int64_t rs = (flags & kResidual) ? rowStride(b.residual) : 0;
  if (split.count == 1) {
    Params p(memrefs({mx, mw, mb, mr, mo}),
             {rows, rowStride(b.x), rowStride(b.w), rs, rowStride(b.out), k});
    return launch(tiles.entryOf(entry), unsigned((n + tiles.cols - 1) / tiles.cols),
                  unsigned((rows + tiles.rows - 1) / tiles.rows), 1, p.pointers,
                  unsigned(tiles.shared), unsigned(tiles.threads), tiles.module);
  }
  const unsigned gridX = unsigned((n + kTileCols - 1) / kTileCols); // a column tail's last tile
  Memref mp = memref(b.partials, split.count * rows * wCols);
  Params products(memrefs({mx, mw, mp}), {rows, rowStride(b.x), rowStride(b.w), k, split.sliceK});
  if (int rc = launch(entry + "32_splitk", gridX, unsigned((rows + kShortTileRows - 1) / kShortTileRows),
                      unsigned(split.count), products.pointers))
    return rc;
  Params reduce({mp, mb, mr, mo}, {rows, rs, rowStride(b.out), split.count});
  return launch(entry + "_reduce", gridX, unsigned((rows + kReduceRows - 1) / kReduceRows), 1,
                reduce.pointers);
}

// Columns of out a block of `<name>_wg` computes: 128, SwiGLU's 64 (both gates' 128 of W).
int64_t wgmmaColumns(int64_t flags) { return (flags & kGated) ? kWgTile / 2 : kWgTile; }

// `<name>_wg`'s tiles (`<entry>` is `<name>_tc`; the kernel in `sm90a`): ⌈N/columns⌉ × ⌈M/128⌉
// blocks of one warpgroup, the unsplit kernels' parameters.
Tiles wgmmaTiles(const std::string &entry, int64_t flags, const char *sm90a) {
  return {kWgTile,
          wgmmaColumns(flags),
          kWgThreads,
          kWgDynamicShared,
          entry.substr(0, entry.size() - 3) + "_wg",
          sm90a};
}

} // namespace

// Loads the kernels of `ptx` in Halide's context and runs `launches` on Halide's stream
// (CudaDriver.cpp), so they are ordered with Halide's, captured into CUDA graphs with them
// and timed by --profile's events. 0 when launched; else an error through halide_error,
// `what` first.
static int launchInHalideContext(const char *ptx, const std::string &what,
                                 const std::function<int(Launches &)> &launches) {
  static const Driver driver = lookUpDriver();
  if (!driver.found())
    return fail(what + "the CUDA driver lacks cuModuleLoadData/cuLaunchKernel/cuCtxGetDevice");
  std::string error;
  bool launched = xfrt::inHalideContext([&](void *stream) {
    Launches launch{driver, nullptr, stream, ptx, ""};
    int rc = driver.currentContext(&launch.context);
    if (rc == 0)
      rc = launches(launch);
    error = launch.error;
    return rc == 0;
  });
  if (!launched)
    return fail(what + (error.empty() ? "no CUDA context" : error));
  return 0;
}

// Runs the GEMM's MLIR kernel (tensor cores or fp32 FMA; split over K where its grid would
// leave SMs idle; `<name>_wg` from `sm90a`, where given, on a capability-9.0 GPU), or answers
// kNotTaken for Halide's pipeline (fewer than minRows rows, $XF_MLIR_GEMM=off, or an operand the
// kernel cannot read aligned). 0 when launched; an error (reported through halide_error) otherwise.
extern "C" int xfrt_tensor_core_gemm(const char *ptx, const char *entry, int64_t n, int64_t k,
                                     int64_t flags, int64_t minRows, int64_t tallRows,
                                     int64_t wideShared, HalideBuffer *x, HalideBuffer *w,
                                     HalideBuffer *bias, HalideBuffer *residual,
                                     HalideBuffer *gamma, HalideBuffer *beta, HalideBuffer *out,
                                     HalideBuffer *partials, const char *sm90a) {
  const int64_t rows = x->dim[1].extent;
  std::string what = "GEMM kernel " + std::string(entry) + ": ";
  if (mlirGemm() < 0)
    return fail(what + "$XF_MLIR_GEMM is neither on nor off");
  if (rows < minRows || mlirGemm() == 0)
    return kNotTaken;
  const int64_t forced = forcedSplit();
  if (forced < 0)
    return fail(what + "$XF_TENSOR_CORE_SPLIT_K is not a whole number from 1 to 64");
  const int64_t forcedRows = forcedTileRows();
  if (forcedRows < 0)
    return fail(what + "$XF_GEMM_TILE_ROWS is not 32, 64 or 128");
  if (sm90a && wgmmaGemm() < 0)
    return fail(what + "$XF_WGMMA is not on, off or always");
  if (forcedRows == kWideTile && !wideShared)
    return fail(what + "$XF_GEMM_TILE_ROWS is 128, but this kernel has no 128-row tiles "
                       "(docs/gpu.md, \"Wide tiles\")");
  // An operand the kernel cannot read with its 16- or 8-byte accesses, or address with its
  // 32-bit indices, leaves the call to Halide's pipeline beside it (any layout and size,
  // float32 products), said once a kernel on stderr: a model's buffers may be placed so, and
  // a slower correct call beats a failed forward.
  for (const std::string &why :
       {misaligned("x", x, 4, 4), // bf16 weights: cp.async copies 8 (16 bytes)
        (flags & kBf16Weights) ? misaligned("the weight", w, 2, 8)
                               : misaligned("the weight", w, 4, 4),
        misaligned("out", out, 4, (flags & kColumnTail) ? 1 : 2), // a tail: stored one by one
        (flags & kBias) ? misaligned("the bias", bias, 4, 2) : "",
        (flags & kResidual) ? misaligned("the residual", residual, 4, 2) : "",
        (flags & kNorm) && gamma ? misaligned("the norm's gamma", gamma, 4, 4) : "",
        (flags & kNorm) && beta ? misaligned("the norm's beta", beta, 4, 4) : "",
        misaligned("the split-K partials", partials, 4, 2), pastIndexRange("x", x),
        pastIndexRange("the weight", w), pastIndexRange("out", out),
        (flags & kResidual) ? pastIndexRange("the residual", residual) : "",
        pastIndexRange("the split-K partials", partials)})
    if (!why.empty()) {
      noteOnce(entry, "note: " + what + why + "; Halide's pipeline beside it runs the call");
      return kNotTaken;
    }
  const int64_t cols = (flags & kGated) ? 2 * n : n, capacity = partials->dim[0].extent;
  return launchInHalideContext(ptx, what, [&](Launches &launch) {
    int64_t sms = 0;
    if (int rc = multiprocessorsOf(launch.d, launch.context, &sms)) {
      launch.error = "cuDeviceGetAttribute failed with CUDA error " + std::to_string(rc);
      return rc;
    }
    // 64-row tiles from tallRows rows where their grid gives every SM kTallBlocksPerSm blocks;
    // fewer (GPT-2 small's N = 768 GEMMs at l = 1024: 192 on 132 SMs) leave SMs with one block
    // of 4 warps, where the 32-row kernel's twice the blocks keep them busier.
    // 128 × 128 tiles (where built) on the same rule, from a whole tile of rows (fewer would
    // multiply padding rows: a decode-sized call's vocabulary): half the shared and L2 traffic
    // a product of the 64 × 64 tiles.
    auto blocksOf = [&](int64_t tile, int64_t cols) {
      return (n + cols - 1) / cols * ((rows + tile - 1) / tile);
    };
    // The wgmma kernel where built, on a capability-9.0 device, where its grid gives every SM
    // a block (fewer: the mma.sync kernels' smaller tiles and split-K fill the GPU better;
    // $XF_WGMMA=always: whatever the grid).
    if (sm90a && !forcedRows &&
        (wgmmaGemm() == 2 || (wgmmaGemm() == 1 && blocksOf(kWgTile, wgmmaColumns(flags)) >= sms))) {
      int capability = 0;
      if (int rc = capabilityOf(launch.d, launch.context, &capability)) {
        launch.error = "cuDeviceGetAttribute failed with CUDA error " + std::to_string(rc);
        return rc;
      }
      if (capability == 90)
        return launchGemm(launch, entry, n, k, flags, rows, wgmmaTiles(entry, flags, sm90a),
                          Split{}, {x, w, bias, residual, gamma, beta, out, partials});
    }
    // The wide tiles read 128 columns of W: 64 of out where they are SwiGLU's two gates.
    const int64_t wideCols = (flags & kGated) ? kTileCols : kWideTile;
    const bool wide =
        wideShared && rows >= kWideTile && blocksOf(kWideTile, wideCols) >= kTallBlocksPerSm * sms;
    const bool tall = rows >= tallRows && blocksOf(kTileRows, kTileCols) >= kTallBlocksPerSm * sms;
    Tiles tiles{forcedRows ? forcedRows : wide ? kWideTile : tall ? kTileRows : kShortTileRows};
    if (tiles.rows == kWideTile)
      tiles = {kWideTile, wideCols, kWideThreads, wideShared};
    Split split;
    if (tiles.rows == kShortTileRows && (flags & kSplitKernels)) {
      const int64_t blocks = n / kTileCols * ((rows + kShortTileRows - 1) / kShortTileRows);
      split = splitOf(rows, cols, k, blocks, sms, capacity, forced);
    }
    return launchGemm(launch, entry, n, k, flags, rows, tiles, split,
                      {x, w, bias, residual, gamma, beta, out, partials});
  });
}

namespace {

// $XF_ATTENTION_BLOCK_QUERIES (docs/gpu.md, "Attention, fp32: the FMA kernel"): 0 unset, the
// queries a block of the attention's MLIR kernel must hold (one of its functions'), or -1 when
// it is not a whole number from 1 to 1024.
int64_t forcedBlockQueries() {
  static const int64_t forced = wholeNumberOf("XF_ATTENTION_BLOCK_QUERIES", 1, 1024);
  return forced;
}

// One function of the attention's kernel: its entry, its block's queries, its dynamic shared
// memory in bytes.
struct AttentionFunction {
  const char *entry;
  int64_t queries, dynamicShared;
};

// The kernel's functions from the launcher's tables (TensorCoreAttentionLauncher.cpp): entries
// each ended by a NUL, the list by two; per entry (queries, dynamic shared bytes).
std::vector<AttentionFunction> attentionFunctions(const char *entries, const int64_t *blocks) {
  std::vector<AttentionFunction> functions;
  for (const char *e = entries; *e; e += std::strlen(e) + 1, blocks += 2)
    functions.push_back({e, blocks[0], blocks[1]});
  return functions;
}

// The function to launch for `rows` queries of `heads` heads on `sms` SMs: the most queries a
// block whose grid gives every SM kTallBlocksPerSm blocks, else the fewest (a short prompt's
// grid of 64-query blocks leaves most SMs idle); `forced` queries where set (null if none
// holds them).
const AttentionFunction *attentionFunctionFor(const std::vector<AttentionFunction> &functions,
                                              int64_t rows, int64_t heads, int64_t sms,
                                              int64_t forced) {
  for (const AttentionFunction &f : functions)
    if (forced ? f.queries == forced
               : (rows + f.queries - 1) / f.queries * heads >= kTallBlocksPerSm * sms)
      return &f;
  return forced ? nullptr : &functions.back();
}

} // namespace

// The attention kernel's launch (TensorCoreAttention.h): ⌈M / queries⌉ × H blocks of 128
// threads; its parameters are the memrefs q, k, v, out and M, Mz, the row stride of q, the key
// and head strides of k and of v, the row stride of out.
static int launchAttention(Launches &launch, const AttentionFunction &f, int64_t heads,
                           const HalideBuffer *q, const HalideBuffer *k, const HalideBuffer *v,
                           const HalideBuffer *out) {
  auto memref = [](const HalideBuffer *b) {
    return Memref{b->device, b->device, 0, int32_t(span(b)), 1};
  };
  const int64_t rows = q->dim[1].extent;
  Params p({memref(q), memref(k), memref(v), memref(out)},
           {rows, k->dim[1].extent, rowStride(q), strideOf(k, 1), strideOf(k, 2), strideOf(v, 1),
            strideOf(v, 2), rowStride(out)});
  return launch(f.entry, unsigned((rows + f.queries - 1) / f.queries), unsigned(heads), 1,
                p.pointers, unsigned(f.dynamicShared));
}

// Runs the prefill attention's MLIR kernel (tensor cores, or fp32 FMA), or answers kNotTaken for
// Halide's pipeline (fewer than minRows query rows: a decode step's merge of its key ranges;
// or every call under XF_MLIR_ATTENTION=off). entries, blocks: the kernel's functions
// (attentionFunctions); q: [M, H·d]; k, v: (column, key, K/V head); out: [M, H·d]. 0 when
// launched; an error otherwise.
extern "C" int xfrt_tensor_core_attention(const char *ptx, const char *entries,
                                          const int64_t *blocks, int64_t heads, int64_t headSize,
                                          int64_t minRows, HalideBuffer *q, HalideBuffer *k,
                                          HalideBuffer *v, HalideBuffer *out) {
  const int64_t rows = q->dim[1].extent;
  std::string what = std::string("attention kernel ") + entries + ": ";
  if (mlirAttention() < 0)
    return fail(what + "$XF_MLIR_ATTENTION is neither on nor off");
  if (rows < minRows || mlirAttention() == 0)
    return kNotTaken;
  if (k->dim[0].extent != headSize || v->dim[0].extent != headSize || k->dimensions != 3 ||
      v->dimensions != 3)
    return fail(what + "K and V are not (" + std::to_string(headSize) + ", keys, heads)");
  const int64_t forced = forcedBlockQueries();
  if (forced < 0)
    return fail(what + "$XF_ATTENTION_BLOCK_QUERIES is not a whole number from 1 to 1024");
  for (const std::string &why :
       {misaligned("q", q, 4, 4), misaligned("K", k, 4, 4), misaligned("V", v, 4, 4),
        misaligned("out", out, 4, 2), pastIndexRange("q", q), pastIndexRange("K", k),
        pastIndexRange("V", v), pastIndexRange("out", out)})
    if (!why.empty()) { // as the GEMM's: Halide's pipeline beside it, said once
      noteOnce(entries, "note: " + what + why + "; Halide's pipeline beside it runs the call");
      return kNotTaken;
    }
  const std::vector<AttentionFunction> functions = attentionFunctions(entries, blocks);
  return launchInHalideContext(ptx, what, [&](Launches &launch) {
    int64_t sms = 0;
    if (int rc = multiprocessorsOf(launch.d, launch.context, &sms)) {
      launch.error = "cuDeviceGetAttribute failed with CUDA error " + std::to_string(rc);
      return rc;
    }
    const AttentionFunction *f = attentionFunctionFor(functions, rows, heads, sms, forced);
    if (!f) {
      std::string held;
      for (const AttentionFunction &g : functions)
        held += (held.empty() ? "" : ", ") + std::to_string(g.queries);
      launch.error = "$XF_ATTENTION_BLOCK_QUERIES=" + std::to_string(forced) +
                     ", but its blocks hold " + held + " queries";
      return kFailed;
    }
    return launchAttention(launch, *f, heads, q, k, v, out);
  });
}
