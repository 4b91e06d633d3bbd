//===- PlainKernels.cpp - xf's kernels as unscheduled Halide --------------===//

#include "PlainKernels.h"

#include "GemmEpilogue.h"

#include <cmath>
#include <optional>

using namespace Halide;
using namespace mlir::xf;

namespace xftune {
namespace {

KernelPipeline plainGemm(const GemmKernelSpec &spec, const Case &size) {
  const int K = int(spec.K), N = int(spec.N), M = int(size.rows);
  ImageParam x(Float(32), 2, "x"); // (k, m)
  const bool blocks = spec.weightBlocks != WeightBlocks::None;
  const int rowBytes = int(K / 32 * weightBlockBytes(spec.weightBlocks));
  ImageParam weight(blocks ? UInt(8) : spec.bf16Weights ? BFloat(16) : Float(32), 2, "weight");
  ImageParam bias(Float(32), 1, "bias");
  ImageParam residual(Float(32), 2, "residual");
  Var n("n"), m("m"), a("a"), b("b");

  Func weightF("weight_f32"); // bfloat16 is the upper half of a float32
  if (blocks) {
    // ggml blocks (HalideKernels.h): element a of row b is element j of block
    // a / 32, d·q + c from the block's float16 scale (and offset) and quant.
    const int blockBytes = int(weightBlockBytes(spec.weightBlocks));
    Expr base = (a / 32) * blockBytes, j = a % 32;
    auto half = [&](Expr at) {
      Expr bits = cast<uint16_t>(weight(at, b)) | (cast<uint16_t>(weight(at + 1, b)) << 8);
      return cast<float>(reinterpret(Float(16), bits));
    };
    Expr d = half(base);
    if (spec.weightBlocks == WeightBlocks::Q8_0) {
      weightF(a, b) = d * cast<float>(reinterpret<int8_t>(weight(base + 2 + j, b)));
    } else {
      const bool q41 = spec.weightBlocks == WeightBlocks::Q4_1;
      Expr byte = weight(base + (q41 ? 4 : 2) + j % 16, b);
      Expr nibble = cast<float>(select(j < 16, byte & 15, byte >> 4));
      weightF(a, b) = q41 ? d * nibble + half(base + 2) : d * (nibble - 8.f);
    }
  } else if (spec.bf16Weights)
    weightF(a, b) = reinterpret<float>(cast<uint32_t>(reinterpret<uint16_t>(weight(a, b))) << 16);
  else
    weightF(a, b) = weight(a, b);
  Func w("w"); // W(n, k) whatever the storage
  w(n, a) = spec.transposeWeight ? weightF(a, n) : weightF(n, a);
  Func xv("x_value");
  if (spec.bf16Activations) {
    // Round to nearest even bfloat16, kept as float32 (inputs are finite).
    Expr bits = reinterpret<uint32_t>(x(a, m));
    xv(a, m) = reinterpret<float>(((bits + (0x7fff + ((bits >> 16) & 1))) >> 16) << 16);
  } else {
    xv(a, m) = x(a, m);
  }
  RDom k(0, K, "k");
  Func product("product");
  product(n, m) = 0.f;
  product(n, m) += xv(k, m) * w(n, k);
  const bool gated = spec.epilogue == GemmEpilogue::SwiGlu;
  const int columns = gated ? 2 * N : N;
  Expr value = product(n, m);
  if (spec.hasBias)
    value += bias(n);
  value = applyGemmEpilogue(spec.epilogue, value);
  if (gated) // silu(gate) ⊙ up
    value *= spec.hasBias ? product(n + N, m) + bias(n + N) : product(n + N, m);
  if (spec.hasResidual)
    value += residual(n, m);
  Func out("gemm_out");
  out(n, m) = value;

  x.dim(0).set_bounds(0, K).dim(1).set_bounds(0, M);
  x.set_estimates({{0, K}, {0, M}});
  if (blocks) {
    weight.dim(0).set_bounds(0, rowBytes).dim(1).set_bounds(0, columns);
    weight.set_estimates({{0, rowBytes}, {0, columns}});
  } else if (spec.transposeWeight) {
    weight.dim(0).set_bounds(0, K).dim(1).set_bounds(0, columns);
    weight.set_estimates({{0, K}, {0, columns}});
  } else {
    weight.dim(0).set_bounds(0, columns).dim(1).set_bounds(0, K);
    weight.set_estimates({{0, columns}, {0, K}});
  }
  bias.dim(0).set_bounds(0, columns);
  bias.set_estimates({{0, columns}});
  residual.dim(0).set_bounds(0, N).dim(1).set_bounds(0, M);
  residual.set_estimates({{0, N}, {0, M}});
  out.output_buffer().dim(0).set_bounds(0, N).dim(1).set_bounds(0, M);
  out.set_estimates({{0, N}, {0, M}});

  return gemmKernelPipeline(spec, x, weight, bias, residual, out);
}

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
  std::optional<KernelPipeline> built;
  if (kernel.kind == KernelKind::Attention &&
      kernel.attention.rope != AttentionKernelSpec::Rope::None)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the unscheduled attention has no rotary positions");
  if (llvm::Error err = catchHalideErrors("building the unscheduled kernel", [&] {
        built = kernel.kind == KernelKind::Gemm ? plainGemm(kernel.gemm, size)
                                                : plainAttention(kernel.attention, size);
      }))
    return std::move(err);
  return std::move(*built);
}

} // namespace xftune
