//===- GenerateGemmKernels.cpp - AOT-compile the benchmarked GEMMs --------===//
//
// Build-time tool of xf-bench-gemm: compiles one Halide GEMM object per shape
// of GemmShapes.def (default schedule, target "host"), fp32 weights as
// xf_bench_NAME and bf16 weights as xf_bench_NAME_bf16 (bf16Activations too,
// so the GEMM path uses bf16 dot products), and the Halide runtime.
// Usage: xf-bench-gemm-gen <output-dir>
//
//===----------------------------------------------------------------------===//

#include "xf/Conversion/HalideKernels.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace mlir::xf;

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: xf-bench-gemm-gen <output-dir>\n";
    return 2;
  }
  std::string dir = argv[1];
  auto fail = [](llvm::Error err) {
    llvm::errs() << "xf-bench-gemm-gen: " << llvm::toString(std::move(err)) << "\n";
    return 1;
  };
#define X(NAME, M, K_, N_, TRANSPOSED)                                                             \
  {                                                                                                \
    GemmKernelSpec spec;                                                                           \
    spec.name = "xf_bench_" #NAME;                                                                 \
    spec.K = K_;                                                                                   \
    spec.N = N_;                                                                                   \
    spec.transposeWeight = TRANSPOSED;                                                             \
    if (llvm::Error err = compileGemmKernel(spec, "host", dir + "/" #NAME ".o"))                   \
      return fail(std::move(err));                                                                 \
    spec.name += "_bf16";                                                                          \
    spec.bf16Weights = spec.bf16Activations = true;                                                \
    if (llvm::Error err = compileGemmKernel(spec, "host", dir + "/" #NAME "_bf16.o"))              \
      return fail(std::move(err));                                                                 \
  }
#include "GemmShapes.def"
#undef X
  if (llvm::Error err = compileHalideRuntime("host", dir + "/halide_runtime.o"))
    return fail(std::move(err));
  return 0;
}
