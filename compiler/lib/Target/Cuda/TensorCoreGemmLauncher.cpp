//===- TensorCoreGemmLauncher.cpp - the host side of a tensor-core GEMM ---===//
//
// A GEMM on the tensor-core path keeps its name and Halide ABI (`int name(halide_buffer_t *x,
// *w, [*bias], [*residual], *out)`, docs/abi.md) and takes one more buffer, its split-K
// partials in the device scratch (`*partials`, CudaGemmCall.h). Its object holds the kernels'
// PTX as a constant and `name` as a few LLVM-dialect lines: call libxfrt's
// xfrt_tensor_core_gemm (TensorCoreLaunch.cpp:
// loads the PTX once per context, launches on Halide's stream) and, when that answers
// kTcNotTaken (fewer rows than the plan's minRows: a decode step), call `<name>_fp32`, Halide's
// fp32 pipeline compiled beside it, whose own specialization runs the GEMV. From kTcTallRows
// rows the runtime launches `<name>_tc` (64-row tiles; fp32's FMA kernels `<name>_fma...`),
// `<name>_tc128` where built and its grid fills the GPU (%wide: its dynamic shared bytes, 0
// where there is none), below them `<name>_tc32`, or, where its grid has fewer blocks than the GPU
// has SMs,
// `<name>_tc32_splitk` and `<name>_tc_reduce`. Where the GEMM has `<name>_wg` (sm_90a, wgmma:
// WgmmaGemmSource.cpp), its PTX is a second constant, passed last (else null).
//
//===----------------------------------------------------------------------===//

#include "xf/Target/TensorCoreGemm.h"

#include "TensorCoreKernelText.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "xf/Target/EmitObject.h"

#include "llvm/Support/FormatVariadic.h"

#include <cctype>
#include <vector>

namespace mlir::xf {

std::string tc::stringLiteral(llvm::StringRef bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (std::isalnum(c) || c == ' ' || c == '.' || c == '_' || c == ',')
      out += char(c);
    else
      out += llvm::formatv("\\{0:X-2}", unsigned(c)).str();
  }
  return out + "\\00\"";
}

llvm::Error tc::emitLauncherObject(llvm::StringRef moduleText, llvm::StringRef what,
                                   llvm::StringRef objectPath) {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllToLLVMIRTranslations(registry);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(moduleText, &context);
  if (!module)
    return llvm::createStringError("the launcher of tensor-core kernel '" + what.str() +
                                   "' does not parse");
  return emitObjectFile(*module, /*optLevel=*/2, objectPath);
}

namespace {
using tc::stringLiteral;

// The flags xfrt_tensor_core_gemm reads (TensorCoreLaunch.cpp).
int64_t launchFlags(const GemmKernelSpec &spec) {
  using namespace xfrt::gpu_gemm;
  return (spec.hasBias ? kBias : 0) | (spec.hasResidual ? kResidual : 0) |
         (spec.bf16Weights ? kBf16Weights : 0) |
         (spec.epilogue == GemmEpilogue::SwiGlu ? kGated : 0) |
         (spec.transposeWeight ? kWeightNK : 0) |
         (tensorCoreSplitRows(spec) > 0 ? kSplitKernels : 0) | // the PTX has the split-K kernels
         (tensorCoreColumnTail(spec) ? kColumnTail : 0) |      // columns stored one at a time
         (spec.prologue != GemmPrologue::None ? kNorm : 0);    // kernels take %gamma, %beta
}

std::string launcherSource(const GemmKernelSpec &spec, GpuMatmul precision, llvm::StringRef ptx,
                           llvm::StringRef sm90a) {
  // The Halide ABI's buffers in order (GemmEmitter.cpp): x, w, bias, residual, the norm's γ
  // and β, the attention's key-range partials (merged by the GEMV), out; then the split-K
  // partials, which Halide's pipeline (`<name>_fp32`) does not take.
  std::vector<std::string> names{"%x", "%w"};
  auto add = [&](bool present, const char *name) {
    if (present)
      names.push_back(name);
    return present ? std::string(name) : std::string("%null");
  };
  std::string bias = add(spec.hasBias, "%bias"), residual = add(spec.hasResidual, "%res");
  std::string gamma = add(spec.normGamma, "%gamma"), beta = add(spec.normBeta, "%beta");
  add(spec.mergeHeads > 0, "%ranges");
  names.push_back("%out");
  std::string params, args, types;
  for (size_t i = 0; i < names.size(); ++i) {
    params += llvm::formatv("{0}{1}: !llvm.ptr", i ? ", " : "", names[i]).str();
    args += (i ? ", " : "") + names[i];
    types += i ? ", !llvm.ptr" : "!llvm.ptr";
  }
  params += ", %partials: !llvm.ptr";
  const TensorCoreGemmPlan plan = tensorCoreGemmPlan(spec, precision);
  return llvm::formatv(
             R"(module {
  llvm.mlir.global internal constant @ptx({0}) {{addr_space = 0 : i32}
  llvm.mlir.global internal constant @entry({1}) {{addr_space = 0 : i32}
  {18}
  llvm.func @xfrt_tensor_core_gemm(!llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
  llvm.func @{2}({3}) -> i32
  llvm.func @{4}({5}) -> i32 {{
    %ptx = llvm.mlir.addressof @ptx : !llvm.ptr
    %entry = llvm.mlir.addressof @entry : !llvm.ptr
    %null = llvm.mlir.zero : !llvm.ptr
    {19}
    %n = llvm.mlir.constant({6} : i64) : i64
    %k = llvm.mlir.constant({7} : i64) : i64
    %flags = llvm.mlir.constant({8} : i64) : i64
    %rows = llvm.mlir.constant({9} : i64) : i64
    %tall = llvm.mlir.constant({15} : i64) : i64
    %wide = llvm.mlir.constant({17} : i64) : i64
    %rc = llvm.call @xfrt_tensor_core_gemm(%ptx, %entry, %n, %k, %flags, %rows, %tall, %wide, %x, %w, {10}, {11}, {12}, {16}, %out, %partials, {20}) : (!llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
    %notTaken = llvm.mlir.constant({13} : i32) : i32
    %fp32 = llvm.icmp "eq" %rc, %notTaken : i32
    llvm.cond_br %fp32, ^halide, ^done
  ^halide:
    %rcHalide = llvm.call @{2}({14}) : ({3}) -> i32
    llvm.return %rcHalide : i32
  ^done:
    llvm.return %rc : i32
  }
}
)",
             stringLiteral(ptx), stringLiteral(mlirGemmEntry(spec, precision)),
             fp32FallbackName(spec), types, spec.name, params, spec.N, spec.K, launchFlags(spec),
             plan.minRows(), bias, residual, gamma, kTcNotTaken, args, kTcTallRows, beta,
             tensorCoreWideTileShared(spec, precision),
             sm90a.empty() ? ""
                           : "llvm.mlir.global internal constant @sm90a(" + stringLiteral(sm90a) +
                                 ") {addr_space = 0 : i32}",
             sm90a.empty() ? "" : "%sm90a = llvm.mlir.addressof @sm90a : !llvm.ptr",
             sm90a.empty() ? "%null" : "%sm90a")
      .str();
}

} // namespace

llvm::Error compileTensorCoreGemmLauncher(const GemmKernelSpec &spec, GpuMatmul precision,
                                          int capability, llvm::StringRef objectPath) {
  std::string sm90a;
  llvm::Expected<std::string> ptx = tensorCoreGemmPtx(spec, precision, capability, &sm90a);
  if (!ptx)
    return ptx.takeError();
  return tc::emitLauncherObject(launcherSource(spec, precision, *ptx, sm90a), spec.name,
                                objectPath);
}

} // namespace mlir::xf
