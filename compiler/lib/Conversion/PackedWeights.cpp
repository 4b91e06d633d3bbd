//===- PackedWeights.cpp - GEMM weights packed at load --------------------===//
//
// A GEMM marked `xf.packed_weight` (xf-pack-weights-at-load: its weight is a
// constant of the model) takes it packed for its register tiles
// (GemmKernelSpec::packedWeight): one derived buffer per weight
// and layout, after the derived weights, filled once by xf_prepare through
// the kernel's `<kernel>_pack`; the GEMM emitter reads it (packedWeightArg).
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"

#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::xf;

GemmKernelSpec HostLowering::gemmSpecOf(GemmOp gemm) {
  // The weight's storage, bf16 inputs and packing are the op's marks
  // (xf-assign-weight-storage, xf-pack-weights-at-load; verified by the dialect).
  GemmKernelSpec spec = gemmKernelSpecOf(gemm);
  spec.name = nameKernel(spec);
  return spec;
}

/// One packed buffer per weight and layout (tile width; gated tiles
/// interleave): GEMMs that read a weight the same way share it, and a GEMM of
/// @forward_packed the one of the @forward GEMM it repeats.
void HostLowering::planPackedWeights() {
  std::map<std::tuple<Operation *, unsigned, int64_t, bool>, int64_t> index;
  forward.walk([&](GemmOp gemm) {
    GemmKernelSpec spec = gemmSpecOf(gemm);
    if (!spec.packedWeight)
      return;
    Value w = gemm.getWeight();
    auto key = std::make_tuple(w.getDefiningOp(), cast<OpResult>(w).getResultNumber(),
                               spec.schedule.tileCols, spec.epilogue == GemmEpilogue::SwiGlu);
    auto [it, inserted] = index.try_emplace(key, int64_t(packedWeights.size()));
    if (inserted)
      packedWeights.push_back({w, spec});
    packedWeightOfGemm[gemm] = it->second;
  });
  // @forward_packed's GEMMs take the packed weights of the @forward GEMMs they
  // repeat. The index is copied out of the map before the insertion: an
  // insertion that grows the map frees the bucket a reference into it names
  // before it reads its argument (try_emplace(packedOp, it->second) read
  // freed memory, and a packed GEMM took whatever index it found there).
  if (!forwardOpOf)
    return;
  for (auto [packedOp, op] : *forwardOpOf) {
    auto it = packedWeightOfGemm.find(op);
    if (it == packedWeightOfGemm.end())
      continue;
    int64_t index = it->second;
    packedWeightOfGemm.try_emplace(packedOp, index);
  }
}

HalideBufferArg HostLowering::packedWeightArg(int64_t index) {
  const GemmKernelSpec &spec = packedWeights[index].spec;
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  if (emittingForward)
    derivedForwardReads.insert(int64_t(derived.size()) + index);
  Value at = LLVM::GEPOp::create(*b, loc, ptr, ptr, derivedArg,
                                 ValueRange{i64(int64_t(derived.size()) + index)});
  PackedWeightShape shape = packedWeightShape(spec);
  HalideBufferArg arg{LLVM::LoadOp::create(*b, loc, ptr, at),
                      {{i64(shape.lanes), i64(1)},
                       {i64(shape.rows), i64(shape.lanes)},
                       {i64(shape.tiles), i64(shape.rows * shape.lanes)}}};
  arg.bf16 = spec.bf16Weights;
  return arg;
}
