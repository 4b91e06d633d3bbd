//===- ProfilingHooks.cpp - every kernel call bracketed for --profile ------===//
//
// Around each kernel call: xfrt_profile_enter(site) and
// xfrt_profile_exit(site, rows, context rows) (no-ops unless the executable
// runs with --profile), the site's manifest entry (kernel, op, source
// location, work per row for the roofline), and under --check the
// xf_check_kernel_output hook.
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"
#include "xf/Codegen/FunctionDeclarations.h"

using namespace mlir;
using namespace mlir::xf;

/// What a loop kernel reads and writes per row, for the roofline: every
/// [ℓ, d] operand and the result (an embedding gather also reads a table row).
static int64_t loopKernelBytesPerRow(Operation *op) {
  auto rowWidth = [](Type t) -> int64_t {
    auto ranked = dyn_cast<RankedTensorType>(t);
    return ranked && ranked.getRank() == 2 && ranked.getElementType().isF32() ? ranked.getDimSize(1)
                                                                              : 0;
  };
  int64_t floats = rowWidth(op->getResult(0).getType());
  if (isa<TokenEmbedOp, PositionalEmbedOp>(op))
    floats *= 2;
  for (Value operand : op->getOperands())
    if (auto ranked = dyn_cast<RankedTensorType>(operand.getType());
        ranked && ranked.getRank() == 2 && ranked.isDynamicDim(0))
      floats += rowWidth(ranked);
  return 4 * floats;
}

LogicalResult
HostLowering::profiled(Operation *op,
                       llvm::function_ref<LogicalResult(xfrt::KernelSpec &)> emit) {
  auto hook = [&](llvm::StringRef name, ArrayRef<Type> args) {
    return declareFunction(*program.module, loc, name, FunctionType::get(ctx, args, {}));
  };
  Type i32 = IntegerType::get(ctx, 32), i64Type = IntegerType::get(ctx, 64);
  Value site = arith::ConstantIntOp::create(*b, loc, b->getI32Type(), sites.size());
  xfrt::KernelSpec info;
  info.op = op->getName().getStringRef().str();
  std::string where;
  llvm::raw_string_ostream os(where);
  op->getLoc()->print(os);
  info.loc = where;
  func::CallOp::create(*b, loc, hook("xfrt_profile_enter", {i32}), ValueRange{site});
  if (failed(emit(info)))
    return failure();
  if (info.kind == "loop")
    info.bytesPerRow = loopKernelBytesPerRow(op);
  // The exit hook gets this call's rows and context rows, so FLOP counts are
  // right for prefill and decode steps alike.
  Value rows = rowsOf(op->getResult(0));
  Value context = i64(0);
  if (auto attn = dyn_cast<AttentionOp>(op))
    context = !packedMode ? (cachedMode ? Value(arith::AddIOp::create(*b, loc, startArg, rows))
                                        : rowsOf(attn.getKey()))
              : attn.getKeySegments()                                ? packedCrossContextRows
              : attn.getSegments() && attn.getSegments() == packedSourceSegments
                  ? packedSourceContextRows
                  : packedContextRows;
  func::CallOp::create(*b, loc, hook("xfrt_profile_exit", {i32, i64Type, i64Type}),
                       ValueRange{site, rows, context});
  if (options.kernelOutputHook) {
    Value v = op->getResult(0);
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    func::CallOp::create(*b, loc, hook("xf_check_kernel_output", {i32, ptr, i64Type, i64Type}),
                         ValueRange{site, pointerOf(v), rows, i64(placements[v].stride)});
  }
  sites.push_back(info);
  // @forward's op for a packed batch's (the sites of --check's reference).
  Operation *repeated = forwardOpOf ? forwardOpOf->lookup(op) : nullptr;
  program.siteOps.push_back(repeated ? repeated : op);
  return success();
}
