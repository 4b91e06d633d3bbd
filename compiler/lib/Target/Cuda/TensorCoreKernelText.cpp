//===- TensorCoreKernelText.cpp - pieces the tensor-core kernels share ----===//

#include "TensorCoreKernelText.h"

#include "xf/Target/TensorCoreAttention.h"

namespace mlir::xf::tc {

std::string roundToTf32(Writer &w, const std::string &v, const std::string &shape) {
  // + half an ulp of tf32, low 13 bits cleared.
  std::string f = "vector<" + shape + "xf32>", i = "vector<" + shape + "xi32>";
  std::string bits = w.let("arith.bitcast " + v + " : " + f + " to " + i);
  std::string half = w.let("arith.constant dense<4096> : " + i);
  std::string mask = w.let("arith.constant dense<-8192> : " + i);
  std::string sum = w.let("arith.addi " + bits + ", " + half + " : " + i);
  std::string low = w.let("arith.andi " + sum + ", " + mask + " : " + i);
  return w.let("arith.bitcast " + low + " : " + i + " to " + f);
}

std::string dynamicSharedViews(const std::vector<SharedView> &tiles) {
  const std::string bytes = "memref<?xi8, #gpu.address_space<workgroup>>";
  std::string text = "      %smem = gpu.dynamic_shared_memory : " + bytes + "\n";
  int64_t at = 0;
  for (const SharedView &t : tiles) {
    text += llvm::formatv("      %{0}_at = arith.constant {1} : index\n"
                          "      %{0} = memref.view %smem[%{0}_at][] : {2} to {3}\n",
                          t.name, at, bytes, t.type)
                .str();
    at += t.bytes;
  }
  return text;
}

std::string bf16MmaRegisters(Writer &w, const std::vector<std::string> &a,
                             const std::vector<std::string> &b, const std::string &c) {
  auto list = [](const std::vector<std::string> &regs) {
    std::string text;
    for (size_t r = 0; r < regs.size(); ++r)
      text += (r ? ", " : "") + regs[r];
    return text;
  };
  std::vector<std::string> cRegs;
  for (int e = 0; e < 4; ++e)
    cRegs.push_back(w.let(
        llvm::formatv("vector.extract {0}[{1}, {2}] : f32 from {3}", c, e / 2, e % 2, kAcc).str()));
  const char *result = "!llvm.struct<(f32, f32, f32, f32)>";
  std::string d = w.let(
      "nvvm.mma.sync A[" + list(a) + "] B[" + list(b) + "] C[" + list(cRegs) +
      "] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, "
      "multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, "
      "shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> " +
      result);
  std::vector<std::string> elems;
  for (int e = 0; e < 4; ++e)
    elems.push_back(w.let("llvm.extractvalue " + d + "[" + std::to_string(e) + "] : " + result));
  return w.let("vector.from_elements " + list(elems) + " : " + kAcc);
}

std::vector<std::string> bf16Registers(Writer &w, const std::string &frag, int count,
                                       const char *type) {
  std::vector<std::string> regs;
  for (int r = 0; r < count; ++r) {
    std::string pair = w.let("vector.extract " + frag + "[" + std::to_string(r) +
                             "] : vector<2xbf16> from " + type);
    std::string word = w.let("vector.bitcast " + pair + " : vector<2xbf16> to vector<1xi32>");
    regs.push_back(w.let("vector.extract " + word + "[0] : i32 from vector<1xi32>"));
  }
  return regs;
}

std::string bf16Mma(Writer &w, const std::string &a, const std::string &b, const std::string &c) {
  std::vector<std::string> aRegs = bf16Registers(w, a, 4, "vector<4x2xbf16>");
  std::vector<std::string> bRegs = bf16Registers(w, b, 2, "vector<2x2xbf16>");
  return bf16MmaRegisters(w, aRegs, bRegs, c);
}

std::string exp2(Writer &w, const std::string &a) {
  std::string lanes;
  for (int i = 0; i < 2; ++i) {
    std::string s =
        w.let("vector.extract " + a + "[" + std::to_string(i) + "] : f32 from vector<2xf32>");
    lanes += (i ? ", " : "") +
             w.let("llvm.call_intrinsic \"llvm.nvvm.ex2.approx.f32\"(" + s + ") : (f32) -> f32");
  }
  return w.let("vector.from_elements " + lanes + " : vector<2xf32>");
}

std::string attentionModule(const AttentionKernelSpec &spec, GpuMatmul precision,
                            llvm::StringRef products, llvm::StringRef more,
                            llvm::StringRef function) {
  return llvm::formatv("// {0}: attention {1} heads over {2} K/V heads, d = {3}, {4}, scale "
                       "{5:e17}, {6}, float32 softmax and sums{7}\n"
                       "module attributes {{gpu.container_module} {{\n"
                       "  gpu.module @{8} {{\n{9}  }\n}\n",
                       spec.name, spec.heads, spec.keyValueHeads(), spec.dK,
                       spec.causal ? "causal" : "not causal", spec.scale, products, more,
                       attentionKernelEntry(spec, precision), function)
      .str();
}

AttentionBlock attentionBlock(Writer &w, int64_t group, bool causal, int queries) {
  AttentionBlock b;
  b.tid = w.let("gpu.thread_id x");
  if (causal) {
    // The launch's grid is (query blocks, heads); its blocks run heads fastest and the last
    // query blocks first: a causal block's work grows with its queries, so the heaviest blocks
    // of every head start first, one an SM, and the lightest fill in behind them.
    std::string gx = w.let("gpu.grid_dim x"), gy = w.let("gpu.grid_dim y");
    std::string linear = w.add(w.mul(w.let("gpu.block_id y"), gx), w.let("gpu.block_id x"));
    b.head = w.rem(linear, gy);
    std::string fromLast = w.div(linear, gy);
    std::string bx =
        w.let("arith.subi " + w.let("arith.subi " + gx + ", " + w.index(1) + " : index") + ", " +
              fromLast + " : index");
    b.bm = w.mul(bx, w.index(queries));
  } else { // every block the same work: launch order (fewer registers held: BERT's tf32
           // kernel spilled with the remapping)
    std::string bx = w.let("gpu.block_id x");
    b.head = w.let("gpu.block_id y");
    b.bm = w.mul(bx, w.index(queries));
  }
  b.kvHead = group == 1 ? b.head : w.div(b.head, w.index(group));
  b.offset = w.let("arith.subi %mz, %m : index");
  std::string one = w.index(1);
  b.mLast = w.let("arith.subi %m, " + one + " : index");
  b.mzLast = w.let("arith.subi %mz, " + one + " : index");
  return b;
}

std::pair<std::string, std::string> attentionTileBounds(Writer &w, bool causal,
                                                        const std::string &bm,
                                                        const std::string &offset,
                                                        const std::string &mLast, int queries) {
  std::string c64 = w.index(kTcAttentionKeys);
  std::string whole = w.div("%mz", c64);
  std::string all = w.div(w.addConst("%mz", kTcAttentionKeys - 1), c64);
  if (!causal)
    return {whole, all};
  // The block's first query sees keys [0, bm + offset]; its last, up to
  // min(bm + queries − 1, M − 1).
  std::string first = w.add(bm, offset);
  std::string last = w.add(w.min(w.addConst(bm, queries - 1), mLast), offset);
  std::string unmasked = w.min(w.div(w.addConst(first, 1), c64), whole);
  std::string end = w.min(w.div(w.addConst(last, kTcAttentionKeys), c64), all);
  return {unmasked, end};
}

} // namespace mlir::xf::tc
