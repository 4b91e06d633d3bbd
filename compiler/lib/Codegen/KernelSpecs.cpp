//===- KernelSpecs.cpp - what each kernel op compiles to ------------------===//

#include "xf/Codegen/KernelSpecs.h"
#include "xf/Codegen/KernelSchedules.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::xf;

namespace {
GemmEpilogue epilogueOf(Activation a) {
  switch (a) {
  case Activation::none:
    return GemmEpilogue::None;
  case Activation::relu:
    return GemmEpilogue::Relu;
  case Activation::gelu_tanh:
    return GemmEpilogue::GeluTanh;
  case Activation::gelu_erf:
    return GemmEpilogue::GeluErf;
  case Activation::silu:
    return GemmEpilogue::Silu;
  case Activation::swiglu:
    return GemmEpilogue::SwiGlu;
  }
  llvm_unreachable("unknown activation");
}

Activation activationOf(GemmEpilogue e) {
  switch (e) {
  case GemmEpilogue::None:
    return Activation::none;
  case GemmEpilogue::Relu:
    return Activation::relu;
  case GemmEpilogue::GeluTanh:
    return Activation::gelu_tanh;
  case GemmEpilogue::GeluErf:
    return Activation::gelu_erf;
  case GemmEpilogue::Silu:
    return Activation::silu;
  case GemmEpilogue::SwiGlu:
    return Activation::swiglu;
  }
  llvm_unreachable("unknown epilogue");
}

WeightStorage storageOf(bool bf16, WeightBlocks blocks) {
  switch (blocks) {
  case WeightBlocks::None:
    return bf16 ? WeightStorage::bf16 : WeightStorage::f32;
  case WeightBlocks::Q8_0:
    return WeightStorage::q8_0;
  case WeightBlocks::Q4_0:
    return WeightStorage::q4_0;
  case WeightBlocks::Q4_1:
    return WeightStorage::q4_1;
  }
  llvm_unreachable("unknown weight blocks");
}

int64_t colsOf(Value v) { return cast<RankedTensorType>(v.getType()).getDimSize(1); }
} // namespace

WeightBlocks mlir::xf::weightBlocksOf(WeightStorage storage) {
  switch (storage) {
  case WeightStorage::f32:
  case WeightStorage::bf16:
    return WeightBlocks::None;
  case WeightStorage::q8_0:
    return WeightBlocks::Q8_0;
  case WeightStorage::q4_0:
    return WeightBlocks::Q4_0;
  case WeightStorage::q4_1:
    return WeightBlocks::Q4_1;
  }
  llvm_unreachable("unknown weight storage");
}

GemmKernelSpec mlir::xf::gemmKernelSpecOf(GemmOp op) {
  GemmKernelSpec spec;
  WeightStorage storage = weightStorageOf(op.getWeight());
  spec.weightBlocks = weightBlocksOf(storage);
  spec.K = colsOf(op.getInput());
  spec.N = colsOf(op.getResult());
  spec.transposeWeight = op.getTransposeWeight();
  spec.bf16Weights = storage == WeightStorage::bf16;
  // The marks the dialect verified against the weight and the schedule.
  spec.bf16Activations = hasBf16Inputs(op);
  spec.packedWeight = hasPackedWeight(op);
  spec.hasBias = bool(op.getBias());
  spec.hasResidual = bool(op.getResidual());
  spec.epilogue = epilogueOf(op.getActivation());
  if (GemmScheduleAttr schedule = op.getScheduleAttr())
    spec.schedule = gemmScheduleOf(schedule);
  if (GpuGemmScheduleAttr schedule = op.getGpuScheduleAttr())
    spec.gpuSchedule = gpuGemmScheduleOf(schedule);
  if (std::optional<GemmNorm> norm = op.getNorm()) {
    spec.prologue =
        *norm == GemmNorm::layer_norm ? GemmPrologue::LayerNorm : GemmPrologue::RmsNorm;
    spec.normGamma = bool(op.getNormGamma());
    spec.normBeta = bool(op.getNormBeta());
    spec.normEpsilon = op.getNormEpsilon()->convertToDouble();
  }
  return spec;
}

AttentionKernelSpec mlir::xf::attentionKernelSpecOf(AttentionOp op) {
  AttentionKernelSpec spec;
  spec.heads = op.getHeads();
  spec.kvHeads = op.getKvHeads().value_or(0);
  spec.dK = colsOf(op.getQuery()) / spec.heads;
  spec.dV = colsOf(op.getValue()) / spec.keyValueHeads();
  spec.causal = op.getMask() == MaskKind::causal;
  spec.scale =
      op.getScale() ? op.getScale()->convertToDouble() : 1.0 / std::sqrt(double(spec.dK));
  if (std::optional<RopePairing> pairing = op.getRope()) {
    spec.rope = *pairing == RopePairing::adjacent ? AttentionKernelSpec::Rope::Adjacent
                                                  : AttentionKernelSpec::Rope::Halves;
    spec.ropeBase = op.getRopeBase()->convertToDouble();
  }
  if (AttentionScheduleAttr schedule = op.getScheduleAttr())
    spec.schedule = attentionScheduleOf(schedule);
  if (GpuAttentionScheduleAttr schedule = op.getGpuScheduleAttr())
    spec.gpuSchedule = gpuAttentionScheduleOf(schedule);
  return spec;
}

// Every field of a spec is read through a structured binding, which stops
// compiling when a field is added or removed: a new field must get its
// parameter in the description, or two kernels that differ only in it would
// share one object and one name.
GemmKernelAttr mlir::xf::gemmKernelAttr(MLIRContext *ctx, const GemmKernelSpec &spec) {
  const auto &[name, K, N, transposeWeight, bf16Weights, bf16Activations, weightBlocks,
               packedWeight, hasBias, hasResidual, epilogue, schedule, gpuSchedule, prologue,
               normGamma, normBeta, normEpsilon, mergeHeads, mergeRanges] = spec;
  (void)name; // the exported symbol, not the kernel
  GpuGemmScheduleAttr gpu;
  if (!(gpuGemmScheduleAttr(ctx, gpuSchedule) == gpuGemmScheduleAttr(ctx, GpuGemmSchedule{})))
    gpu = gpuGemmScheduleAttr(ctx, gpuSchedule);
  std::optional<GemmNorm> norm;
  if (prologue != GemmPrologue::None)
    norm = prologue == GemmPrologue::LayerNorm ? GemmNorm::layer_norm : GemmNorm::rms_norm;
  return GemmKernelAttr::get(ctx, K, N, transposeWeight ? WeightLayout::nk : WeightLayout::kn,
                             storageOf(bf16Weights, weightBlocks), bf16Activations, packedWeight,
                             hasBias, hasResidual, activationOf(epilogue),
                             gemmScheduleAttr(ctx, schedule), gpu, norm,
                             llvm::APFloat(normEpsilon), normGamma, normBeta, mergeHeads,
                             mergeRanges);
}

AttentionKernelAttr mlir::xf::attentionKernelAttr(MLIRContext *ctx,
                                                  const AttentionKernelSpec &spec) {
  const auto &[name, heads, dK, dV, kvHeads, causal, scale, rope, ropeBase, ropeKeys, batchedDecode,
               halfKeyValues, segmented, schedule, gpuSchedule] = spec;
  (void)name;
  // The defaults are not printed: a description (and the object cache's key) is as before.
  GpuAttentionScheduleAttr gpu;
  if (!(gpuAttentionScheduleAttr(ctx, gpuSchedule) ==
        gpuAttentionScheduleAttr(ctx, GpuAttentionSchedule{})))
    gpu = gpuAttentionScheduleAttr(ctx, gpuSchedule);
  std::optional<RopePairing> pairing;
  if (rope != AttentionKernelSpec::Rope::None)
    pairing = rope == AttentionKernelSpec::Rope::Adjacent ? RopePairing::adjacent
                                                          : RopePairing::halves;
  return AttentionKernelAttr::get(ctx, heads, spec.keyValueHeads(), dK, dV, causal,
                                  llvm::APFloat(scale), pairing, llvm::APFloat(ropeBase), ropeKeys,
                                  batchedDecode, halfKeyValues, segmented,
                                  attentionScheduleAttr(ctx, schedule), gpu);
}

GemmKernelSpec mlir::xf::gemmKernelSpecOf(GemmKernelAttr kernel, llvm::StringRef name) {
  GemmKernelSpec spec;
  spec.name = name.str();
  spec.K = kernel.getK(), spec.N = kernel.getN();
  spec.transposeWeight = kernel.getWeight() == WeightLayout::nk;
  spec.bf16Weights = kernel.getStorage() == WeightStorage::bf16;
  spec.bf16Activations = kernel.getBf16Inputs();
  spec.weightBlocks = weightBlocksOf(kernel.getStorage());
  spec.packedWeight = kernel.getPacked();
  spec.hasBias = kernel.getBias(), spec.hasResidual = kernel.getResidual();
  spec.epilogue = epilogueOf(kernel.getActivation());
  spec.schedule = gemmScheduleOf(kernel.getSchedule());
  if (GpuGemmScheduleAttr gpu = kernel.getGpuSchedule())
    spec.gpuSchedule = gpuGemmScheduleOf(gpu);
  if (std::optional<GemmNorm> norm = kernel.getNorm()) {
    spec.prologue =
        *norm == GemmNorm::layer_norm ? GemmPrologue::LayerNorm : GemmPrologue::RmsNorm;
    spec.normEpsilon = kernel.getNormEpsilon().convertToDouble();
    spec.normGamma = kernel.getNormGamma(), spec.normBeta = kernel.getNormBeta();
  }
  spec.mergeHeads = kernel.getMergeHeads(), spec.mergeRanges = kernel.getMergeRanges();
  return spec;
}

AttentionKernelSpec mlir::xf::attentionKernelSpecOf(AttentionKernelAttr kernel,
                                                    llvm::StringRef name) {
  AttentionKernelSpec spec;
  spec.name = name.str();
  spec.heads = kernel.getHeads(), spec.kvHeads = kernel.getKvHeads();
  spec.dK = kernel.getDk(), spec.dV = kernel.getDv();
  spec.causal = kernel.getCausal();
  spec.scale = kernel.getScale().convertToDouble();
  if (std::optional<RopePairing> pairing = kernel.getRope())
    spec.rope = *pairing == RopePairing::adjacent ? AttentionKernelSpec::Rope::Adjacent
                                                  : AttentionKernelSpec::Rope::Halves;
  spec.ropeBase = kernel.getRopeBase().convertToDouble();
  spec.ropeKeys = kernel.getRopeKeys();
  spec.batchedDecode = kernel.getBatchedDecode();
  spec.halfKeyValues = kernel.getHalfKeyValues();
  spec.segmented = kernel.getSegmented();
  spec.schedule = attentionScheduleOf(kernel.getSchedule());
  if (GpuAttentionScheduleAttr gpu = kernel.getGpuSchedule())
    spec.gpuSchedule = gpuAttentionScheduleOf(gpu);
  return spec;
}

std::string mlir::xf::kernelSignature(GemmKernelAttr k) {
  std::string text = llvm::formatv("gemm k={0} n={1} weight={2}:{3} x={4}", k.getK(), k.getN(),
                                   stringifyWeightLayout(k.getWeight()),
                                   stringifyWeightStorage(k.getStorage()),
                                   k.getBf16Inputs() ? "bf16" : "f32");
  if (k.getBias())
    text += " bias";
  if (k.getResidual())
    text += " residual";
  text += " act=" + stringifyActivation(k.getActivation()).str();
  if (std::optional<GemmNorm> norm = k.getNorm()) // another kernel: its own tuning entries
    text += llvm::formatv(" norm={0} eps={1:e}{2}{3}", stringifyGemmNorm(*norm),
                          k.getNormEpsilon().convertToDouble(), k.getNormGamma() ? " gamma" : "",
                          k.getNormBeta() ? " beta" : "")
                .str();
  return text;
}

std::string mlir::xf::kernelSignature(AttentionKernelAttr k) {
  // Plain MHA keeps the signature it had before grouped-query attention, so
  // tuning databases written then still apply.
  std::string grouped = k.getKvHeads() == k.getHeads()
                            ? std::string()
                            : llvm::formatv(" kv_heads={0}", k.getKvHeads()).str();
  std::string text =
      llvm::formatv("attention heads={0}{5} dk={1} dv={2} {3} scale={4:e}", k.getHeads(),
                    k.getDk(), k.getDv(), k.getCausal() ? "causal" : "full",
                    k.getScale().convertToDouble(), grouped)
          .str();
  // Rotary positions cost a table of sines and cosines and the rotations.
  if (std::optional<RopePairing> rope = k.getRope())
    text += llvm::formatv(" rope={0} base={1:e}{2}", stringifyRopePairing(*rope),
                          k.getRopeBase().convertToDouble(), k.getRopeKeys() ? "" : " keys-rotated")
                .str();
  if (k.getSegmented()) // a packed batch in one call: other inputs, another kernel
    text += " segmented";
  if (k.getHalfKeyValues()) // K and V read from a float16 cache
    text += " kv=f16";
  return text;
}

std::string mlir::xf::kernelText(Attribute kernel) {
  std::string text;
  llvm::raw_string_ostream os(text);
  kernel.print(os);
  return text;
}

/// A packed batch's sequence lengths (xf-pack-sequences): they choose the
/// rows each call of the kernel gets, not the kernel, so @forward_packed's
/// loop kernels share @forward's signatures (and tuning entries).
static Value segmentsOf(Operation *op) {
  if (auto pos = dyn_cast<PositionalEmbedOp>(op))
    return pos.getSegments();
  if (auto sin = dyn_cast<SinusoidalEmbedOp>(op))
    return sin.getSegments();
  if (auto rope = dyn_cast<RopeOp>(op))
    return rope.getSegments();
  return {};
}

std::string mlir::xf::loopKernelSignature(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "loop " << op->getName().stripDialect() << " (";
  Value segments = segmentsOf(op);
  SmallVector<Type> types;
  for (Value operand : op->getOperands())
    if (!segments || operand != segments)
      types.push_back(operand.getType());
  llvm::interleaveComma(types, os);
  os << ")";
  // Operand segment sizes follow from the operand list printed above.
  SmallVector<NamedAttribute> attrs;
  if (auto inherent = dyn_cast_or_null<DictionaryAttr>(op->getPropertiesAsAttribute()))
    llvm::copy_if(inherent, std::back_inserter(attrs), [](NamedAttribute a) {
      return !a.getName().strref().ends_with("SegmentSizes");
    });
  if (!attrs.empty())
    os << " " << DictionaryAttr::get(op->getContext(), attrs);
  return text;
}

std::vector<KernelOpSignature> mlir::xf::kernelSignatures(func::FuncOp forward) {
  std::vector<KernelOpSignature> result;
  forward.walk([&](Operation *op) {
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      result.push_back(
          {op, kernelSignature(gemmKernelAttr(op->getContext(), gemmKernelSpecOf(gemm)))});
    } else if (auto attn = dyn_cast<AttentionOp>(op)) {
      result.push_back(
          {op, kernelSignature(attentionKernelAttr(op->getContext(), attentionKernelSpecOf(attn)))});
    } else if (isLoopKernelOp(op)) {
      result.push_back({op, loopKernelSignature(op)});
    }
  });
  return result;
}
