//===- XfKernelAttrs.cpp - kernel descriptions ----------------------------===//
//
// The verifiers state what every generator needs of a kernel: positive
// shapes, and the combinations of weight layout, storage and packing that
// exist (ggml blocks run along K of an [N, K] weight; a weight packed at
// load is packed by the schedule's tiles, from floats).
//
//===----------------------------------------------------------------------===//

#include "xf/IR/XfDialect.h"
#include "xf/IR/XfOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::xf;

LogicalResult GemmKernelAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t k,
                                     int64_t n, WeightLayout weight, WeightStorage storage,
                                     bool bf16Inputs, bool packed, bool, bool, Activation,
                                     GemmScheduleAttr schedule, GpuGemmScheduleAttr,
                                     std::optional<GemmNorm> norm, APFloat normEpsilon,
                                     bool normGamma, bool normBeta, int64_t mergeHeads,
                                     int64_t mergeRanges) {
  if (k < 1 || n < 1)
    return emitError() << "#xf.gemm_kernel: k = " << k << " and n = " << n
                       << " must be positive";
  if (!schedule)
    return emitError() << "#xf.gemm_kernel: needs a schedule";
  const bool blocks = storage != WeightStorage::f32 && storage != WeightStorage::bf16;
  if (blocks && (weight != WeightLayout::nk || k % 32 != 0))
    return emitError() << "#xf.gemm_kernel: a weight of " << stringifyWeightStorage(storage)
                       << " blocks needs weight = nk and k a multiple of 32 (k = " << k << ")";
  if (bf16Inputs && storage != WeightStorage::bf16)
    return emitError() << "#xf.gemm_kernel: bf16_inputs needs storage = bf16";
  if (packed && (blocks || !schedule.getPackWeights()))
    return emitError() << "#xf.gemm_kernel: a packed weight needs the schedule's pack_weights "
                          "and no blocks";
  if (!norm && (normGamma || normBeta || !normEpsilon.isZero()))
    return emitError() << "#xf.gemm_kernel: norm_epsilon, norm_gamma and norm_beta need a norm";
  if (norm && !(normEpsilon.convertToDouble() >= 0))
    return emitError() << "#xf.gemm_kernel: norm_epsilon must be non-negative";
  if (normBeta && (norm != GemmNorm::layer_norm || !normGamma))
    return emitError() << "#xf.gemm_kernel: norm_beta needs norm = layer_norm and norm_gamma";
  if (mergeHeads < 0 || mergeRanges < 0 || (mergeHeads > 0) != (mergeRanges > 0) ||
      (mergeHeads > 0 && (k % mergeHeads != 0 || weight != WeightLayout::kn || norm)))
    return emitError() << "#xf.gemm_kernel: merge_heads and merge_ranges must be positive "
                          "together, merge_heads divide k, with weight = kn and no norm";
  return success();
}

LogicalResult AttentionKernelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                          int64_t heads, int64_t kvHeads, int64_t dk, int64_t dv,
                                          bool causal, APFloat scaleValue,
                                          std::optional<RopePairing> rope, APFloat ropeBaseValue,
                                          bool, bool batchedDecode, bool, bool,
                                          AttentionScheduleAttr schedule,
                                          GpuAttentionScheduleAttr) {
  const double scale = scaleValue.convertToDouble(), ropeBase = ropeBaseValue.convertToDouble();
  if (heads < 1 || kvHeads < 1 || dk < 1 || dv < 1)
    return emitError() << "#xf.attention_kernel: heads, kv_heads, dk and dv must be positive";
  if (heads % kvHeads != 0)
    return emitError() << "#xf.attention_kernel: kv_heads = " << kvHeads
                       << " must divide heads = " << heads;
  if (!std::isfinite(scale) || scale == 0)
    return emitError() << "#xf.attention_kernel: scale must be finite and nonzero";
  if (rope && (dk % 2 != 0 || !(ropeBase > 1) || !std::isfinite(ropeBase)))
    return emitError() << "#xf.attention_kernel: rope needs an even dk and a finite rope_base "
                          "above 1";
  if (batchedDecode && !causal)
    return emitError() << "#xf.attention_kernel: batched_decode needs causal";
  if (!schedule)
    return emitError() << "#xf.attention_kernel: needs a schedule";
  return success();
}

LogicalResult DeviceLoopKernelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                           DeviceLoopKernelKind kind, int64_t width,
                                           int64_t heads, int64_t headWidth, APFloat constant,
                                           DeviceLoopMap, bool, int64_t affineParams,
                                           bool rowPositions) {
  if (width < 0 || heads < 0 || headWidth < 0)
    return emitError() << "#xf.device_loop_kernel: width, heads and head_width must not be "
                          "negative";
  if (!constant.isFinite())
    return emitError() << "#xf.device_loop_kernel: constant must be finite";
  if (affineParams < 0 || affineParams > 2)
    return emitError() << "#xf.device_loop_kernel: affine_params must be 0, 1 or 2";
  if (rowPositions && kind != DeviceLoopKernelKind::position &&
      kind != DeviceLoopKernelKind::gather_positions &&
      kind != DeviceLoopKernelKind::append_key_values)
    return emitError() << "#xf.device_loop_kernel: row_positions needs kind position, "
                          "gather_positions or append_key_values";
  return success();
}
