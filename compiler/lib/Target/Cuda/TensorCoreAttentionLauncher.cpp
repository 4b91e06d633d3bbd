//===- TensorCoreAttentionLauncher.cpp - the host side of tensor-core attention ===//
//
// An attention on the tensor-core path keeps its name and CUDA Halide ABI (`int name(q, k, v,
// partials, out)`: CudaAttentionCall.cpp), so the host code is unchanged. Its object holds the
// kernel's PTX and `name` as a few LLVM-dialect lines: call libxfrt's
// xfrt_tensor_core_attention (TensorCoreLaunch.cpp) with the kernel's functions (entries, their
// blocks' queries and dynamic shared memory: attentionBlockShapes), and when that answers
// kTcNotTaken (fewer than kTcAttentionMinRows query rows: a decode step, whose key ranges the host
// has just computed into `partials`) call `<name>_fp32`, Halide's pipeline compiled beside it,
// which merges them.
//
//===----------------------------------------------------------------------===//

#include "xf/Target/TensorCoreAttention.h"

#include "TensorCoreKernelText.h"

#include "llvm/Support/FormatVariadic.h"

namespace mlir::xf {
namespace {

std::string launcherSource(const AttentionKernelSpec &spec, GpuMatmul precision,
                           llvm::StringRef ptx) {
  // The kernel's functions: their entries, each ended by a NUL (the list by two), and per
  // entry its block's queries and dynamic shared memory.
  std::string entries, blocks;
  std::vector<AttentionBlockShape> shapes = attentionBlockShapes(spec, precision);
  for (const AttentionBlockShape &shape : shapes) {
    entries += shape.entry + '\0';
    blocks +=
        llvm::formatv("{0}{1}, {2}", blocks.empty() ? "" : ", ", shape.queries, shape.dynamicShared)
            .str();
  }
  return llvm::formatv(
             R"(module {
  llvm.mlir.global internal constant @ptx({0}) {{addr_space = 0 : i32}
  llvm.mlir.global internal constant @entries({1}) {{addr_space = 0 : i32}
  llvm.mlir.global internal constant @blocks(dense<[{8}]> : tensor<{9}xi64>) {{addr_space = 0 : i32} : !llvm.array<{9} x i64>
  llvm.func @xfrt_tensor_core_attention(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
  llvm.func @{2}(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
  llvm.func @{3}(%q: !llvm.ptr, %k: !llvm.ptr, %v: !llvm.ptr, %partials: !llvm.ptr, %out: !llvm.ptr) -> i32 {{
    %ptx = llvm.mlir.addressof @ptx : !llvm.ptr
    %entries = llvm.mlir.addressof @entries : !llvm.ptr
    %blocks = llvm.mlir.addressof @blocks : !llvm.ptr
    %heads = llvm.mlir.constant({4} : i64) : i64
    %d = llvm.mlir.constant({5} : i64) : i64
    %rows = llvm.mlir.constant({6} : i64) : i64
    %rc = llvm.call @xfrt_tensor_core_attention(%ptx, %entries, %blocks, %heads, %d, %rows, %q, %k, %v, %out) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
    %notTaken = llvm.mlir.constant({7} : i32) : i32
    %fp32 = llvm.icmp "eq" %rc, %notTaken : i32
    llvm.cond_br %fp32, ^halide, ^done
  ^halide:
    %rcHalide = llvm.call @{2}(%q, %k, %v, %partials, %out) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
    llvm.return %rcHalide : i32
  ^done:
    llvm.return %rc : i32
  }
}
)",
             tc::stringLiteral(ptx), tc::stringLiteral(entries), attentionFp32Name(spec), spec.name,
             spec.heads, spec.dK, kTcAttentionMinRows, kTcNotTaken, blocks, 2 * shapes.size())
      .str();
}

} // namespace

llvm::Error compileTensorCoreAttentionLauncher(const AttentionKernelSpec &spec,
                                               GpuMatmul precision, int capability,
                                               llvm::StringRef objectPath) {
  llvm::Expected<std::string> ptx = tensorCoreAttentionPtx(spec, precision, capability);
  if (!ptx)
    return ptx.takeError();
  return tc::emitLauncherObject(launcherSource(spec, precision, *ptx), spec.name, objectPath);
}

} // namespace mlir::xf
