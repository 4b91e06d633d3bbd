//===- AssignWeightStorage.cpp - how each weight is kept ------------------===//
//
// xfc's weight options (--weight-type, --quantized-like) become one
// attribute per weight, `xf.weight_storage` on the xf.parameter that binds
// it (and on a concatenation of such parameters), decided here once from
// @forward's uses: every later stage — the tuning database's keys, the
// default schedules, the kernel descriptions, the host lowering and the
// manifest — reads the attribute (weightStorageOf, XfOps.h), so
// `xfc --emit=kernels` shows what each kernel reads. With --bf16-gemm-inputs
// the GEMMs on bf16 weights are marked `xf.bf16_inputs` here too. The rules
// (bf16ParameterNames, blockParameterTypes) are the kernels' own: a GEMM
// widens bf16 or dequantizes [N, K] block rows as it loads its weight, the
// embedding gathers do the same for a table's rows; the dialect's verifier
// checks each marked op against them (XfDialect.cpp).
//
//===----------------------------------------------------------------------===//

#include "xf/IR/XfOps.h"
#include "xf/Transforms/Passes.h"

#include "llvm/ADT/StringSet.h"

namespace mlir::xf {
#define GEN_PASS_DEF_ASSIGNWEIGHTSTORAGE
#include "xf/Transforms/Passes.h.inc"
} // namespace mlir::xf

using namespace mlir;
using namespace mlir::xf;

namespace {

int64_t colsOf(Value v) { return cast<RankedTensorType>(v.getType()).getDimSize(1); }

/// A concatenation is stored as its parts only when every part may be: the
/// parts of one with a part that may not are not `eligible` either (to a
/// fixed point: a parameter may be a part of several).
void excludePartialConcatenations(func::FuncOp forward, llvm::StringMap<bool> &eligible) {
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
        if (auto param = part.getDefiningOp<ParameterOp>();
            param && eligible.lookup(param.getName()))
          eligible[param.getName()] = false, changed = true;
    });
  }
}

/// Whether `use` reads its value as a GEMM's weight.
bool gemmWeight(OpOperand &use) {
  return isa<GemmOp>(use.getOwner()) && use.getOperandNumber() == 1;
}

/// Names of the parameters that may be stored in bfloat16: every use of
/// every op binding the name reads it as a GEMM weight or an embedding table
/// (both widen exactly on load), or is a part of a row-wise concatenation
/// read only as GEMM weights (a fused QKV or gate/up projection) whose every
/// part may be bf16 — the concatenation is then bf16 too, its parts' rows
/// copied back to back as they are.
llvm::StringSet<> bf16ParameterNames(func::FuncOp forward) {
  llvm::StringMap<bool> eligible;
  forward.walk([&](ParameterOp param) {
    bool ok = param.getType().getRank() == 2;
    for (OpOperand &use : param->getUses()) {
      Operation *user = use.getOwner();
      if (auto concat = dyn_cast<ConcatOp>(user)) {
        // (rows of an even length: the host copies them as pairs of bf16)
        ok &= concat.getAxis() == 0 && colsOf(param) % 2 == 0 &&
              llvm::all_of(concat->getUses(), gemmWeight);
        continue;
      }
      ok &= gemmWeight(use) || (isa<TokenEmbedOp>(user) && use.getOperandNumber() == 0);
    }
    auto [it, inserted] = eligible.try_emplace(param.getName(), ok);
    if (!inserted)
      it->second &= ok;
  });
  excludePartialConcatenations(forward, eligible);
  llvm::StringSet<> names;
  for (auto &entry : eligible)
    if (entry.second)
      names.insert(entry.first());
  return names;
}

/// The parameters of `requested` that can stay in ggml blocks: matrices whose
/// every use is the [N, K] weight of a GEMM (transpose_weight) with K a
/// multiple of 32, an embedding table, or a row-wise part of a concatenation
/// that only feeds such GEMMs and whose parts all have the same block type.
llvm::StringMap<WeightStorage>
blockParameterTypes(func::FuncOp forward, const llvm::StringMap<WeightStorage> &requested) {
  auto typeOf = [&](Value v) {
    auto param = v.getDefiningOp<ParameterOp>();
    auto it = param ? requested.find(param.getName()) : requested.end();
    return it == requested.end() ? WeightStorage::f32 : it->second;
  };
  // A [N, K] GEMM weight whose rows are whole blocks.
  auto blockGemmWeight = [](OpOperand &use) {
    auto gemm = dyn_cast<GemmOp>(use.getOwner());
    return gemm && use.getOperandNumber() == 1 && gemm.getTransposeWeight() &&
           colsOf(gemm.getInput()) % 32 == 0;
  };
  llvm::StringMap<bool> eligible;
  forward.walk([&](ParameterOp param) {
    WeightStorage type = typeOf(param);
    bool ok = isBlockStorage(type) && param.getType().getRank() == 2;
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
  excludePartialConcatenations(forward, eligible);
  llvm::StringMap<WeightStorage> result;
  for (auto &entry : eligible)
    if (entry.second)
      result[entry.first()] = requested.lookup(entry.first());
  return result;
}

struct AssignWeightStoragePass : xf::impl::AssignWeightStorageBase<AssignWeightStoragePass> {
  using AssignWeightStorageBase::AssignWeightStorageBase;

  /// The options as parameter name → storage; an error names a bad option.
  FailureOr<llvm::StringMap<WeightStorage>> requestedBlocks() {
    ModuleOp module = getOperation();
    if (weightType != "f32" && weightType != "bf16") {
      module.emitError() << "xf-assign-weight-storage: weight-type '" << weightType
                         << "': expected f32 or bf16";
      return failure();
    }
    if (bf16GemmInputs && weightType != "bf16") {
      module.emitError() << "xf-assign-weight-storage: bf16-gemm-inputs needs weight-type=bf16 "
                            "(xfc --bf16-gemm-inputs needs --weight-type=bf16)";
      return failure();
    }
    if (weightType == "bf16" && !blockParameters.empty()) {
      module.emitError() << "xf-assign-weight-storage: weight-type=bf16 and block-parameters "
                            "are exclusive (xfc --weight-type=bf16 and --quantized-like)";
      return failure();
    }
    llvm::StringMap<WeightStorage> requested;
    for (llvm::StringRef entry : blockParameters) {
      auto [name, type] = entry.rsplit('=');
      std::optional<WeightStorage> blocks = symbolizeWeightStorage(type);
      if (name.empty() || !blocks || !isBlockStorage(*blocks)) {
        module.emitError() << "xf-assign-weight-storage: block-parameters entry '" << entry
                           << "': expected NAME=q8_0, q4_0 or q4_1";
        return failure();
      }
      requested[name] = *blocks;
    }
    return requested;
  }

  void runOnOperation() override {
    FailureOr<llvm::StringMap<WeightStorage>> requested = requestedBlocks();
    if (failed(requested))
      return signalPassFailure();
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward)
      return; // nothing to store: the manifest describes @forward's parameters
    // Decided on @forward; @forward_packed (xf-pack-sequences) is a copy of it
    // that the host lowering gives @forward's buffers, so it reads the same.
    llvm::StringMap<WeightStorage> storage;
    if (weightType == "bf16")
      for (auto &name : bf16ParameterNames(forward))
        storage[name.getKey()] = WeightStorage::bf16;
    for (auto &entry : blockParameterTypes(forward, *requested))
      storage[entry.getKey()] = entry.getValue();
    if (storage.empty())
      return;
    MLIRContext *ctx = &getContext();
    auto mark = [&](Operation *op, WeightStorage s) {
      if (!op->hasAttr(XfDialect::kWeightStorageAttrName))
        op->setAttr(XfDialect::kWeightStorageAttrName, WeightStorageAttr::get(ctx, s));
    };
    for (llvm::StringRef name : {"forward", "forward_packed"}) {
      auto func = module.lookupSymbol<func::FuncOp>(name);
      if (!func)
        continue;
      func.walk([&](ParameterOp param) {
        auto it = storage.find(param.getName());
        if (it != storage.end())
          mark(param, it->second);
      });
      // A concatenation of block or bf16 parameters is itself a weight stored
      // so (blockParameterTypes and bf16ParameterNames keep all of its parts
      // or none).
      func.walk([&](ConcatOp concat) {
        auto param = concat.getInputs().empty()
                         ? ParameterOp()
                         : concat.getInputs().front().getDefiningOp<ParameterOp>();
        auto it = param ? storage.find(param.getName()) : storage.end();
        if (it != storage.end() && it->second != WeightStorage::f32)
          mark(concat, it->second);
      });
      // The GEMMs' input precision, decided with the weights they read.
      if (bf16GemmInputs)
        func.walk([&](GemmOp gemm) {
          if (weightStorageOf(gemm.getWeight()) == WeightStorage::bf16)
            gemm->setAttr(XfDialect::kBf16InputsAttrName, UnitAttr::get(ctx));
        });
    }
  }
};

} // namespace
