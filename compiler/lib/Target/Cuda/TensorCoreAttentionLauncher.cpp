//===- TensorCoreAttentionLauncher.cpp - the host side of tensor-core attention ===//
//
// An attention on the tensor-core path keeps its name and CUDA Halide ABI (`int name(q, k, v,
// partials, out)`: CudaAttentionCall.cpp), so the host code is unchanged. Its object holds the
// kernel's PTX and `name` as a few LLVM-dialect lines: call libxfrt's
// xfrt_tensor_core_attention (TensorCoreLaunch.cpp) with the kernel's dynamic shared memory
// (the FMA kernel's at heads of 96 and 128; else 0), and when that answers kTcNotTaken (fewer
// than kTcAttentionMinRows query rows: a decode step, whose key ranges the host has just
// computed into `partials`) call `<name>_fp32`, Halide's pipeline compiled beside it, which
// merges them.
//
//===----------------------------------------------------------------------===//

#include "xf/Target/TensorCoreAttention.h"

#include "TensorCoreKernelText.h"

#include "llvm/Support/FormatVariadic.h"

namespace mlir::xf {
namespace {

std::string launcherSource(const AttentionKernelSpec &spec, GpuMatmul precision,
                           llvm::StringRef ptx) {
  return llvm::formatv(
             R"(module {
  llvm.mlir.global internal constant @ptx({0}) {{addr_space = 0 : i32}
  llvm.mlir.global internal constant @entry({1}) {{addr_space = 0 : i32}
  llvm.func @xfrt_tensor_core_attention(!llvm.ptr, !llvm.ptr, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
  llvm.func @{2}(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
  llvm.func @{3}(%q: !llvm.ptr, %k: !llvm.ptr, %v: !llvm.ptr, %partials: !llvm.ptr, %out: !llvm.ptr) -> i32 {{
    %ptx = llvm.mlir.addressof @ptx : !llvm.ptr
    %entry = llvm.mlir.addressof @entry : !llvm.ptr
    %heads = llvm.mlir.constant({4} : i64) : i64
    %d = llvm.mlir.constant({5} : i64) : i64
    %rows = llvm.mlir.constant({6} : i64) : i64
    %shared = llvm.mlir.constant({8} : i64) : i64
    %rc = llvm.call @xfrt_tensor_core_attention(%ptx, %entry, %heads, %d, %rows, %shared, %q, %k, %v, %out) : (!llvm.ptr, !llvm.ptr, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
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
             tc::stringLiteral(ptx), tc::stringLiteral(attentionKernelEntry(spec, precision)),
             attentionFp32Name(spec), spec.name, spec.heads, spec.dK, kTcAttentionMinRows,
             kTcNotTaken, precision == GpuMatmul::Fp32 ? fmaAttentionDynamicSharedBytes(spec) : 0)
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
