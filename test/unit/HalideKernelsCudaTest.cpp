//===- HalideKernelsCudaTest.cpp - the CUDA kernels' algorithms on the CPU -===//
//
// The CUDA pipelines (GemmAlgorithm.cpp and GemmScheduleCuda.cpp, AttentionKernelCuda.cpp,
// LoopKernelsCuda.cpp) cannot run without a GPU, but their definitions can:
// built without their GPU schedule (gpuSchedule = false) and JIT-compiled for
// the host, each is checked against naive double-precision loops, with the
// tolerances of the CPU kernels' tests (HalideKernelsGemmTest.cpp,
// HalideKernelsAttentionTest.cpp). This covers the padding, clamping,
// GEMV/flash algorithms and every loop kernel's formula; the GPU schedules
// themselves are checked by compiling them (test/Gpu) and, on a GPU, by
// test/gpu/check_gpu.py.
//
//===----------------------------------------------------------------------===//

#include "AttentionDecodeCuda.h"
#include "GemmAlgorithm.h"
#include "HalideKernelsTestUtil.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>

using namespace mlir::xf;

namespace {

Halide::Callable jitUnscheduled(llvm::Expected<KernelPipeline> built,
                                std::vector<Halide::Argument> arguments = {}) {
  if (!built) {
    ADD_FAILURE() << llvm::toString(built.takeError());
    return {};
  }
  try {
    return built->pipeline.compile_to_callable(arguments.empty() ? built->arguments() : arguments,
                                               hostHalideTarget());
  } catch (const Halide::Error &e) {
    ADD_FAILURE() << e.what();
    return {};
  }
}

double act(GemmEpilogue kind, double a) {
  switch (kind) {
  case GemmEpilogue::Relu:
    return a > 0 ? a : 0;
  case GemmEpilogue::GeluTanh:
    return 0.5 * a * (1 + std::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)));
  case GemmEpilogue::GeluErf:
    return 0.5 * a * (1 + std::erf(a / std::sqrt(2.0)));
  case GemmEpilogue::Silu:
  case GemmEpilogue::SwiGlu:
    return a / (1 + std::exp(-a));
  default:
    return a;
  }
}

/// x's rows as the norm prologue leaves them, in float64 (the identity without one).
std::vector<std::vector<double>> normalizedRows(const GemmKernelSpec &spec,
                                                const Halide::Runtime::Buffer<float> &x,
                                                const Halide::Runtime::Buffer<float> &gamma,
                                                const Halide::Runtime::Buffer<float> &beta) {
  const int K = x.width(), M = x.height();
  std::vector<std::vector<double>> rows(M, std::vector<double>(K));
  for (int m = 0; m < M; ++m) {
    double mean = 0, squares = 0;
    for (int k = 0; k < K; ++k)
      mean += x(k, m);
    mean = spec.prologue == GemmPrologue::LayerNorm ? mean / K : 0;
    for (int k = 0; k < K; ++k)
      squares += (x(k, m) - mean) * (x(k, m) - mean);
    const double rstd = 1 / std::sqrt(squares / K + spec.normEpsilon);
    for (int k = 0; k < K; ++k) {
      double y = x(k, m);
      if (spec.prologue != GemmPrologue::None) {
        y = (y - mean) * rstd;
        if (spec.normGamma)
          y *= gamma(k);
        if (spec.normBeta)
          y += beta(k);
      }
      rows[m][k] = y;
    }
  }
  return rows;
}

/// The CUDA GEMM's algorithm, unscheduled: what checkGemm JITs unless told otherwise.
llvm::Expected<KernelPipeline> cudaGemmAlgorithm(const GemmKernelSpec &spec) {
  return buildGemmCudaPipeline(spec, /*gpuSchedule=*/false);
}

void checkGemm(const GemmKernelSpec &spec,
               const std::function<llvm::Expected<KernelPipeline>(const GemmKernelSpec &)>
                   &algorithm = cudaGemmAlgorithm) {
  SCOPED_TRACE("K=" + std::to_string(spec.K) + " N=" + std::to_string(spec.N) +
               (spec.transposeWeight ? " nk" : " kn") + (spec.bf16Weights ? " bf16" : "") +
               (spec.prologue == GemmPrologue::LayerNorm ? " layer_norm"
                : spec.prologue == GemmPrologue::RmsNorm ? " rms_norm"
                                                          : ""));
  Halide::Callable kernel = jitUnscheduled(algorithm(spec));
  ASSERT_TRUE(kernel.defined());
  const int K = int(spec.K), N = int(spec.N);
  const bool gated = spec.epilogue == GemmEpilogue::SwiGlu;
  const int columns = gated ? 2 * N : N;
  std::mt19937 rng(3);
  auto weight = spec.transposeWeight ? xftest::randomMatrix(columns, K, rng)
                                     : xftest::randomMatrix(K, columns, rng);
  Halide::Runtime::Buffer<uint16_t> weightBf16(weight.width(), weight.height());
  if (spec.bf16Weights) {
    weight.for_each_element([&](int a, int b) {
      uint32_t bits;
      std::memcpy(&bits, &weight(a, b), 4);
      weightBf16(a, b) = uint16_t(bits >> 16); // truncated: exact in both
      bits &= 0xffff0000u;
      std::memcpy(&weight(a, b), &bits, 4);
    });
    weightBf16.raw_buffer()->type = halide_type_t(halide_type_bfloat, 16);
  }
  auto bias = xftest::randomMatrix(1, columns, rng);
  Halide::Runtime::Buffer<float> bias1d(bias.data(), columns);
  auto normParams = xftest::randomMatrix(2, K, rng); // γ, β
  Halide::Runtime::Buffer<float> gamma(K), beta(K);
  for (int k = 0; k < K; ++k)
    gamma(k) = 1 + normParams(k, 0), beta(k) = normParams(k, 1);
  auto w = [&](int k, int n) { return double(spec.transposeWeight ? weight(k, n) : weight(n, k)); };
  // A range merge (spec.mergeHeads): flash-decoding's partials [ranges][heads][4][dV + 2] of
  // random ranges, every third empty (max kNoScore, weight 0).
  const int heads = std::max<int>(int(spec.mergeHeads), 1), ranges = int(spec.mergeRanges);
  const int dV = K / heads;
  Halide::Runtime::Buffer<float> partials(dV + 2, 4, heads, std::max(ranges, 1));
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  partials.for_each_element([&](int e, int t, int h, int p) {
    const bool empty = p % 3 == 2;
    partials(e, t, h, p) = e < dV ? (empty ? 0.f : unit(rng))
                           : e == dV ? (empty ? -1e30f : 2 * unit(rng))
                                     : (empty ? 0.f : 1.5f + unit(rng));
  });
  for (int M : {1, 2, 4, 5, 8, 13, 16, 33, 70}) {
    SCOPED_TRACE("M=" + std::to_string(M));
    auto x = xftest::randomMatrix(M, K, rng);
    if (spec.prologue != GemmPrologue::None) // rows off zero mean and unit variance
      x.for_each_element([&](int k, int m) { x(k, m) = 3 * x(k, m) + 0.5f * float(m % 3); });
    auto residual = xftest::randomMatrix(M, N, rng);
    auto rows = normalizedRows(spec, x, gamma, beta);
    if (spec.mergeHeads && M <= 4) { // x unread (NaN), nor the partials' rows past M
      x.fill(std::nanf(""));
      Halide::Runtime::Buffer<float> stale = partials.cropped(1, M, 4 - M);
      stale.fill(std::nanf(""));
      for (int m = 0; m < M; ++m)
        for (int k = 0; k < K; ++k) {
          const int h = k / dV, d = k % dV;
          double top = -INFINITY, output = 0, sum = 0;
          for (int p = 0; p < ranges; ++p)
            top = std::max(top, double(partials(dV, m, h, p)));
          for (int p = 0; p < ranges; ++p) {
            const double weightOf = std::exp(double(partials(dV, m, h, p)) - top);
            output += partials(d, m, h, p) * weightOf, sum += partials(dV + 1, m, h, p) * weightOf;
          }
          rows[m][k] = sum > 0 ? output / sum : 0;
        }
    }
    Halide::Runtime::Buffer<float> out(N, M);
    out.fill(std::nanf(""));
    std::vector<halide_buffer_t *> args{x.raw_buffer(), spec.bf16Weights ? weightBf16.raw_buffer()
                                                                         : weight.raw_buffer()};
    if (spec.hasBias)
      args.push_back(bias1d.raw_buffer());
    if (spec.hasResidual)
      args.push_back(residual.raw_buffer());
    if (spec.normGamma)
      args.push_back(gamma.raw_buffer());
    if (spec.normBeta)
      args.push_back(beta.raw_buffer());
    if (spec.mergeHeads)
      args.push_back(partials.raw_buffer());
    args.push_back(out.raw_buffer());
    ASSERT_EQ(xftest::call(kernel, args), 0);
    double worst = 0, largest = 0;
    std::vector<double> diff;
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        auto product = [&](int col) {
          double s = spec.hasBias ? bias1d(col) : 0;
          for (int k = 0; k < K; ++k)
            s += rows[m][k] * w(k, col);
          return s;
        };
        double ref = gated ? act(GemmEpilogue::SwiGlu, product(n)) * product(N + n)
                           : act(spec.epilogue, product(n));
        if (spec.hasResidual)
          ref += residual(n, m);
        worst = std::max(worst, std::abs(out(n, m) - ref));
        largest = std::max(largest, std::abs(ref));
        if (!std::isfinite(out(n, m)))
          FAIL() << "out[" << m << ", " << n << "] = " << out(n, m);
      }
    EXPECT_LE(worst, 2e-6 * std::sqrt(double(K)) * largest);
  }
}

// [K, N] weights with N a multiple of the 64-column register tiles take the register path
// (all of K per thread, W's columns read unclamped): K off the unroll factor of 8 and on it,
// every epilogue kind, bf16 weights, SwiGLU's two gates.
TEST(CudaGemmAlgorithm, RegisterTilePath) {
  GemmKernelSpec s;
  s.name = "g";
  s.K = 40, s.N = 128;
  checkGemm(s);
  s.hasBias = s.hasResidual = true, s.epilogue = GemmEpilogue::GeluTanh, s.K = 64;
  checkGemm(s);
  s.bf16Weights = true, s.epilogue = GemmEpilogue::GeluErf;
  checkGemm(s);
  s.bf16Weights = false, s.epilogue = GemmEpilogue::SwiGlu, s.N = 64;
  checkGemm(s);
}

// Split K (the register path below cudaSplitKRows): K in regSplitK slices summed apart and
// added, K a multiple of the slices and not (270: slices of 68, x zero past K). With
// regFillBlocks = 10 and N = 128 (2 column tiles) the rule gives 40 rows: M = 5 and 33 split K,
// M = 70 does not; with the default 264 every M here (below 512) does.
TEST(CudaGemmAlgorithm, RegisterPathSplitK) {
  GemmKernelSpec s;
  s.name = "g";
  s.K = 256, s.N = 128;
  EXPECT_EQ(cudaSplitKRows(s), 512);
  checkGemm(s);
  s.K = 270, s.hasBias = s.hasResidual = true, s.epilogue = GemmEpilogue::GeluTanh;
  checkGemm(s);
  s.gpuSchedule.regFillBlocks = 10;
  EXPECT_EQ(cudaSplitKRows(s), 40);
  checkGemm(s);
  s.bf16Weights = true, s.epilogue = GemmEpilogue::SwiGlu, s.N = 64, s.gpuSchedule.regSplitK = 3;
  EXPECT_EQ(cudaSplitKRows(s), 80);
  checkGemm(s);
  // K too short for slices of 64, or split K off: the register path as before.
  s.K = 190;
  EXPECT_EQ(cudaSplitKRows(s), 0);
  s.K = 270, s.gpuSchedule.regSplitK = 1;
  EXPECT_EQ(cudaSplitKRows(s), 0);
}

// flash-decoding's merge in the GEMV (CudaRangeMerge.cpp): at M <= 4 x is merged from the
// key ranges' partials — x itself NaN, the partials' rows past M NaN, every third range empty —
// and at M > 4 read as given (staged and register paths); heads of 20 columns (off the 32
// lanes), K off the GEMV's 16 slices, bias and residual, GELU, N on and off the register tiles;
// [N, K] weights (Llama's output projection) alike, their GEMV blocks widened to
// ⌈N / kCudaRangeMergeBlocks⌉ columns, and refused beyond 32 columns (1,024 threads).
TEST(CudaGemmAlgorithm, RangeMergePrologue) {
  for (bool nk : {false, true}) {
    GemmKernelSpec s;
    s.name = "g", s.transposeWeight = nk;
    s.K = 60, s.N = 70, s.mergeHeads = 3, s.mergeRanges = 7;
    s.hasBias = s.hasResidual = true;
    checkGemm(s);
    s.N = 128, s.epilogue = GemmEpilogue::GeluTanh, s.mergeHeads = 2, s.mergeRanges = 22;
    checkGemm(s);
    llvm::Expected<KernelPipeline> scheduled = buildGemmCudaPipeline(s, /*gpuSchedule=*/true);
    EXPECT_TRUE(bool(scheduled)) << "scheduled for the GPU";
    if (!scheduled)
      ADD_FAILURE() << llvm::toString(scheduled.takeError());
  }
  GemmKernelSpec smol; // SmolLM2's output projection: 576 columns, 18 a block, 32 blocks
  smol.transposeWeight = true, smol.K = smol.N = 576, smol.mergeHeads = 9;
  EXPECT_EQ(cudaGemvBlockCols(smol), 18);
  smol.mergeHeads = 0;
  EXPECT_EQ(cudaGemvBlockCols(smol), 8);
  smol.name = "g", smol.mergeHeads = 32, smol.mergeRanges = 4, smol.K = 4096, smol.N = 4096;
  EXPECT_EQ(cudaGemvBlockCols(smol), 128);
  llvm::Expected<KernelPipeline> refused = buildGemmCudaPipeline(smol, /*gpuSchedule=*/false);
  EXPECT_FALSE(refused) << "an [N, K] merge of 128 columns a block refused";
  if (!refused)
    llvm::consumeError(refused.takeError());
}

// The batch GEMVs (4 < M <= 16: checkGemm's M = 5 and 8 take the 8-row one, 13 and 16 the
// 16-row one): [K, N] slices k ≡ s (mod slices), [N, K] lanes. The block as the fill rule
// narrows it (N = 70: 4 columns, 64 slices, past K = 40 — x zero there) and at its widest
// (regFillBlocks = 1: 16 columns × 16 slices, N off 16, K off 16); bias, residual, every
// epilogue kind, bf16 weights, SwiGLU, both norm prologues; x as given where the GEMV merges
// key ranges (RangeMergePrologue).
TEST(CudaGemmAlgorithm, BatchGemvPath) {
  for (bool nk : {false, true}) {
    GemmKernelSpec s;
    s.name = "g";
    s.K = 40, s.N = 70, s.transposeWeight = nk;
    const CudaBatchBlock narrowed = cudaBatchGemvBlock(s);
    EXPECT_EQ(narrowed.cols, 4);
    EXPECT_EQ(narrowed.threadsK, nk ? 32 : 64);
    checkGemm(s);
    s.gpuSchedule.regFillBlocks = 1;
    const CudaBatchBlock widest = cudaBatchGemvBlock(s);
    EXPECT_EQ(widest.cols, nk ? 8 : 16);
    EXPECT_EQ(widest.threadsK, nk ? 32 : 16);
    s.hasBias = s.hasResidual = true, s.epilogue = GemmEpilogue::GeluTanh;
    checkGemm(s);
    s.bf16Weights = true, s.epilogue = GemmEpilogue::Relu, s.K = 77;
    checkGemm(s);
    s.bf16Weights = false, s.epilogue = GemmEpilogue::SwiGlu, s.N = 24, s.K = 64;
    checkGemm(s);
    s.prologue = GemmPrologue::LayerNorm, s.normEpsilon = 1e-5, s.normGamma = s.normBeta = true;
    s.epilogue = GemmEpilogue::Silu, s.K = 77, s.N = 70;
    checkGemm(s);
    s.prologue = GemmPrologue::RmsNorm, s.normBeta = false, s.gpuSchedule.regFillBlocks = 264;
    checkGemm(s);
  }
  // GPT-2 small's GEMMs: 288 / 192 / 384 / 192 blocks ([K, N]: N = 2304 and 3072 at 8 columns,
  // 768 at 4), the unembedding (50257 × 768, [N, K]) 6283 of 8 columns.
  GemmKernelSpec gpt2;
  gpt2.K = 768, gpt2.N = 2304;
  EXPECT_EQ(cudaBatchGemvBlock(gpt2).cols, 8);
  gpt2.N = 768;
  EXPECT_EQ(cudaBatchGemvBlock(gpt2).cols, 4);
  EXPECT_EQ(cudaBatchGemvBlock(gpt2).threadsK, 64);
  gpt2.N = 50257, gpt2.transposeWeight = true;
  EXPECT_EQ(cudaBatchGemvBlock(gpt2).cols, 8);
}

// [N, K] weights with K a multiple of 4 take the [N, K] register path (4 partial sums per
// output by k mod 4, columns clamped): N off the 64-column tiles, every epilogue kind, bf16,
// SwiGLU. K off 4, or register_tiles off: the staged path.
TEST(CudaGemmAlgorithm, NkRegisterTilePath) {
  GemmKernelSpec s;
  s.name = "g";
  s.K = 40, s.N = 70, s.transposeWeight = true;
  EXPECT_TRUE(usesCudaNkRegisterTiles(s));
  checkGemm(s);
  s.hasBias = s.hasResidual = true, s.epilogue = GemmEpilogue::GeluTanh;
  checkGemm(s);
  s.bf16Weights = true, s.epilogue = GemmEpilogue::GeluErf;
  checkGemm(s);
  s.bf16Weights = false, s.epilogue = GemmEpilogue::SwiGlu, s.K = 64, s.N = 24;
  checkGemm(s);
  s.K = 42;
  EXPECT_FALSE(usesCudaNkRegisterTiles(s));
  checkGemm(s);
  s.K = 64, s.gpuSchedule.registerTiles = false;
  EXPECT_FALSE(usesCudaNkRegisterTiles(s));
  checkGemm(s);
}

TEST(CudaGemmAlgorithm, WeightLayoutsEpiloguesAndTails) {
  // K not a multiple of the 16-wide slices or the 32 lanes; N not of the 64-column tiles
  // ([N, K]: the register path for K = 40, 64).
  for (bool nk : {false, true}) {
    GemmKernelSpec s;
    s.name = "g";
    s.K = 40, s.N = 70, s.transposeWeight = nk;
    checkGemm(s);
    s.hasBias = s.hasResidual = true, s.epilogue = GemmEpilogue::GeluTanh;
    checkGemm(s);
    s.epilogue = GemmEpilogue::GeluErf, s.hasResidual = false, s.bf16Weights = true;
    checkGemm(s);
    s.bf16Weights = false, s.epilogue = GemmEpilogue::SwiGlu, s.K = 64, s.N = 24;
    checkGemm(s);
  }
}

// The norm prologue (xf-fuse-norm-into-gemm): LayerNorm with and without γ/β and RMSNorm,
// x's rows normalised as read by each path — GEMV (M <= 4, its own per-block statistics),
// register tiles ([K, N], N a multiple of 64; split over K below the split-K rule's rows) and
// staged tiles ([N, K]: the tied unembedding; N off the tiles) — against float64 norms and
// products; K off the lanes of every path.
TEST(CudaGemmAlgorithm, NormPrologue) {
  for (bool nk : {false, true}) {
    GemmKernelSpec s;
    s.name = "g";
    s.K = 40, s.N = nk ? 70 : 128, s.transposeWeight = nk;
    s.prologue = GemmPrologue::LayerNorm, s.normEpsilon = 1e-5;
    s.normGamma = s.normBeta = true, s.hasBias = true;
    checkGemm(s);
    s.epilogue = GemmEpilogue::GeluTanh, s.K = 77;
    checkGemm(s);
    s.normGamma = s.normBeta = false, s.hasResidual = true, s.epilogue = GemmEpilogue::None;
    checkGemm(s);
    if (!nk) { // K = 256: rows under the register path's split-K rule sum K in 4 groups
      s.K = 256;
      checkGemm(s);
      s.K = 77;
    }
    s.prologue = GemmPrologue::RmsNorm, s.normGamma = true, s.hasBias = s.hasResidual = false;
    s.epilogue = GemmEpilogue::SwiGlu, s.N = 64, s.normEpsilon = 1e-6;
    checkGemm(s);
  }
}

// The default schedule's narrowed [K, N] GEMV blocks (defaultGpuGemmSchedule: 8 columns × 64
// K slices where 32-column blocks would not fill the GPU): K slices of 1, 2 and 12 rows (K =
// 40, 77, 768), N off the 8 columns, with and without the norm prologue (its statistics over
// the block's 8 lanes a row) and an epilogue.
TEST(CudaGemmAlgorithm, NarrowedGemvDefaults) {
  for (int64_t k : {40, 77, 768}) {
    GemmKernelSpec s;
    s.name = "g";
    s.K = k, s.N = 70;
    s.gpuSchedule = defaultGpuGemmSchedule(s.N, false, false);
    ASSERT_EQ(s.gpuSchedule.gemvCols, 8);
    ASSERT_EQ(s.gpuSchedule.gemvSlices, 64);
    s.hasBias = s.hasResidual = true, s.epilogue = GemmEpilogue::GeluTanh;
    checkGemm(s);
    s.prologue = GemmPrologue::LayerNorm, s.normEpsilon = 1e-5, s.normGamma = s.normBeta = true;
    s.hasResidual = false;
    checkGemm(s);
  }
}

// Anderson2021's algorithm (GemmAnderson2021.cpp, the baseline `xfc tune --target cuda`
// times): the same math as the CUDA GEMM — weight layouts, bf16, every epilogue, SwiGLU, the
// norm prologues — JIT-ed unscheduled on the CPU against float64 at M = 1 ... 70 (its
// estimates say 64 rows: estimates do not change what it computes).
TEST(Anderson2021GemmAlgorithm, SameMathAsTheCudaGemm) {
  auto anderson = [](const GemmKernelSpec &spec) {
    return buildGemmAnderson2021Algorithm(spec, 64);
  };
  for (bool nk : {false, true}) {
    GemmKernelSpec s;
    s.name = "g";
    s.K = 40, s.N = 70, s.transposeWeight = nk;
    checkGemm(s, anderson);
    s.hasBias = s.hasResidual = true, s.epilogue = GemmEpilogue::GeluTanh;
    checkGemm(s, anderson);
    s.epilogue = GemmEpilogue::GeluErf, s.hasResidual = false, s.bf16Weights = true;
    checkGemm(s, anderson);
    s.bf16Weights = false, s.epilogue = GemmEpilogue::SwiGlu, s.K = 64, s.N = 24;
    checkGemm(s, anderson);
    s.prologue = GemmPrologue::LayerNorm, s.normEpsilon = 1e-5, s.K = 77, s.N = 64;
    s.normGamma = s.normBeta = true, s.epilogue = GemmEpilogue::GeluTanh;
    checkGemm(s, anderson);
    s.prologue = GemmPrologue::RmsNorm, s.normBeta = false, s.epilogue = GemmEpilogue::SwiGlu;
    checkGemm(s, anderson);
  }
}

// The ranges' merge is refused by name (the export leaves that GEMM's baseline out and says
// so); the plugin found beside libHalide schedules the algorithm for a CUDA target, and the
// statement it lowers to launches CUDA kernels (unscheduled, it would run on the host).
TEST(Anderson2021GemmAlgorithm, SchedulesTheGemmForCuda) {
  GemmKernelSpec merge;
  merge.name = "merged";
  merge.K = 64, merge.N = 64, merge.mergeHeads = 2, merge.mergeRanges = 3;
  llvm::Expected<KernelPipeline> refused = buildGemmAnderson2021Algorithm(merge, 1);
  ASSERT_FALSE(bool(refused));
  EXPECT_NE(llvm::toString(refused.takeError()).find("merges flash-decoding's key ranges"),
            std::string::npos);
  ASSERT_FALSE(bool(loadAnderson2021("")));
  GemmKernelSpec s;
  s.name = "g";
  s.K = 768, s.N = 2304, s.hasBias = true;
  s.prologue = GemmPrologue::LayerNorm, s.normEpsilon = 1e-5, s.normGamma = s.normBeta = true;
  llvm::Expected<KernelPipeline> built = buildGemmAnderson2021Algorithm(s, 128);
  ASSERT_TRUE(bool(built)) << llvm::toString(built.takeError());
  const Halide::Target cuda("x86-64-linux-cuda-cuda_capability_86-no_runtime");
  llvm::Error scheduled = scheduleWithAnderson2021(*built, s.name, cuda);
  ASSERT_FALSE(bool(scheduled)) << llvm::toString(std::move(scheduled));
  llvm::SmallString<128> stmt;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("anderson2021", "stmt", stmt));
  built->pipeline.compile_to_lowered_stmt(stmt.str().str(), built->arguments(),
                                          Halide::StmtOutputFormat::Text, cuda);
  auto text = llvm::MemoryBuffer::getFile(stmt);
  llvm::sys::fs::remove(stmt);
  ASSERT_TRUE(bool(text));
  EXPECT_NE((*text)->getBuffer().find("halide_cuda_run"), llvm::StringRef::npos);
}

/// How a test runs flash-decoding's range pass (M <= 4): as before the append existed, or
/// where the pass appends (cudaDecodeRangesAppend) appending nothing (start = the keys,
/// the rows' outputs into a dummy) or appending the last M keys, which the cache holds as NaN
/// until the pass writes them (rotated with rope).
enum class RangeAppend { Plain, Nothing, LastRows };

/// `ranges` as the host calls it in `mode`; k and v are the cache slots of `keys` rows
/// (`capacity` rows each head), kNew and vNew the step's new rows (the last M of the keys).
int callRanges(Halide::Callable &ranges, const AttentionKernelSpec &spec, RangeAppend mode,
               Halide::Runtime::Buffer<float> &q, Halide::Runtime::Buffer<float> &k,
               Halide::Runtime::Buffer<float> &v, Halide::Runtime::Buffer<float> &kNew,
               Halide::Runtime::Buffer<float> &vNew, Halide::Runtime::Buffer<float> &partials,
               int capacity) {
  if (mode == RangeAppend::Plain)
    return xftest::call(ranges, {q.raw_buffer(), k.raw_buffer(), v.raw_buffer(),
                                 partials.raw_buffer()});
  const CudaDecodePartials shape = cudaDecodePartialsOf(spec);
  const int M = q.height(), keys = k.height(), dV = int(spec.dV), columns = int(shape.columns);
  const int kvHeads = int(spec.keyValueHeads()), group = int(spec.heads) / kvHeads;
  const int headFloats = columns * int(shape.rows), ranges_ = int(shape.ranges);
  const int start = mode == RangeAppend::LastRows ? keys - M : keys;
  std::vector<Halide::Runtime::Buffer<float>> views;
  for (int e = 0; e < 3; ++e) { // (column, row, head in group, K/V head, range)
    halide_dimension_t dims[5] = {{0, dV, e == 0 ? 1 : 0},
                                  {0, M, columns},
                                  {0, group, headFloats},
                                  {0, kvHeads, headFloats * group},
                                  {0, ranges_, headFloats * int(spec.heads)}};
    views.emplace_back(partials.data() + (e == 0 ? 0 : dV + e - 1), 5, dims);
  }
  Halide::Runtime::Buffer<float> dummy(dV * int(shape.rows));
  for (Halide::Runtime::Buffer<float> *cache : {&k, &v}) {
    const bool append = mode == RangeAppend::LastRows;
    halide_dimension_t dims[5] = {{0, dV, 1},
                                  {0, M, dV},
                                  {0, group, 0},
                                  {0, kvHeads, append ? capacity * dV : 0},
                                  {0, ranges_, 0}};
    views.emplace_back(append ? &(*cache)(0, start, 0) : dummy.data(), 5, dims);
  }
  Halide::Runtime::Buffer<float> &newK = mode == RangeAppend::LastRows ? kNew : k;
  Halide::Runtime::Buffer<float> &newV = mode == RangeAppend::LastRows ? vNew : v;
  try {
    return ranges(q.raw_buffer(), k.raw_buffer(), v.raw_buffer(), newK.raw_buffer(),
                  newV.raw_buffer(), start, views[0].raw_buffer(), views[1].raw_buffer(),
                  views[2].raw_buffer(), views[3].raw_buffer(), views[4].raw_buffer());
  } catch (const Halide::Error &e) {
    ADD_FAILURE() << e.what();
    return -1;
  }
}

// Element c of head `head` of row `row` of `m` (heads side by side) rotated at `position` as
// spec.rope pairs features, in double; as it is without rope.
double rotatedRef(const AttentionKernelSpec &spec, const Halide::Runtime::Buffer<float> &m,
                  int head, int c, int row, double position) {
  const int dK = int(spec.dK);
  auto at = [&](int x) { return double(m(head * dK + x, row)); };
  if (spec.rope == AttentionKernelSpec::Rope::None)
    return at(c);
  const bool adjacent = spec.rope == AttentionKernelSpec::Rope::Adjacent;
  const int p = adjacent ? c / 2 : c % (dK / 2);
  const bool first = adjacent ? c % 2 == 0 : c < dK / 2;
  const double a = adjacent ? at(2 * p) : at(p), b = adjacent ? at(2 * p + 1) : at(p + dK / 2);
  const double angle = position * std::pow(spec.ropeBase, -2.0 * p / dK);
  return first ? a * std::cos(angle) - b * std::sin(angle)
               : a * std::sin(angle) + b * std::cos(angle);
}

void checkAttention(const AttentionKernelSpec &spec,
                    const std::vector<std::pair<int, int>> &shapes = {
                        {1, 1}, {1, 70}, {3, 40}, {4, 4}, {17, 17}, {20, 45}, {40, 20}}) {
  Halide::Callable kernel = jitUnscheduled(buildAttentionCudaPipeline(spec, /*gpuSchedule=*/false));
  Halide::Callable ranges =
      jitUnscheduled(buildAttentionCudaRangesPipeline(spec, /*gpuSchedule=*/false));
  ASSERT_TRUE(kernel.defined() && ranges.defined());
  const CudaDecodePartials shape = cudaDecodePartialsOf(spec);
  const int H = int(spec.heads), dK = int(spec.dK), dV = int(spec.dV);
  const int Hkv = int(spec.keyValueHeads()), group = H / Hkv;
  const bool rope = spec.rope != AttentionKernelSpec::Rope::None;
  std::vector<RangeAppend> modes{RangeAppend::Plain};
  if (cudaDecodeRangesAppend(spec)) { // a cache's keys are rotated as appended, never on reading
    modes = {RangeAppend::Nothing};
    if (!rope || !spec.ropeKeys)
      modes.push_back(RangeAppend::LastRows);
  }
  std::mt19937 rng(9);
  // Decode (M ≤ 4 over a longer cache), self-attention with key- and query-block tails (causal:
  // key blocks past a query block skipped), cross attention.
  for (auto [M, Mz] : shapes)
    for (RangeAppend mode : modes) {
    if (spec.causal && Mz < M)
      continue;
    if (mode == RangeAppend::LastRows && (M > int(shape.rows) || Mz < M))
      continue;
    SCOPED_TRACE("M=" + std::to_string(M) + " Mz=" + std::to_string(Mz) +
                 (mode == RangeAppend::LastRows ? " appending" : ""));
    auto q = xftest::randomMatrix(M, H * dK, rng);
    auto k = xftest::randomMatrix(Mz, Hkv * dK, rng);
    auto v = xftest::randomMatrix(Mz, Hkv * dV, rng);
    q.for_each_value([](float &x) { x *= 4.f; });
    Halide::Runtime::Buffer<float> out(H * dV, M);
    out.fill(std::nanf(""));
    // K/V as a KV cache slot: each head's rows contiguous, capacity past the context.
    const int capacity = Mz + 5, start = Mz - M;
    auto kHeads = xftest::byHead(k, Hkv, /*cacheSlot=*/true, capacity);
    auto vHeads = xftest::byHead(v, Hkv, /*cacheSlot=*/true, capacity);
    // Appending: the new rows (the last M) as the QKV GEMM leaves them, NaN in the cache.
    Halide::Runtime::Buffer<float> kNew = k.cropped(1, start, M), vNew = v.cropped(1, start, M);
    kNew.translate(1, -start), vNew.translate(1, -start);
    kNew = xftest::byHead(kNew, Hkv, false, 0), vNew = xftest::byHead(vNew, Hkv, false, 0);
    if (mode == RangeAppend::LastRows)
      for (auto *cache : {&kHeads, &vHeads})
        cache->cropped(1, start, M).fill(std::nanf(""));
    // The device buffer of the ranges' results, as the host passes it to both functions:
    // written by <name>_decode_ranges when M <= 4 (flash-decoding), else never read.
    Halide::Runtime::Buffer<float> partials(int(shape.columns), int(shape.rows),
                                            int(shape.heads), int(shape.ranges));
    partials.fill(std::nanf(""));
    if (M <= shape.rows)
      ASSERT_EQ(callRanges(ranges, spec, mode, q, kHeads, vHeads, kNew, vNew, partials, capacity),
                0);
    ASSERT_EQ(xftest::call(kernel, {q.raw_buffer(), kHeads.raw_buffer(), vHeads.raw_buffer(),
                                    partials.raw_buffer(), out.raw_buffer()}),
              0);
    // Q and K as the kernel uses them: with rope, query row t rotated at t + (Mz − M) and,
    // unless the cache holds them rotated (ropeKeys off: rotated by the append), key s at s;
    // in double. Appended keys are rotated at their position too.
    auto rotatedAt = [&](const Halide::Runtime::Buffer<float> &m, int head, int c, int row,
                         double position) { return rotatedRef(spec, m, head, c, row, position); };
    auto keyRef = [&](int g, int c, int s) {
      const bool rotate = rope && (spec.ropeKeys || (mode == RangeAppend::LastRows && s >= start));
      return rotate ? rotatedAt(k, g, c, s, s) : double(k(g * dK + c, s));
    };
    double worst = 0;
    std::vector<double> score(Mz);
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < M; ++t) {
        double top = -INFINITY;
        for (int s = 0; s < Mz; ++s) {
          double dot = 0;
          for (int c = 0; c < dK; ++c)
            dot += rotatedAt(q, h, c, t, t + (Mz - M)) * keyRef(h / group, c, s);
          score[s] = !spec.causal || s <= t + (Mz - M) ? dot * spec.scale : -INFINITY;
          top = std::max(top, score[s]);
        }
        double sum = 0;
        for (int s = 0; s < Mz; ++s)
          sum += score[s] == -INFINITY ? 0 : std::exp(score[s] - top);
        for (int d = 0; d < dV; ++d) {
          double ref = 0;
          for (int s = 0; s < Mz; ++s)
            if (score[s] != -INFINITY)
              ref += std::exp(score[s] - top) / sum * v((h / group) * dV + d, s);
          double err = std::abs(out(h * dV + d, t) - ref);
          worst = err <= worst ? worst : err; // a NaN (an element never written) stays
        }
      }
    EXPECT_LE(worst, 1e-5);
    if (dK != dV)
      continue;
    // The cache: every row before `start` as it was, the appended rows as the cache holds
    // them (rotated keys), nothing written past them.
    double cacheWorst = 0;
    for (int g = 0; g < Hkv; ++g)
      for (int s = 0; s < capacity; ++s)
        for (int c = 0; c < dV; ++c) {
          const bool held = s < Mz;
          const bool appended = mode == RangeAppend::LastRows && s >= start;
          const double kWant = !held                ? NAN
                               : appended && rope ? rotatedAt(k, g, c, s, s)
                                                  : double(k(g * dK + c, s));
          const double vWant = held ? v(g * dV + c, s) : NAN;
          // Past the context the slot is outside the buffers' crop: read through their data.
          const int64_t at = c + int64_t(s) * dV + int64_t(g) * capacity * dV;
          for (auto [got, want] : {std::pair{double(kHeads.data()[at]), kWant},
                                   std::pair{double(vHeads.data()[at]), vWant}}) {
            if (std::isnan(want) != std::isnan(got))
              cacheWorst = INFINITY;
            else if (!std::isnan(want))
              cacheWorst = std::max(cacheWorst, std::abs(got - want));
          }
        }
    EXPECT_LE(cacheWorst, 1e-6);
  }
}

TEST(CudaAttentionAlgorithm, CausalGroupedAndCross) {
  AttentionKernelSpec s;
  s.name = "a";
  s.heads = 4, s.dK = 8, s.dV = 8, s.scale = 1 / std::sqrt(8.0);
  checkAttention(s);
  s.causal = true;
  checkAttention(s);
  s.kvHeads = 2, s.dV = 40; // grouped K/V heads; a value head wider than 32 columns
  checkAttention(s);
}

TEST(CudaAttentionAlgorithm, CausalKeyBlocksSkipped) {
  // Small heads keep the unscheduled JIT quick. 40 causal queries over 40 keys: the first query
  // block's loop over key blocks stops before the second key block; decode rows over 600 keys.
  AttentionKernelSpec s;
  s.name = "a";
  s.heads = 2, s.kvHeads = 1, s.dK = 4, s.dV = 4, s.scale = 0.5, s.causal = true;
  checkAttention(s, {{1, 600}, {2, 300}, {40, 40}, {70, 100}});
}

TEST(CudaAttentionAlgorithm, FlashDecodingRanges) {
  // Decode rows over key ranges: 8 heads of one K/V head each take 33 ranges (264 blocks);
  // 2000 keys give ranges of 61 keys, two key blocks of 32 each (the second partly masked);
  // 20 keys leave 13 ranges empty. Grouped: 12 query heads over 3 K/V heads, 4 heads a block.
  AttentionKernelSpec s;
  s.name = "a";
  s.heads = 8, s.dK = 4, s.dV = 6, s.scale = 0.5, s.causal = true;
  CudaDecodePartials shape = cudaDecodePartialsOf(s);
  EXPECT_EQ(shape.ranges, 33);
  EXPECT_EQ(shape.headsPerBlock, 1);
  EXPECT_EQ(shape.floats(), 8 * 4 * 8 * 33);
  checkAttention(s, {{1, 2000}, {4, 1500}, {1, 20}, {3, 3}});
  s.causal = false;
  checkAttention(s, {{2, 900}});
  s.heads = 12, s.kvHeads = 3, s.causal = true;
  shape = cudaDecodePartialsOf(s);
  EXPECT_EQ(shape.headsPerBlock, 4);
  EXPECT_EQ(shape.ranges, 88);
  checkAttention(s, {{1, 1000}, {2, 7}});
}

TEST(CudaAttentionAlgorithm, RotaryPositions) {
  // Rotary positions in the attention (xf.rope fused into it on CUDA too): query rows rotated
  // at t + (Mz − M), staged per block; keys rotated as staged (no cache), or read as the cache
  // holds them (ropeKeys off: rotated by the append). Decode rows take flash-decoding's ranges.
  AttentionKernelSpec s;
  s.name = "a";
  s.heads = 6, s.kvHeads = 2, s.dK = 8, s.dV = 6, s.scale = 0.5, s.causal = true;
  s.rope = AttentionKernelSpec::Rope::Halves, s.ropeBase = 100.0;
  checkAttention(s, {{1, 300}, {3, 40}, {20, 45}});
  s.ropeKeys = false;
  checkAttention(s, {{1, 300}, {4, 4}, {20, 45}});
  s.rope = AttentionKernelSpec::Rope::Adjacent;
  checkAttention(s, {{2, 90}, {17, 17}});
}

// The range pass appends a decode step's new K/V rows (K and V heads of one width,
// cudaDecodeRangesAppend): keys from `start` on read from the new rows — NaN in the cache
// until the pass writes them — and, after the call, the cache's rows equal to the new rows
// (keys rotated at their position with rope), rows before and past them untouched; appending
// nothing (start = the keys, as an uncached call) the cache is read alone. Heads of one K/V
// head each (33 ranges: 2000 keys give two key blocks a range; 20 keys leave ranges empty),
// grouped (4 heads a block, the rows' outputs of stride 0 across them), rotary positions in
// both pairings, and the uncached rotary kernel (keys rotated as read: appending nothing only).
TEST(CudaAttentionAlgorithm, RangePassAppends) {
  AttentionKernelSpec s;
  s.name = "a";
  s.heads = 8, s.dK = 4, s.dV = 4, s.scale = 0.5, s.causal = true;
  ASSERT_TRUE(cudaDecodeRangesAppend(s));
  checkAttention(s, {{1, 2000}, {4, 1500}, {1, 20}, {3, 3}, {1, 1}});
  s.heads = 12, s.kvHeads = 3, s.dK = s.dV = 8;
  EXPECT_EQ(cudaDecodePartialsOf(s).headsPerBlock, 4);
  checkAttention(s, {{1, 1000}, {2, 7}});
  s.heads = 6, s.kvHeads = 2, s.ropeKeys = false, s.ropeBase = 100.0;
  s.rope = AttentionKernelSpec::Rope::Halves;
  checkAttention(s, {{1, 300}, {4, 4}, {2, 90}});
  s.rope = AttentionKernelSpec::Rope::Adjacent;
  checkAttention(s, {{1, 130}, {3, 3}});
  s.ropeKeys = true;
  checkAttention(s, {{1, 300}, {3, 40}});
}

// A batched decode step of n sequences on the GPU (docs/gpu.md, "Batches on the GPU"), as the
// host runs it: the append of every sequence's new K/V row to its own slot at its own
// position (one launch: AppendKeyValues with row positions, keys rotated there with rope),
// `<name>_batched_ranges` over each sequence's keys 0..start, `<name>_batched` merging them;
// against float64 attention of each sequence alone. The caches hold NaN wherever no sequence
// wrote (other slots, positions past each start, the rows the append writes), so reading a
// wrong slot, a wrong start or a key before it was appended fails the check.
bool refused(llvm::Error err) {
  const bool failed = bool(err);
  llvm::consumeError(std::move(err));
  return failed;
}

void checkBatchedDecode(const AttentionKernelSpec &spec, const std::vector<int> &starts,
                        const std::vector<int> &slots, int slotCount, int capacity) {
  SCOPED_TRACE("n=" + std::to_string(starts.size()));
  const int H = int(spec.heads), dK = int(spec.dK), dV = int(spec.dV);
  const int Hkv = int(spec.keyValueHeads()), group = H / Hkv, n = int(starts.size());
  const bool rope = spec.rope != AttentionKernelSpec::Rope::None;
  DeviceLoopKernelSpec append;
  append.name = "append", append.kind = DeviceLoopKind::AppendKeyValues;
  append.rowPositions = true;
  if (rope)
    append.headWidth = dK, append.constant = spec.ropeBase,
    append.flag = spec.rope == AttentionKernelSpec::Rope::Halves;
  std::vector<Halide::Argument> appendArgs;
  Halide::Callable appendKernel = jitUnscheduled(
      buildDeviceLoopPipeline(append, /*gpuSchedule=*/false, appendArgs), appendArgs);
  Halide::Callable ranges =
      jitUnscheduled(buildCudaBatchedRangesPipeline(spec, /*gpuSchedule=*/false));
  Halide::Callable merge = jitUnscheduled(buildCudaBatchedMergePipeline(spec, false));
  ASSERT_TRUE(appendKernel.defined() && ranges.defined() && merge.defined());
  std::mt19937 rng(11);
  // Sequence i's keys and values at positions 0..starts[i] (the last its new row).
  std::vector<Halide::Runtime::Buffer<float>> k, v;
  Halide::Runtime::Buffer<float> kCache(dK, capacity, Hkv, slotCount),
      vCache(dV, capacity, Hkv, slotCount);
  kCache.fill(std::nanf("")), vCache.fill(std::nanf(""));
  Halide::Runtime::Buffer<float> newK(dK, n, Hkv), newV(dV, n, Hkv);
  Halide::Runtime::Buffer<int64_t> positions(n), slotOf(n);
  auto q = xftest::randomMatrix(n, H * dK, rng);
  q.for_each_value([](float &x) { x *= 4.f; });
  for (int i = 0; i < n; ++i) {
    k.push_back(xftest::randomMatrix(starts[i] + 1, Hkv * dK, rng));
    v.push_back(xftest::randomMatrix(starts[i] + 1, Hkv * dV, rng));
    positions(i) = starts[i], slotOf(i) = slots[i];
    for (int g = 0; g < Hkv; ++g)
      for (int s = 0; s <= starts[i]; ++s)
        for (int c = 0; c < dK; ++c) {
          // Keys before the new one sit in the cache rotated (the append rotated them).
          if (s < starts[i]) {
            kCache(c, s, g, slots[i]) = float(rotatedRef(spec, k[i], g, c, s, s));
            vCache(c, s, g, slots[i]) = v[i](g * dV + c, s);
          } else {
            newK(c, i, g) = k[i](g * dK + c, s), newV(c, i, g) = v[i](g * dV + c, s);
          }
        }
  }
  ASSERT_EQ(xftest::call(appendKernel, {newK.raw_buffer(), newV.raw_buffer(),
                                        positions.raw_buffer(), slotOf.raw_buffer(),
                                        kCache.raw_buffer(), vCache.raw_buffer()}),
            0);
  const CudaDecodePartials shape = cudaDecodePartialsOf(spec);
  Halide::Runtime::Buffer<float> partials(int(shape.columns), n, H, int(shape.ranges));
  partials.fill(std::nanf(""));
  ASSERT_EQ(xftest::call(ranges, {q.raw_buffer(), kCache.raw_buffer(), vCache.raw_buffer(),
                                  positions.raw_buffer(), slotOf.raw_buffer(),
                                  partials.raw_buffer()}),
            0);
  Halide::Runtime::Buffer<float> out(H * dV, n);
  out.fill(std::nanf(""));
  ASSERT_EQ(xftest::call(merge, {partials.raw_buffer(), out.raw_buffer()}), 0);
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    const int keys = starts[i] + 1;
    std::vector<double> score(keys);
    for (int h = 0; h < H; ++h) {
      double top = -INFINITY;
      for (int s = 0; s < keys; ++s) {
        double dot = 0;
        for (int c = 0; c < dK; ++c)
          dot += rotatedRef(spec, q, h, c, i, starts[i]) *
                 rotatedRef(spec, k[i], h / group, c, s, s);
        score[s] = dot * spec.scale;
        top = std::max(top, score[s]);
      }
      double sum = 0;
      for (int s = 0; s < keys; ++s)
        sum += std::exp(score[s] - top);
      for (int d = 0; d < dV; ++d) {
        double ref = 0;
        for (int s = 0; s < keys; ++s)
          ref += std::exp(score[s] - top) / sum * v[i]((h / group) * dV + d, s);
        double err = std::abs(out(h * dV + d, i) - ref);
        worst = err <= worst ? worst : err; // a NaN (an element never written) stays
      }
    }
  }
  EXPECT_LE(worst, 1e-5);
}

TEST(CudaAttentionAlgorithm, BatchedDecodeStep) {
  AttentionKernelSpec s;
  s.name = "a";
  s.heads = 8, s.dK = 4, s.dV = 4, s.scale = 0.5, s.causal = true;
  ASSERT_FALSE(refused(validateCudaBatchedDecode(s)));
  // 8 sequences on slots out of order (two unused), from a first step (start 0) to 1,999 keys
  // (two key blocks a range of 33), some shorter than the ranges (empty ranges).
  checkBatchedDecode(s, {0, 5, 1999, 40, 3, 700, 31, 64}, {6, 0, 3, 7, 1, 2, 9, 4}, 10, 2000);
  checkBatchedDecode(s, {9}, {0}, 1, 16);
  // Grouped heads (4 a block), rotary positions in both pairings (keys rotated by the append).
  s.heads = 12, s.kvHeads = 3, s.dK = s.dV = 8;
  checkBatchedDecode(s, {300, 2, 77}, {2, 1, 0}, 3, 400);
  s.heads = 6, s.kvHeads = 2, s.ropeKeys = false, s.ropeBase = 100.0;
  s.rope = AttentionKernelSpec::Rope::Halves;
  checkBatchedDecode(s, {130, 0, 61, 7}, {1, 3, 0, 2}, 4, 200);
  s.rope = AttentionKernelSpec::Rope::Adjacent;
  checkBatchedDecode(s, {90, 12}, {0, 1}, 2, 100);
  // Refused: keys rotated as read, K and V heads of two widths.
  s.ropeKeys = true;
  EXPECT_TRUE(refused(validateCudaBatchedDecode(s)));
}

// Schedules other than the defaults (#xf.gpu_attention_schedule, what the tuner tries): the
// prefill path's query and key blocks (8 queries a block: causal key blocks end at another
// place; 16 keys a stage: the tails move), the range pass's keys a stage, its fill target and
// heads a block (2 of a group of 4: twice the head blocks, so fewer ranges), the batched
// step's ranges likewise; against float64 as the defaults are.
TEST(CudaAttentionAlgorithm, GpuScheduleSizes) {
  AttentionKernelSpec s;
  s.name = "a";
  s.heads = 8, s.kvHeads = 2, s.dK = 4, s.dV = 4, s.scale = 0.5, s.causal = true;
  s.gpuSchedule.queryBlock = 8, s.gpuSchedule.keyBlock = 16;
  s.gpuSchedule.decodeKeyBlock = 8, s.gpuSchedule.decodeBlocks = 40;
  s.gpuSchedule.decodeBlockHeads = 2;
  const CudaDecodePartials shape = cudaDecodePartialsOf(s);
  EXPECT_EQ(shape.headsPerBlock, 2);
  EXPECT_EQ(shape.ranges, 10); // 8 heads / 2 a block = 4 head blocks, ⌈40 / 4⌉ ranges
  checkAttention(s, {{1, 700}, {3, 40}, {9, 9}, {20, 45}, {40, 20}});
  s.causal = false, s.kvHeads = 0;
  s.gpuSchedule.queryBlock = 32, s.gpuSchedule.keyBlock = 32, s.gpuSchedule.decodeKeyBlock = 64;
  checkAttention(s, {{2, 300}, {33, 70}});
  s.causal = true, s.kvHeads = 2;
  checkBatchedDecode(s, {0, 129, 64, 7}, {3, 0, 2, 1}, 4, 200);
}

// ---- Loop kernels ----------------------------------------------------------

using Row = std::function<double(int c, int t)>; // the reference value of out[t, c]

void checkLoop(const DeviceLoopKernelSpec &spec, int width, int rows,
               std::vector<halide_buffer_t *> inputs, int offset, bool hasOffset, Row ref,
               double tolerance = 1e-6) {
  SCOPED_TRACE(kernelSignature(spec));
  std::vector<Halide::Argument> arguments;
  Halide::Callable kernel =
      jitUnscheduled(buildDeviceLoopPipeline(spec, /*gpuSchedule=*/false, arguments), arguments);
  ASSERT_TRUE(kernel.defined());
  Halide::Runtime::Buffer<float> out(width, rows);
  out.fill(std::nanf(""));
  int rc;
  if (hasOffset)
    rc = inputs.size() == 0   ? kernel(offset, out.raw_buffer())
         : inputs.size() == 1 ? kernel(inputs[0], offset, out.raw_buffer())
         : inputs.size() == 3 ? kernel(inputs[0], inputs[1], inputs[2], offset, out.raw_buffer())
                              : -1;
  else
    rc = inputs.size() == 1   ? kernel(inputs[0], out.raw_buffer())
         : inputs.size() == 2 ? kernel(inputs[0], inputs[1], out.raw_buffer())
         : inputs.size() == 3 ? kernel(inputs[0], inputs[1], inputs[2], out.raw_buffer())
         : inputs.size() == 4
             ? kernel(inputs[0], inputs[1], inputs[2], inputs[3], out.raw_buffer())
             : -1;
  ASSERT_EQ(rc, 0);
  double worst = 0;
  for (int t = 0; t < rows; ++t)
    for (int c = 0; c < width; ++c) {
      double want = ref(c, t), got = out(c, t);
      double error = std::abs(got - want) / std::max(1.0, std::abs(want));
      if (!(error <= tolerance))
        FAIL() << "out[" << t << ", " << c << "] = " << got << ", expected " << want;
      worst = std::max(worst, error);
    }
  EXPECT_LE(worst, tolerance);
}

TEST(CudaLoopKernels, EveryKindAgainstItsFormula) {
  std::mt19937 rng(5);
  const int W = 40, R = 5; // wider than no tile, not a multiple of the 128 row threads
  auto in = xftest::randomMatrix(R, W, rng);
  auto other = xftest::randomMatrix(R, W, rng);
  auto table = xftest::randomMatrix(30, W, rng);
  auto gamma = xftest::randomMatrix(1, W, rng), beta = xftest::randomMatrix(1, W, rng);
  Halide::Runtime::Buffer<float> gamma1(gamma.data(), W), beta1(beta.data(), W);
  auto spec = [](DeviceLoopKind kind, int width) {
    DeviceLoopKernelSpec s;
    s.name = "k", s.kind = kind, s.width = width;
    return s;
  };

  Halide::Runtime::Buffer<int32_t> ids(R);
  for (int t = 0; t < R; ++t)
    ids(t) = (7 * t + 3) % 30;
  checkLoop(
      spec(DeviceLoopKind::Gather, W), W, R, {table.raw_buffer(), ids.raw_buffer()}, 0, false,
      [&](int c, int t) { return table(c, ids(t)); }, 0);
  checkLoop(
      spec(DeviceLoopKind::Position, W), W, R, {table.raw_buffer()}, 11, true,
      [&](int c, int t) { return table(c, 11 + t); }, 0);
  auto positions = xftest::randomMatrix(20, W, rng);
  checkLoop(
      spec(DeviceLoopKind::GatherPositions, W), W, R,
      {table.raw_buffer(), ids.raw_buffer(), positions.raw_buffer()}, 11, true,
      [&](int c, int t) { return double(table(c, ids(t))) + positions(c, 11 + t); });
  // Each row at its own position (a packed batch's step table, docs/abi.md): not offset + t,
  // nor in order.
  Halide::Runtime::Buffer<int64_t> rowPositions(R);
  for (int t = 0; t < R; ++t)
    rowPositions(t) = (11 * t + 5) % 20;
  auto atRows = [&](DeviceLoopKind kind) {
    DeviceLoopKernelSpec s = spec(kind, W);
    s.rowPositions = true;
    return s;
  };
  checkLoop(atRows(DeviceLoopKind::Position), W, R,
            {table.raw_buffer(), rowPositions.raw_buffer()}, 0, false,
            [&](int c, int t) { return table(c, int(rowPositions(t))); }, 0);
  checkLoop(atRows(DeviceLoopKind::GatherPositions), W, R,
            {table.raw_buffer(), ids.raw_buffer(), positions.raw_buffer(),
             rowPositions.raw_buffer()},
            0, false, [&](int c, int t) {
              return double(table(c, ids(t))) + positions(c, int(rowPositions(t)));
            });
  auto sinusoid = spec(DeviceLoopKind::Sinusoid, 7); // an odd width
  sinusoid.constant = 10000;
  checkLoop(sinusoid, 7, R, {}, 1000, true, [&](int c, int t) {
    if (c >= 6)
      return 0.0;
    double angle = double(1000 + t) / std::pow(10000.0, double(c / 2 * 2) / 7);
    return c % 2 ? std::cos(angle) : std::sin(angle);
  });
  auto add = spec(DeviceLoopKind::Add, W);
  checkLoop(add, W, R, {in.raw_buffer(), other.raw_buffer()}, 0, false,
            [&](int c, int t) { return double(in(c, t)) + other(c, t); });
  add.flag = true;
  checkLoop(add, W, R, {in.raw_buffer(), gamma1.raw_buffer()}, 0, false,
            [&](int c, int t) { return double(in(c, t)) + gamma1(c); });
  for (DeviceMap map :
       {DeviceMap::Relu, DeviceMap::GeluTanh, DeviceMap::GeluErf, DeviceMap::Scale}) {
    auto s = spec(DeviceLoopKind::Map, W);
    s.map = map, s.constant = -0.75;
    checkLoop(s, W, R, {in.raw_buffer()}, 0, false, [&](int c, int t) {
      double x = in(c, t);
      return map == DeviceMap::Relu       ? std::max(x, 0.0)
             : map == DeviceMap::Scale    ? x * -0.75
             : map == DeviceMap::GeluTanh ? act(GemmEpilogue::GeluTanh, x)
                                          : act(GemmEpilogue::GeluErf, x);
    });
  }
  {
    // A run-time factor (length(x) in a spec): (in, factor, out).
    auto s = spec(DeviceLoopKind::Map, W);
    s.map = DeviceMap::ScaleBy;
    std::vector<Halide::Argument> arguments;
    Halide::Callable kernel =
        jitUnscheduled(buildDeviceLoopPipeline(s, /*gpuSchedule=*/false, arguments), arguments);
    ASSERT_TRUE(kernel.defined());
    Halide::Runtime::Buffer<float> out(W, R);
    ASSERT_EQ(kernel(in.raw_buffer(), 0.125f, out.raw_buffer()), 0);
    for (int t = 0; t < R; ++t)
      for (int c = 0; c < W; ++c)
        ASSERT_EQ(out(c, t), in(c, t) * 0.125f);
  }
  checkLoop(spec(DeviceLoopKind::Silu, W), W, R, {in.raw_buffer()}, 0, false,
            [&](int c, int t) { return act(GemmEpilogue::Silu, in(c, t)); });
  checkLoop(spec(DeviceLoopKind::Multiply, W), W, R, {in.raw_buffer(), other.raw_buffer()}, 0,
            false, [&](int c, int t) { return double(in(c, t)) * other(c, t); });
  for (bool halves : {false, true}) {
    auto s = spec(DeviceLoopKind::Rotary, W);
    s.heads = 4, s.headWidth = 10, s.constant = 10000, s.flag = halves;
    checkLoop(
        s, W, R, {in.raw_buffer()}, 3000, true,
        [&](int c, int t) {
          int head = c / 10, i = c % 10;
          int pair = halves ? i % 5 : i / 2;
          int first = head * 10 + (halves ? pair : 2 * pair), second = first + (halves ? 5 : 1);
          double angle = double(3000 + t) * std::pow(10000.0, -2.0 * pair / 10);
          double a = in(first, t), b = in(second, t);
          bool isFirst = c == first;
          return isFirst ? a * std::cos(angle) - b * std::sin(angle)
                         : a * std::sin(angle) + b * std::cos(angle);
        },
        2e-6);
  }
  for (int affine : {0, 1, 2})
    for (bool center : {true, false}) {
      if (!center && affine == 2)
        continue;
      auto s = spec(DeviceLoopKind::Normalize, W);
      s.constant = 1e-5, s.flag = center, s.affineParams = affine;
      std::vector<halide_buffer_t *> inputs{in.raw_buffer()};
      if (affine >= 1)
        inputs.push_back(gamma1.raw_buffer());
      if (affine == 2)
        inputs.push_back(beta1.raw_buffer());
      checkLoop(
          s, W, R, inputs, 0, false,
          [&](int c, int t) {
            double mean = 0, var = 0;
            for (int j = 0; j < W; ++j)
              mean += center ? in(j, t) / double(W) : 0;
            for (int j = 0; j < W; ++j)
              var += (in(j, t) - mean) * (in(j, t) - mean) / W;
            double y = (in(c, t) - mean) / std::sqrt(var + 1e-5);
            if (affine >= 1)
              y *= gamma1(c);
            if (affine == 2)
              y += beta1(c);
            return y;
          },
          2e-6);
    }
  checkLoop(spec(DeviceLoopKind::Softmax, W), W, R, {in.raw_buffer()}, 0, false, [&](int c, int t) {
    double top = -INFINITY, sum = 0;
    for (int j = 0; j < W; ++j)
      top = std::max(top, double(in(j, t)));
    for (int j = 0; j < W; ++j)
      sum += std::exp(in(j, t) - top);
    return std::exp(in(c, t) - top) / sum;
  });
  checkLoop(
      spec(DeviceLoopKind::Copy, 0), W, R, {in.raw_buffer()}, 0, false,
      [&](int c, int t) { return in(c, t); }, 0);
  // transpose: out [W, R] ← in [R, W]
  checkLoop(
      spec(DeviceLoopKind::Transpose, 0), R, W, {in.raw_buffer()}, 0, false,
      [&](int c, int t) { return in(t, c); }, 0);
}

// The KV cache append as the host code calls it on the GPU: K and V columns of a fused QKV
// row (row stride 3·H·w), every head's new rows into its [cache rows][w] block at row
// `start`; the rows before and after it, and V's slot for K's, are left alone. With a
// rotation (rotary positions fused into the attention), K's rows turn at positions start + r
// as the rotary kernel turns them (against double), V's are copied.
void checkAppendKeyValues(int w, bool rotate, bool halves) {
  const int heads = 3, rows = 2, cacheRows = 7, start = 4, stride = 3 * heads * w;
  const double base = 100.0;
  DeviceLoopKernelSpec spec;
  spec.name = "k", spec.kind = DeviceLoopKind::AppendKeyValues;
  if (rotate)
    spec.headWidth = w, spec.constant = base, spec.flag = halves;
  SCOPED_TRACE(kernelSignature(spec));
  std::vector<Halide::Argument> arguments;
  Halide::Callable kernel =
      jitUnscheduled(buildDeviceLoopPipeline(spec, /*gpuSchedule=*/false, arguments), arguments);
  ASSERT_TRUE(kernel.defined());
  std::vector<float> qkv(rows * stride);
  for (size_t i = 0; i < qkv.size(); ++i)
    qkv[i] = float(i) + 0.5f;
  std::vector<float> cache(2 * heads * cacheRows * w, -1.f); // K slot, then V slot
  auto view = [&](float *at, int rowStride, int headStride) {
    halide_dimension_t dims[3] = {{0, w, 1}, {0, rows, rowStride}, {0, heads, headStride}};
    return Halide::Runtime::Buffer<float>(at, 3, dims);
  };
  auto keys = view(qkv.data() + heads * w, stride, w);
  auto values = view(qkv.data() + 2 * heads * w, stride, w);
  float *keySlot = cache.data(), *valueSlot = cache.data() + heads * cacheRows * w;
  auto keyCache = view(keySlot + start * w, w, cacheRows * w);
  auto valueCache = view(valueSlot + start * w, w, cacheRows * w);
  int rc = rotate ? kernel(keys.raw_buffer(), values.raw_buffer(), start, keyCache.raw_buffer(),
                           valueCache.raw_buffer())
                  : kernel(keys.raw_buffer(), values.raw_buffer(), keyCache.raw_buffer(),
                           valueCache.raw_buffer());
  ASSERT_EQ(rc, 0);
  // New element c of head g, row r (position start + r), as the cache should hold it, and
  // the size of the terms it sums (f32 cosine, sine and products: a few ulps of it).
  auto fresh = [&](int slot, int g, int r, int c) -> std::pair<double, double> {
    auto at = [&](int x) { return double(qkv[r * stride + (1 + slot) * heads * w + g * w + x]); };
    const int half = w / 2;
    if (slot == 1 || !rotate || c >= 2 * half)
      return {at(c), 0.0};
    const int i = halves ? c % half : c / 2;
    const bool first = halves ? c < half : c % 2 == 0;
    const double a = halves ? at(i) : at(2 * i), b = halves ? at(i + half) : at(2 * i + 1);
    const double angle = (start + r) * std::pow(base, -2.0 * i / w);
    return {first ? a * std::cos(angle) - b * std::sin(angle)
                  : a * std::sin(angle) + b * std::cos(angle),
            std::abs(a) + std::abs(b)};
  };
  for (int slot = 0; slot < 2; ++slot)
    for (int g = 0; g < heads; ++g)
      for (int r = 0; r < cacheRows; ++r)
        for (int c = 0; c < w; ++c) {
          double got = cache[((slot * heads + g) * cacheRows + r) * w + c];
          bool isNew = r >= start && r < start + rows;
          auto [want, terms] = isNew ? fresh(slot, g, r - start, c) : std::pair{-1.0, 0.0};
          ASSERT_NEAR(got, want, 4 * FLT_EPSILON * terms)
              << "slot " << slot << " head " << g << " row " << r << " col " << c;
        }
}

TEST(CudaLoopKernels, AppendKeyValuesEveryHeadInOneCall) {
  checkAppendKeyValues(5, /*rotate=*/false, false);
}

TEST(CudaLoopKernels, AppendKeyValuesRotatesKeys) {
  checkAppendKeyValues(8, /*rotate=*/true, /*halves=*/true);
  checkAppendKeyValues(8, /*rotate=*/true, /*halves=*/false);
  checkAppendKeyValues(5, /*rotate=*/true, /*halves=*/false); // the odd last feature as it is
}

} // namespace
