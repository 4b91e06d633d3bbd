//===- DecodeAttentionCall.h - decode steps' attention in libxfrt -*- C++ -*-===//
//
// With HostOptions::decodeAttentionIsa >= 0 (xfc's default on x86 CPUs with AVX2), a cached
// call of causal self-attention calls libxfrt's xfrt_decode_attention
// (runtime/include/xfrt/DecodeAttention.h) when its query has one row — a decode step — and its
// Halide kernel otherwise: a run-time branch, since rows are dynamic.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CONVERSION_DECODEATTENTIONCALL_H
#define XF_LIB_CONVERSION_DECODEATTENTIONCALL_H

#include "xf/Codegen/HalideKernels.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::xf {

/// The operands of one call; pointers are !llvm.ptr, counts and strides (in elements) i64.
struct DecodeAttentionCall {
  Value query, rows;                   // rows of the query matrix (its row stride is unused)
  Value keys;                          // cached keys, the new rows included
  Value newKey, newValue;              // the step's K and V rows (heads side by side, float32)
  Value key, keyHeadStride;            // the K cache slot: [H_kv][positions][d_k]
  Value value, valueHeadStride;        // the V cache slot: [H_kv][positions][d_v]
  Value out;
  const AttentionKernelSpec *spec;     // keys already rotated in the cache, if rotary
  int isaCeiling;                      // decodeAttentionIsaCeiling of the target
};

/// The batched decode step of n sequences (xf_forward_cached_packed): sequence i's query row i,
/// its cache slot slots[i], its position starts[i]; the new K/V rows already stored.
struct BatchedDecodeAttentionCall {
  Value query, queryStride, count;                  // rows of the query matrix and their stride
  Value slots, starts;                              // int64 arrays of count entries
  Value key, value;                                 // K and V of slot 0: [H_kv][positions][d] each
  Value slotStride, keyHeadStride, valueHeadStride; // elements
  Value out, outStride;
  const AttentionKernelSpec *spec;
  int isaCeiling;
};

/// Whether xfrt_decode_attention computes this kernel's decode step: causal attention over
/// cached (already rotated) keys, head widths 64 or 128.
bool decodeAttentionHandles(const AttentionKernelSpec &spec);

/// `rows == 1 ? xfrt_decode_attention(...) : halidePipeline()`; returns the i32 status.
Value callDecodeAttentionOrPipeline(OpBuilder &b, Location loc, ModuleOp module,
                                    const DecodeAttentionCall &call,
                                    llvm::function_ref<Value()> halidePipeline);

/// xfrt_decode_attention_batched(...); returns the i32 status.
Value callBatchedDecodeAttention(OpBuilder &b, Location loc, ModuleOp module,
                                 const BatchedDecodeAttentionCall &call);

} // namespace mlir::xf

#endif // XF_LIB_CONVERSION_DECODEATTENTIONCALL_H
