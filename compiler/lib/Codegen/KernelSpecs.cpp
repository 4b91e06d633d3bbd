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

const char *epilogueName(GemmEpilogue e) {
  switch (e) {
  case GemmEpilogue::None:
    return "none";
  case GemmEpilogue::Relu:
    return "relu";
  case GemmEpilogue::GeluTanh:
    return "gelu_tanh";
  case GemmEpilogue::GeluErf:
    return "gelu_erf";
  case GemmEpilogue::Silu:
    return "silu";
  case GemmEpilogue::SwiGlu:
    return "swiglu";
  }
  return "?";
}

int64_t colsOf(Value v) { return cast<RankedTensorType>(v.getType()).getDimSize(1); }
} // namespace

llvm::StringSet<> mlir::xf::bf16ParameterNames(func::FuncOp forward) {
  llvm::StringMap<bool> eligible;
  forward.walk([&](ParameterOp param) {
    bool ok = param.getType().getRank() == 2;
    for (OpOperand &use : param->getUses()) {
      Operation *user = use.getOwner();
      ok &= (isa<GemmOp>(user) && use.getOperandNumber() == 1) ||
            (isa<TokenEmbedOp>(user) && use.getOperandNumber() == 0);
    }
    auto [it, inserted] = eligible.try_emplace(param.getName(), ok);
    if (!inserted)
      it->second &= ok;
  });
  llvm::StringSet<> names;
  for (auto &entry : eligible)
    if (entry.second)
      names.insert(entry.first());
  return names;
}

llvm::StringMap<WeightBlocks>
mlir::xf::blockParameterTypes(func::FuncOp forward,
                              const llvm::StringMap<WeightBlocks> &requested) {
  auto typeOf = [&](Value v) {
    auto param = v.getDefiningOp<ParameterOp>();
    auto it = param ? requested.find(param.getName()) : requested.end();
    return it == requested.end() ? WeightBlocks::None : it->second;
  };
  // A [N, K] GEMM weight whose rows are whole blocks.
  auto blockGemmWeight = [](OpOperand &use) {
    auto gemm = dyn_cast<GemmOp>(use.getOwner());
    return gemm && use.getOperandNumber() == 1 && gemm.getTransposeWeight() &&
           colsOf(gemm.getInput()) % 32 == 0;
  };
  llvm::StringMap<bool> eligible;
  forward.walk([&](ParameterOp param) {
    WeightBlocks type = typeOf(param);
    bool ok = type != WeightBlocks::None && param.getType().getRank() == 2;
    for (OpOperand &use : param->getUses()) {
      Operation *user = use.getOwner();
      if (auto concat = dyn_cast<ConcatOp>(user)) {
        ok &= concat.getAxis() == 0 &&
              llvm::all_of(concat.getInputs(), [&](Value part) { return typeOf(part) == type; }) &&
              llvm::all_of(concat->getUses(), blockGemmWeight);
        continue;
      }
      ok &= blockGemmWeight(use) || (isa<TokenEmbedOp>(user) && use.getOperandNumber() == 0);
    }
    auto [it, inserted] = eligible.try_emplace(param.getName(), ok);
    if (!inserted)
      it->second &= ok;
  });
  // A concatenation keeps blocks only when every part does.
  bool changed = true;
  while (changed) {
    changed = false;
    forward.walk([&](ConcatOp concat) {
      bool all = llvm::all_of(concat.getInputs(), [&](Value part) {
        auto param = part.getDefiningOp<ParameterOp>();
        return param && eligible.lookup(param.getName());
      });
      if (all)
        return;
      for (Value part : concat.getInputs())
        if (auto param = part.getDefiningOp<ParameterOp>(); param && eligible.lookup(param.getName()))
          eligible[param.getName()] = false, changed = true;
    });
  }
  llvm::StringMap<WeightBlocks> result;
  for (auto &entry : eligible)
    if (entry.second)
      result[entry.first()] = requested.lookup(entry.first());
  return result;
}

WeightBlocks mlir::xf::weightBlocksOf(Value weight,
                                      const llvm::StringMap<WeightBlocks> &blockParameters) {
  auto typeOf = [&](Value v) {
    auto param = v.getDefiningOp<ParameterOp>();
    auto it = param ? blockParameters.find(param.getName()) : blockParameters.end();
    return it == blockParameters.end() ? WeightBlocks::None : it->second;
  };
  if (auto concat = weight.getDefiningOp<ConcatOp>())
    return concat.getInputs().empty() ? WeightBlocks::None : typeOf(concat.getInputs()[0]);
  return typeOf(weight);
}

GemmKernelSpec mlir::xf::gemmKernelSpecOf(GemmOp op, bool bf16Weight, bool bf16Activations,
                                          WeightBlocks weightBlocks) {
  GemmKernelSpec spec;
  spec.weightBlocks = weightBlocks;
  spec.K = colsOf(op.getInput());
  spec.N = colsOf(op.getResult());
  spec.transposeWeight = op.getTransposeWeight();
  spec.bf16Weights = bf16Weight;
  spec.bf16Activations = bf16Weight && bf16Activations;
  spec.hasBias = bool(op.getBias());
  spec.hasResidual = bool(op.getResidual());
  spec.epilogue = epilogueOf(op.getActivation());
  if (GemmScheduleAttr schedule = op.getScheduleAttr())
    spec.schedule = gemmScheduleOf(schedule);
  if (GpuGemmScheduleAttr schedule = op.getGpuScheduleAttr())
    spec.gpuSchedule = gpuGemmScheduleOf(schedule);
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
  return spec;
}

std::string mlir::xf::kernelSignature(const GemmKernelSpec &s) {
  std::string text = llvm::formatv("gemm k={0} n={1} weight={2}:{3} x={4}", s.K, s.N,
                                   s.transposeWeight ? "nk" : "kn",
                                   s.weightBlocks != WeightBlocks::None
                                       ? weightBlocksName(s.weightBlocks)
                                       : s.bf16Weights ? "bf16" : "f32",
                                   s.bf16Activations ? "bf16" : "f32");
  if (s.hasBias)
    text += " bias";
  if (s.hasResidual)
    text += " residual";
  return text + " act=" + epilogueName(s.epilogue);
}

std::string mlir::xf::kernelSignature(const AttentionKernelSpec &s) {
  // Plain MHA keeps the signature it had before grouped-query attention, so
  // tuning databases written then still apply.
  std::string grouped =
      s.keyValueHeads() == s.heads ? std::string()
                                   : llvm::formatv(" kv_heads={0}", s.keyValueHeads()).str();
  std::string text = llvm::formatv("attention heads={0}{5} dk={1} dv={2} {3} scale={4:e}", s.heads,
                                   s.dK, s.dV, s.causal ? "causal" : "full", s.scale, grouped)
                         .str();
  // Rotary positions cost a table of sines and cosines and the rotations.
  if (s.rope != AttentionKernelSpec::Rope::None)
    text += llvm::formatv(" rope={0} base={1:e}{2}",
                          s.rope == AttentionKernelSpec::Rope::Adjacent ? "adjacent" : "halves",
                          s.ropeBase, s.ropeKeys ? "" : " keys-rotated")
                .str();
  if (s.segmented) // a packed batch in one call: other inputs, another kernel
    text += " segmented";
  if (s.halfKeyValues) // K and V read from a float16 cache
    text += " kv=f16";
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

std::vector<KernelOpSignature> mlir::xf::kernelSignatures(func::FuncOp forward,
                                                          const WeightDtypes &dtypes) {
  llvm::StringSet<> bf16Names;
  if (dtypes.bf16Weights)
    bf16Names = bf16ParameterNames(forward);
  llvm::StringMap<WeightBlocks> blockTypes = blockParameterTypes(forward, dtypes.weightBlocks);
  std::vector<KernelOpSignature> result;
  forward.walk([&](Operation *op) {
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      auto param = gemm.getWeight().getDefiningOp<ParameterOp>();
      bool bf16 = param && bf16Names.contains(param.getName());
      WeightBlocks blocks = weightBlocksOf(gemm.getWeight(), blockTypes);
      result.push_back({op, kernelSignature(gemmKernelSpecOf(
                                gemm, bf16 && blocks == WeightBlocks::None,
                                dtypes.bf16Activations, blocks))});
    } else if (auto attn = dyn_cast<AttentionOp>(op)) {
      result.push_back({op, kernelSignature(attentionKernelSpecOf(attn))});
    } else if (isLoopKernelOp(op)) {
      result.push_back({op, loopKernelSignature(op)});
    }
  });
  return result;
}
