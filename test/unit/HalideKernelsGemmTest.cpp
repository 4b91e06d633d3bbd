//===- HalideKernelsGemmTest.cpp - GEMM kernels against a float64 loop ----===//
//
// Each case builds one GEMM pipeline exactly as compileGemmKernel does, JITs
// it once, and runs it for several M (1, 2 and 3 take the GEMV path; 7, 65,
// 130 leave register-tile and task tails) against naive double-precision
// loops. bf16Weights kernels get weights rounded to bfloat16 and the
// reference uses those rounded values, so the tolerance checks the kernel,
// not the rounding.
//
// Tolerance: the kernel sums K float32 products whose rounding errors behave
// like a random walk, so the error grows like sqrt(K)·eps·(size of the
// terms); with inputs in [-1, 1] the result's magnitude also grows like
// sqrt(K). We allow 2e-6·sqrt(K)·max|ref|, i.e. about 17·sqrt(K)·eps
// relative to the largest output: wide enough for any summation order and for
// Halide's erf (accurate to 3 ulp), tight enough that a dropped K block, a
// wrong tile or a misplaced bias (errors of order max|ref|/sqrt(K) or more)
// fails.
//
//===----------------------------------------------------------------------===//

#include "HalideKernelsTestUtil.h"

#include <cmath>
#include <cstring>

using namespace mlir::xf;

namespace {

double epilogue(GemmEpilogue kind, double a) {
  switch (kind) {
  case GemmEpilogue::None:
    return a;
  case GemmEpilogue::Relu:
    return a > 0 ? a : 0;
  case GemmEpilogue::GeluTanh:
    return 0.5 * a * (1 + std::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)));
  case GemmEpilogue::GeluErf:
    return 0.5 * a * (1 + std::erf(a / std::sqrt(2.0)));
  case GemmEpilogue::Silu:
  case GemmEpilogue::SwiGlu: // the gate; checkGemm multiplies by up
    return a / (1 + std::exp(-a));
  }
  return a;
}

/// bfloat16 bits of `v`, rounded to nearest even (inputs here are finite).
uint16_t toBf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

/// float16 bits → value, from the IEEE definition (not the kernel's bit trick).
double halfValue(uint16_t h) {
  int exponent = (h >> 10) & 31, mantissa = h & 1023;
  double magnitude = exponent == 0    ? std::ldexp(mantissa, -24)
                     : exponent == 31 ? (mantissa ? NAN : INFINITY)
                                      : std::ldexp(1024 + mantissa, exponent - 25);
  return h & 0x8000 ? -magnitude : magnitude;
}

/// Random ggml blocks for a [rows, K] weight, their values (ggml's definitions,
/// docs in HalideKernels.h) written into `weight` (k, row). Scales include
/// zero, a subnormal and the largest float16 (with tiny nibbles around it).
Halide::Runtime::Buffer<uint8_t> randomBlocks(WeightBlocks type,
                                              Halide::Runtime::Buffer<float> &weight,
                                              std::mt19937 &rng) {
  const int K = weight.width(), rows = weight.height();
  const int blockBytes = int(weightBlockBytes(type)), blocksPerRow = K / 32;
  Halide::Runtime::Buffer<uint8_t> bytes(blocksPerRow * blockBytes, rows);
  std::uniform_int_distribution<int> byte(0, 255), pick(0, 99);
  std::uniform_real_distribution<float> magnitude(-7.f, -3.f);
  auto randomHalf = [&]() -> uint16_t {
    int p = pick(rng);
    if (p == 0)
      return 0;
    if (p == 1)
      return uint16_t(0x0003 | (byte(rng) & 1) << 15); // subnormal
    // 2^-7 .. 2^-3, either sign: exponent 8..12, random mantissa.
    int exponent = 15 + int(std::floor(magnitude(rng)));
    return uint16_t((byte(rng) & 1) << 15 | exponent << 10 | (byte(rng) << 2 & 1023));
  };
  for (int r = 0; r < rows; ++r)
    for (int b = 0; b < blocksPerRow; ++b) {
      uint8_t *block = &bytes(b * blockBytes, r);
      for (int i = 0; i < blockBytes; ++i)
        block[i] = uint8_t(byte(rng));
      uint16_t d = randomHalf(), m = randomHalf();
      std::memcpy(block, &d, 2);
      if (type == WeightBlocks::Q4_1)
        std::memcpy(block + 2, &m, 2);
      for (int j = 0; j < 32; ++j) {
        double w;
        if (type == WeightBlocks::Q8_0) {
          w = halfValue(d) * double(int8_t(block[2 + j]));
        } else {
          const uint8_t *q = block + (type == WeightBlocks::Q4_1 ? 4 : 2);
          int nibble = j < 16 ? q[j] & 15 : q[j - 16] >> 4;
          w = type == WeightBlocks::Q4_1 ? halfValue(d) * nibble + halfValue(m)
                                         : halfValue(d) * (nibble - 8);
        }
        weight(b * 32 + j, r) = float(w);
      }
    }
  return bytes;
}

void checkGemmOnce(const GemmKernelSpec &spec, const std::vector<int> &rowCounts) {
  SCOPED_TRACE("K=" + std::to_string(spec.K) + " N=" + std::to_string(spec.N) +
               (spec.bf16Weights ? " bf16" : "") + (spec.packedWeight ? " packed at load" : ""));
  Halide::Callable kernel = xftest::jit(buildGemmPipeline(spec, hostHalideTarget()));
  ASSERT_TRUE(kernel.defined());
  const int K = int(spec.K), N = int(spec.N);
  // SwiGLU: weight and bias hold 2·N columns, gate then up.
  const bool gated = spec.epilogue == GemmEpilogue::SwiGlu;
  const int columns = gated ? 2 * N : N;
  std::mt19937 rng(42);
  auto weight = spec.transposeWeight ? xftest::randomMatrix(columns, K, rng)
                                     : xftest::randomMatrix(K, columns, rng);
  // The bf16 buffer the kernel reads (type code halide_type_bfloat, 16 bits);
  // `weight` keeps the same rounded values as float for the reference.
  Halide::Runtime::Buffer<uint16_t> weightBf16(weight.width(), weight.height());
  if (spec.bf16Weights) {
    weight.for_each_element([&](int a, int b) {
      weightBf16(a, b) = toBf16(weight(a, b));
      uint32_t bits = uint32_t(weightBf16(a, b)) << 16;
      std::memcpy(&weight(a, b), &bits, 4);
    });
    weightBf16.raw_buffer()->type = halide_type_t(halide_type_bfloat, 16);
  }
  Halide::Runtime::Buffer<uint8_t> weightBlocks;
  if (spec.weightBlocks != WeightBlocks::None)
    weightBlocks = randomBlocks(spec.weightBlocks, weight, rng);
  auto bias = xftest::randomMatrix(1, columns, rng);
  Halide::Runtime::Buffer<float> bias1d(bias.data(), columns);
  halide_buffer_t *weightArg = spec.weightBlocks != WeightBlocks::None ? weightBlocks.raw_buffer()
                               : spec.bf16Weights ? weightBf16.raw_buffer()
                                                  : weight.raw_buffer();
  // Packed at load: the kernel's `_pack` function, run once, gives the weight it reads.
  const PackedWeightShape shape = packedWeightShape(spec);
  const int lanes = int(shape.lanes), rows = int(shape.rows), tiles = int(shape.tiles);
  Halide::Runtime::Buffer<float> packed;
  Halide::Runtime::Buffer<uint16_t> packedBf16;
  if (spec.packedWeight) {
    Halide::Callable pack = xftest::jit(buildGemmPackPipeline(spec, hostHalideTarget()));
    ASSERT_TRUE(pack.defined());
    halide_buffer_t *packedArg;
    if (spec.bf16Weights) {
      packedBf16 = Halide::Runtime::Buffer<uint16_t>(lanes, rows, tiles);
      packedBf16.fill(0x7fc0); // NaN: an element the pack never wrote
      packedBf16.raw_buffer()->type = halide_type_t(halide_type_bfloat, 16);
      packedArg = packedBf16.raw_buffer();
    } else {
      packed = Halide::Runtime::Buffer<float>(lanes, rows, tiles);
      packed.fill(std::nanf(""));
      packedArg = packed.raw_buffer();
    }
    ASSERT_EQ(xftest::call(pack, {weightArg, packedArg}), 0);
    weightArg = packedArg;
  }

  for (int M : rowCounts) {
    SCOPED_TRACE("M=" + std::to_string(M));
    auto x = xftest::randomMatrix(M, K, rng);
    // bf16Activations: the GEMM path rounds x to bf16 (the GEMV path does not).
    auto xRef = x.copy();
    if (spec.bf16Activations && M >= spec.schedule.gemvRowsBelow)
      xRef.for_each_value([](float &v) {
        uint32_t bits = uint32_t(toBf16(v)) << 16;
        std::memcpy(&v, &bits, 4);
      });
    auto residual = xftest::randomMatrix(M, N, rng);
    Halide::Runtime::Buffer<float> out(N, M);
    out.fill(std::nanf(""));
    std::vector<halide_buffer_t *> args = {x.raw_buffer(), weightArg};
    if (spec.hasBias)
      args.push_back(bias1d.raw_buffer());
    if (spec.hasResidual)
      args.push_back(residual.raw_buffer());
    args.push_back(out.raw_buffer());
    ASSERT_EQ(xftest::call(kernel, args), 0);

    std::vector<double> ref(size_t(M) * N);
    double maxRef = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        auto product = [&](int column) {
          double acc = 0;
          for (int k = 0; k < K; ++k)
            acc += double(xRef(k, i)) *
                   (spec.transposeWeight ? weight(k, column) : weight(column, k));
          return spec.hasBias ? acc + bias1d(column) : acc;
        };
        double acc = epilogue(spec.epilogue, product(j));
        if (gated)
          acc *= product(N + j);
        if (spec.hasResidual)
          acc += residual(j, i);
        ref[size_t(i) * N + j] = acc;
        maxRef = std::max(maxRef, std::abs(acc));
      }
    const double tolerance = 2e-6 * std::sqrt(double(K)) * std::max(maxRef, 1.0);
    double maxError = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double error = std::abs(out(j, i) - ref[size_t(i) * N + j]);
        if (!(error <= tolerance)) // NaN: an element never written
          FAIL() << "out[" << i << ", " << j << "] = " << out(j, i) << ", expected "
                 << ref[size_t(i) * N + j] << " (tolerance " << tolerance << ")";
        maxError = std::max(maxError, error);
      }
    EXPECT_LE(maxError, tolerance);
  }
}

/// Checks the kernel taking its weight as stored and, where it can, the one
/// taking it packed at load (GemmKernelSpec::packedWeight). The default rows
/// reach every path: GEMV (M < 4), packed at load the few-rows path (up to 4
/// row tiles: 32 rows with AVX-512, 24 with AVX2; one partial tile, a tile
/// and a row, the bound) and the GEMM path past it.
void checkGemm(GemmKernelSpec spec,
               std::vector<int> rowCounts = {1, 2, 3, 4, 7, 9, 24, 25, 32, 33, 65, 128, 130}) {
  checkGemmOnce(spec, rowCounts);
  if (!spec.packedWeight && canPackWeightAtLoad(spec)) {
    spec.packedWeight = true;
    checkGemmOnce(spec, rowCounts);
  }
}

GemmKernelSpec gemm(int64_t K, int64_t N, bool transposeWeight = false) {
  GemmKernelSpec spec;
  spec.name = "gemm_test";
  spec.K = K;
  spec.N = N;
  spec.transposeWeight = transposeWeight;
  return spec;
}

TEST(HalideKernelsGemm, PlainWithKTailAndColumnTail) {
  GemmKernelSpec spec = gemm(300, 100);
  spec.schedule.kBlock = 256;
  checkGemm(spec); // K = 256 + 44, N = 2·48 + 4
}

TEST(HalideKernelsGemm, TransposedWeightBiasRelu) {
  GemmKernelSpec spec = gemm(300, 100, /*transposeWeight=*/true);
  spec.hasBias = true;
  spec.epilogue = GemmEpilogue::Relu;
  checkGemm(spec);
}

TEST(HalideKernelsGemm, BiasGeluTanhResidual) {
  GemmKernelSpec spec = gemm(64, 96);
  spec.hasBias = spec.hasResidual = true;
  spec.epilogue = GemmEpilogue::GeluTanh;
  checkGemm(spec);
}

TEST(HalideKernelsGemm, TransposedBiasGeluErfResidual) {
  GemmKernelSpec spec = gemm(128, 50, /*transposeWeight=*/true);
  spec.hasBias = spec.hasResidual = true;
  spec.epilogue = GemmEpilogue::GeluErf;
  checkGemm(spec);
}

TEST(HalideKernelsGemm, SmallTilesManyBlocksAndPanels) {
  GemmKernelSpec spec = gemm(520, 150, /*transposeWeight=*/true); // 4 K blocks + 8
  spec.schedule.tileCols = 32;
  spec.schedule.tileRows = 4;
  spec.schedule.kBlock = 128;
  spec.schedule.panelCols = 64;
  spec.schedule.rowsPerTask = 32;
  spec.schedule.gemvRowsBelow = 0;
  spec.hasResidual = true;
  checkGemm(spec, {1, 3, 33, 130});
}

TEST(HalideKernelsGemm, UnpackedWeights) {
  GemmKernelSpec spec = gemm(96, 70);
  spec.schedule.packWeights = false;
  spec.hasBias = true;
  checkGemm(spec, {1, 7, 65});
}

// Decode-time GEMV (M < gemvRowsBelow): both layouts, every epilogue, with
// and without bias and residual, K and N tails (K % 16, N % 16, N % 4).
TEST(HalideKernelsGemm, GemvBothLayoutsAllEpilogues) {
  for (bool transposed : {false, true})
    for (GemmEpilogue epilogue :
         {GemmEpilogue::None, GemmEpilogue::Relu, GemmEpilogue::GeluTanh, GemmEpilogue::GeluErf}) {
      GemmKernelSpec spec = gemm(200, 103, transposed);
      spec.epilogue = epilogue;
      spec.hasBias = epilogue != GemmEpilogue::None;
      spec.hasResidual = epilogue == GemmEpilogue::GeluTanh || epilogue == GemmEpilogue::None;
      SCOPED_TRACE("transposed=" + std::to_string(transposed) +
                   " epilogue=" + std::to_string(int(epilogue)));
      checkGemm(spec, {1, 2, 3, 4});
    }
}

// Many GEMV tasks (a weight over 256 KiB) and a wider GEMV threshold.
// SiLU, and SwiGLU's gated epilogue: gate and up tiles interleaved by the
// packing (GEMM path) or chunks (GEMV path); N not a multiple of the tile
// width, both layouts, with bias and residual, small tiles so that panels
// hold several gate/up tile pairs.
TEST(HalideKernelsGemm, SiluAndSwiGlu) {
  for (bool transposed : {false, true}) {
    SCOPED_TRACE(transposed ? "[N, K]" : "[K, N]");
    GemmKernelSpec silu = gemm(40, 70, transposed);
    silu.epilogue = GemmEpilogue::Silu;
    silu.hasBias = true;
    checkGemm(silu, {1, 3, 9});
    for (int64_t N : {48, 70, 130}) {
      GemmKernelSpec spec = gemm(57, N, transposed);
      spec.epilogue = GemmEpilogue::SwiGlu;
      spec.hasBias = N == 70;
      spec.hasResidual = N != 48;
      checkGemm(spec, {1, 2, 3, 7, 65, 130});
      spec.schedule.tileCols = spec.schedule.tileCols / 3 * 2;
      spec.schedule.panelCols = 2 * spec.schedule.tileCols;
      spec.schedule.gemvTasks = 3;
      checkGemm(spec, {1, 3, 9});
    }
    // A gate|up checkpoint tensor kept in bfloat16, with bf16 GEMM inputs: the
    // packed bf16 pairs interleave gate and up tiles too.
    GemmKernelSpec bf16 = gemm(57, 70, transposed);
    bf16.epilogue = GemmEpilogue::SwiGlu;
    bf16.bf16Weights = bf16.bf16Activations = true;
    checkGemm(bf16, {1, 7, 65});
  }
}

TEST(HalideKernelsGemm, GemvManyTasks) {
  for (bool transposed : {false, true}) {
    GemmKernelSpec spec = gemm(768, 1000, transposed);
    spec.hasBias = true;
    spec.schedule.gemvRowsBelow = 6;
    checkGemm(spec, {1, 3, 5, 6});
  }
}

TEST(HalideKernelsGemm, Bf16WeightsBothLayoutsGemmAndGemv) {
  for (bool transposed : {false, true}) {
    GemmKernelSpec spec = gemm(300, 100, transposed); // K and column tails
    spec.bf16Weights = true;
    spec.hasBias = spec.hasResidual = true;
    spec.epilogue = GemmEpilogue::GeluTanh;
    checkGemm(spec);
  }
  GemmKernelSpec spec = gemm(520, 150, /*transposeWeight=*/true);
  spec.bf16Weights = true;
  spec.schedule.packWeights = false;
  checkGemm(spec, {1, 9});
}

// bf16 x and W pairs with float32 sums (vdpbf16ps where the host has it):
// odd K (a zero-padded last pair), K and column tails, both layouts, and a
// small schedule with several K blocks and panels.
TEST(HalideKernelsGemm, Bf16ActivationsDotProducts) {
  for (bool transposed : {false, true}) {
    GemmKernelSpec spec = gemm(301, 100, transposed);
    spec.bf16Weights = spec.bf16Activations = true;
    spec.hasBias = spec.hasResidual = true;
    spec.epilogue = GemmEpilogue::GeluErf;
    checkGemm(spec);
  }
  GemmKernelSpec odd = gemm(301, 70);
  odd.bf16Weights = odd.bf16Activations = true;
  odd.schedule.kBlock = 128; // 2 blocks and an odd tail of 45
  checkGemm(odd, {4, 17});
  // SwiGLU (gate and up tiles interleaved), odd K: pairs end in a zero row,
  // the GEMV reads the pair layout packed at load.
  for (bool transposed : {false, true}) {
    GemmKernelSpec gated = gemm(301, 70, transposed);
    gated.bf16Weights = gated.bf16Activations = true;
    gated.epilogue = GemmEpilogue::SwiGlu;
    gated.hasBias = true;
    checkGemm(gated, {1, 3, 17});
  }
  GemmKernelSpec spec = gemm(520, 150, /*transposeWeight=*/true);
  spec.bf16Weights = spec.bf16Activations = true;
  spec.schedule.tileCols = 32;
  spec.schedule.tileRows = 4;
  spec.schedule.kBlock = 128;
  spec.schedule.panelCols = 64;
  spec.schedule.rowsPerTask = 32;
  checkGemm(spec, {1, 5, 33, 130});
  spec.schedule.packWeights = false;
  checkGemm(spec, {9});
}

// Weights in ggml blocks ([N, K] only): every type, GEMV (M < 4) and GEMM
// paths, K tails of the K blocking (K = 96 with kBlock 64: a tail of one
// block), N tails, bias/residual/GELU epilogues, SwiGLU over gate|up blocks,
// small panels. The reference multiplies by ggml's dequantized values, so
// the tolerance checks the kernel's arithmetic, not the quantization.
TEST(HalideKernelsGemm, WeightBlocksAllTypes) {
  for (WeightBlocks type : {WeightBlocks::Q8_0, WeightBlocks::Q4_0, WeightBlocks::Q4_1}) {
    SCOPED_TRACE(weightBlocksName(type));
    GemmKernelSpec spec = gemm(576, 100, /*transposeWeight=*/true);
    spec.weightBlocks = type;
    spec.hasBias = spec.hasResidual = true;
    spec.epilogue = GemmEpilogue::GeluTanh;
    checkGemm(spec, {1, 2, 3, 4, 9, 130});
    GemmKernelSpec small = gemm(96, 70, true);
    small.weightBlocks = type;
    small.schedule.kBlock = 64;
    small.schedule.tileCols = small.schedule.tileCols / 3 * 2;
    small.schedule.panelCols = 2 * small.schedule.tileCols;
    small.schedule.gemvTasks = 3;
    checkGemm(small, {1, 3, 7, 33});
    small.schedule.packWeights = false;
    checkGemm(small, {1, 9});
    GemmKernelSpec gated = gemm(64, 70, true);
    gated.weightBlocks = type;
    gated.epilogue = GemmEpilogue::SwiGlu;
    checkGemm(gated, {1, 2, 7, 65});
  }
}

TEST(HalideKernelsGemm, WeightBlocksNeedTheNKLayout) {
  GemmKernelSpec spec = gemm(64, 64, /*transposeWeight=*/false);
  spec.weightBlocks = WeightBlocks::Q4_1;
  llvm::Expected<KernelPipeline> built = buildGemmPipeline(spec, hostHalideTarget());
  ASSERT_FALSE(bool(built));
  EXPECT_NE(llvm::toString(built.takeError()).find("q4_1 weight blocks need the [N, K] layout"),
            std::string::npos);
  spec = gemm(48, 64, /*transposeWeight=*/true); // K not a multiple of 32
  spec.weightBlocks = WeightBlocks::Q8_0;
  built = buildGemmPipeline(spec, hostHalideTarget());
  ASSERT_FALSE(bool(built));
  EXPECT_NE(llvm::toString(built.takeError()).find("got 48"), std::string::npos);
}

TEST(HalideKernelsGemm, RejectsInvalidSchedule) {
  GemmKernelSpec spec = gemm(64, 64);
  spec.schedule.tileCols = 20; // not a multiple of any vector width
  llvm::Expected<KernelPipeline> built = buildGemmPipeline(spec, hostHalideTarget());
  ASSERT_FALSE(bool(built));
  EXPECT_NE(llvm::toString(built.takeError()).find("tileCols"), std::string::npos);
  spec = gemm(0, 64);
  built = buildGemmPipeline(spec, hostHalideTarget());
  ASSERT_FALSE(bool(built));
  llvm::consumeError(built.takeError());
  spec = gemm(64, 64);
  spec.bf16Activations = true; // without bf16Weights
  built = buildGemmPipeline(spec, hostHalideTarget());
  ASSERT_FALSE(bool(built));
  EXPECT_NE(llvm::toString(built.takeError()).find("bf16Weights"), std::string::npos);
}

} // namespace
