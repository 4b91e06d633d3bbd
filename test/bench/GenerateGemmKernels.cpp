//===- GenerateGemmKernels.cpp - AOT-compile the benchmarked GEMMs --------===//
//
// Build-time tool of xf-bench-gemm: compiles one Halide GEMM object per shape
// of GemmShapes.def (target "host"): with the default schedule for this
// CPU's vector unit, fp32 weights as xf_bench_NAME and bf16 weights as
// xf_bench_NAME_bf16 (bf16Activations too, so the GEMM path uses bf16 dot
// products); and xf_bench_NAME_tuned with the schedule a tuning database
// holds for a kernel of the same K, N, layout and dtypes (any epilogue: the
// tuner keys kernels with their fused epilogues), or the default when it
// holds none, its weight packed at load when the schedule packs (as xfc's
// executables take it; then with xf_bench_NAME_tuned_pack). tuned.json in
// the output directory says which. And
// xf_bench_NAME_packed, the default schedule taking its weight packed at load
// (as xfc's executables do), with xf_bench_NAME_packed_pack, and the same of
// the bf16 one, xf_bench_NAME_bf16_packed (bf16 pairs of K rows). Plus the
// Halide runtime.
// Usage: xf-bench-gemm-gen <output-dir> [<tuning-db> <threads>]
//
//===----------------------------------------------------------------------===//

#include "xf/Codegen/HalideKernels.h"
#include "xf/Codegen/KernelSchedules.h"
#include "xf/Codegen/KernelSpecs.h"
#include "xf/IR/XfDialect.h"
#include "xf/Tuning/TuningDatabase.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <optional>
#include <string>

using namespace mlir::xf;

namespace {
/// The signatures of every kernel with the shape, layout and dtypes of
/// `spec` (the benchmark's plain GEMM): each bias, residual and elementwise
/// epilogue the model's fused GEMMs may carry. SwiGLU is another shape.
llvm::StringSet<> sameShapeSignatures(mlir::MLIRContext &ctx, GemmKernelSpec spec) {
  llvm::StringSet<> signatures;
  for (GemmEpilogue epilogue : {GemmEpilogue::None, GemmEpilogue::Relu, GemmEpilogue::GeluTanh,
                                GemmEpilogue::GeluErf, GemmEpilogue::Silu})
    for (int extras = 0; extras < 4; ++extras) {
      spec.epilogue = epilogue, spec.hasBias = extras & 1, spec.hasResidual = extras & 2;
      signatures.insert(kernelSignature(gemmKernelAttr(&ctx, spec)));
    }
  return signatures;
}

/// The tuned schedule of the first entry for this shape, target and threads.
std::optional<GemmSchedule> tunedSchedule(mlir::MLIRContext &ctx,
                                          const tuning::TuningDatabase &db,
                                          const GemmKernelSpec &spec, const std::string &target,
                                          int64_t threads, std::string &from) {
  llvm::StringSet<> shape = sameShapeSignatures(ctx, spec);
  for (const tuning::TuningEntry &e : db.entries()) {
    if (e.target != target || e.threads != threads || !shape.contains(e.kernel))
      continue;
    auto attr = llvm::dyn_cast_or_null<GemmScheduleAttr>(mlir::parseAttribute(e.schedule, &ctx));
    if (!attr)
      continue;
    from = e.kernel;
    return gemmScheduleOf(attr);
  }
  return std::nullopt;
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 2 && argc != 4) {
    llvm::errs() << "usage: xf-bench-gemm-gen <output-dir> [<tuning-db> <threads>]\n";
    return 2;
  }
  std::string dir = argv[1];
  auto fail = [](llvm::Error err) {
    llvm::errs() << "xf-bench-gemm-gen: " << llvm::toString(std::move(err)) << "\n";
    return 1;
  };
  llvm::Expected<VectorShape> vectors = vectorShapeOf("host");
  if (!vectors)
    return fail(vectors.takeError());
  std::optional<tuning::TuningDatabase> db;
  int64_t threads = 0;
  std::string target;
  mlir::MLIRContext ctx;
  ctx.loadDialect<XfDialect>();
  if (argc == 4) {
    auto loaded = tuning::TuningDatabase::load(argv[2]);
    if (!loaded)
      return fail(loaded.takeError());
    db = std::move(*loaded);
    threads = std::atoll(argv[3]);
    auto t = halideTargetString("host");
    if (!t)
      return fail(t.takeError());
    target = *t;
  }
  llvm::json::Array tuned;
  auto compile = [&](GemmKernelSpec spec, const std::string &file) {
    return compileGemmKernel(spec, "host", dir + "/" + file + ".o");
  };
#define X(NAME, M, K_, N_, TRANSPOSED)                                                             \
  {                                                                                                \
    GemmKernelSpec spec;                                                                           \
    spec.name = "xf_bench_" #NAME;                                                                 \
    spec.K = K_;                                                                                   \
    spec.N = N_;                                                                                   \
    spec.transposeWeight = TRANSPOSED;                                                             \
    spec.schedule = defaultGemmSchedule(*vectors, K_);                                             \
    if (llvm::Error err = compile(spec, #NAME))                                                    \
      return fail(std::move(err));                                                                 \
    GemmKernelSpec tunedSpec = spec;                                                               \
    tunedSpec.name += "_tuned";                                                                    \
    std::string from;                                                                              \
    if (db)                                                                                        \
      if (auto s = tunedSchedule(ctx, *db, spec, target, threads, from))                          \
        tunedSpec.schedule = *s;                                                                   \
    tuned.push_back(llvm::json::Object{{"shape", #NAME}, {"tuned_as", from}});                    \
    tunedSpec.packedWeight = canPackWeightAtLoad(tunedSpec);                                       \
    if (llvm::Error err = compile(tunedSpec, #NAME "_tuned"))                                      \
      return fail(std::move(err));                                                                 \
    GemmKernelSpec packedSpec = spec;                                                              \
    packedSpec.name += "_packed";                                                                  \
    packedSpec.packedWeight = true;                                                                \
    if (llvm::Error err = compile(packedSpec, #NAME "_packed"))                                    \
      return fail(std::move(err));                                                                 \
    spec.name += "_bf16";                                                                          \
    spec.bf16Weights = spec.bf16Activations = true;                                                \
    if (llvm::Error err = compile(spec, #NAME "_bf16"))                                            \
      return fail(std::move(err));                                                                 \
    spec.name += "_packed";                                                                        \
    spec.packedWeight = true;                                                                      \
    if (llvm::Error err = compile(spec, #NAME "_bf16_packed"))                                     \
      return fail(std::move(err));                                                                 \
  }
#include "GemmShapes.def"
#undef X
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(dir + "/tuned.json", ec);
    if (ec)
      return fail(llvm::createStringError(ec, "cannot write tuned.json"));
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(tuned))) << "\n";
  }
  if (llvm::Error err = compileHalideRuntime("host", dir + "/halide_runtime.o"))
    return fail(std::move(err));
  return 0;
}
