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
  /// Stores f32 `v` rounded to IEEE float16 (to nearest even) at element `index` of a
  /// float16 row.
  void storeHalf(Value v, Value base, Value index) {
    Type f16 = b.getF16Type();
    Value at = LLVM::GEPOp::create(b, loc, ptr, f16, base, ValueRange{index});
    LLVM::StoreOp::create(b, loc, arith::TruncFOp::create(b, loc, f16, v), at);
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
  void eachRow(ValueRange bodyArgs, llvm::function_ref<void(Value)> rowBody) {
    size_t n = bodyArgs.size();
    loop(bodyArgs[n - 2], bodyArgs[n - 1], rowBody);
  }
  /// Pointer to row `r` of a dense [*, width] matrix.
  Value row(Value base, Value r, int64_t width) { return at(base, muli(r, i(width))); }
};

/// tanh(x) as a rational function of x (Eigen's generic_fast_tanh_float: odd
/// degree 13 over even degree 6, x clamped to ±7.9053, x itself below 4·10⁻⁴):
/// only multiplies, adds, a division and selects, so the loops around it
/// vectorize, where math.tanh is a call to libm's tanhf per element. Largest
/// error against float64 tanh over 4.2M float32 points in [−12, 12] (and
/// ±10⁻⁸ … ±10): 3.9·10⁻⁷ relative, 6.6 ulp (tanhf: 1.4 ulp).
inline Value tanhRational(Emitter &e, Value x) {
  const double alpha[] = {4.89352455891786e-03,  6.37261928875436e-04,  1.48572235717979e-05,
                          5.12229709037114e-08,  -8.60467152213735e-11, 2.00018790482477e-13,
                          -2.76076847742355e-16};
  const double beta[] = {4.89352518554385e-03, 2.26843463243900e-03, 1.18534705686654e-04,
                         1.19825839466702e-06};
  Value c = arith::MinimumFOp::create(
      e.b, e.loc, arith::MaximumFOp::create(e.b, e.loc, x, e.f(-7.90531110763549805)),
      e.f(7.90531110763549805));
  Value x2 = e.mul(c, c);
  Value p = e.f(alpha[6]);
  for (int i = 5; i >= 0; --i)
    p = e.add(e.mul(x2, p), e.f(alpha[i]));
  p = e.mul(c, p);
  Value q = e.f(beta[3]);
  for (int i = 2; i >= 0; --i)
    q = e.add(e.mul(x2, q), e.f(beta[i]));
  Value tiny = arith::CmpFOp::create(e.b, e.loc, arith::CmpFPredicate::OLT,
                                     math::AbsFOp::create(e.b, e.loc, c), e.f(0.0004));
  return arith::SelectOp::create(e.b, e.loc, tiny, c, e.div(p, q));
}

/// μ (0 unless `center`) and 1/sqrt(mean((x − μ)²) + ε) of one row, as the
/// forward and backward normalization kernels compute them.
inline std::pair<Value, Value> rowStatistics(Emitter &e, Value x, int64_t width, double eps,
                                             bool center) {
  Value n = e.f(double(width));
  Value mean =
      center ? e.div(e.sum(e.i(width), [&](Value c) { return e.load(x, c); }), n) : e.f(0.0);
  Value var = e.div(e.sum(e.i(width),
                          [&](Value c) {
                            Value d = e.sub(e.load(x, c), mean);
                            return e.mul(d, d);
                          }),
                    n);
  return {mean, math::RsqrtOp::create(e.b, e.loc, e.add(var, e.f(eps)))};
}

inline Value gelu(Emitter &e, Value x, ElementwiseKind kind) {
  Value half = e.mul(e.f(0.5), x);
  Value inner;
  if (kind == ElementwiseKind::GeluTanh) {
    Value cube = e.mul(e.mul(x, x), x);
    Value arg = e.mul(e.f(std::sqrt(2.0 / M_PI)), e.add(x, e.mul(e.f(0.044715), cube)));
    inner = tanhRational(e, arg);
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
