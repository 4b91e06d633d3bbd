//===- HalideCalls.h - calling AOT Halide pipelines from host code -*- C++ -*-===//
//
// A Halide pipeline compiled ahead of time takes `halide_buffer_t *` per
// input and output. The host builds each descriptor on its stack: host
// pointer, float32 type, and per dimension (min 0, extent, stride), dim 0
// innermost (docs/abi.md).
//
//===----------------------------------------------------------------------===//

#ifndef XF_CODEGEN_HALIDECALLS_H
#define XF_CODEGEN_HALIDECALLS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::xf {

/// One buffer argument: `host` points at element (0, 0); dims innermost
/// first, each an i64 (extent, stride in elements).
struct HalideBufferArg {
  Value host;
  SmallVector<std::pair<Value, Value>, 2> dims;
  bool bf16 = false;  // bfloat16 elements instead of float32
  bool f16 = false;   // IEEE float16 elements instead of float32 (a half KV cache)
  bool bytes = false; // uint8 elements (ggml weight blocks) instead of float32
  bool int32 = false; // int32 elements (token ids) instead of float32
  bool int64 = false; // int64 elements (positions, cache slots) instead of float32
  /// A device output that a pipeline scatters into (its pure definition undefined): Halide
  /// then insists on a host pointer, so the descriptor's host field repeats the device
  /// address. Never dereferenced: the buffer is not host-dirty, so Halide copies nothing.
  bool hostAlias = false;
};

/// Emits the descriptors and `call @name(...)`; returns its i32 status.
/// `scalars` (i32 or f32 values) go between the inputs and the outputs, the
/// last `outputs` buffers. With `device`, every pointer is a CUDA device address: the
/// descriptors carry it as their device handle with Halide's CUDA device
/// interface and no host pointer, so the pipeline neither copies nor
/// allocates (docs/gpu.md).
Value callHalidePipeline(OpBuilder &b, Location loc, ModuleOp module,
                         llvm::StringRef name, ArrayRef<HalideBufferArg> args,
                         ArrayRef<Value> scalars = {}, bool device = false,
                         unsigned outputs = 1);

} // namespace mlir::xf

#endif // XF_CODEGEN_HALIDECALLS_H
