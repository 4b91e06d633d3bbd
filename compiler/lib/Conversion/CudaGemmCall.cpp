//===- CudaGemmCall.cpp - a tensor-core GEMM's split-K partials -----------===//

#include "CudaGemmCall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::xf;

bool mlir::xf::takesSplitKPartials(const HostOptions &options, const GemmKernelSpec &spec) {
  return options.cudaDevice && tensorCoreGemmPlan(spec, options.gpuMatmul).mlirKernel;
}

HalideBufferArg mlir::xf::splitKPartialsArg(OpBuilder &b, Location loc,
                                            const GemmKernelSpec &spec, Value partials) {
  auto i64 = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v); };
  HalideBufferArg buffer{partials, {}};
  buffer.dims.push_back({i64(tensorCoreSplitPartialFloats(spec)), i64(1)});
  return buffer;
}
