//===- GpuAttentionScheduleSpace.cpp - a CUDA attention's schedule knobs --===//
//
// The knobs of #xf.gpu_attention_schedule (GpuScheduleSpace.h), their values worth trying
// around the defaults, legal where the attribute's verifier accepts the point, and the two
// paths the CUDA attention takes by query rows.
//
//===----------------------------------------------------------------------===//

#include "xf/Codegen/KernelSchedules.h"
#include "xf/Tuning/GpuScheduleSpace.h"

#include "mlir/IR/Diagnostics.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::xf;
using namespace mlir::xf::tuning;

namespace {
// Knob order of a point: the fields of #xf.gpu_attention_schedule.
enum AttentionKnob {
  QueryBlock,
  KeyBlock,
  DecodeKeyBlock,
  DecodeBlocks,
  DecodeBlockHeads,
  NumAttentionKnobs
};

bool verifies(MLIRContext &ctx, llvm::ArrayRef<int64_t> p) {
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  auto emitError = [&] { return mlir::emitError(UnknownLoc::get(&ctx)); };
  return bool(GpuAttentionScheduleAttr::getChecked(emitError, &ctx, p[QueryBlock], p[KeyBlock],
                                                   p[DecodeKeyBlock], p[DecodeBlocks],
                                                   p[DecodeBlockHeads]));
}
} // namespace

Point mlir::xf::tuning::gpuAttentionPoint(const GpuAttentionSchedule &s) {
  Point p(NumAttentionKnobs);
  p[QueryBlock] = s.queryBlock, p[KeyBlock] = s.keyBlock, p[DecodeKeyBlock] = s.decodeKeyBlock;
  p[DecodeBlocks] = s.decodeBlocks, p[DecodeBlockHeads] = s.decodeBlockHeads;
  return p;
}

GpuAttentionSchedule mlir::xf::tuning::gpuAttentionScheduleAt(const Point &p) {
  GpuAttentionSchedule s;
  s.queryBlock = p[QueryBlock], s.keyBlock = p[KeyBlock], s.decodeKeyBlock = p[DecodeKeyBlock];
  s.decodeBlocks = p[DecodeBlocks], s.decodeBlockHeads = p[DecodeBlockHeads];
  return s;
}

std::vector<SchedulePath> mlir::xf::tuning::gpuAttentionPaths(const AttentionKernelSpec &spec,
                                                              const std::vector<int64_t> &lengths) {
  // Heads a range block computes matter only where a K/V head has several query heads.
  std::vector<size_t> decodeKnobs{DecodeKeyBlock, DecodeBlocks};
  if (spec.heads / std::max<int64_t>(spec.keyValueHeads(), 1) > 1)
    decodeKnobs.push_back(DecodeBlockHeads);
  SchedulePath decode{"decode", decodeKnobs, {}};
  SchedulePath prefill{"prefill", {QueryBlock, KeyBlock}, {}};
  return splitPathsByRows(std::move(decode), std::move(prefill), lengths, kCudaDecodeRows);
}

SearchSpace mlir::xf::tuning::gpuAttentionSpace(MLIRContext &ctx, const AttentionKernelSpec &spec,
                                                const std::vector<int64_t> &lengths) {
  const Point d = gpuAttentionPoint(spec.gpuSchedule);
  std::vector<bool> used(NumAttentionKnobs, false);
  for (const SchedulePath &path : gpuAttentionPaths(spec, lengths))
    for (size_t k : path.knobs)
      used[k] = true;
  const std::vector<std::pair<const char *, std::vector<int64_t>>> values = {
      {"query_block", {4, 8, 16, 32}},      {"key_block", {16, 32, 64, 128}},
      {"decode_key_block", {16, 32, 64}},   {"decode_blocks", {132, 264, 528, 1056}},
      {"decode_block_heads", {1, 2, 4, 8}},
  };
  SearchSpace space;
  for (size_t k = 0; k < NumAttentionKnobs; ++k) {
    std::vector<int64_t> v = values[k].second;
    if (used[k])
      v.push_back(d[k]);
    else
      v = {d[k]};
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    space.knobs.push_back(Knob{values[k].first, v});
  }
  MLIRContext *context = &ctx;
  space.legal = [context](llvm::ArrayRef<int64_t> p) { return verifies(*context, p); };
  return space;
}

std::vector<GpuAttentionSchedule>
mlir::xf::tuning::gpuAttentionCandidates(MLIRContext &ctx, const AttentionKernelSpec &spec,
                                         const std::vector<int64_t> &lengths, size_t limit,
                                         uint64_t seed) {
  std::vector<GpuAttentionSchedule> candidates;
  for (const Point &p : gpuCandidatePoints(gpuAttentionSpace(ctx, spec, lengths),
                                           gpuAttentionPoint(spec.gpuSchedule), limit, seed))
    candidates.push_back(gpuAttentionScheduleAt(p));
  return candidates;
}
