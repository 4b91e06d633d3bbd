//===- GemmEmitter.cpp - xf.gemm → a Halide GEMM call ---------------------===//
//
// The kernel emitter of xf.gemm (KernelEmitters.cpp): a call of its AOT Halide
// pipeline (GemmKernel.cpp) on the input, the weight — packed at load when
// xf_prepare packs it (PackedWeights.cpp) — bias, residual and output; on
// weight blocks with --q8-gemm-inputs, libxfrt's 8-bit block GEMV/GEMM first
// (BlockGemvCall.h); with bf16 inputs on a packed weight, libxfrt's AMX bf16 GEMM first
// (AmxBf16GemmCall.h); on tensor cores (--gpu-matmul) with split-K's partials (CudaGemmCall.h).
//
//===----------------------------------------------------------------------===//

#include "AmxBf16GemmCall.h"
#include "BlockGemvCall.h"
#include "CudaAttentionCall.h"
#include "CudaGemmCall.h"
#include "HostLowering.h"

#include "xfrt/BlockGemv.h"

using namespace mlir;
using namespace mlir::xf;

LogicalResult HostLowering::emitGemm(GemmOp gemm, const KernelResult &r, xfrt::KernelSpec &site) {
  GemmKernelSpec spec = gemmSpecOf(gemm);
  AttentionOp mergeSource = rangeMergeSource(gemm);
  std::optional<CudaDecodePartials> partials;
  if (mergeSource) { // x at M <= 4 merged from the attention's key ranges (CudaRangeMerge.cpp)
    partials = cudaDecodePartialsOf(attentionKernelSpecOf(mergeSource));
    spec.mergeHeads = partials->heads, spec.mergeRanges = partials->ranges;
    spec.name = nameKernel(spec);
  }
  // Every GEMM marked xf.packed_weight has its buffer planned (planPackedWeights); a missing one
  // is the lowering's bug, and index 0 would be another GEMM's weight.
  auto packed = packedWeightOfGemm.find(gemm);
  if (spec.packedWeight && packed == packedWeightOfGemm.end())
    return gemm.emitError("internal error: no packed weight planned for this xf.packed_weight GEMM");
  SmallVector<HalideBufferArg> args{matrixArg(gemm.getInput()),
                                    spec.packedWeight ? packedWeightArg(packed->second)
                                                      : matrixArg(gemm.getWeight())};
  if (spec.hasBias)
    args.push_back(matrixArg(gemm.getBias()));
  if (spec.hasResidual)
    args.push_back(matrixArg(gemm.getResidual()));
  if (spec.normGamma) // the norm prologue's (CUDA)
    args.push_back(matrixArg(gemm.getNormGamma()));
  if (spec.normBeta)
    args.push_back(matrixArg(gemm.getNormBeta()));
  if (partials) // the partials the attention's range pass left after the scratch arena
    args.push_back(cudaPartialsArg(*b, loc, *partials, devicePartials()));
  args.push_back(matrixArg(r.value));
  if (takesSplitKPartials(options, spec)) {
    deviceGemmFloats = std::max(deviceGemmFloats, tensorCoreSplitPartialFloats(spec));
    args.push_back(splitKPartialsArg(*b, loc, spec, devicePartials()));
  }
  auto halide = [&] {
    return callHalidePipeline(*b, loc, *program.module, spec.name, args, {}, options.cudaDevice);
  };
  auto stride = [&](Value t) { return i64(placements[t].stride); };
  // libxfrt's entry points take the same operands; the weight is the blocks or the packed one.
  auto runtimeCall = [&](llvm::function_ref<Value()> weight) {
    RuntimeGemmCall call{pointerOf(gemm.getInput()), stride(gemm.getInput()), r.rows};
    call.weight = weight();
    if (spec.hasBias)
      call.bias = pointerOf(gemm.getBias());
    if (spec.hasResidual)
      call.residual = pointerOf(gemm.getResidual()),
      call.residualStride = stride(gemm.getResidual());
    call.out = r.out, call.outStride = stride(r.value), call.spec = &spec;
    return call;
  };
  if (spec.weightBlocks != WeightBlocks::None && options.q8GemmInputs) {
    BlockGemvCall q8{runtimeCall([&] { return pointerOf(gemm.getWeight()); }),
                     options.blockDotIsa};
    orStatus(callBlockGemvOrPipeline(*b, loc, *program.module, q8, halide));
  } else if (takesAmxBf16Gemm(spec, options.cudaDevice)) {
    orStatus(callAmxBf16GemmOrPipeline(*b, loc, *program.module, runtimeCall([&] { return args[1].host; }),
                                       halide));
  } else {
    orStatus(halide());
  }
  site.name = spec.name, site.kind = "gemm";
  const bool q8 = spec.weightBlocks != WeightBlocks::None && options.q8GemmInputs;
  site.products = q8 ? "int8" : spec.bf16Activations ? "bf16" : "fp32";
  // xfrt_block_gemm takes AMX int8 tiles only under the AVX-512 VNNI ceiling.
  site.amx = q8 ? options.blockDotIsa == int(xfrt::BlockDotIsa::Avx512Vnni)
                : takesAmxBf16Gemm(spec, options.cudaDevice);
  setKernelWork(site, kernelWork(spec));
  site.tuned = gemm->hasAttr("xf.tuned");
  return success();
}
