//===- Workload.cpp - Inputs, reference and calls of each case ------------===//

#include "Workload.h"
#include "Reference.h"
#include "xf/Codegen/WeightBlocksGgml.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

using namespace mlir::xf;

namespace xftune {
namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

FloatBuffer randomMatrix(int64_t rows, int64_t cols, std::mt19937 &rng) {
  FloatBuffer m(static_cast<int>(cols), static_cast<int>(rows));
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  m.for_each_value([&](float &v) { v = dist(rng); });
  return m;
}

/// bfloat16 bits of a finite `v`, rounded to nearest even.
uint16_t toBf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

float fromBf16(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

/// A float16's bits for ±2^e·(1 + mantissa/1024), e in -7..-3: normal
/// scales of the size ggml's quantizers give a weight of magnitude ~1.
uint16_t randomScale(std::mt19937 &rng) {
  std::uniform_int_distribution<int> exponent(8, 12), mantissa(0, 1023), sign(0, 1);
  return uint16_t(sign(rng) << 15 | exponent(rng) << 10 | mantissa(rng));
}

/// Random ggml blocks of `type` for the [N, K] weight (k, n), whose values
/// (as the runtime dequantizes them) replace the weight's, so the reference
/// multiplies by exactly what the kernel reads.
Halide::Runtime::Buffer<uint8_t> randomBlocks(WeightBlocks type, FloatBuffer &weight,
                                              std::mt19937 &rng) {
  const int K = weight.width(), rows = weight.height();
  const int blockBytes = int(weightBlockBytes(type));
  Halide::Runtime::Buffer<uint8_t> bytes(K / 32 * blockBytes, rows);
  std::uniform_int_distribution<int> byte(0, 255);
  bytes.for_each_value([&](uint8_t &b) { b = uint8_t(byte(rng)); });
  for (int r = 0; r < rows; ++r) {
    for (int b = 0; b < K / 32; ++b) {
      uint8_t *block = &bytes(b * blockBytes, r);
      const uint16_t d = randomScale(rng), m = randomScale(rng);
      std::memcpy(block, &d, 2);
      if (type == WeightBlocks::Q4_1)
        std::memcpy(block + 2, &m, 2);
    }
    // Rows of `weight` are contiguous: width K, stride K.
    if (!xfrt::dequantizeToF32(ggmlTypeOf(type), &bytes(0, r), size_t(K), &weight(0, r)))
      std::abort(); // every WeightBlocks type is one dequantizeToF32 handles
  }
  return bytes;
}

std::vector<Workload> makeGemmWorkloads(const Request &request, std::mt19937 &rng) {
  const GemmKernelSpec &spec = request.kernel.gemm;
  // Storage layout: [K, N] is (n, k), [N, K] is (k, n); the gated epilogue's
  // weight and bias hold 2·N columns (gate | up).
  const int64_t weightCols = spec.epilogue == GemmEpilogue::SwiGlu ? 2 * spec.N : spec.N;
  FloatBuffer weight = spec.transposeWeight ? randomMatrix(weightCols, spec.K, rng)
                                            : randomMatrix(spec.K, weightCols, rng);
  Halide::Runtime::Buffer<void> weightArg = weight;
  if (spec.bf16Weights) {
    // The kernel reads bf16; the reference gets the same values widened.
    Halide::Runtime::Buffer<uint16_t> bf16(weight.width(), weight.height());
    bf16.for_each_element([&](int a, int b) {
      bf16(a, b) = toBf16(weight(a, b));
      weight(a, b) = fromBf16(bf16(a, b));
    });
    bf16.raw_buffer()->type = halide_type_t(halide_type_bfloat, 16);
    weightArg = bf16;
  }
  if (spec.weightBlocks != WeightBlocks::None)
    weightArg = randomBlocks(spec.weightBlocks, weight, rng);
  FloatBuffer bias(static_cast<int>(weightCols));
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  bias.for_each_value([&](float &v) { v = dist(rng); });

  std::vector<Workload> workloads;
  for (const Case &c : request.cases) {
    Workload w;
    w.size = c;
    FloatBuffer x = randomMatrix(c.rows, spec.K, rng);
    FloatBuffer residual;
    w.args = {x, weightArg};
    if (spec.hasBias)
      w.args.push_back(bias);
    if (spec.hasResidual) {
      residual = randomMatrix(c.rows, spec.N, rng);
      w.args.push_back(residual);
    }
    w.out = FloatBuffer(int(spec.N), int(c.rows));
    w.args.push_back(w.out);
    w.checkedRows = sampleRows(int(c.rows));
    w.expected = referenceGemm(spec, x, weight, bias, residual, w.checkedRows);
    if (c.rows <= kColdRows) {
      const int64_t bytes = int64_t(weightArg.size_in_bytes());
      const int64_t copies = std::max<int64_t>(2, (kColdBytes + bytes - 1) / bytes);
      for (int64_t i = 0; i < copies; ++i)
        w.coldWeights.push_back(weightArg.copy());
    }
    workloads.push_back(std::move(w));
  }
  return workloads;
}

/// m's rows of `heads` heads as the attention kernel's (column, row, head)
/// buffer: each head's rows contiguous (cacheSlot) or heads side by side.
FloatBuffer byHead(const FloatBuffer &m, int heads, bool cacheSlot) {
  const int width = m.width() / heads, rows = m.height();
  FloatBuffer out =
      cacheSlot ? FloatBuffer(width, rows, heads) : FloatBuffer({width, rows, heads}, {0, 2, 1});
  for (int g = 0; g < heads; ++g)
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < width; ++c)
        out(c, r, g) = m(g * width + c, r);
  return out;
}

std::vector<Workload> makeAttentionWorkloads(const Request &request, std::mt19937 &rng) {
  const AttentionKernelSpec &spec = request.kernel.attention;
  std::vector<Workload> workloads;
  for (const Case &c : request.cases) {
    Workload w;
    w.size = c;
    FloatBuffer q = randomMatrix(c.rows, spec.heads * spec.dK, rng);
    FloatBuffer k = randomMatrix(c.keys, spec.keyValueHeads() * spec.dK, rng);
    FloatBuffer v = randomMatrix(c.keys, spec.keyValueHeads() * spec.dV, rng);
    w.out = FloatBuffer(int(spec.heads * spec.dV), int(c.rows));
    // K and V as executables pass them: a KV cache slot (each head's rows contiguous) to a
    // decode step, the fused QKV activation's column slice (heads side by side) otherwise.
    const bool cacheSlot = c.rows <= kColdRows;
    w.args = {q, byHead(k, int(spec.keyValueHeads()), cacheSlot),
              byHead(v, int(spec.keyValueHeads()), cacheSlot), w.out};
    w.checkedRows = sampleRows(int(c.rows));
    w.expected = referenceAttention(spec, q, k, v, w.checkedRows);
    workloads.push_back(std::move(w));
  }
  return workloads;
}

} // namespace

std::vector<Workload> makeWorkloads(const Request &request) {
  std::mt19937 rng(20240611);
  return request.kernel.kind == KernelKind::Gemm ? makeGemmWorkloads(request, rng)
                                                 : makeAttentionWorkloads(request, rng);
}

llvm::Expected<std::vector<Workload>> withPackedWeights(Halide::Callable &pack,
                                                        const GemmKernelSpec &spec,
                                                        const std::vector<Workload> &workloads) {
  auto packed = [&](Halide::Runtime::Buffer<void> &weight)
      -> llvm::Expected<Halide::Runtime::Buffer<void>> {
    PackedWeightShape shape = packedWeightShape(spec);
    Halide::Runtime::Buffer<void> out(weight.type(), int(shape.lanes), int(shape.rows),
                                      int(shape.tiles));
    int result = -1;
    try {
      result = pack(weight.raw_buffer(), out.raw_buffer());
    } catch (const Halide::Error &e) {
      return fail(llvm::Twine("packing the weight failed: ") + e.what());
    }
    if (result != 0)
      return fail("packing the weight returned error " + llvm::Twine(result));
    return out;
  };
  std::vector<Workload> result;
  for (const Workload &w : workloads) {
    Workload p = w;
    llvm::Expected<Halide::Runtime::Buffer<void>> weight = packed(p.args[1]);
    if (!weight)
      return weight.takeError();
    p.args[1] = *weight;
    for (Halide::Runtime::Buffer<void> &copy : p.coldWeights) {
      llvm::Expected<Halide::Runtime::Buffer<void>> packedCopy = packed(copy);
      if (!packedCopy)
        return packedCopy.takeError();
      copy = *packedCopy;
    }
    result.push_back(std::move(p));
  }
  return result;
}

llvm::Error callKernel(Halide::Callable &kernel, Workload &workload) {
  if (!workload.coldWeights.empty())
    workload.args[1] = workload.coldWeights[workload.nextCold++ % workload.coldWeights.size()];
  std::vector<halide_buffer_t *> a;
  for (Halide::Runtime::Buffer<void> &b : workload.args)
    a.push_back(b.raw_buffer());
  int result = -1;
  try {
    switch (a.size()) {
    case 3:
      result = kernel(a[0], a[1], a[2]);
      break;
    case 4:
      result = kernel(a[0], a[1], a[2], a[3]);
      break;
    case 5:
      result = kernel(a[0], a[1], a[2], a[3], a[4]);
      break;
    default:
      return fail("unexpected argument count " + llvm::Twine(a.size()));
    }
  } catch (const Halide::Error &e) {
    return fail(llvm::Twine("the kernel failed: ") + e.what());
  }
  if (result != 0)
    return fail("the kernel returned error " + llvm::Twine(result));
  return llvm::Error::success();
}

llvm::Expected<double> checkKernel(Halide::Callable &kernel, Workload &workload) {
  workload.out.fill(std::nanf(""));
  if (llvm::Error err = callKernel(kernel, workload))
    return std::move(err);
  const int cols = workload.out.width();
  double maxError = 0, maxRef = 0;
  for (size_t r = 0; r < workload.checkedRows.size(); ++r)
    for (int n = 0; n < cols; ++n) {
      const double expected = workload.expected[r * cols + n];
      const double error = std::fabs(double(workload.out(n, workload.checkedRows[r])) - expected);
      // NaN must win: std::max would drop it.
      maxError = std::isnan(error) || error > maxError ? error : maxError;
      maxRef = std::max(maxRef, std::fabs(expected));
    }
  if (std::isnan(maxError))
    return maxError;
  // All-zero references (causal rows with no visible key): the absolute error.
  return maxRef > 0 ? maxError / maxRef : maxError;
}

namespace {
KernelWork workOf(const Request &request) {
  return request.kernel.kind == KernelKind::Gemm ? kernelWork(request.kernel.gemm)
                                                 : kernelWork(request.kernel.attention);
}
} // namespace

double flopsOf(const Request &request, const Case &size) {
  return workOf(request).flops(double(size.rows), double(size.keys));
}

double weightBytesOf(const Request &request, const Case &size) {
  return workOf(request).streamedBytes(double(size.keys));
}

} // namespace xftune
