//===- AttentionAlgorithm.cpp - attention's algorithm, once, for every path ===//
//
// The flash attention of every attention pipeline (AttentionAlgorithm.h):
// the scores are never materialised beyond one tile of a key block. Per query
// row, the key blocks stream by and a running (output, max, sum) state is
// merged block by block (online softmax):
//   per key block b:  m_b = max_s score,  p_s = exp(score_s - m_b),
//                     l_b = Σ p_s,  o_b = Σ p_s · v_s
//   merge:            m' = max(m, m_b),  o' = o·e^(m-m') + o_b·e^(m_b-m'),
//                     l' = l·e^(m-m') + l_b·e^(m_b-m')
//   out = o / l.
// Every exponent is <= 0, so nothing overflows; masked keys get probability
// exactly 0.
//
//===----------------------------------------------------------------------===//

#include "AttentionAlgorithm.h"

#include "BlockWeights.h"

#include <cmath>

using namespace Halide;

namespace mlir::xf {

llvm::Error attentionError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

namespace {

llvm::Error validateAttention(const AttentionKernelSpec &spec) {
  if (spec.name.empty())
    return attentionError("attention kernel: empty function name");
  if (spec.heads <= 0 || spec.dK <= 0 || spec.dV <= 0)
    return attentionError("attention kernel '" + spec.name +
                          "': heads, dK and dV must be positive");
  if (spec.kvHeads < 0 || spec.heads % spec.keyValueHeads() != 0)
    return attentionError("attention kernel '" + spec.name + "': kvHeads must divide heads");
  const AttentionSchedule &s = spec.schedule;
  if (s.queryBlock <= 0 || s.keyBlock <= 0 || s.rowTile <= 0 || s.decodeKeyTile <= 0)
    return attentionError("attention kernel '" + spec.name +
                          "': queryBlock, keyBlock, rowTile and decodeKeyTile must be positive");
  if (!(spec.scale > 0) && !(spec.scale < 0))
    return attentionError("attention kernel '" + spec.name + "': scale must be a nonzero number");
  if (spec.rope != AttentionKernelSpec::Rope::None && (spec.dK % 2 != 0 || !(spec.ropeBase > 1.0)))
    return attentionError("attention kernel '" + spec.name +
                          "': rotary positions need an even dK and a base greater than 1");
  return llvm::Error::success();
}

/// (prefix..., row..., suffix...) as one argument list.
std::vector<Expr> argsOf(std::vector<Expr> prefix, const std::vector<Var> &row,
                         std::vector<Expr> suffix) {
  prefix.insert(prefix.end(), row.begin(), row.end());
  prefix.insert(prefix.end(), suffix.begin(), suffix.end());
  return prefix;
}

} // namespace

llvm::Expected<AttentionShape> attentionShapeOf(const AttentionKernelSpec &spec,
                                                const Target &target) {
  if (llvm::Error err = validateAttention(spec))
    return std::move(err);
  const int vw = target.natural_vector_size<float>();
  const int H = int(spec.heads), Hkv = int(spec.keyValueHeads());
  const int dK = int(spec.dK), dV = int(spec.dV), registers = int(vectorShapeOf(target).registers);
  return AttentionShape{vw, H, Hkv, H / Hkv, dK, dV, float(spec.scale), registers};
}

OnlineSoftmax defineOnlineSoftmax(const OnlineSoftmaxOperands &o) {
  OnlineSoftmax f{
      kernelFunc("score_dot"),     kernelFunc("scores"),      kernelFunc("masked_scores"),
      kernelFunc("block_max"),     kernelFunc("block_probs"), kernelFunc("block_sum"),
      kernelFunc("block_out_dot"), kernelFunc("block_out"),   kernelFunc("softmax_state")};
  const std::vector<Var> &row = o.row;
  Expr j = o.j, d = o.d, b = o.b, rj = o.rj, rb = o.rb;
  auto tile = [&](Expr key, Expr block) { return argsOf({key}, row, {block}); }; // (j, row, b)
  auto perRow = [&](Expr block) { return argsOf({}, row, {block}); };            // (row, b)

  f.scoreDot(tile(j, b)) = 0.f;
  f.scoreDot(tile(j, b)) += o.scoreTerm(j, b);
  f.scores(tile(j, b)) = f.scoreDot(tile(j, b));
  f.maskedScores(tile(j, b)) = select(o.visible(j, b), f.scores(tile(j, b)) * o.scale, kNoScore);

  f.blockMax(perRow(b)) = kNoScore;
  f.blockMax(perRow(b)) = max(f.blockMax(perRow(b)), f.maskedScores(tile(rj, b)));
  // exp(score - block max), exactly 0 where masked
  f.probs(tile(j, b)) =
      select(o.visible(j, b), exp(f.maskedScores(tile(j, b)) - f.blockMax(perRow(b))), 0.f);
  f.blockSum(perRow(b)) = 0.f;
  f.blockSum(perRow(b)) += f.probs(tile(rj, b));
  // Σ_s p_s · v_s over the block, unnormalised
  f.blockOutDot(tile(d, b)) = 0.f;
  f.blockOutDot(tile(d, b)) += f.probs(tile(rj, b)) * o.value(rj, b);
  f.blockOut(tile(d, b)) = f.blockOutDot(tile(d, b));

  std::vector<Expr> at = argsOf({d}, row, {});
  f.state(at) = Tuple(0.f, kNoScore, 0.f);
  Expr oldOut = f.state(at)[0], oldMax = f.state(at)[1], oldSum = f.state(at)[2];
  Expr blockM = f.blockMax(perRow(rb)), newMax = max(oldMax, blockM);
  // One of e^(m - m') and e^(m_b - m') is e^0 = 1: one exp per update, not
  // two (the same values). The update runs per vector of d, so this exp is
  // as frequent as the block's probabilities' own.
  Expr oldIsMax = oldMax >= blockM, other = exp(min(oldMax, blockM) - newMax);
  Expr keepOld = select(oldIsMax, 1.f, other), keepBlock = select(oldIsMax, other, 1.f);
  f.state(at) = Tuple(oldOut * keepOld + f.blockOut(tile(d, rb)) * keepBlock, newMax,
                      oldSum * keepOld + f.blockSum(perRow(rb)) * keepBlock);
  return f;
}

RotaryPositions rotaryPositionsOf(const AttentionKernelSpec &spec, bool byParts) {
  RotaryPositions r{kernelFunc("rotary_table"),
                    kernelFunc("rotary_frequency"),
                    kernelFunc("rotary_coarse"),
                    kernelFunc("rotary_fine"),
                    spec.rope,
                    int(spec.dK)};
  if (spec.rope == AttentionKernelSpec::Rope::None)
    return r;
  Var pair("pair"), position("position"), step("step");
  r.frequency(pair) =
      exp(cast<double>(pair) *
          Internal::make_const(Float(64), -2.0 * std::log(spec.ropeBase) / double(spec.dK)));
  if (!byParts) {
    Expr angle = cast<double>(position) * r.frequency(pair);
    r.table(pair, position) = Tuple(cast<float>(cos(angle)), cast<float>(sin(angle)));
    return r;
  }
  // position = 16·high + low (floor division: any sign); cos(a + b) and sin(a + b) of the two
  // angles in float64 are within a few float64 ulps of the direct ones, far below the float32
  // rounding of the table. The fine part is the same on every call: a constant of the kernel.
  constexpr int fine = RotaryPositions::kFinePositions;
  const int pairs = int(spec.dK) / 2;
  const double exponent = -2.0 * std::log(spec.ropeBase) / double(spec.dK);
  Buffer<double> turns(2, fine, pairs); // [cos, sin][low][pair]
  for (int i = 0; i < pairs; ++i)
    for (int j = 0; j < fine; ++j) {
      const double angle = double(j) * std::exp(double(i) * exponent);
      turns(0, j, i) = std::cos(angle), turns(1, j, i) = std::sin(angle);
    }
  Expr coarseAngle = cast<double>(step * fine) * r.frequency(pair);
  r.coarse(pair, step) = Tuple(cos(coarseAngle), sin(coarseAngle));
  r.fine(pair, step) = Tuple(turns(0, step, pair), turns(1, step, pair));
  Expr high = position / fine, low = position % fine;
  Expr cosA = r.coarse(pair, high)[0], sinA = r.coarse(pair, high)[1];
  Expr cosB = r.fine(pair, low)[0], sinB = r.fine(pair, low)[1];
  r.table(pair, position) =
      Tuple(cast<float>(cosA * cosB - sinA * sinB), cast<float>(sinA * cosB + cosA * sinB));
  return r;
}

Expr RotaryPositions::rotated(const std::function<Expr(Expr)> &load, Expr f, Expr at) const {
  Expr i, first, a, b;
  if (pairing == AttentionKernelSpec::Rope::Adjacent) {
    i = f / 2, first = f % 2 == 0;
    a = load(2 * i), b = load(2 * i + 1);
  } else {
    i = f % (dK / 2), first = f < dK / 2;
    a = load(i), b = load(i + dK / 2);
  }
  Expr cosine = table(i, at)[0], sine = table(i, at)[1];
  return select(first, a * cosine - b * sine, a * sine + b * cosine);
}

Type keyValueType(const AttentionKernelSpec &spec) {
  return spec.halfKeyValues ? Float(16) : Float(32);
}

Expr keyValueAsFloat(const AttentionKernelSpec &spec, const Target &target, Expr stored) {
  if (!spec.halfKeyValues)
    return stored;
  return floatFromHalfBits(reinterpret<uint16_t>(stored),
                           target.arch == Target::X86 && target.has_feature(Target::F16C));
}

} // namespace mlir::xf
