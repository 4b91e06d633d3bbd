//===- FmaAttentionSource.cpp - fp32 flash attention on the FMA units as MLIR ===//
//
// out = softmax(scale · Q·Kᵀ, causal mask) · V per query head in float32, as a gpu.module of one
// gpu.func `<name>_fma` (docs/gpu.md, "Attention, fp32: the FMA kernel"): the CUDA build's
// prefill attention for --gpu-matmul=fp32 where it qualifies (tensorCoreAttentionPlan). Halide
// keeps a block's running state in shared memory (every thread its own copy of a block-level
// allocation), so its flash attention is limited to 16 queries a block; this kernel keeps it in
// registers. The grid, tiling, causal bounds and ABI are the tensor-core kernel's
// (TensorCoreAttentionSource.cpp): one block of 4 warps per (query head, 64 queries), keys in
// tiles of 64, the same launcher.
//
// Lane l of warp w: row group r = l / 8, key group c = l % 8. The thread owns query rows
// 16w + 4r + i (i < 4) and, of a key tile, keys 8c + j (j < 8) of the scores and output
// columns 4c + 32h + e (e < 4, h < d / 32) of the accumulators: 32 scores and 4d / 8 outputs in
// registers. A row's 64 keys are the 8 lanes of a row group, so its max and sum are 3 xor
// shuffles. Per key tile:
//   stage      Q once, then K and V's 64 rows with 16-byte loads into shared tiles; K's 4-float
//              chunks swizzled (chunk ^ (key / 8 % 8)) so the 8 key groups' loads of one d chunk
//              hit distinct banks;
//   S = Q·Kᵀ   per 4 of d: 4 Q loads (a row group's lanes read one address), 8 K loads, 128 FMAs;
//   softmax    in the base-2 domain: row max over the thread's 8 keys, then the row group's;
//              p = 2^(s − m) by ex2.approx; the state rescaled by 2^(m_old − m);
//   O += P·V   P through shared memory (the K tile, once S is done): per 4 keys 4 P loads
//              (broadcast), 4 · d / 32 V loads (a quarter warp reads 32 consecutive floats),
//              128 FMAs for d = 64.
// Rotary positions (fused into the attention with fp32): Q's rows, and K's where the cache does
// not hold them rotated, are rotated as they are staged (stageRotated).
// Shared memory: Q, V 64 × d floats, K/P 64 × max(d, 64): 32 KiB at d = 32, 48 KiB at 64 (the
// static limit); heads of 96 and 128 (72 and 96 KiB) take it as dynamic shared memory, which
// the launcher asks the driver for (fmaAttentionBlockShapes).
//
//===----------------------------------------------------------------------===//

#include "xf/Target/TensorCoreAttention.h"

#include "TensorCoreKernelText.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>

namespace mlir::xf {

using namespace tc;

namespace {

constexpr int kKeys = 8;  // keys of a tile a thread (and lanes of a row group)
constexpr int kChunk = 4; // floats a 16-byte load

// Queries of a block per row a thread owns: 4 warps × 4 row groups.
constexpr int kFmaAttentionQueriesPerRow = 16;

// A shared tile of float rows.
struct Tile {
  const char *name; // its SSA name without the %
  int rows, cols;
};
// The Q, K/P and V tiles of a block of `queries` queries, in the order dynamic shared memory
// holds them: Q's rows of d, K's 64 rows of max(d, 64) (P's 64 keys a row once S is done), V's
// 64 rows of d.
std::array<Tile, 3> tilesOf(int d, int queries) {
  return {{{"qt", queries, d},
           {"kt", kTcAttentionKeys, std::max(d, kTcAttentionKeys)},
           {"vt", kTcAttentionKeys, d}}};
}
int64_t tileBytes(const Tile &t) { return int64_t(4) * t.rows * t.cols; }

struct Kernel {
  Writer &w;
  const AttentionKernelSpec &spec;
  int d;
  bool causal;
  int64_t group;
  int rows; // R, query rows a thread
  std::string tid, keyGroup, head, kvHead, bm, offset, mLast, mzLast;
  std::vector<std::string> row; // the thread's rows within the block's 16 R

  int queries() const { return kFmaAttentionQueriesPerRow * rows; }
  int outChunks() const { return d / (kKeys * kChunk); } // h: 32 columns apart
  std::array<Tile, 3> tiles() const { return tilesOf(d, queries()); }
  static std::string tileType(const Tile &t) {
    return llvm::formatv("memref<{0}x{1}xf32, #gpu.address_space<workgroup>>", t.rows, t.cols)
        .str();
  }
  std::string qTile() const { return tileType(tiles()[0]); }
  std::string kTile() const { return tileType(tiles()[1]); }
  std::string vTile() const { return tileType(tiles()[2]); }

  std::string vec(int n) const { return "vector<" + std::to_string(n) + "xf32>"; }
  std::string extract(const std::string &v, int i, int n) {
    return w.let("vector.extract " + v + "[" + std::to_string(i) + "] : f32 from " + vec(n));
  }
  std::string broadcast(const std::string &s, int n) {
    return w.let("vector.broadcast " + s + " : f32 to " + vec(n));
  }
  std::string fma(const std::string &a, const std::string &b, const std::string &c, int n) {
    return w.let("vector.fma " + a + ", " + b + ", " + c + " : " + vec(n));
  }
  std::string scalar(const char *op, const std::string &a, const std::string &b) {
    return w.let(std::string(op) + " " + a + ", " + b + " : f32");
  }
  std::string exp2Scalar(const std::string &a) {
    return w.let("llvm.call_intrinsic \"llvm.nvvm.ex2.approx.f32\"(" + a + ") : (f32) -> f32");
  }
  std::string load(const char *tile, const std::string &type, const std::string &r,
                   const std::string &c, int n) {
    return w.let(llvm::formatv("vector.load {0}[{1}, {2}] {{alignment = {3}} : {4}, {5}", tile, r,
                               c, 4 * n, type, vec(n))
                     .str());
  }
  // `v` (f32) combined over the 8 lanes of the thread's row group.
  std::string rowGroupReduce(std::string v, const char *op) {
    std::string width = w.let("arith.constant 32 : i32");
    for (int offset : {1, 2, 4}) {
      std::string shuffled = w.fresh();
      w.line(shuffled + ":2 = gpu.shuffle xor " + v + ", " +
             w.let("arith.constant " + std::to_string(offset) + " : i32") + ", " + width +
             " : f32");
      v = scalar(op, v, shuffled + "#0");
    }
    return v;
  }
};

Kernel indicesOf(Writer &w, const AttentionKernelSpec &spec, int rows) {
  Kernel k{w, spec, int(spec.dK), spec.causal, spec.heads / spec.keyValueHeads(), rows};
  AttentionBlock block = attentionBlock(w, k.group, spec.causal, k.queries());
  k.tid = block.tid, k.head = block.head, k.kvHead = block.kvHead, k.bm = block.bm;
  k.offset = block.offset, k.mLast = block.mLast, k.mzLast = block.mzLast;
  std::string lane = w.rem(k.tid, w.index(32));
  std::string warpRows = w.mul(w.div(k.tid, w.index(32)), w.index(4 * rows));
  std::string rowGroup = w.div(lane, w.index(kKeys));
  k.keyGroup = w.rem(lane, w.index(kKeys));
  std::string first = w.add(warpRows, w.mul(rowGroup, w.index(rows)));
  for (int i = 0; i < rows; ++i)
    k.row.push_back(w.addConst(first, i));
  return k;
}

// K's 4-float chunk `chunk` of local key row `key` lives at chunk ^ (key / 8 % 8).
std::string swizzled(Kernel &k, const std::string &key, const std::string &chunk) {
  std::string x = k.w.rem(k.w.div(key, k.w.index(kKeys)), k.w.index(8));
  return k.w.let("arith.xori " + chunk + ", " + x + " : index");
}

// Rows of d floats (`rows` of them: 64 keys, or the block's queries) from a global buffer into
// a shared tile.
struct StagedRows {
  const char *source, *tile;
  std::string type;
  int rows;
  bool swizzle;
  // The element offset of (row of the tile, column) in `source`.
  std::function<std::string(const std::string &, const std::string &)> address;
};

// `rows` staged with 16-byte loads by the block's 128 threads, then (if `barrier`) a barrier.
void stage(Kernel &k, const std::vector<StagedRows> &rows, bool barrier = true) {
  Writer &w = k.w;
  const int chunks = k.d / kChunk;
  for (int r = 0; r < rows.front().rows * chunks / kTcAttentionThreads; ++r) {
    std::string idx = w.addConst(k.tid, r * kTcAttentionThreads);
    std::string row = w.div(idx, w.index(chunks));
    std::string chunk = w.rem(idx, w.index(chunks));
    std::string col = w.mul(chunk, w.index(kChunk));
    for (const StagedRows &staged : rows) {
      std::string v =
          w.let("vector.load " + std::string(staged.source) + "[" + staged.address(row, col) +
                "] {alignment = 16} : memref<?xf32>, vector<4xf32>");
      std::string at = staged.swizzle ? w.mul(swizzled(k, row, chunk), w.index(kChunk)) : col;
      w.line("vector.store " + v + ", " + staged.tile + "[" + row + ", " + at +
             "] {alignment = 16} : " + staged.type + ", vector<4xf32>");
    }
  }
  if (barrier)
    w.line("gpu.barrier");
}

// Rotary positions (spec.rope), applied as a row is staged: pair i of a row at position p turned
// by p · base^(−2i/d) — the angle in float64 (the CPU kernel's and Halide's formula), reduced to
// [−π, π] in float64, then cosine and sine by the FMA units' approximations (|error| ≤ 2^-20.9
// there; no libdevice). A thread rotates a fixed set of one row's pair groups (below), so each
// pair's frequency is a constant of the text. The pair of element e of chunk c: adjacent,
// the element beside it in the chunk; halves, element e of chunk c + d / 8.
void stageRotated(Kernel &k, const StagedRows &staged,
                  const std::function<std::string(const std::string &)> &position) {
  Writer &w = k.w;
  const int chunks = k.d / kChunk;
  const bool adjacent = k.spec.rope == AttentionKernelSpec::Rope::Adjacent;
  // Chunk by chunk (adjacent) or chunk c with chunk c + d / 8 (halves): the pairs of a group
  // lie in it, so a thread holds one group's values at a time (a whole row of 64 held at once
  // spilled 16 bytes of llama-hf's forward kernel at 168 registers).
  const int groups = adjacent ? chunks : chunks / 2;
  // Every thread of the block takes part: thread t rotates row t % padded's groups g ≡ t /
  // padded (mod parts), padded the tile's rows made a whole warp's, so that a warp's lanes share
  // their part (a branch on it does not diverge): K's 64 rows in 2 parts, 16 query rows in 4.
  const int padded = std::max(staged.rows, 32);
  const int parts = std::min(kTcAttentionThreads / padded, groups);
  std::string row = parts > 1 ? w.rem(k.tid, w.index(padded)) : k.tid;
  std::string part = parts > 1 ? w.div(k.tid, w.index(padded)) : "";
  std::string active = w.let("arith.cmpi ult, " + row + ", " + w.index(staged.rows) + " : index");
  if (padded * parts < kTcAttentionThreads)
    active = w.let("arith.andi " + active + ", " +
                   w.let("arith.cmpi ult, " + k.tid + ", " + w.index(padded * parts) + " : index") +
                   " : i1");
  w.line("scf.if " + active + " {");
  std::string at = w.let("arith.index_cast " + position(row) + " : index to i64");
  std::string p = w.let("arith.uitofp " + at + " : i64 to f64");
  auto f64 = [&](double v) {
    return w.let(llvm::formatv("arith.constant {0:e17} : f64", v).str());
  };
  std::string twoPi = f64(2 * M_PI), turnsPerRadian = f64(0.5 / M_PI), half = f64(0.5);
  const double exponent = -2.0 * std::log(k.spec.ropeBase) / double(k.d);
  for (int g = 0; g < groups; ++g) {
    if (parts > 1)
      w.line("scf.if " + w.let("arith.cmpi eq, " + part + ", " + w.index(g % parts) + " : index") +
             " {");
    std::vector<int> members{g};
    if (!adjacent)
      members.push_back(g + chunks / 2);
    std::map<int, std::vector<std::string>> e; // chunk -> its 4 values
    for (int c : members) {
      std::string v = w.let("vector.load " + std::string(staged.source) + "[" +
                            staged.address(row, w.index(kChunk * c)) +
                            "] {alignment = 16} : memref<?xf32>, vector<4xf32>");
      for (int i = 0; i < kChunk; ++i)
        e[c].push_back(k.extract(v, i, kChunk));
    }
    for (int i = 0; i < kChunk / (adjacent ? 2 : 1); ++i) {
      const int pair = adjacent ? 2 * g + i : kChunk * g + i;
      // Columns a (cos, −sin) and b (sin, cos) of the pair.
      int a = adjacent ? 2 * pair : pair, b = adjacent ? 2 * pair + 1 : pair + k.d / 2;
      std::string angle =
          w.let("arith.mulf " + p + ", " + f64(std::exp(pair * exponent)) + " : f64");
      std::string turns = w.let(
          "arith.fptosi " +
          w.let("arith.addf " + w.let("arith.mulf " + angle + ", " + turnsPerRadian + " : f64") +
                ", " + half + " : f64") +
          " : f64 to i64");
      std::string whole = w.let("arith.mulf " +
                                w.let("arith.sitofp " + turns + " : i64 to f64") + ", " + twoPi +
                                " : f64");
      std::string reduced = w.let("arith.truncf " +
                                  w.let("arith.subf " + angle + ", " + whole + " : f64") +
                                  " : f64 to f32");
      std::string cosine =
          w.let("llvm.call_intrinsic \"llvm.nvvm.cos.approx.f\"(" + reduced + ") : (f32) -> f32");
      std::string sine =
          w.let("llvm.call_intrinsic \"llvm.nvvm.sin.approx.f\"(" + reduced + ") : (f32) -> f32");
      std::string &x = e[a / kChunk][a % kChunk], &y = e[b / kChunk][b % kChunk];
      std::string rx = k.scalar("arith.subf", k.scalar("arith.mulf", x, cosine),
                                k.scalar("arith.mulf", y, sine));
      std::string ry = k.scalar("arith.addf", k.scalar("arith.mulf", x, sine),
                                k.scalar("arith.mulf", y, cosine));
      x = rx, y = ry;
    }
    for (int c : members) {
      std::string v = w.let("vector.from_elements " + e[c][0] + ", " + e[c][1] + ", " +
                            e[c][2] + ", " + e[c][3] + " : vector<4xf32>");
      std::string col = w.index(kChunk * c);
      std::string to =
          staged.swizzle ? w.mul(swizzled(k, row, w.index(c)), w.index(kChunk)) : col;
      w.line("vector.store " + v + ", " + staged.tile + "[" + row + ", " + to +
             "] {alignment = 16} : " + staged.type + ", vector<4xf32>");
    }
    if (parts > 1)
      w.line("}");
  }
  w.line("}");
}

// The running state of the thread's rows: output accumulators [row][h] (vector<4xf32>),
// each row's max and the thread's partial sum of its 8 keys.
struct State {
  std::vector<std::string> out, max, sum;
  std::vector<std::string> all() const {
    std::vector<std::string> v = out;
    v.insert(v.end(), max.begin(), max.end());
    v.insert(v.end(), sum.begin(), sum.end());
    return v;
  }
  std::string types() const {
    std::string t;
    for (size_t i = 0; i < out.size(); ++i)
      t += "vector<4xf32>, ";
    for (size_t i = 0; i < max.size() + sum.size(); ++i)
      t += i ? ", f32" : "f32";
    return t;
  }
  // The same layout from a list of values (loop arguments or results), `rows` rows.
  static State of(const std::vector<std::string> &v, size_t outs, size_t rows) {
    State s;
    s.out.assign(v.begin(), v.begin() + outs);
    s.max.assign(v.begin() + outs, v.begin() + outs + rows);
    s.sum.assign(v.begin() + outs + rows, v.end());
    return s;
  }
};

// An scf.for over [from, to) carrying `carried` (of `types`); `body` gets the induction
// variable and the carried values and returns the yielded ones. The loop's results.
std::vector<std::string>
forLoop(Writer &w, const std::string &from, const std::string &to,
        const std::vector<std::string> &carried, const std::string &types,
        const std::function<std::vector<std::string>(const std::string &,
                                                     const std::vector<std::string> &)> &body) {
  std::string loop = w.fresh(), iv = loop + "i";
  std::string iterArgs;
  std::vector<std::string> args;
  for (size_t i = 0; i < carried.size(); ++i) {
    args.push_back(loop + "a" + std::to_string(i));
    iterArgs += (i ? ", " : "") + args.back() + " = " + carried[i];
  }
  w.line(loop + ":" + std::to_string(carried.size()) + " = scf.for " + iv + " = " + from + " to " +
         to + " step " + w.index(1) + " iter_args(" + iterArgs + ") -> (" + types + ") {");
  std::vector<std::string> next = body(iv, args);
  std::string yield;
  for (const std::string &v : next)
    yield += (yield.empty() ? "" : ", ") + v;
  w.line("scf.yield " + yield + " : " + types);
  w.line("}");
  std::vector<std::string> results;
  for (size_t i = 0; i < carried.size(); ++i)
    results.push_back(loop + "#" + std::to_string(i));
  return results;
}

std::string repeated(const char *type, size_t n) {
  std::string t;
  for (size_t i = 0; i < n; ++i)
    t += (i ? ", " : "") + std::string(type);
  return t;
}

// S = Q·Kᵀ of the tile staged in %kt: the thread's rows × its 8 keys, scaled to the base-2
// domain and, if `masked`, masked (−∞ where key ≥ min(position + 1, Mz)).
std::vector<std::string> scores(Kernel &k, const std::string &key0, double scaleLog2e,
                                bool masked) {
  Writer &w = k.w;
  std::string zero = w.let("arith.constant dense<0.0> : vector<8xf32>");
  std::vector<std::string> start(k.rows, zero);
  std::string firstKey = w.mul(k.keyGroup, w.index(kKeys));
  std::vector<std::string> s = forLoop(
      w, w.index(0), w.index(k.d / kChunk), start, repeated("vector<8xf32>", k.rows),
      [&](const std::string &chunk, const std::vector<std::string> &acc) {
        std::string col = w.mul(chunk, w.index(kChunk));
        std::vector<std::string> q, keys;
        for (int i = 0; i < k.rows; ++i)
          q.push_back(k.load("%qt", k.qTile(), k.row[i], col, kChunk));
        // The thread's keys 8c + j all sit in key group c's swizzle: chunk ^ c.
        std::string at =
            w.mul(w.let("arith.xori " + chunk + ", " + k.keyGroup + " : index"), w.index(kChunk));
        for (int j = 0; j < kKeys; ++j)
          keys.push_back(k.load("%kt", k.kTile(), w.addConst(firstKey, j), at, kChunk));
        std::vector<std::string> next = acc;
        for (int e = 0; e < kChunk; ++e) {
          // Column e of the chunk across the thread's 8 keys.
          std::string column;
          for (int j = 0; j < kKeys; ++j)
            column += (j ? ", " : "") + k.extract(keys[j], e, kChunk);
          std::string kv = w.let("vector.from_elements " + column + " : vector<8xf32>");
          for (int i = 0; i < k.rows; ++i)
            next[i] = k.fma(k.broadcast(k.extract(q[i], e, kChunk), kKeys), kv, next[i], kKeys);
        }
        return next;
      });
  std::string scale =
      w.let(llvm::formatv("arith.constant dense<{0:e9}> : vector<8xf32>", scaleLog2e).str());
  for (std::string &v : s)
    v = w.let("arith.mulf " + v + ", " + scale + " : vector<8xf32>");
  if (!masked)
    return s;
  std::string keys;
  for (int j = 0; j < kKeys; ++j)
    keys += (j ? ", " : "") + w.add(key0, w.addConst(firstKey, j));
  std::string keyVector = w.let("vector.from_elements " + keys + " : vector<8xindex>");
  std::string minusInf = w.let("arith.constant dense<0xFF800000> : vector<8xf32>");
  for (int i = 0; i < k.rows; ++i) {
    std::string position = w.add(w.add(k.bm, k.row[i]), k.offset);
    std::string limit = k.causal ? w.min(w.addConst(position, 1), "%mz") : "%mz";
    std::string limits = w.let("vector.broadcast " + limit + " : index to vector<8xindex>");
    std::string visible =
        w.let("arith.cmpi ult, " + keyVector + ", " + limits + " : vector<8xindex>");
    s[i] = w.let("arith.select " + visible + ", " + s[i] + ", " + minusInf +
                 " : vector<8xi1>, vector<8xf32>");
  }
  return s;
}

// O += P·V, P in %kt (rows × 64 keys), V in %vt.
std::vector<std::string> accumulate(Kernel &k, const std::vector<std::string> &out) {
  Writer &w = k.w;
  std::string colBase = w.mul(k.keyGroup, w.index(kChunk));
  return forLoop(
      w, w.index(0), w.index(kTcAttentionKeys / kChunk), out, repeated("vector<4xf32>", out.size()),
      [&](const std::string &chunk, const std::vector<std::string> &acc) {
        std::string key0 = w.mul(chunk, w.index(kChunk));
        std::vector<std::string> p;
        for (int i = 0; i < k.rows; ++i)
          p.push_back(k.load("%kt", k.kTile(), k.row[i], key0, kChunk));
        std::vector<std::string> next = acc;
        for (int e = 0; e < kChunk; ++e) {
          std::string key = w.addConst(key0, e);
          std::vector<std::string> v;
          for (int h = 0; h < k.outChunks(); ++h)
            v.push_back(k.load("%vt", k.vTile(), key, w.addConst(colBase, 32 * h), kChunk));
          for (int i = 0; i < k.rows; ++i) {
            std::string weight = k.broadcast(k.extract(p[i], e, kChunk), kChunk);
            for (int h = 0; h < k.outChunks(); ++h) {
              std::string &o = next[i * k.outChunks() + h];
              o = k.fma(weight, v[h], o, kChunk);
            }
          }
        }
        return next;
      });
}

// One key tile (index `tile`) of the online softmax: stage K and V, S, the state's update,
// P into the K tile, P·V.
State keyTile(Kernel &k, const std::string &tile, double scaleLog2e, bool masked, State st) {
  Writer &w = k.w;
  std::string key0 = w.mul(tile, w.index(kTcAttentionKeys));
  auto rowAddress = [&](const char *headStride, const char *keyStride) {
    return [&w, &k, key0, headStride, keyStride](const std::string &row, const std::string &col) {
      std::string key = w.min(w.add(key0, row), k.mzLast);
      return w.add(w.add(w.mul(k.kvHead, headStride), w.mul(key, keyStride)), col);
    };
  };
  StagedRows keys{"%k", "%kt", k.kTile(), kTcAttentionKeys, true, rowAddress("%khs", "%kks")};
  StagedRows values{"%v", "%vt", k.vTile(), kTcAttentionKeys, false, rowAddress("%vhs", "%vks")};
  if (k.spec.rope != AttentionKernelSpec::Rope::None && k.spec.ropeKeys) {
    // Key s at position s (the clamped row past the last key is never seen).
    stage(k, {values}, /*barrier=*/false);
    stageRotated(k, keys,
                 [&](const std::string &row) { return w.min(w.add(key0, row), k.mzLast); });
    w.line("gpu.barrier");
  } else {
    stage(k, {keys, values});
  }
  std::vector<std::string> s = scores(k, key0, scaleLog2e, masked);
  w.line("gpu.barrier"); // every warp has read K: %kt takes P
  State next;
  for (int i = 0; i < k.rows; ++i) {
    std::string top = k.rowGroupReduce(
        w.let("vector.reduction <maximumf>, " + s[i] + " : vector<8xf32> into f32"),
        "arith.maximumf");
    std::string m = k.scalar("arith.maximumf", st.max[i], top);
    std::string correction = k.exp2Scalar(k.scalar("arith.subf", st.max[i], m));
    std::string shifted =
        w.let("arith.subf " + s[i] + ", " + k.broadcast(m, kKeys) + " : vector<8xf32>");
    std::string p;
    for (int j = 0; j < kKeys; ++j)
      p += (j ? ", " : "") + k.exp2Scalar(k.extract(shifted, j, kKeys));
    std::string probabilities = w.let("vector.from_elements " + p + " : vector<8xf32>");
    std::string added =
        w.let("vector.reduction <add>, " + probabilities + " : vector<8xf32> into f32");
    next.max.push_back(m);
    next.sum.push_back(
        k.scalar("arith.addf", k.scalar("arith.mulf", st.sum[i], correction), added));
    w.line("vector.store " + probabilities + ", %kt[" + k.row[i] + ", " +
           w.mul(k.keyGroup, w.index(kKeys)) + "] {alignment = 32} : " + k.kTile() +
           ", vector<8xf32>");
    std::string rescale = k.broadcast(correction, kChunk);
    for (int h = 0; h < k.outChunks(); ++h)
      next.out.push_back(w.let("arith.mulf " + st.out[i * k.outChunks() + h] + ", " + rescale +
                               " : vector<4xf32>"));
  }
  w.line("gpu.barrier"); // P is whole
  next.out = accumulate(k, next.out);
  w.line("gpu.barrier"); // the next tile's staging overwrites %kt and %vt
  return next;
}

State tileLoop(Kernel &k, const std::string &from, const std::string &to, double scaleLog2e,
               bool masked, const State &st) {
  std::vector<std::string> results = forLoop(
      k.w, from, to, st.all(), st.types(),
      [&](const std::string &tile, const std::vector<std::string> &carried) {
        return keyTile(k, tile, scaleLog2e, masked, State::of(carried, st.out.size(), k.rows))
            .all();
      });
  return State::of(results, st.out.size(), k.rows);
}

// out = O / l for the thread's rows below M, its columns as pairs (out rows are 8-byte aligned).
void storeOutput(Kernel &k, const State &st) {
  Writer &w = k.w;
  std::string head = w.mul(k.head, w.index(k.d));
  std::string colBase = w.mul(k.keyGroup, w.index(kChunk));
  std::string one = w.let("arith.constant 1.0 : f32");
  for (int i = 0; i < k.rows; ++i) {
    std::string total = k.rowGroupReduce(st.sum[i], "arith.addf");
    std::string inverse = k.broadcast(w.let("arith.divf " + one + ", " + total + " : f32"), kChunk);
    std::string row = w.add(k.bm, k.row[i]);
    std::string rowStart = w.add(w.mul(row, "%os"), head);
    std::string inside = w.let("arith.cmpi ult, " + row + ", %m : index");
    w.line("scf.if " + inside + " {");
    for (int h = 0; h < k.outChunks(); ++h) {
      std::string v = w.let("arith.mulf " + st.out[i * k.outChunks() + h] + ", " + inverse +
                            " : vector<4xf32>");
      for (int half = 0; half < 2; ++half) {
        std::string pair = w.let("vector.from_elements " + k.extract(v, 2 * half, kChunk) + ", " +
                                 k.extract(v, 2 * half + 1, kChunk) + " : vector<2xf32>");
        std::string at = w.add(rowStart, w.addConst(colBase, 32 * h + 2 * half));
        w.line("vector.store " + pair + ", %out[" + at +
               "] {alignment = 8} : memref<?xf32>, vector<2xf32>");
      }
    }
    w.line("}");
  }
}

// .maxnreg: ptxas (sm_90) without spills — 3 blocks of 128 threads a SM at heads of 32 and 64;
// heads of 96 and 128 hold 3 and 4 output chunks a row (48 and 64 accumulators at 4 rows a
// thread), 2 blocks. Blocks of fewer queries hold fewer accumulators but no fewer registers:
// at 128 (heads of 64) and 168 (96, 128) ptxas spilled them too, so every block size takes
// its head size's bound.
int maxRegisters(int d) { return d <= kTcAttentionKeys ? 168 : 255; }

// The Q, K/P and V tiles as views of the kernel's dynamic shared memory, one after another
// (each a multiple of 16 bytes: every view stays 16-byte aligned).
std::string dynamicTiles(const Kernel &k) {
  std::vector<SharedView> views;
  for (const Tile &t : k.tiles())
    views.push_back({t.name, Kernel::tileType(t), tileBytes(t)});
  return dynamicSharedViews(views);
}

std::string kernelFunction(const AttentionKernelSpec &spec, const AttentionBlockShape &shape) {
  Writer w;
  Kernel k = indicesOf(w, spec, shape.queries / kFmaAttentionQueriesPerRow);
  std::string head = w.mul(k.head, w.index(k.d));
  StagedRows queries{"%q",
                     "%qt",
                     k.qTile(),
                     k.queries(),
                     false,
                     [&](const std::string &row, const std::string &col) {
                       std::string q = w.min(w.add(k.bm, row), k.mLast);
                       return w.add(w.add(w.mul(q, "%qs"), head), col);
                     }};
  if (spec.rope != AttentionKernelSpec::Rope::None) {
    // Query row t at position t + Mz − M (rows past M clamped: never stored).
    stageRotated(k, queries, [&](const std::string &row) {
      return w.add(w.min(w.add(k.bm, row), k.mLast), k.offset);
    });
    w.line("gpu.barrier");
  } else {
    stage(k, {queries});
  }
  State st;
  std::string zero = w.let("arith.constant dense<0.0> : vector<4xf32>");
  st.out.assign(k.rows * k.outChunks(), zero);
  // The max starts finite: a row whose first tiles are all masked gets 2^(−∞ − m) = 0.
  st.max.assign(k.rows, w.let("arith.constant -1.0e+30 : f32"));
  st.sum.assign(k.rows, w.let("arith.constant 0.0 : f32"));
  auto [unmasked, end] = attentionTileBounds(w, spec.causal, k.bm, k.offset, k.mLast, k.queries());
  const double scaleLog2e = spec.scale * M_LOG2E;
  st = tileLoop(k, w.index(0), unmasked, scaleLog2e, /*masked=*/false, st);
  st = tileLoop(k, unmasked, end, scaleLog2e, /*masked=*/true, st);
  storeOutput(k, st);
  std::string workgroup = shape.dynamicShared ? ""
                                              : "workgroup(" + sharedTile("%qt", k.qTile()) + ", " +
                                                    sharedTile("%kt", k.kTile()) + ", " +
                                                    sharedTile("%vt", k.vTile()) + ") ";
  return llvm::formatv(
             "    gpu.func @{0}(%q: memref<?xf32>, %k: memref<?xf32>, %v: memref<?xf32>, "
             "%out: memref<?xf32>, %m: index, %mz: index, %qs: index, %kks: index, %khs: index, "
             "%vks: index, %vhs: index, %os: index)\n"
             "        {1}kernel attributes "
             "{{known_block_size = array<i32: {2}, 1, 1>, nvvm.maxnreg = {3} : i32} {{\n{4}{5}"
             "      gpu.return\n    }\n",
             shape.entry, workgroup, kTcAttentionThreads, maxRegisters(k.d),
             shape.dynamicShared ? dynamicTiles(k) : "", w.text)
      .str();
}

} // namespace

// The header's words for rotary positions, which the emulator's reference reads.
static std::string rotaryText(const AttentionKernelSpec &spec) {
  if (spec.rope == AttentionKernelSpec::Rope::None)
    return "";
  return llvm::formatv(", rope {0} base {1:e17}, keys {2}",
                       spec.rope == AttentionKernelSpec::Rope::Adjacent ? "adjacent" : "halves",
                       spec.ropeBase, spec.ropeKeys ? "rotated here" : "as stored")
      .str();
}

std::vector<AttentionBlockShape> fmaAttentionBlockShapes(const AttentionKernelSpec &spec) {
  std::vector<AttentionBlockShape> shapes;
  for (int queries : kFmaAttentionBlockQueries) {
    int64_t bytes = 0;
    for (const Tile &t : tilesOf(int(spec.dK), queries))
      bytes += tileBytes(t);
    shapes.push_back({queries, bytes > kStaticSharedBytes ? bytes : 0,
                      attentionKernelEntry(spec, GpuMatmul::Fp32) +
                          (queries == kTcAttentionQueries ? "" : std::to_string(queries))});
  }
  return shapes;
}

std::string fmaAttentionSource(const AttentionKernelSpec &spec) {
  std::vector<AttentionBlockShape> shapes = fmaAttentionBlockShapes(spec);
  std::string functions;
  for (const AttentionBlockShape &shape : shapes)
    functions += kernelFunction(spec, shape);
  return attentionModule(spec, GpuMatmul::Fp32, "fp32 FMA",
                         rotaryText(spec) + dynamicSharedText(shapes), functions);
}

} // namespace mlir::xf
