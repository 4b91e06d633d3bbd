//===- TensorCoreAttentionSource.cpp - flash attention on tensor cores as MLIR ===//
//
// out = softmax(scale · Q·Kᵀ, causal mask) · V per query head on tensor cores, as a gpu.module
// of one gpu.func `<name>_tc` (docs/gpu.md, "Tensor-core attention"). One block of 4 warps per
// (query head, 64 queries); warp w owns query rows 16w..16w+15. The block stages its Q tile
// through shared memory once (16-byte loads, rounded to tf32/bf16) and each warp keeps its Q
// fragments in registers (ldmatrix.x4). Keys run in tiles of 64: K and V rows staged in
// shared memory with 16-byte loads (rows past the last key read the last key: masked), then
//   S = Q·Kᵀ   8 mma tiles of 16 × 8 a warp (B fragments: ldmatrix.x2 of K's rows);
//   online softmax per query row in the base-2 domain (scale · log2 e folded into one multiply):
//     the row max over the thread's columns, then over the row's 4 lanes (the quad) by two
//     xor shuffles; p = 2^(s − m) by ex2.approx; the thread's partial row sums, rescaled by
//     2^(m_old − m) with the output accumulators;
//   O += P·V   P passed from the accumulators to the A fragments in registers (bf16: pairs
//     packed as they are; tf32: the keys of an 8-key step permuted so a thread's two columns
//     2t, 2t + 1 become k = t, t + 4, and V's B fragment read with the same permutation; P
//     rounded to bf16 / tf32 for the product, the row sums of the unrounded p).
// Causal: key tiles past the block's last query are not visited (the loop ends there); the
// tiles every row of the block sees whole run a loop without a mask, and only the tiles on the
// diagonal (and the last, partial tile of keys) run the masked loop: score −∞ where
// key ≥ min(position + 1, Mz), position = row + Mz − M. After the last tile the partial sums
// meet over the quad, O / l is stored two columns at a time, rows past M not stored.
//
// Q: [M, H·d] rows of stride qs; K, V: (column, key, K/V head) with key and head strides;
// out: [M, H·d]. Query head h reads K/V head h / (H / H_kv).
//
//===----------------------------------------------------------------------===//

#include "xf/Target/TensorCoreAttention.h"

#include "TensorCoreKernelText.h"

#include "llvm/Support/FormatVariadic.h"

#include <array>
#include <cmath>
#include <functional>

namespace mlir::xf {

using namespace tc;

std::string attentionFp32Name(const AttentionKernelSpec &spec) { return spec.name + "_fp32"; }

namespace {

// The plan of the kernels themselves: the tensor-core kernel's for tf32/bf16, the FMA kernel's
// for fp32 (no fallback from one to the other).
TensorCoreAttentionPlan kernelPlan(const AttentionKernelSpec &spec, GpuMatmul precision);

} // namespace

TensorCoreAttentionPlan tensorCoreAttentionPlan(const AttentionKernelSpec &spec,
                                                GpuMatmul precision) {
  TensorCoreAttentionPlan plan = kernelPlan(spec, precision);
  if (plan.mlirKernel || precision == GpuMatmul::Fp32 || spec.batchedDecode)
    return plan;
  // A tensor-core build's attention the mma.sync kernel cannot take (heads of 96, or 128 with
  // tf32) runs the fp32 FMA kernel rather than Halide's 16-query pipeline: exact products, its
  // state in registers (docs/gpu.md, "Tensor-core attention").
  TensorCoreAttentionPlan fma = kernelPlan(spec, GpuMatmul::Fp32);
  if (!fma.mlirKernel) {
    plan.why += "; nor the fp32 FMA kernel: " + fma.why;
    return plan;
  }
  fma.why += " (tensor cores: " + plan.why + ")";
  return fma;
}

GpuMatmul attentionKernelPrecision(const AttentionKernelSpec &spec, GpuMatmul precision) {
  return tensorCoreAttentionPlan(spec, precision).fma ? GpuMatmul::Fp32 : precision;
}

std::string attentionKernelEntry(const AttentionKernelSpec &spec, GpuMatmul precision) {
  return spec.name +
         (attentionKernelPrecision(spec, precision) == GpuMatmul::Fp32 ? "_fma" : "_tc");
}

namespace {

TensorCoreAttentionPlan kernelPlan(const AttentionKernelSpec &spec, GpuMatmul precision) {
  auto stay = [](std::string why) { return TensorCoreAttentionPlan{false, std::move(why)}; };
  if (spec.segmented)
    return stay("a packed batch (segmented attention)");
  // fp32 builds the batched decode step's kernels as objects of their own (Halide's); the
  // prefill kernel keeps its ABI. Tensor-core builds have no batched step.
  if (spec.batchedDecode && precision != GpuMatmul::Fp32)
    return stay("the batched decode step's entry");
  if (spec.halfKeyValues)
    return stay("float16 K/V");
  // The FMA kernel rotates Q (and K where the cache does not hold it rotated) as it stages them.
  if (spec.rope != AttentionKernelSpec::Rope::None && precision != GpuMatmul::Fp32)
    return stay("rotary positions fused into the attention");
  if (spec.dK != spec.dV)
    return stay("d_k = " + std::to_string(spec.dK) + " differs from d_v = " +
                std::to_string(spec.dV));
  if (precision == GpuMatmul::Fp32) {
    if (spec.dK % kFmaAttentionHeadStep != 0 || spec.dK > kFmaAttentionMaxHead)
      return stay("head size " + std::to_string(spec.dK) +
                  " is not 32, 64, 96 or 128 (the fp32 FMA kernel's lanes and registers)");
    return {true,
            "fp32 FMA flash attention for M >= " + std::to_string(kTcAttentionMinRows) +
                " (fewer rows: Halide's flash-decoding)",
            /*fma=*/true};
  }
  // Powers of two: ptxas (sm_90) spilled the other multiples of 16 tried (48, 80, 96, 112).
  const int64_t maxHead =
      precision == GpuMatmul::Bf16 ? kTcAttentionMaxHeadBf16 : kTcAttentionMaxHeadTf32;
  if (spec.dK < 16 || spec.dK > maxHead || (spec.dK & (spec.dK - 1)) != 0)
    return stay("head size " + std::to_string(spec.dK) + " is not 16, 32, 64" +
                (maxHead == 128 ? " or 128" : "") + " (" + gpuMatmulName(precision) + ")");
  return {true, std::string(gpuMatmulName(precision)) + " mma.sync flash attention for M >= " +
                    std::to_string(kTcAttentionMinRows) + " (fewer rows: Halide's flash-decoding)"};
}

// .maxnreg, from ptxas for sm_90 (no spills at each, every example): heads of 16 and 32 128 as
// the GEMM's (4 blocks a SM); 64 160 (3 a SM): tf32's Q fragments take twice bf16's registers
// and spilled 56 bytes at 128, bf16's fit 128 causal but BERT's (not causal) spilled 16 bytes;
// bf16 128 holds 2 × 16 × 4 floats of output and Q: 680 bytes spilled at 128, 144 at 160, none
// at 255 (2 blocks a SM).
int maxRegisters(int d) { return d == 128 ? 255 : d == 64 ? 160 : 128; }

struct Shape {
  bool bf16;
  int d;       // head size (d_k = d_v)
  int stride;  // shared rows: d + 8 bf16 or d + 4 floats, so fragment reads hit 32 banks
  int64_t group; // query heads per K/V head
  bool causal;
  const char *elem() const { return bf16 ? "bf16" : "f32"; }
  int kStep() const { return bf16 ? 16 : 8; }
  std::string tile() const {
    return llvm::formatv("memref<{0}x{1}x{2}, #gpu.address_space<workgroup>>", kTcAttentionKeys,
                         stride, elem());
  }
  const char *aFrag() const { return bf16 ? "vector<4x2xbf16>" : "vector<4x1xf32>"; }
  const char *bFrag() const { return bf16 ? "vector<2x2xbf16>" : "vector<2x1xf32>"; }
};

Shape shapeOf(const AttentionKernelSpec &spec, GpuMatmul precision) {
  bool bf16 = precision == GpuMatmul::Bf16;
  int d = int(spec.dK);
  return {bf16, d, bf16 ? d + 8 : d + 4, spec.heads / spec.keyValueHeads(), spec.causal};
}

// The indices every stage uses (g = lane / 4, t = lane % 4 as in the PTX ISA's fragment
// layouts; lrow/lhalf and l8/lpair address ldmatrix's x4 and x2 rows).
struct Lanes {
  std::string tid, g, t, lrow, lhalf, l8, lpair, wm, bm, head, kvHead, offset, mLast, mzLast;
};

Lanes laneIndices(Writer &w, const Shape &s) {
  Lanes l;
  AttentionBlock block = attentionBlock(w, s.group, s.causal, kTcAttentionQueries);
  l.tid = block.tid, l.head = block.head, l.kvHead = block.kvHead, l.bm = block.bm;
  l.offset = block.offset, l.mLast = block.mLast, l.mzLast = block.mzLast;
  std::string c32 = w.index(32), c4 = w.index(4), c8 = w.index(8), c16 = w.index(16);
  std::string warp = w.div(l.tid, c32), lane = w.rem(l.tid, c32);
  l.g = w.div(lane, c4);
  l.t = w.rem(lane, c4);
  l.lrow = w.rem(lane, c16);
  l.lhalf = w.div(lane, c16);
  l.l8 = w.rem(lane, c8);
  l.lpair = w.rem(w.div(lane, c8), w.index(2));
  l.wm = w.mul(warp, c16);
  return l;
}

// Four floats loaded as the shared tile's element type (tf32: rounded to nearest).
std::string converted(Writer &w, const Shape &s, const std::string &v) {
  return s.bf16 ? w.let("arith.truncf " + v + " : vector<4xf32> to vector<4xbf16>")
                : roundToTf32(w, v);
}

// Rows of 64 × d floats from a global buffer into a shared tile.
struct StagedRows {
  const char *source, *tile;
  // The element offset of (row of the tile, column) in `source`.
  std::function<std::string(const std::string &, const std::string &)> address;
};

// `rows` staged with 16-byte loads by the block's 128 threads, then a barrier.
void stage(Writer &w, const Shape &s, const Lanes &l, const std::vector<StagedRows> &rows) {
  const int quads = s.d / 4;
  for (int r = 0; r < kTcAttentionKeys * quads / kTcAttentionThreads; ++r) {
    std::string idx = w.addConst(l.tid, r * kTcAttentionThreads);
    std::string row = w.div(idx, w.index(quads));
    std::string col = w.mul(w.rem(idx, w.index(quads)), w.index(4));
    for (const StagedRows &staged : rows) {
      std::string v = w.let("vector.load " + std::string(staged.source) + "[" +
                            staged.address(row, col) +
                            "] {alignment = 16} : memref<?xf32>, vector<4xf32>");
      w.line("vector.store " + converted(w, s, v) + ", " + staged.tile + "[" + row + ", " + col +
             "] : " + s.tile() + ", vector<4x" + s.elem() + ">");
    }
  }
  w.line("gpu.barrier");
}

// The warp's Q fragments, one per k step of d: Q staged through %ks, then ldmatrix.x4.
std::vector<std::string> queryFragments(Writer &w, const Shape &s, const Lanes &l) {
  std::string head = w.mul(l.head, w.index(s.d));
  stage(w, s, l, {{"%q", "%ks", [&](const std::string &row, const std::string &col) {
                     std::string q = w.min(w.add(l.bm, row), l.mLast);
                     return w.add(w.add(w.mul(q, "%qs"), head), col);
                   }}});
  std::vector<std::string> frags;
  std::string row = w.add(l.wm, l.lrow);
  for (int kk = 0; kk < s.d; kk += s.kStep()) {
    std::string col = w.addConst(w.mul(l.lhalf, w.index(s.kStep() / 2)), kk);
    frags.push_back(w.let("nvgpu.ldmatrix %ks[" + row + ", " + col +
                          "] {numTiles = 4 : i32, transpose = false} : " + s.tile() + " -> " +
                          s.aFrag()));
  }
  w.line("gpu.barrier"); // %ks is the first key tile's next
  return frags;
}

std::string mma(Writer &w, const Shape &s, const std::string &a, const std::string &b,
                const std::string &c) {
  if (s.bf16)
    return bf16Mma(w, a, b, c);
  return w.let(llvm::formatv("nvgpu.mma.sync({0}, {1}, {2}) {{mmaShape = [16, 8, 8], "
                             "tf32Enabled} : ({3}, {4}, {5}) -> {5}",
                             a, b, c, s.aFrag(), s.bFrag(), kAcc)
                   .str());
}

std::string scalar(Writer &w, const std::string &v, int i) {
  return w.let("vector.extract " + v + "[" + std::to_string(i) + "] : f32 from vector<2xf32>");
}
std::string pair(Writer &w, const std::string &a, const std::string &b) {
  return w.let("vector.from_elements " + a + ", " + b + " : vector<2xf32>");
}
std::string rowOf(Writer &w, const std::string &acc, int h) {
  return w.let("vector.extract " + acc + "[" + std::to_string(h) + "] : vector<2xf32> from " +
               kAcc);
}

// `v` combined over the 4 lanes of a quad (the lanes holding one row's columns).
std::string quadReduce(Writer &w, std::string v, const char *op) {
  std::string width = w.let("arith.constant 32 : i32");
  for (int offset : {1, 2}) {
    std::string shuffled = w.fresh();
    w.line(shuffled + ":2 = gpu.shuffle xor " + v + ", " +
           w.let("arith.constant " + std::to_string(offset) + " : i32") + ", " + width + " : f32");
    v = w.let(std::string(op) + " " + v + ", " + shuffled + "#0 : f32");
  }
  return v;
}

// The running state of the warp's 16 rows: output accumulators (d / 8 mma tiles), and per
// thread row g (element 0) and g + 8 (element 1): the max and the thread's partial sum.
struct State {
  std::vector<std::string> out;
  std::string max, sum;
  std::vector<std::string> all() const {
    std::vector<std::string> v = out;
    v.push_back(max);
    v.push_back(sum);
    return v;
  }
  std::string types() const {
    std::string t;
    for (size_t i = 0; i < out.size(); ++i)
      t += std::string(kAcc) + ", ";
    return t + "vector<2xf32>, vector<2xf32>";
  }
};

// S = Q·Kᵀ of one key tile, scaled to the base-2 domain and, if `masked`, masked: 8 mma
// tiles' accumulators as [tile][row h] vector<2xf32>.
std::vector<std::array<std::string, 2>> scores(Writer &w, const Shape &s, const Lanes &l,
                                               const std::vector<std::string> &q,
                                               const std::string &key0, double scaleLog2e,
                                               bool masked) {
  std::string zero = w.let("arith.constant dense<0.0> : " + std::string(kAcc));
  std::string scaled =
      w.let(llvm::formatv("arith.constant dense<{0:e9}> : vector<2xf32>", scaleLog2e).str());
  std::string limit[2];
  std::string minusInf;
  if (masked) {
    // Row h's keys end at min(position + 1, Mz); position = bm + wm + g + 8h + Mz − M.
    minusInf = w.let("arith.constant dense<0xFF800000> : vector<2xf32>");
    for (int h = 0; h < 2; ++h) {
      std::string row = w.addConst(w.add(w.add(l.bm, l.wm), l.g), 8 * h);
      limit[h] = s.causal ? w.min(w.addConst(w.add(row, l.offset), 1), "%mz") : "%mz";
    }
  }
  std::vector<std::array<std::string, 2>> rows;
  std::string twoT = w.mul(l.t, w.index(2));
  for (int j = 0; j < kTcAttentionKeys / 8; ++j) {
    std::string acc = zero;
    std::string keyRow = w.addConst(l.l8, 8 * j);
    for (int kk = 0; kk < s.d; kk += s.kStep()) {
      std::string col = w.addConst(w.mul(l.lpair, w.index(s.kStep() / 2)), kk);
      std::string b = w.let("nvgpu.ldmatrix %ks[" + keyRow + ", " + col +
                            "] {numTiles = 2 : i32, transpose = false} : " + s.tile() + " -> " +
                            s.bFrag());
      acc = mma(w, s, q[kk / s.kStep()], b, acc);
    }
    std::array<std::string, 2> tile;
    for (int h = 0; h < 2; ++h) {
      tile[h] = w.f("arith.mulf", rowOf(w, acc, h), scaled);
      if (!masked)
        continue;
      std::string key = w.add(key0, w.addConst(twoT, 8 * j));
      std::string bits[2];
      for (int e = 0; e < 2; ++e)
        bits[e] = w.let("arith.cmpi ult, " + w.addConst(key, e) + ", " + limit[h] + " : index");
      std::string visible =
          w.let("vector.from_elements " + bits[0] + ", " + bits[1] + " : vector<2xi1>");
      tile[h] = w.let("arith.select " + visible + ", " + tile[h] + ", " + minusInf +
                      " : vector<2xi1>, vector<2xf32>");
    }
    rows.push_back(tile);
  }
  return rows;
}

// O += P·V for one key tile, P the probabilities as `scores` left them.
void accumulate(Writer &w, const Shape &s, const Lanes &l,
                const std::vector<std::array<std::string, 2>> &p, std::vector<std::string> &out) {
  if (s.bf16) {
    for (int ks = 0; ks < kTcAttentionKeys / 16; ++ks) {
      // A's registers: rows g, g + 8 of keys 2t.. (tile 2ks), then of keys 2t + 8.. (2ks + 1).
      std::vector<std::string> a;
      for (int half = 0; half < 2; ++half)
        for (int h = 0; h < 2; ++h) {
          std::string b16 = w.let("arith.truncf " + p[2 * ks + half][h] +
                                  " : vector<2xf32> to vector<2xbf16>");
          std::string word = w.let("vector.bitcast " + b16 + " : vector<2xbf16> to vector<1xi32>");
          a.push_back(w.let("vector.extract " + word + "[0] : i32 from vector<1xi32>"));
        }
      std::string row = w.addConst(l.lrow, 16 * ks);
      for (size_t dt = 0; dt < out.size(); ++dt) {
        std::string b = w.let("nvgpu.ldmatrix %vs[" + row + ", " + w.index(8 * dt) +
                              "] {numTiles = 2 : i32, transpose = true} : " + s.tile() + " -> " +
                              s.bFrag());
        out[dt] = bf16MmaRegisters(w, a, bf16Registers(w, b, 2, s.bFrag()), out[dt]);
      }
    }
    return;
  }
  // tf32 m16n8k8: a thread holds P[g][2t], P[g][2t+1] (and row g + 8) of an 8-key step; as
  // A[g][t], A[g][t + 4] they stand for keys 2t and 2t + 1, and B's rows t, t + 4 read those.
  std::string twoT = w.mul(l.t, w.index(2));
  for (int j = 0; j < kTcAttentionKeys / 8; ++j) {
    std::string p0[2] = {scalar(w, p[j][0], 0), scalar(w, p[j][0], 1)};
    std::string p1[2] = {scalar(w, p[j][1], 0), scalar(w, p[j][1], 1)};
    // Rounded to tf32 as Q, K and V are (the tensor cores would truncate: a bias of P's sum).
    std::string a = w.let("vector.from_elements " + p0[0] + ", " + p1[0] + ", " + p0[1] + ", " +
                          p1[1] + " : vector<4xf32>");
    std::string rounded = roundToTf32(w, a), elements;
    for (int e = 0; e < 4; ++e)
      elements += (e ? ", " : "") + w.let("vector.extract " + rounded + "[" + std::to_string(e) +
                                          "] : f32 from vector<4xf32>");
    a = w.let("vector.from_elements " + elements + " : vector<4x1xf32>");
    std::string key = w.addConst(twoT, 8 * j);
    std::string key1 = w.addConst(key, 1);
    for (size_t dt = 0; dt < out.size(); ++dt) {
      std::string col = w.addConst(l.g, 8 * dt);
      std::string b0 = w.let("memref.load %vs[" + key + ", " + col + "] : " + s.tile());
      std::string b1 = w.let("memref.load %vs[" + key1 + ", " + col + "] : " + s.tile());
      std::string b = w.let("vector.from_elements " + b0 + ", " + b1 + " : vector<2x1xf32>");
      out[dt] = mma(w, s, a, b, out[dt]);
    }
  }
}

// One key tile (index `tile`) of the online softmax: stage K and V, S, the state's update.
State keyTile(Writer &w, const Shape &s, const Lanes &l, const std::vector<std::string> &q,
              const std::string &tile, double scaleLog2e, bool masked, State st) {
  std::string key0 = w.mul(tile, w.index(kTcAttentionKeys));
  auto rowAddress = [&](const char *headStride, const char *keyStride) {
    return [&w, &l, &key0, headStride, keyStride](const std::string &row, const std::string &col) {
      std::string key = w.min(w.add(key0, row), l.mzLast);
      return w.add(w.add(w.mul(l.kvHead, headStride), w.mul(key, keyStride)), col);
    };
  };
  stage(w, s, l,
        {{"%k", "%ks", rowAddress("%khs", "%kks")}, {"%v", "%vs", rowAddress("%vhs", "%vks")}});
  std::vector<std::array<std::string, 2>> p = scores(w, s, l, q, key0, scaleLog2e, masked);

  // Row maxima: the thread's columns, then the quad's.
  std::string top[2];
  for (int h = 0; h < 2; ++h) {
    std::string m = p[0][h];
    for (size_t j = 1; j < p.size(); ++j)
      m = w.f("arith.maximumf", m, p[j][h]);
    std::string both = w.let("arith.maximumf " + scalar(w, m, 0) + ", " + scalar(w, m, 1) + " : f32");
    top[h] = quadReduce(w, both, "arith.maximumf");
  }
  std::string newMax = w.f("arith.maximumf", st.max, pair(w, top[0], top[1]));
  std::string correction = exp2(w, w.f("arith.subf", st.max, newMax));
  std::string sums[2];
  for (int h = 0; h < 2; ++h) {
    std::string m = scalar(w, newMax, h);
    std::string mm = pair(w, m, m);
    std::string sum;
    for (auto &tileRows : p) {
      tileRows[h] = exp2(w, w.f("arith.subf", tileRows[h], mm));
      sum = sum.empty() ? tileRows[h] : w.f("arith.addf", sum, tileRows[h]);
    }
    sums[h] = w.let("arith.addf " + scalar(w, sum, 0) + ", " + scalar(w, sum, 1) + " : f32");
  }
  State next;
  next.max = newMax;
  next.sum = w.f("arith.addf", w.f("arith.mulf", st.sum, correction), pair(w, sums[0], sums[1]));
  std::string c0 = scalar(w, correction, 0), c1 = scalar(w, correction, 1);
  std::string rescale = w.let("vector.from_elements " + c0 + ", " + c0 + ", " + c1 + ", " + c1 +
                              " : " + kAcc);
  for (const std::string &o : st.out)
    next.out.push_back(w.let("arith.mulf " + o + ", " + rescale + " : " + kAcc));
  accumulate(w, s, l, p, next.out);
  w.line("gpu.barrier"); // the next tile's staging overwrites %ks and %vs
  return next;
}

// scf.for over key tiles [from, to), carrying the state.
State tileLoop(Writer &w, const Shape &s, const Lanes &l, const std::vector<std::string> &q,
               const std::string &from, const std::string &to, double scaleLog2e, bool masked,
               const State &st) {
  std::string loop = w.fresh(), iv = masked ? "%maskedTile" : "%tile";
  std::vector<std::string> in = st.all();
  std::string iterArgs;
  State inner;
  for (size_t i = 0; i < in.size(); ++i) {
    std::string arg = llvm::formatv("%{0}{1}", masked ? "ms" : "s", i).str();
    iterArgs += (i ? ", " : "") + arg + " = " + in[i];
    if (i < st.out.size())
      inner.out.push_back(arg);
    else if (i == st.out.size())
      inner.max = arg;
    else
      inner.sum = arg;
  }
  w.line(loop + ":" + std::to_string(in.size()) + " = scf.for " + iv + " = " + from + " to " +
         to + " step " + w.index(1) + " iter_args(" + iterArgs + ") -> (" + st.types() + ") {");
  State next = keyTile(w, s, l, q, iv, scaleLog2e, masked, inner);
  std::string yield;
  for (const std::string &v : next.all())
    yield += (yield.empty() ? "" : ", ") + v;
  w.line("scf.yield " + yield + " : " + st.types());
  w.line("}");
  State out;
  for (size_t i = 0; i < in.size(); ++i) {
    std::string r = loop + "#" + std::to_string(i);
    if (i < st.out.size())
      out.out.push_back(r);
    else if (i == st.out.size())
      out.max = r;
    else
      out.sum = r;
  }
  return out;
}

// out = O / l, rows g and g + 8 of the warp's 16, two columns per thread and mma tile.
void storeOutput(Writer &w, const Shape &s, const Lanes &l, const State &st) {
  std::string head = w.mul(l.head, w.index(s.d));
  std::string twoT = w.mul(l.t, w.index(2));
  for (int h = 0; h < 2; ++h) {
    std::string total = quadReduce(w, scalar(w, st.sum, h), "arith.addf");
    std::string one = w.let("arith.constant 1.0 : f32");
    std::string inverse = w.let("arith.divf " + one + ", " + total + " : f32");
    std::string invPair = pair(w, inverse, inverse);
    std::string row = w.addConst(w.add(w.add(l.bm, l.wm), l.g), 8 * h);
    std::string rowStart = w.add(w.mul(row, "%os"), head);
    std::string inside = w.let("arith.cmpi ult, " + row + ", %m : index");
    w.line("scf.if " + inside + " {");
    for (size_t dt = 0; dt < st.out.size(); ++dt) {
      std::string v = w.f("arith.mulf", rowOf(w, st.out[dt], h), invPair);
      std::string at = w.add(rowStart, w.addConst(twoT, 8 * dt));
      w.line("vector.store " + v + ", %out[" + at +
             "] {alignment = 8} : memref<?xf32>, vector<2xf32>");
    }
    w.line("}");
  }
}

std::string kernelFunction(const AttentionKernelSpec &spec, GpuMatmul precision) {
  Shape s = shapeOf(spec, precision);
  Writer w;
  Lanes l = laneIndices(w, s);
  std::vector<std::string> q = queryFragments(w, s, l);
  State st;
  std::string zero = w.let("arith.constant dense<0.0> : " + std::string(kAcc));
  for (int dt = 0; dt < s.d / 8; ++dt)
    st.out.push_back(zero);
  // The max starts finite: a row whose first tiles are all masked gets 2^(−∞ − m) = 0.
  st.max = w.vec2(-1e30);
  st.sum = w.vec2(0);
  auto [unmasked, end] =
      attentionTileBounds(w, s.causal, l.bm, l.offset, l.mLast, kTcAttentionQueries);
  const double scaleLog2e = spec.scale * M_LOG2E;
  st = tileLoop(w, s, l, q, w.index(0), unmasked, scaleLog2e, /*masked=*/false, st);
  st = tileLoop(w, s, l, q, unmasked, end, scaleLog2e, /*masked=*/true, st);
  storeOutput(w, s, l, st);
  return llvm::formatv(
             "    gpu.func @{0}(%q: memref<?xf32>, %k: memref<?xf32>, %v: memref<?xf32>, "
             "%out: memref<?xf32>, %m: index, %mz: index, %qs: index, %kks: index, %khs: index, "
             "%vks: index, %vhs: index, %os: index)\n"
             "        workgroup({1}, {5}) kernel attributes {{known_block_size = "
             "array<i32: {2}, 1, 1>, nvvm.maxnreg = {3} : i32} {{\n{4}      gpu.return\n    }\n",
             attentionKernelEntry(spec, precision), sharedTile("%ks", s.tile()),
             kTcAttentionThreads, maxRegisters(s.d), w.text, sharedTile("%vs", s.tile()))
      .str();
}

} // namespace

std::vector<AttentionBlockShape> attentionBlockShapes(const AttentionKernelSpec &spec,
                                                      GpuMatmul precision) {
  if (attentionKernelPrecision(spec, precision) == GpuMatmul::Fp32)
    return fmaAttentionBlockShapes(spec);
  return {{kTcAttentionQueries, 0, attentionKernelEntry(spec, precision)}};
}

std::string dynamicSharedText(const std::vector<AttentionBlockShape> &shapes) {
  std::string text;
  for (const AttentionBlockShape &shape : shapes)
    if (shape.dynamicShared)
      text += (text.empty() ? ", dynamic shared memory: " : ", ") + shape.entry + " " +
              std::to_string(shape.dynamicShared) + " bytes";
  return text;
}

std::string tensorCoreAttentionSource(const AttentionKernelSpec &spec, GpuMatmul precision) {
  if (attentionKernelPrecision(spec, precision) == GpuMatmul::Fp32)
    return fmaAttentionSource(spec);
  return attentionModule(spec, precision, std::string(gpuMatmulName(precision)) + " mma.sync", "",
                         kernelFunction(spec, precision));
}

llvm::Expected<std::string> tensorCoreAttentionNvvm(const AttentionKernelSpec &spec,
                                                    GpuMatmul precision, int capability) {
  if (!tensorCoreAttentionPlan(spec, precision).mlirKernel)
    return llvm::createStringError("attention kernel '" + spec.name +
                                   "' does not take an MLIR kernel");
  return lowerTensorCoreKernel(tensorCoreAttentionSource(spec, precision), spec.name, capability,
                               /*ptx=*/false);
}

llvm::Expected<std::string> tensorCoreAttentionPtx(const AttentionKernelSpec &spec,
                                                   GpuMatmul precision, int capability) {
  if (!tensorCoreAttentionPlan(spec, precision).mlirKernel)
    return llvm::createStringError("attention kernel '" + spec.name +
                                   "' does not take an MLIR kernel");
  return lowerTensorCoreKernel(tensorCoreAttentionSource(spec, precision), spec.name, capability,
                               /*ptx=*/true);
}

} // namespace mlir::xf
