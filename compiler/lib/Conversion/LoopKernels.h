//===- LoopKernels.h - small kernels as scf loops over raw pointers -*- C++ -*-===//
//
// Norms, softmax, embedding gathers, elementwise ops and layout copies are
// memory-bound and small next to the GEMMs. Each becomes a func.func whose
// body is scf loops over `!llvm.ptr` rows; LLVM vectorizes the inner loops.
// Kernels are created once per distinct signature and shared.
//
// Every kernel takes (pointers..., i64 rows [, extra i64s]) and works on
// dense row-major matrices of a static width.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CONVERSION_LOOPKERNELS_H
#define XF_LIB_CONVERSION_LOOPKERNELS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::xf {

enum class ElementwiseKind { Relu, GeluTanh, GeluErf };

/// Which features of a head rotary embeddings rotate together (xf.rope).
enum class RotaryPairs { Adjacent, Halves };

class LoopKernels {
public:
  explicit LoopKernels(ModuleOp module) : module(module) {}

  /// out[t, :] = table[ids[t], :]            (table, ids, out, rows)
  /// A bfloat16 table is widened exactly (its bits are a float32's top half).
  func::FuncOp gatherRows(int64_t width, bool bf16Table = false);
  /// out[t, :] = table[offset + t, :]        (table, out, rows, offset)
  func::FuncOp positionRows(int64_t width);
  /// Vaswani et al. sinusoids for positions offset..offset+rows-1 (out, rows, offset)
  func::FuncOp sinusoidRows(int64_t width, double base);
  /// out = a + b                             (a, b, out, rows)
  func::FuncOp add(int64_t width, bool broadcastRhs);
  /// out = f(in)                             (in, out, rows)
  func::FuncOp elementwise(int64_t width, ElementwiseKind kind);
  /// LayerNorm / RMSNorm per row             (in, [gamma, [beta]], out, rows)
  func::FuncOp layerNorm(int64_t width, double eps, bool affine);
  func::FuncOp rmsNorm(int64_t width, double eps, bool scaled);
  /// Softmax per row                         (in, out, rows)
  func::FuncOp softmax(int64_t width);
  // The kernels below read inputs with a row stride, so they take column
  // slices of a fused GEMM's result (the gate and up halves of SwiGLU, the
  // Q and K of fused QKV) without a copy.
  /// out = in·σ(in)                          (in, in_stride, out, rows)
  func::FuncOp silu(int64_t width);
  /// out = a ⊙ b                             (a, a_stride, b, b_stride, out, rows)
  func::FuncOp multiply(int64_t width);
  /// Rotary position embeddings of `heads` heads of `headWidth` features,
  /// row t at position offset + t           (in, in_stride, out, rows, offset)
  func::FuncOp rotaryRows(int64_t heads, int64_t headWidth, RotaryPairs pairs, double base);
  /// out[r, c] = in[r, c] with row strides   (in, in_stride, out, out_stride, rows, cols)
  func::FuncOp copy2d();
  /// out[c, r] = in[r, c], in is [rows, cols] (in, out, rows, cols)
  func::FuncOp transpose2d();

private:
  /// A private kernel taking `signature` ('p' = !llvm.ptr, 'i' = i64);
  /// `body` is left at the start of its entry block.
  func::FuncOp declare(llvm::StringRef name, llvm::StringRef signature, OpBuilder &body);
  /// LayerNorm and RMSNorm share one body (in, [γ, [β]], out, rows).
  func::FuncOp normalizeRows(const std::string &name, int64_t width, double eps, bool center,
                             unsigned affineParams);
  ModuleOp module;
  llvm::StringMap<func::FuncOp> cache;
};

} // namespace mlir::xf

#endif // XF_LIB_CONVERSION_LOOPKERNELS_H
