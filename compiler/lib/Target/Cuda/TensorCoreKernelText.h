//===- TensorCoreKernelText.h - pieces the tensor-core kernels share -*- C++ -*-===//
//
// The tensor-core kernels (TensorCoreGemmSource.cpp, TensorCoreAttentionSource.cpp) are MLIR
// text built by a Writer of fresh SSA names; these are the pieces both write (the tf32
// rounding, the bf16 mma.sync, e^x as ex2.approx), their lowering to NVVM/PTX and the object
// of a launcher: one definition each.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TARGET_CUDA_TENSORCOREKERNELTEXT_H
#define XF_TARGET_CUDA_TENSORCOREKERNELTEXT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mlir::xf {
struct AttentionKernelSpec;
enum class GpuMatmul;
} // namespace mlir::xf

namespace mlir::xf::tc {

/// The accumulator fragment of one m16n8 mma tile: rows g and g + 8, columns 2t and 2t + 1.
constexpr const char *kAcc = "vector<2x2xf32>";

/// A gpu.func's workgroup attribution `name : type`, 16-byte aligned: the kernels read and
/// write shared tiles with 16-byte accesses (ld/st.shared.v4, ldmatrix, cp.async), and a
/// workgroup buffer is otherwise declared `.align 4` (placed on 16 bytes only by chance).
inline std::string sharedTile(const std::string &name, const std::string &type) {
  return name + " : " + type + " {llvm.align = 16 : i64}";
}

/// A tile of a kernel's dynamic shared memory: `%name`, a memref `type` of `bytes` (a multiple
/// of 16).
struct SharedView {
  std::string name, type;
  int64_t bytes;
};
/// The tiles as `memref.view`s of the function's `gpu.dynamic_shared_memory`, one after another
/// in order (each 16-byte aligned): the lines that open its body.
std::string dynamicSharedViews(const std::vector<SharedView> &tiles);

/// SSA text with fresh names.
struct Writer {
  std::string text;
  int next = 0;
  std::string fresh() { return "%v" + std::to_string(next++); }
  // `op` with "$" for the result: returns the result's name.
  std::string let(const std::string &op) {
    std::string name = fresh();
    text += "      " + name + " = " + op + "\n";
    return name;
  }
  void line(const std::string &op) { text += "      " + op + "\n"; }
  std::string index(int64_t v) { return let("arith.constant " + std::to_string(v) + " : index"); }
  std::string add(const std::string &a, const std::string &b) {
    return let("arith.addi " + a + ", " + b + " : index");
  }
  std::string mul(const std::string &a, const std::string &b) {
    return let("arith.muli " + a + ", " + b + " : index");
  }
  std::string div(const std::string &a, const std::string &b) {
    return let("arith.divui " + a + ", " + b + " : index");
  }
  std::string rem(const std::string &a, const std::string &b) {
    return let("arith.remui " + a + ", " + b + " : index");
  }
  std::string min(const std::string &a, const std::string &b) {
    return let("arith.minui " + a + ", " + b + " : index");
  }
  std::string addConst(const std::string &a, int64_t c) { return c ? add(a, index(c)) : a; }
  std::string vec2(double v) {
    return let(llvm::formatv("arith.constant dense<{0:e}> : vector<2xf32>", v).str());
  }
  std::string f(const char *op, const std::string &a, const std::string &b) {
    return let(std::string(op) + " " + a + ", " + b + " : vector<2xf32>");
  }
};

/// A vector<`shape`xf32> (vector<4xf32>, a fragment's vector<4x1xf32>, ...) rounded to tf32
/// (nearest, ties away): the tensor cores read 19 bits.
std::string roundToTf32(Writer &w, const std::string &v, const std::string &shape = "4");

/// c + a · b on m16n8k16 bf16 tensor cores, a and b as their 32-bit registers of bf16 pairs
/// (4 and 2), c a kAcc fragment. nvgpu.mma.sync takes f16 but not bf16 operands, so this is
/// NVVM's op.
std::string bf16MmaRegisters(Writer &w, const std::vector<std::string> &a,
                             const std::vector<std::string> &b, const std::string &c);
/// The 32-bit registers of a fragment of bf16 pairs (`type`, e.g. vector<4x2xbf16>).
std::vector<std::string> bf16Registers(Writer &w, const std::string &frag, int count,
                                       const char *type);
/// The same on fragments: a vector<4x2xbf16>, b vector<2x2xbf16>.
std::string bf16Mma(Writer &w, const std::string &a, const std::string &b, const std::string &c);

/// 2^a of a vector<2xf32> by NVVM's ex2.approx.f32 (relative error ~2^-22): math.exp2 would
/// become a libdevice call, and no libdevice is linked.
std::string exp2(Writer &w, const std::string &a);

/// An attention kernel's module: a header line the emulator reads (name, heads, d, mask,
/// scale, `products`, then `more`), the gpu.module of attentionKernelEntry and `function`.
std::string attentionModule(const AttentionKernelSpec &spec, GpuMatmul precision,
                            llvm::StringRef products, llvm::StringRef more,
                            llvm::StringRef function);

/// A flash attention block's indices (both attention kernels: a block per `queries` queries of
/// one query head, grid x × y = query blocks × heads): its thread, head, K/V head (`group` query
/// heads a K/V head), first query bm, Mz − M (a query's position minus its row), M − 1, Mz − 1.
struct AttentionBlock {
  std::string tid, head, kvHead, bm, offset, mLast, mzLast;
};
/// Causal attentions' blocks run heads fastest and the last query blocks first.
AttentionBlock attentionBlock(Writer &w, int64_t group, bool causal, int queries);

/// A flash attention's key tiles of a block of `queries` queries starting at query `bm` (query
/// i at position i + `offset`, `offset` = Mz − M; `mLast` = M − 1): [0, first) every row of the
/// block sees whole, [first, second) with the mask; causal tiles past the block's last query
/// not at all. Both attention kernels (tensor cores, FMA) loop so.
std::pair<std::string, std::string> attentionTileBounds(Writer &w, bool causal,
                                                        const std::string &bm,
                                                        const std::string &offset,
                                                        const std::string &mLast, int queries);

/// The kernel module `source` (gpu.modules) after nvvm-attach-target (sm_`capability`; a
/// `_wg` module sm_90a) and the lowering to NVVM, or its PTX by LLVM's NVPTX backend
/// (TensorCoreGemmLowering.cpp): the first module's, and into `sm90a` the `_wg` module's.
/// `what` names the kernel in errors.
llvm::Expected<std::string> lowerTensorCoreKernel(llvm::StringRef source, llvm::StringRef what,
                                                  int capability, bool ptx,
                                                  std::string *sm90a = nullptr);

/// `names` joined by ", ".
inline std::string joined(const std::vector<std::string> &names) {
  std::string text;
  for (const std::string &name : names)
    text += (text.empty() ? "" : ", ") + name;
  return text;
}

/// `bytes` as an MLIR string literal with a terminating NUL.
std::string stringLiteral(llvm::StringRef bytes);

/// A launcher's module (LLVM-dialect text) compiled to an object file.
llvm::Error emitLauncherObject(llvm::StringRef moduleText, llvm::StringRef what,
                               llvm::StringRef objectPath);

} // namespace mlir::xf::tc

#endif // XF_TARGET_CUDA_TENSORCOREKERNELTEXT_H
