//===- AttentionKeyBlockSchedule.cpp - a key block of flash attention, CPU ===//
//
// The CPU schedule of the online softmax's key block (AttentionAlgorithm.h),
// shared by the per-sequence (AttentionKernel.cpp) and the packed-batch
// (SegmentedAttentionKernel.cpp) kernels.
//
//===----------------------------------------------------------------------===//

#include "AttentionAlgorithm.h"

#include <algorithm>

using namespace Halide;

namespace mlir::xf {

int valueRowTile(int rowTile, int dV, int vw, int registers) {
  const int vectorsPerRow = (dV + vw - 1) / vw;
  return std::clamp(registers / 2 / vectorsPerRow, 1, rowTile);
}

void scheduleKeyBlock(OnlineSoftmax s, RVar rb, Var row, Var j, Var d, RVar rc, RVar rj,
                      const AttentionShape &shape, int rowTile, int keyBlock) {
  const int vw = shape.vw, dV = shape.dV;
  const bool narrowValues = (dV + vw - 1) / vw <= kMaxUnrolledVectors;
  s.state.update().reorder(d, row, rb).vectorize(d, vw, TailStrategy::GuardWithIf);
  // Per key block: the score tile, its max, probabilities, sum and P·V. The
  // two products are register-blocked: query rows (rowTile for Q·Kᵀ,
  // valueRowTile for P·V) × a vector-wide block of columns accumulate in
  // registers (a Func computed per row tile).
  Var to("to");
  s.scores.compute_at(s.state, rb)
      .split(row, to, row, rowTile, TailStrategy::RoundUp)
      .reorder(j, row, to)
      .vectorize(j, vw, TailStrategy::GuardWithIf);
  s.scoreDot.compute_at(s.scores, to)
      .vectorize(j, vw, TailStrategy::GuardWithIf)
      .unroll(j)
      .unroll(row);
  s.scoreDot.update()
      .reorder(j, row, rc)
      .vectorize(j, vw, TailStrategy::GuardWithIf)
      .unroll(j)
      .unroll(row);
  s.maskedScores.compute_inline();
  // The row max and sum over a key block as vector reductions (a tree over
  // the block's vectors, then one horizontal step): as scalar loops they were
  // a chain of keyBlock dependent max (add) operations per query row, which
  // took about as long as the tile's vectorized Q·Kᵀ. Blocks wider than
  // kMaxUnrolledVectors vectors reduce one vector at a time.
  s.blockMax.compute_at(s.state, rb);
  s.probs.compute_at(s.state, rb).vectorize(j, vw, TailStrategy::GuardWithIf);
  s.blockSum.compute_at(s.state, rb);
  for (Func f : {s.blockMax, s.blockSum}) {
    if (keyBlock <= kMaxUnrolledVectors * vw) {
      f.update().atomic().vectorize(rj);
    } else if (keyBlock % vw == 0) {
      RVar rjOuter("rj_o"), rjInner("rj_i");
      f.update().atomic().split(rj, rjOuter, rjInner, vw).vectorize(rjInner);
    }
  }
  // P·V's tile may have fewer rows than Q·Kᵀ's: with 16 registers (AVX2) and dV = 64 two
  // rows are 16 accumulators, which spilled; one row each made GPT-2 small's attention 19 %
  // faster at ℓ = 128 and 18 % at ℓ = 1024 (Q·Kᵀ kept its 2 × 4 vectors; one row there is
  // 4 loads per 4 FMAs, 50 % slower at ℓ = 1024).
  s.blockOut.compute_at(s.state, rb)
      .split(row, to, row, valueRowTile(rowTile, dV, vw, shape.registers), TailStrategy::RoundUp)
      .reorder(d, row, to)
      .vectorize(d, vw, TailStrategy::GuardWithIf);
  s.blockOutDot.compute_at(s.blockOut, to).vectorize(d, vw, TailStrategy::GuardWithIf).unroll(row);
  Stage blockOutUpdate = s.blockOutDot.update()
                             .reorder(d, row, rj)
                             .vectorize(d, vw, TailStrategy::GuardWithIf)
                             .unroll(row);
  if (narrowValues) {
    s.blockOutDot.unroll(d);
    blockOutUpdate.unroll(d);
  }
}

} // namespace mlir::xf
