//===- AttentionAlgorithm.h - attention's algorithm, once, for every path -*- C++ -*-===//
//
// The definitions every attention pipeline shares: the spec's validation, the
// online softmax over key blocks (flash attention) as Halide Funcs, rotary
// positions and the float16 K/V widening. The pipelines (AttentionKernel.cpp
// per sequence, SegmentedAttentionKernel.cpp per packed batch,
// AttentionKernelCuda.cpp on the GPU) say where their queries, keys and
// values come from and which keys a query sees, then schedule these Funcs.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CODEGEN_HALIDEKERNELS_ATTENTIONALGORITHM_H
#define XF_LIB_CODEGEN_HALIDEKERNELS_ATTENTIONALGORITHM_H

#include "KernelPipelines.h"

#include <functional>

namespace mlir::xf {

/// A finite stand-in for -inf: differences of two such values are 0, not NaN.
constexpr float kNoScore = -1e30f;

/// An llvm::Error carrying `message` (a spec the attention builders refuse).
llvm::Error attentionError(const llvm::Twine &message);

/// What every CPU attention builder reads of its spec, once validated: the
/// vector width in floats, the query and K/V heads, the query heads per K/V
/// head, dK, dV and the scale.
struct AttentionShape {
  int vw, H, Hkv, group, dK, dV;
  float scale;
  int registers; // vector registers of the target (VectorShape)
};
/// An error if `spec` is invalid (names, sizes, schedule, rotary positions).
llvm::Expected<AttentionShape> attentionShapeOf(const AttentionKernelSpec &spec,
                                                const Halide::Target &target);

/// The Funcs of the online softmax over key blocks. With `row...` the pure
/// variables naming one query row of one head (e.g. (t, h), or (ri, h, blk) in
/// a packed batch), j a key of a block, b a key block and d a value column:
///   scoreDot(j, row..., b) = Σ_c q·k          scores = scoreDot
///   maskedScores = scale · scores, or kNoScore where the key is not visible
///   blockMax(row..., b), probs(j, row..., b) = e^(score − blockMax) (0 masked),
///   blockSum(row..., b), blockOutDot(d, row..., b) = Σ_j probs · v, blockOut = blockOutDot
///   state(d, row...) = (output, max, sum), merged block by block over rb:
///     m' = max(m, m_b), o' = o·e^(m−m') + o_b·e^(m_b−m'), l' = l·e^(m−m') + l_b·e^(m_b−m')
///   (one of the two weights is e^0 = 1: one exp per update).
/// One copy of max and sum per output column d keeps the update pure in d.
/// The wrappers (scores, blockOut) let a schedule compute a product's tile
/// per register block (CPU) or in shared memory (CUDA).
struct OnlineSoftmax {
  Halide::Func scoreDot, scores, maskedScores, blockMax, probs, blockSum, blockOutDot, blockOut,
      state;
};

/// Where an online softmax's operands come from. The callbacks take the key
/// within its block and the key block (a Var or an RVar) and may use the row
/// variables, d and their own reduction over dK.
struct OnlineSoftmaxOperands {
  std::vector<Halide::Var> row; // a query row of one head
  Halide::Var j, d, b;
  Halide::RDom rj, rb; // the keys of a block; the key blocks (with any `where`)
  float scale;
  std::function<Halide::Expr(Halide::Expr key, Halide::Expr block)> scoreTerm; // a term of q·k
  std::function<Halide::Expr(Halide::Expr key, Halide::Expr block)> visible;
  std::function<Halide::Expr(Halide::Expr key, Halide::Expr block)> value; // v's column d
};

/// Defines the online softmax (names as in OnlineSoftmax, unscheduled).
OnlineSoftmax defineOnlineSoftmax(const OnlineSoftmaxOperands &operands);

/// Loops over a head's width are unrolled only up to this many vectors. Wider
/// heads keep the loop: unrolled, the code (and Halide's compile time and
/// recursion depth) grew with d_k and d_v — a 13377-wide head overflowed the
/// stack in Halide's simplifier, and 1024-wide heads took seconds to compile.
/// Every real model's head (64..256 floats) stays fully unrolled.
constexpr int kMaxUnrolledVectors = 16;

/// Query rows per register tile of P·V: rowTile, or fewer where rowTile rows of ⌈dV / vw⌉
/// accumulators each would take more than half the vector registers (the value vectors and
/// probabilities need the rest).
int valueRowTile(int rowTile, int dV, int vw, int registers);

/// The CPU schedule of `f`'s update over the key blocks `rb` and of a key
/// block inside it (AttentionKeyBlockSchedule.cpp): rowTile query rows ×
/// vector-wide columns accumulate in registers for Q·Kᵀ, valueRowTile's rows
/// for P·V; the block's max and sum are vector reductions. `row` is the
/// query-row variable, `j` the key, `d` the value column, `rc` and `rj` the
/// reductions over dK and the block's keys. Shared by the per-sequence and the
/// segmented kernels.
void scheduleKeyBlock(OnlineSoftmax f, Halide::RVar rb, Halide::Var row, Halide::Var j,
                      Halide::Var d, Halide::RVar rc, Halide::RVar rj, const AttentionShape &shape,
                      int rowTile, int keyBlock);

/// Rotary positions (spec.rope): the table of the f32 cosine and sine of each
/// (pair, position), θ_i = position · base^(−2i/dK), computed in f64 like the
/// rope loop kernel (positions reach thousands of radians).
struct RotaryPositions {
  Halide::Func table;
  /// θ_i's factor base^(-2i/dK) by pair (float64; inlined into the table unless scheduled).
  Halide::Func frequency;
  /// With rotaryPositionsOf(spec, /*byParts=*/true): the float64 cosine and sine of
  /// (pair, kFinePositions·step) (libm's, inlined unless scheduled) and of
  /// (pair, step < kFinePositions) (a constant buffer of the kernel), whose products make the
  /// table (undefined otherwise).
  Halide::Func coarse, fine;
  static constexpr int kFinePositions = 16;
  AttentionKernelSpec::Rope pairing;
  int dK;
  /// Element f of a head (load(x): the head's element x) rotated at position
  /// `at`: the pair (2i, 2i+1) (adjacent) or (i, i + dK/2) (halves) turns by θ_i.
  Halide::Expr rotated(const std::function<Halide::Expr(Halide::Expr)> &load, Halide::Expr f,
                       Halide::Expr at) const;
};
/// The rotary table of `spec` (named rotary_table; undefined without spec.rope). byParts: each
/// entry from the angle-sum formulas over `coarse` and `fine` in float64 (a table over P
/// positions then takes about P/16 libm cosines and sines a pair instead of P), for kernels that
/// schedule `coarse` once a call.
RotaryPositions rotaryPositionsOf(const AttentionKernelSpec &spec, bool byParts = false);

/// K and V as stored: float32, or IEEE float16 in a half KV cache (spec.halfKeyValues).
Halide::Type keyValueType(const AttentionKernelSpec &spec);
/// A stored K or V element as float32: widened in registers from float16 (one
/// vcvtph2ps per vector with F16C, integer operations without it).
Halide::Expr keyValueAsFloat(const AttentionKernelSpec &spec, const Halide::Target &target,
                             Halide::Expr stored);

} // namespace mlir::xf

#endif // XF_LIB_CODEGEN_HALIDEKERNELS_ATTENTIONALGORITHM_H
