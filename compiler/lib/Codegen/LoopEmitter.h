//===- LoopEmitter.h - builder helpers for the loop kernels -----*- C++ -*-===//
//
// Loads, stores, loops and reductions on f32 rows addressed by `!llvm.ptr`,
// shared by the forward loop kernels (LoopKernels.cpp) and the backward ones
// (BackwardLoopKernels.cpp). Private to this library.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CONVERSION_LOOPEMITTER_H
#define XF_LIB_CONVERSION_LOOPEMITTER_H

#include "xf/Codegen/LoopKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace mlir::xf {

/// Emits loads, stores and loops on f32 rows addressed by `!llvm.ptr`.
struct Emitter {
  OpBuilder &b;
  Location loc;
  Type f32 = b.getF32Type(), f64 = b.getF64Type(), i64 = b.getI64Type();
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  // Reductions may be reassociated so LLVM can vectorize them.
  arith::FastMathFlagsAttr fast = arith::FastMathFlagsAttr::get(
      b.getContext(), arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);

  Value i(int64_t v) { return arith::ConstantIntOp::create(b, loc, i64, v); }
  Value f(double v) { return arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(float(v))); }
  Value at(Value base, Value index) {
    return LLVM::GEPOp::create(b, loc, ptr, f32, base, ValueRange{index});
  }
  Value load(Value base, Value index) {
    return LLVM::LoadOp::create(b, loc, f32, at(base, index));
  }
  void store(Value v, Value base, Value index) {
    LLVM::StoreOp::create(b, loc, v, at(base, index));
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y, fast); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y, fast); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y, fast); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y, fast); }
  Value muli(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value addi(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }

  /// for (iv = 0; iv < n; ++iv) body(iv)
  void loop(Value n, llvm::function_ref<void(Value)> body) { loop(i(0), n, body); }
  /// for (iv = begin; iv < end; ++iv) body(iv)
  void loop(Value begin, Value end, llvm::function_ref<void(Value)> body) {
    scf::ForOp::create(b, loc, begin, end, i(1), ValueRange{},
                       [&](OpBuilder &nested, Location, Value iv, ValueRange) {
                         OpBuilder::InsertionGuard guard(b);
                         b.setInsertionPointToStart(nested.getInsertionBlock());
                         body(iv);
                         scf::YieldOp::create(b, loc);
                       });
  }
  /// Σ_{iv < n} term(iv), accumulated in f32.
  Value sum(Value n, llvm::function_ref<Value(Value)> term) {
    auto forOp = scf::ForOp::create(
        b, loc, i(0), n, i(1), ValueRange{f(0.0)},
        [&](OpBuilder &nested, Location, Value iv, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(nested.getInsertionBlock());
          Value next = add(acc[0], term(iv));
          scf::YieldOp::create(b, loc, next);
        });
    return forOp.getResult(0);
  }
  Value maximum(Value n, llvm::function_ref<Value(Value)> term) {
    auto forOp = scf::ForOp::create(
        b, loc, i(0), n, i(1), ValueRange{f(-INFINITY)},
        [&](OpBuilder &nested, Location, Value iv, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(nested.getInsertionBlock());
          Value top = arith::MaximumFOp::create(b, loc, acc[0], term(iv));
          scf::YieldOp::create(b, loc, top);
        });
    return forOp.getResult(0);
  }
  /// The rows [begin, end) a kernel body computes: its last two arguments.
  void eachRow(func::FuncOp body, llvm::function_ref<void(Value)> rowBody) {
    unsigned n = body.getNumArguments();
    loop(body.getArgument(n - 2), body.getArgument(n - 1), rowBody);
  }
  /// Pointer to row `r` of a dense [*, width] matrix.
  Value row(Value base, Value r, int64_t width) { return at(base, muli(r, i(width))); }
};

inline Value gelu(Emitter &e, Value x, ElementwiseKind kind) {
  Value half = e.mul(e.f(0.5), x);
  Value inner;
  if (kind == ElementwiseKind::GeluTanh) {
    Value cube = e.mul(e.mul(x, x), x);
    Value arg = e.mul(e.f(std::sqrt(2.0 / M_PI)), e.add(x, e.mul(e.f(0.044715), cube)));
    inner = math::TanhOp::create(e.b, e.loc, arg);
  } else {
    inner = math::ErfOp::create(e.b, e.loc, e.mul(x, e.f(M_SQRT1_2)));
  }
  return e.mul(half, e.add(e.f(1.0), inner));
}

/// A constant as it goes into a kernel's name: short ("1e-05") when that
/// reads back as the same double, else all 17 digits. Kernels are shared by
/// name, so two constants may never print alike.
inline std::string formatDouble(double v) {
  char text[40];
  std::snprintf(text, sizeof(text), "%g", v);
  if (std::strtod(text, nullptr) != v)
    std::snprintf(text, sizeof(text), "%.17g", v);
  return text;
}

} // namespace mlir::xf

// In LoopKernels methods: names the kernel after `key` and its schedule
// `sched`, and returns the one already built under that name.
#define XF_KERNEL_CACHED_WITH(key, sched)                                      \
  const LoopSchedule kernelSchedule = sched;                                   \
  std::string name = std::string(key) + scheduleSuffix(kernelSchedule);        \
  if (auto it = cache.find(name); it != cache.end())                           \
    return it->second;
#define XF_KERNEL_CACHED(key) XF_KERNEL_CACHED_WITH(key, schedule)

#endif // XF_LIB_CONVERSION_LOOPEMITTER_H
