//===- PlainKernels.cpp - xf's kernels as unscheduled Halide --------------===//
//
// The GEMM is GemmPlainAlgorithm.cpp's (shared with the Anderson2021 baseline); the attention
// is written here.
//
//===----------------------------------------------------------------------===//

#include "PlainKernels.h"

#include <cmath>
#include <optional>

using namespace Halide;
using namespace mlir::xf;

namespace xftune {
namespace {

KernelPipeline plainAttention(const AttentionKernelSpec &spec, const Case &size) {
  const int H = int(spec.heads), dK = int(spec.dK), dV = int(spec.dV);
  const int Hkv = int(spec.keyValueHeads()), group = H / Hkv;
  const int M = int(size.rows), Mz = int(size.keys);
  ImageParam q(Float(32), 2, "q"), k(Float(32), 3, "k"), v(Float(32), 3, "v"); // k, v: (c, s, g)
  Var s("s"), t("t"), h("h"), d("d"), c("c");

  RDom rc(0, dK, "rc");
  Func score("score");
  score(s, t, h) = 0.f;
  score(s, t, h) += q(h * dK + rc, t) * k(rc, s, h / group);
  // The mask is arithmetic, with no call inside a select: Halide narrows the
  // bounds of a call under a select condition, and the causal condition would
  // give the score a per-query extent that the autoschedulers may then try to
  // unroll (Adams2019 does, and fails to compile).
  Expr isVisible = 1.f;
  if (spec.causal)
    isVisible = select(s <= t + (Mz - M), 1.f, 0.f);
  constexpr float noScore = -1e30f; // finite: masked minus max is never NaN
  Func masked("masked_score");
  masked(s, t, h) = score(s, t, h) * float(spec.scale) + (1.f - isVisible) * noScore;
  RDom rs(0, Mz, "rs");
  Func rowMax("row_max");
  rowMax(t, h) = noScore;
  rowMax(t, h) = max(rowMax(t, h), masked(rs, t, h));
  // × visibility: a query with no visible key has masked == max everywhere.
  Func probs("probs");
  probs(s, t, h) = exp(masked(s, t, h) - rowMax(t, h)) * isVisible;
  Func rowSum("row_sum");
  rowSum(t, h) = 0.f;
  rowSum(t, h) += probs(rs, t, h);
  Func weighted("weighted_values");
  weighted(d, t, h) = 0.f;
  weighted(d, t, h) += probs(rs, t, h) * v(d, rs, h / group);
  Func out("attention_out");
  Expr head = c / dV;
  out(c, t) = select(rowSum(t, head) > 0, weighted(c % dV, t, head) / rowSum(t, head), 0.f);

  q.dim(0).set_bounds(0, H * dK).dim(1).set_bounds(0, M);
  k.dim(0).set_bounds(0, dK).dim(1).set_bounds(0, Mz).dim(2).set_bounds(0, Hkv);
  v.dim(0).set_bounds(0, dV).dim(1).set_bounds(0, Mz).dim(2).set_bounds(0, Hkv);
  q.set_estimates({{0, H * dK}, {0, M}});
  k.set_estimates({{0, dK}, {0, Mz}, {0, Hkv}});
  v.set_estimates({{0, dV}, {0, Mz}, {0, Hkv}});
  out.output_buffer().dim(0).set_bounds(0, H * dV).dim(1).set_bounds(0, M);
  out.set_estimates({{0, H * dV}, {0, M}});

  return KernelPipeline::of({q, k, v}, out);
}

} // namespace

llvm::Expected<KernelPipeline> buildPlainPipeline(const KernelDesc &kernel, const Case &size) {
  if (kernel.kind == KernelKind::Gemm)
    return buildCatchingHalideErrors("building the unscheduled kernel", [&] {
      return buildPlainGemmAlgorithm(kernel.gemm, PlainGemmRows{size.rows, /*fixed=*/true});
    });
  std::optional<KernelPipeline> built;
  if (kernel.kind == KernelKind::Attention &&
      kernel.attention.rope != AttentionKernelSpec::Rope::None)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the unscheduled attention has no rotary positions");
  if (llvm::Error err = catchHalideErrors("building the unscheduled kernel", [&] {
        built = plainAttention(kernel.attention, size);
      }))
    return std::move(err);
  return std::move(*built);
}

} // namespace xftune
