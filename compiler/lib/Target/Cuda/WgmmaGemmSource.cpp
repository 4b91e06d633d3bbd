//===- WgmmaGemmSource.cpp - the sm_90a warpgroup GEMM kernel as MLIR ------===//
//
// `<name>_wg` (docs/gpu.md, "Warpgroup GEMM (sm_90a)"): out[M, N] = act(x · W + bias) +
// residual (SwiGLU: silu(gate) · up) for --gpu-matmul=bf16 with bf16 weights, a block of one
// warpgroup (4 warps, 128 threads) per 128 × 128 tile of out (SwiGLU 128 × 64: both gates' 128
// columns of W, the tile's first and last 64), products on `wgmma.mma_async` m64n128k16 (Hopper's
// warpgroup tensor-core instruction, 2 a K step for the tile's two halves of 64 rows), whose
// operands are read from shared memory through 64-bit matrix descriptors and whose float32
// sums stay in registers (64 a thread and half) over all of K. Built beside the mma.sync
// kernels in a gpu.module of its own for sm_90a (PTX that only a capability-9.0 GPU loads);
// libxfrt launches it where the device is one, the grid fills it, and the operands qualify.
//
// Shared memory: three stages of K slices of 64 (x's [128][64] and W's [64][128] or
// [128][64], bf16: 32 KiB a stage), each tile in the 128-byte swizzled layout wgmma's descriptors
// name (swizzle mode 1): rows of 64 bf16 (128 bytes), in atoms of 8 rows (1024 bytes, 1024-byte
// aligned) in which the 16-byte chunk c of row r lies at chunk c ^ (r % 8).
//   x, K-major ("row" A): element (m, k) at m · 128 + ((k / 8) ^ (m % 8)) · 16 + (k % 8) · 2;
//       descriptor SBO (8 rows to the next 8) 1024 bytes; a K step of 16 is +32 bytes.
//   W [N, K], K-major ("col" B): the same with n for m.
//   W [K, N], N-major ("row" B, imm-trans-b 1): two tiles [64 k][64 n] of 8 KiB (n < 64, n ≥
//       64): element (k, n) at (n / 64) · 8192 + k · 128 + (((n % 64) / 8) ^ (k % 8)) · 16 +
//       (n % 8) · 2; LBO (the next 64 columns) 8192, SBO (the next 8 rows of k) 1024; a K step
//       of 16 is +2048 bytes.
// These are the layouts MLIR's nvgpu.warpgroup.mma lowering produces for TMA's 128-byte
// swizzle (descriptors of SBO 1024 and LBO 8192 for an N-major [64][64] box pair); here the
// block's threads write them: W's 16-byte chunks by cp.async, x's rows loaded as float32,
// rounded to bf16 (arith.truncf: nearest even) and stored. Dynamic shared memory is only
// 16-byte aligned, so the stages start at the first 1024-byte boundary of it (1 KiB more is
// asked for).
//
// The K loop, slice s (64 of K) an iteration in stage s % 3, x's slice s + 2 in registers on
// entry: slice s's 8 wgmma are issued as a group, then wgmma.wait_group 1 (slice s − 1's
// complete, s's run on) and a barrier (every warp past it: stage (s + 2) % 3 is free); x's
// slice s + 2 is stored into it, W's slice s + 2 issued into it by cp.async, x's slice s + 3
// loaded into registers (a whole iteration to arrive), W's slice s + 1 waited for (every
// cp.async group but the newest), a proxy fence (fence.proxy.async: the threads' writes
// visible to wgmma, which reads shared memory through the async proxy) and a barrier. After
// the loop wait_group 0. The epilogue is the other tensor-core kernels' (storeSumPair) from the
// accumulators' registers: register r of half i holds row 64i + 16 · warp + lane / 4 + 8 ·
// ((r % 4) / 2), column 8 · (r / 4) + 2 · (lane % 4) + r % 2 (PTX ISA, wgmma's D fragments).
//
//===----------------------------------------------------------------------===//

#include "xf/Target/TensorCoreGemm.h"

#include "TensorCoreGemmEpilogue.h"
#include "TensorCoreKernelText.h"

#include "llvm/Support/FormatVariadic.h"

#include <utility>
#include <vector>

namespace mlir::xf {

using namespace tc;

namespace {

constexpr int kRows = kWgTile, kCols = kWgTile, kSlice = kWgSliceK;
constexpr int64_t kAtom = 1024;       // bytes of a swizzle atom: 8 rows of 128 bytes
constexpr int64_t kTileBytes = 16384; // x's or W's tile of one stage (128 × 64 bf16)
constexpr int64_t kStageBytes = 2 * kTileBytes;
constexpr int kStages = kWgStages;
constexpr int kRegisters = 64;             // accumulators a thread per 64-row half (n128)
constexpr const char *kAccType = "!wgacc"; // the module's alias of !llvm.struct<(f32 × 64)>

// The shared tiles as one 2-D view of 256-byte rows: element e at [e / 128, e % 128], so
// that stores and copies address it as any other shared tile.
constexpr int kViewCols = 128;
constexpr int64_t kViewRows = (kWgDynamicShared) / (2 * kViewCols);
std::string viewType() {
  return llvm::formatv("memref<{0}x{1}xbf16, #gpu.address_space<workgroup>>", kViewRows, kViewCols);
}

// The byte offset of a 16-byte chunk `chunk` (0..7) of row `row` in a swizzled [rows][64]
// tile at `tile` (bytes from the aligned start).
std::string swizzled(Writer &w, const std::string &tile, const std::string &row,
                     const std::string &chunk) {
  std::string phase = w.rem(row, w.index(8));
  std::string c = w.let("arith.xori " + chunk + ", " + phase + " : index");
  return w.add(w.add(tile, w.mul(row, w.index(128))), w.mul(c, w.index(16)));
}

// [row, col] of the view for the byte offset `bytes` from the aligned start (`pad` elements
// in): as "%r, %c".
std::string viewAt(Writer &w, const std::string &pad, const std::string &bytes) {
  std::string e = w.add(pad, w.div(bytes, w.index(2)));
  return w.div(e, w.index(kViewCols)) + ", " + w.rem(e, w.index(kViewCols));
}

struct Block {
  std::string tid, warp, g, t, bm, bn, mLast, pad, base64;
};

// Columns of out a block computes: 128, or SwiGLU's 64 (both gates' 64 columns of W: the
// tile's first and last 64 columns of B).
int outColumns(const GemmKernelSpec &spec) { return kCols / spec.gates(); }

Block blockIndices(Writer &w, const GemmKernelSpec &spec) {
  Block b;
  b.tid = w.let("gpu.thread_id x");
  std::string bx = w.let("gpu.block_id x"), by = w.let("gpu.block_id y");
  b.warp = w.div(b.tid, w.index(32));
  std::string lane = w.rem(b.tid, w.index(32));
  b.g = w.div(lane, w.index(4));
  b.t = w.rem(lane, w.index(4));
  b.bm = w.mul(by, w.index(kRows));
  b.bn = w.mul(bx, w.index(outColumns(spec)));
  b.mLast = w.let("arith.subi %m, " + w.index(1) + " : index");
  // The stages start at the view's first 1024-byte boundary (swizzle atoms are aligned).
  std::string address =
      w.let("memref.extract_aligned_pointer_as_index %tiles : " + viewType() + " -> index");
  std::string atom = w.index(kAtom);
  std::string padBytes =
      w.rem(w.let("arith.subi " + atom + ", " + w.rem(address, atom) + " : index"), atom);
  b.pad = w.div(padBytes, w.index(2));
  b.base64 = w.let("arith.index_cast " + w.add(address, padBytes) + " : index to i64");
  return b;
}

// x's slice at k0 (rows bm.., clamped to M − 1) as float32 registers: thread t loads chunks
// t + 128i (row chunk / 8, 8 floats at (chunk % 8) · 8) as two 16-byte loads each.
std::vector<std::string> loadX(Writer &w, const Block &b, const std::string &k0) {
  std::vector<std::string> regs;
  for (int i = 0; i < kRows * kSlice / 8 / kWgThreads; ++i) {
    std::string chunk = w.addConst(b.tid, i * kWgThreads);
    std::string row = w.div(chunk, w.index(8)), c = w.rem(chunk, w.index(8));
    std::string grow = w.min(w.add(b.bm, row), b.mLast);
    std::string at = w.add(w.add(w.mul(grow, "%xs"), k0), w.mul(c, w.index(8)));
    for (int h = 0; h < 2; ++h)
      regs.push_back(w.let("vector.load %x[" + w.addConst(at, 4 * h) +
                           "] {alignment = 16} : memref<?xf32>, vector<4xf32>"));
  }
  return regs;
}

// Stores loadX's registers, rounded to bf16, into x's swizzled tile of `stage` (bytes).
void storeX(Writer &w, const Block &b, const std::vector<std::string> &regs,
            const std::string &stage) {
  for (int i = 0; i < kRows * kSlice / 8 / kWgThreads; ++i) {
    std::string chunk = w.addConst(b.tid, i * kWgThreads);
    std::string row = w.div(chunk, w.index(8)), c = w.rem(chunk, w.index(8));
    std::string at = swizzled(w, stage, row, c);
    for (int h = 0; h < 2; ++h) {
      std::string v =
          w.let("arith.truncf " + regs[2 * i + h] + " : vector<4xf32> to vector<4xbf16>");
      w.line("vector.store " + v + ", %tiles[" + viewAt(w, b.pad, w.addConst(at, 8 * h)) +
             "] {alignment = 8} : " + viewType() + ", vector<4xbf16>");
    }
  }
}

// W's slice at k0 into W's swizzled tile of `stage` (bytes) by cp.async, 16 bytes (8 weights)
// a copy, thread t copying chunks t + 128i; none read where `more` is false (zero fill, past
// the last slice). Columns (rows of [N, K]) past N read W's last. Returns the tokens.
std::vector<std::string> copyW(Writer &w, const GemmKernelSpec &spec, const Block &b,
                               const std::string &k0, const std::string &stage,
                               const std::string &more) {
  std::string src =
      w.let("arith.select " + more + ", " + w.index(8) + ", " + w.index(0) + " : index");
  std::string wTile = w.addConst(stage, kTileBytes);
  const bool gated = spec.gates() == 2;
  std::vector<std::string> tokens;
  for (int i = 0; i < kSlice * kCols / 8 / kWgThreads; ++i) {
    std::string chunk = w.addConst(b.tid, i * kWgThreads);
    std::string at, dst;
    // SwiGLU: the tile's columns (rows of [N, K]) 64g.. are gate g's, at g · N in W.
    auto column = [&](const std::string &n, int64_t last) {
      if (!gated)
        return w.min(w.add(b.bn, n), w.index(last));
      std::string gate = w.div(n, w.index(64));
      return w.add(w.mul(gate, w.index(spec.N)),
                   w.min(w.add(b.bn, w.rem(n, w.index(64))), w.index(last)));
    };
    if (spec.transposeWeight) { // [N, K]: row n of the tile, chunk c of its 64 k
      std::string n = w.div(chunk, w.index(8)), c = w.rem(chunk, w.index(8));
      at = w.add(w.add(w.mul(column(n, spec.N - 1), "%ws"), k0), w.mul(c, w.index(8)));
      dst = swizzled(w, wTile, n, c);
    } else { // [K, N]: row k of the tile, 16 chunks of 8 columns: 8 in each 64-column half
      std::string k = w.div(chunk, w.index(16)), nc = w.rem(chunk, w.index(16));
      std::string half = w.div(nc, w.index(8)), c = w.rem(nc, w.index(8));
      at = w.add(w.mul(w.add(k0, k), "%ws"), column(w.mul(nc, w.index(8)), spec.N - 8));
      dst = swizzled(w, w.add(wTile, w.mul(half, w.index(kTileBytes / 2))), k, c);
    }
    tokens.push_back(w.let("nvgpu.device_async_copy %w[" + at + "], %tiles[" +
                           viewAt(w, b.pad, dst) + "], 8, " + src +
                           " {bypassL1} : memref<?xbf16> to " + viewType()));
  }
  return tokens;
}

// A wgmma matrix descriptor's constant bits: swizzle mode 1 (128 bytes) at 62, the stride
// byte offset (SBO) at 32 and the leading one (LBO) at 16, both in 16-byte units.
int64_t descriptorBits(int64_t lbo, int64_t sbo) {
  return (int64_t(1) << 62) | ((sbo >> 4) << 32) | ((lbo >> 4) << 16);
}

// The descriptor of the tile at `stage` (an i64 of bytes from the aligned start) + `bytes`:
// its shared address in 16-byte units in bits 0..13, then `bits`.
std::string descriptor(Writer &w, const Block &b, const std::string &stage, int64_t bytes,
                       int64_t bits) {
  auto i64 = [&](int64_t v) { return w.let("arith.constant " + std::to_string(v) + " : i64"); };
  std::string address = w.let("arith.addi " + b.base64 + ", " + stage + " : i64");
  address = w.let("arith.addi " + address + ", " + i64(bytes) + " : i64");
  std::string field = w.let("arith.shrui " + address + ", " + i64(4) + " : i64");
  field = w.let("arith.andi " + field + ", " + i64(0x3FFF) + " : i64");
  return w.let("arith.ori " + field + ", " + i64(bits) + " : i64");
}

// The products of the slice in the stage at `stage` (i64 bytes): 4 K steps of 16 × 2 halves
// of 64 rows as one group, then a wait for all groups but the newest (wait_group 1: the
// previous slice's products are complete, this one's run on).
void multiply(Writer &w, const GemmKernelSpec &spec, const Block &b, const std::string &stage,
              std::string acc[2]) {
  const bool nk = spec.transposeWeight;
  const int64_t aBits = descriptorBits(16, 1024);
  const int64_t bBits = nk ? descriptorBits(16, 1024) : descriptorBits(8192, 1024);
  w.line("nvvm.wgmma.fence.aligned");
  for (int step = 0; step < kSlice / 16; ++step) {
    std::string db = descriptor(w, b, stage, kTileBytes + step * (nk ? 32 : 2048), bBits);
    for (int half = 0; half < 2; ++half) {
      std::string da = descriptor(w, b, stage, half * (kTileBytes / 2) + step * 32, aBits);
      acc[half] =
          w.let(llvm::formatv("nvvm.wgmma.mma_async {0}, {1}, {2}, #nvvm.shape<m = 64, n = 128, "
                              "k = 16>, D [<f32>, #nvvm.wgmma_scale_out<one>, <wrapped>], A "
                              "[<bf16>, #nvvm.wgmma_scale_in<one>, <row>], B [<bf16>, "
                              "#nvvm.wgmma_scale_in<one>, <{3}>] : {4} -> {4}",
                              da, db, acc[half], nk ? "col" : "row", kAccType)
                    .str());
    }
  }
  w.line("nvvm.wgmma.commit.group.sync.aligned");
  w.line("nvvm.wgmma.wait.group.sync.aligned 1");
}

// The proxy fence after the threads' writes of a stage (st.shared, cp.async) and before
// wgmma reads it: wgmma reads shared memory through the async proxy.
void proxyFence(Writer &w) {
  w.line("nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = "
         "#nvvm.shared_space<cta>}");
}

// The stage (bytes from the aligned start) of the slice `ahead` slices after the one at %k0.
std::string stageOf(Writer &w, int ahead) {
  std::string slice = w.addConst(w.div("%k0", w.index(kSlice)), ahead);
  return w.mul(w.rem(slice, w.index(kStages)), w.index(kStageBytes));
}

// The slice `ahead` slices after %k0 (clamped to %k0's past K, whose copies then read nothing)
// and whether it is in K.
std::pair<std::string, std::string> sliceAhead(Writer &w, int ahead) {
  std::string k = w.addConst("%k0", ahead * kSlice);
  std::string in = w.let("arith.cmpi ult, " + k + ", %k : index");
  return {w.let("arith.select " + in + ", " + k + ", %k0 : index"), in};
}

// One iteration of the K loop, the slice s at %k0 in stage s % 3, x's slice s + 2 in
// registers (`xRegs`, replaced by s + 3's): see the header.
void slice(Writer &w, const GemmKernelSpec &spec, const Block &b, std::string acc[2],
           std::vector<std::string> &xRegs) {
  std::string current = stageOf(w, 0), ahead = stageOf(w, 2);
  multiply(w, spec, b, w.let("arith.index_cast " + current + " : index to i64"), acc);
  w.line("gpu.barrier");
  storeX(w, b, xRegs, ahead);
  auto [kCopy, copied] = sliceAhead(w, 2);
  std::string group =
      w.let("nvgpu.device_async_create_group " + joined(copyW(w, spec, b, kCopy, ahead, copied)));
  xRegs = loadX(w, b, sliceAhead(w, 3).first);
  w.line("nvgpu.device_async_wait " + group + " {numGroups = 1 : i32}");
  proxyFence(w);
  w.line("gpu.barrier");
}

// The epilogue of half `half`'s accumulators (see the file's header for their rows and
// columns); SwiGLU's gate g of out's column c is the tile's column 64g + c, register r + 32g.
void storeHalf(Writer &w, const GemmKernelSpec &spec, const Block &b, int half,
               const std::string &acc) {
  const bool pastN = spec.N % outColumns(spec) != 0;
  std::string row0 = w.add(w.add(w.addConst(b.bm, 64 * half), w.mul(b.warp, w.index(16))), b.g);
  std::string col0 = w.add(b.bn, w.mul(b.t, w.index(2)));
  for (int r = 0; r < kRegisters / spec.gates(); r += 2) {
    std::string row = w.addConst(row0, 8 * ((r % 4) / 2)), col = w.addConst(col0, 8 * (r / 4));
    w.line("scf.if " + w.let("arith.cmpi ult, " + row + ", %m : index") + " {");
    auto sum = [&](int gate) {
      const int at = r + gate * kRegisters / 2;
      std::string lo =
          w.let("llvm.extractvalue " + acc + "[" + std::to_string(at) + "] : " + kAccType);
      std::string hi =
          w.let("llvm.extractvalue " + acc + "[" + std::to_string(at + 1) + "] : " + kAccType);
      return w.let("vector.from_elements " + lo + ", " + hi + " : vector<2xf32>");
    };
    storeSumPair(w, spec, pastN, row, col, sum, "");
    w.line("}");
  }
}

} // namespace

std::string wgmmaGemmModule(const GemmKernelSpec &spec) {
  Writer w;
  Block b = blockIndices(w, spec);
  std::string zero = w.let(std::string("llvm.mlir.zero : ") + kAccType);
  // Before the loop: slices 0 and 1 (W's by cp.async, x's rows) into stages 0 and 1, x's
  // slice 2 into registers; slice 0 complete and fenced. Slices past K copy nothing.
  std::string c0 = w.index(0), k1 = w.index(kSlice), k2 = w.index(2 * kSlice);
  std::string all = w.let("arith.cmpi ult, " + c0 + ", %k : index");
  std::string first =
      w.let("nvgpu.device_async_create_group " + joined(copyW(w, spec, b, c0, c0, all)));
  storeX(w, b, loadX(w, b, c0), c0);
  std::string more = w.let("arith.cmpi ult, " + k1 + ", %k : index");
  std::string kRead = w.let("arith.select " + more + ", " + k1 + ", " + c0 + " : index");
  std::string second = w.let("nvgpu.device_async_create_group " +
                             joined(copyW(w, spec, b, kRead, w.index(kStageBytes), more)));
  storeX(w, b, loadX(w, b, kRead), w.index(kStageBytes));
  std::string third = w.let("arith.cmpi ult, " + k2 + ", %k : index");
  std::vector<std::string> xRegs =
      loadX(w, b, w.let("arith.select " + third + ", " + k2 + ", " + c0 + " : index"));
  w.line("nvgpu.device_async_wait " + second + " {numGroups = 1 : i32}");
  proxyFence(w);
  w.line("gpu.barrier");
  // The accumulators and x's registers are the loop's iter_args.
  std::string loop = w.fresh(), iterArgs = "%acc0 = " + zero + ", %acc1 = " + zero,
              types = std::string(kAccType) + ", " + kAccType;
  std::vector<std::string> xArgs;
  for (size_t i = 0; i < xRegs.size(); ++i) {
    xArgs.push_back("%xr" + std::to_string(i));
    iterArgs += ", " + xArgs.back() + " = " + xRegs[i];
    types += ", vector<4xf32>";
  }
  w.line(loop + ":" + std::to_string(2 + xArgs.size()) + " = scf.for %k0 = " + c0 + " to %k step " +
         k1 + " iter_args(" + iterArgs + ") -> (" + types + ") {");
  std::string acc[2] = {"%acc0", "%acc1"};
  slice(w, spec, b, acc, xArgs);
  w.line("scf.yield " + acc[0] + ", " + acc[1] + ", " + joined(xArgs) + " : " + types);
  w.line("}");
  // The last products and copies (zero fill past K) complete before the block's shared
  // memory goes and the accumulators are read.
  w.line("nvvm.wgmma.wait.group.sync.aligned 0");
  w.line("nvgpu.device_async_wait " + first + " {numGroups = 0 : i32}");
  storeHalf(w, spec, b, 0, loop + "#0");
  storeHalf(w, spec, b, 1, loop + "#1");
  std::string body = dynamicSharedViews({{"tiles", viewType(), kWgDynamicShared}}) + w.text;
  return llvm::formatv("  gpu.module @{0}_wg {{\n{1}  }\n", spec.name,
                       gemmKernelFunction(spec.name + "_wg", "bf16", false, "", "", body,
                                          kWgMaxRegisters, kWgThreads))
      .str();
}

std::string wgmmaDynamicSharedEntry(const GemmKernelSpec &spec) {
  return spec.name + "_wg " + std::to_string(kWgDynamicShared) + " bytes";
}

std::string wgmmaAccumulatorAlias() {
  std::string fields;
  for (int r = 0; r < kRegisters; ++r)
    fields += r ? ", f32" : "f32";
  return std::string(kAccType) + " = !llvm.struct<(" + fields + ")>\n";
}

} // namespace mlir::xf
