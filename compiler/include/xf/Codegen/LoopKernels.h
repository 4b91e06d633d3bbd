//===- LoopKernels.h - small kernels as scf loops over raw pointers -*- C++ -*-===//
//
// Norms, softmax, embedding gathers, elementwise ops and layout copies are
// memory-bound and small next to the GEMMs. Each becomes a func.func whose
// body is scf loops over `!llvm.ptr` rows; LLVM vectorizes the inner loops.
// Kernels are created once per distinct signature and shared.
//
// Every kernel takes (pointers..., i64 rows [, extra i64s]) and works on
// dense row-major matrices of a static width. Its #xf.loop_schedule decides
// whether the rows run as one loop or as parallel tasks (finish()); the
// loop itself lives in a body function `<kernel>_rows` over a row range.
//
//===----------------------------------------------------------------------===//

#ifndef XF_CODEGEN_LOOPKERNELS_H
#define XF_CODEGEN_LOOPKERNELS_H

#include "xf/Codegen/HalideKernels.h"
#include "xf/Codegen/KernelSchedules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

#include <optional>

namespace mlir::xf {

struct Emitter;

enum class ElementwiseKind { Relu, GeluTanh, GeluErf };

/// The activation whose derivative an activation-gradient kernel applies.
enum class ActivationGradKind { Relu, GeluTanh, GeluErf, Silu };

/// Which features of a head rotary embeddings rotate together (xf.rope).
enum class RotaryPairs { Adjacent, Halves };
/// Rotary positions applied to keys as they are appended to a KV cache (appendKeyValues).
struct KeyRotation {
  RotaryPairs pairs;
  int64_t headWidth;
  double base;
};

class LoopKernels {
public:
  explicit LoopKernels(ModuleOp module) : module(module) {}

  /// The schedule of the kernels requested from now on (the op's
  /// #xf.loop_schedule); layout copies (copy2d, transpose2d) stay serial.
  void useSchedule(const LoopSchedule &s) { schedule = s; }

  /// Under a CUDA target (docs/gpu.md) every kernel keeps its name and
  /// arguments, which are then device addresses, and its body calls the Halide
  /// CUDA pipeline `<name>_gpu` (LoopKernelsCuda.cpp) instead of looping;
  /// deviceKernels() lists those pipelines. Schedules do not apply.
  void setDevice(bool cuda) { device = cuda; }
  const std::vector<DeviceLoopKernelSpec> &deviceKernels() const { return deviceSpecs; }

  /// out[t, :] = table[ids[t], :]            (table, ids, out, rows)
  /// A bfloat16 table is widened exactly (its bits are a float32's top half).
  func::FuncOp gatherRows(int64_t width, bool bf16Table = false);
  /// out[t, :] = table[offset + t, :]        (table, out, rows, offset)
  func::FuncOp positionRows(int64_t width);
  /// out[t, :] = table[ids[t], :] + positions[offset + t, :], one launch (device only: the
  /// CPU build keeps the gather, the positions and the add)
  ///                                         (table, ids, positions, out, rows, offset)
  func::FuncOp gatherPositionRows(int64_t width, bool bf16Table);
  /// Device only, each row at its own position (a packed batch's step table, docs/abi.md):
  /// out[t, :] = table[at[t], :]             (table, at, out, rows)
  func::FuncOp positionRowsAt(int64_t width);
  /// out[t, :] = table[ids[t], :] + positions[at[t], :]  (table, ids, positions, at, out, rows)
  func::FuncOp gatherPositionRowsAt(int64_t width, bool bf16Table);
  /// Vaswani et al. sinusoids for positions offset..offset+rows-1 (out, rows, offset)
  func::FuncOp sinusoidRows(int64_t width, double base);
  /// out = a + b                             (a, b, out, rows)
  func::FuncOp add(int64_t width, bool broadcastRhs);
  /// out = f(in)                             (in, out, rows)
  func::FuncOp elementwise(int64_t width, ElementwiseKind kind);
  /// out = factor · in                      (in, out, rows)
  func::FuncOp scale(int64_t width, double factor);
  /// out = factor · in, factor known when the model runs (in, out, rows,
  /// factor: an f64's bits as an i64)
  func::FuncOp scaleBy(int64_t width);
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
  /// row t at position offset + t           (in, in_stride, out, rows, offset);
  /// `inverse` turns by −θ (the backward of xf.rope); `halfOut` writes float16 rows (a
  /// half KV cache's keys).
  func::FuncOp rotaryRows(int64_t heads, int64_t headWidth, RotaryPairs pairs, double base,
                          bool inverse = false, bool halfOut = false);
  /// out[r, c] = in[r, c] with row strides   (in, in_stride, out, out_stride, rows, cols)
  func::FuncOp copy2d();
  /// copy2d into float16 rows, rounded to nearest even (a half KV cache's new rows); CPU only
  func::FuncOp copy2dToHalf();
  /// out[c, r] = in[r, c], in is [rows, cols] (in, out, rows, cols)
  func::FuncOp transpose2d();
  /// A cached attention's new rows of K and V, `heads` heads of `width` side by side in each
  /// source row, into the cache's [heads][cache rows][width] slots, in one device launch
  /// (the CPU build copies head by head with copy2d). CUDA only.
  /// (keys, key_stride, values, value_stride, key_cache, value_cache, head_stride, rows,
  ///  width, heads[, position]); the caches point at the first new row of head 0. With
  /// `rotation` (xf.attention's rope fused on the GPU) the new keys turn as rotaryRows turns
  /// them at their positions (position + row) on their way into the cache.
  func::FuncOp appendKeyValues(std::optional<KeyRotation> rotation = std::nullopt);
  /// A batched decode step's rows, row t to position at[t] of slot slots[t] of the caches of
  /// every slot, one launch (device only; DeviceLoopKernelSpec::rowPositions)
  /// (keys, keyStride, values, valueStride, keyCache, valueCache, headStride, slotStride,
  ///  positions, slotCount, rows, width, heads, at, slots)
  func::FuncOp appendKeyValuesAt(std::optional<KeyRotation> rotation = std::nullopt);

  // ---- Backward (the ops of xf-differentiate; BackwardLoopKernels.cpp) ----
  // Kernels marked "serial" sum over rows into one accumulator and ignore
  // the schedule's tasks; "acc +=" kernels add into what the caller zeroed.
  // Rows whose target is negative have none: they add nothing, and n counts the others.
  /// loss = (1/n)·Σ_t [logsumexp(z_t) − z_t[y_t]], serial (logits, targets, loss, rows)
  func::FuncOp crossEntropy(int64_t width);
  /// out = (softmax(z_t) − onehot(y_t)) / n, and terms[t] = logsumexp(z_t) − z_t[y_t]
  /// (0 without a target): the loss's terms from the same pass over the row
  /// (logits, targets, out, terms, rows)
  func::FuncOp crossEntropyGrad(int64_t width);
  /// loss = (1/n)·Σ_t terms[t] in f64, serial (terms, targets, loss, rows)
  func::FuncOp crossEntropyMean();
  /// dx of LayerNorm (`center`) or RMSNorm      (x, dy, [gamma], out, rows)
  func::FuncOp normalizeGrad(int64_t width, double eps, bool center, bool scaled);
  /// acc += Σ_t dy_t ⊙ x̂_t, serial             (x, dy, acc, rows)
  func::FuncOp normalizeGammaGrad(int64_t width, double eps, bool center);
  /// acc += Σ_t in_t, serial                    (in, acc, rows)
  func::FuncOp rowSum(int64_t width);
  /// out = dy ⊙ f'(x)                          (x, x_stride, dy, out, rows)
  func::FuncOp activationGrad(int64_t width, ActivationGradKind kind);
  /// acc[ids[t], :] += dy[t, :], serial         (ids, dy, acc, acc_stride, rows)
  func::FuncOp tokenEmbedGrad(int64_t width);
  /// acc[t, :] += dy[t, :]                      (dy, acc, acc_stride, rows)
  func::FuncOp positionGrad(int64_t width);
  /// out = [0 | in | 0], in at column `offset` of `outWidth` (in, out, rows)
  func::FuncOp sliceGrad(int64_t width, int64_t outWidth, int64_t offset);
  /// out[r, c] += in[r, c]                      (in, in_stride, out, out_stride, rows, cols)
  func::FuncOp accumulate2d();
  /// Weight-gradient chunks (docs/training.md): out[c, t] = in[t, c] for
  /// t < valid, 0 up to `chunk`            (in, in_stride, out, valid, chunk, cols)
  func::FuncOp transposeChunk();
  /// out[t, c] = in[t, c] for t < valid, 0 up to `chunk` (in, in_stride, out, valid, chunk, cols)
  func::FuncOp padChunk();
  /// xf.attention_grad, P recomputed one query row at a time; tasks over
  /// key/value heads (a task owns its dK, dV columns). `work`: 2·key_rows
  /// floats per key/value head. key_rows = rows except for cross-attention.
  /// (q, q_stride, k, k_stride, v, v_stride, dy, dy_stride, dq, dk, dv, work, rows, key_rows,
  ///  kv_heads)
  func::FuncOp attentionGrad(int64_t heads, int64_t kvHeads, int64_t dK, int64_t dV, bool causal,
                             double scale);

private:
  static constexpr const char *kBodySuffix = "_rows";
  /// The body of kernel `name` taking `signature` ('p' = !llvm.ptr, 'i' =
  /// i64) and then the row range [begin, end) it computes; `body` is left at
  /// the start of its entry block.
  func::FuncOp declare(llvm::StringRef name, llvm::StringRef signature, OpBuilder &body);
  /// Kernel `name` taking `signature`: `emit` fills its body, given an
  /// Emitter at the body's entry and the body's arguments (the row range
  /// last); finish() then wraps it per `s`.
  func::FuncOp rowKernel(const std::string &name, llvm::StringRef signature,
                         const LoopSchedule &s, unsigned rowsArg,
                         llvm::function_ref<void(Emitter &e, ValueRange args)> emit);
  /// The kernel itself: runs the body over all rows, in tasks if `s` says so.
  /// Argument `rowsArg` is the number of rows.
  func::FuncOp finish(func::FuncOp body, const LoopSchedule &s, unsigned rowsArg);
  /// The halide_do_par_for task running one slice of rows of `kernel`.
  func::FuncOp taskOf(func::FuncOp body, func::FuncOp kernel, const LoopSchedule &s,
                      unsigned rowsArg);
  func::FuncOp parallelFor();
  static std::string scheduleSuffix(const LoopSchedule &s);
  /// LayerNorm and RMSNorm share one body (in, [γ, [β]], out, rows).
  /// out = f(in) element by element (in, out, rows): elementwise and scale.
  func::FuncOp mapRows(const std::string &name, const LoopSchedule &kernelSchedule,
                       int64_t width, llvm::function_ref<Value(OpBuilder &, Location, Value)> f);
  func::FuncOp normalizeRows(const std::string &name, const LoopSchedule &kernelSchedule,
                             int64_t width, double eps, bool center, unsigned affineParams);
  struct DeviceCall;
  /// The kernel `name` taking `signature` ('p', 'i' as declare()) as a call
  /// of the CUDA pipeline of `spec`, whose arguments `describe` builds.
  func::FuncOp deviceKernel(const std::string &name, llvm::StringRef signature,
                            DeviceLoopKernelSpec spec,
                            llvm::function_ref<void(DeviceCall &)> describe);
  ModuleOp module;
  LoopSchedule schedule;
  bool device = false;
  std::vector<DeviceLoopKernelSpec> deviceSpecs;
  llvm::StringMap<func::FuncOp> cache;
};

} // namespace mlir::xf

#endif // XF_CODEGEN_LOOPKERNELS_H
