//===- TensorCoreGemmEpilogue.cpp - the tensor-core GEMM's epilogue -------===//

#include "TensorCoreGemmEpilogue.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace mlir::xf::tc {

namespace {

// e^a as 2^(a·log2 e) (exp2: ex2.approx, no libdevice).
std::string exp(Writer &w, const std::string &a) {
  return exp2(w, w.f("arith.mulf", a, w.vec2(M_LOG2E)));
}

// erf(a) by Abramowitz & Stegun 7.1.26 (absolute error ≤ 1.5e-7): 1 − P(t)·e^(−a²) with
// t = 1/(1 + p|a|), the sign of a restored; arith and ex2 only (no libdevice erff).
std::string erf(Writer &w, const std::string &a) {
  std::string negA = w.let("arith.negf " + a + " : vector<2xf32>");
  std::string absA = w.f("arith.maximumf", a, negA);
  std::string t = w.f("arith.divf", w.vec2(1),
                      w.f("arith.addf", w.vec2(1), w.f("arith.mulf", w.vec2(0.3275911), absA)));
  std::string poly = w.vec2(1.061405429);
  for (double c : {-1.453152027, 1.421413741, -0.284496736, 0.254829592})
    poly = w.f("arith.addf", w.f("arith.mulf", poly, t), w.vec2(c));
  poly = w.f("arith.mulf", poly, t);
  std::string e = exp(w, w.let("arith.negf " + w.f("arith.mulf", a, a) + " : vector<2xf32>"));
  std::string positive = w.f("arith.subf", w.vec2(1), w.f("arith.mulf", poly, e));
  std::string below = w.let("arith.cmpf olt, " + a + ", " + w.vec2(0) + " : vector<2xf32>");
  std::string negative = w.let("arith.negf " + positive + " : vector<2xf32>");
  return w.let("arith.select " + below + ", " + negative + ", " + positive +
               " : vector<2xi1>, vector<2xf32>");
}

// act(v) of a pair of columns (SwiGLU's silu on the gate), as GemmEpilogue.h defines it.
std::string activation(Writer &w, GemmEpilogue epilogue, const std::string &a) {
  switch (epilogue) {
  case GemmEpilogue::None:
    return a;
  case GemmEpilogue::GeluErf:
    return w.f("arith.mulf", w.f("arith.mulf", w.vec2(0.5), a),
               w.f("arith.addf", w.vec2(1),
                   erf(w, w.f("arith.mulf", a, w.vec2(1.0 / std::sqrt(2.0))))));
  case GemmEpilogue::Relu:
    return w.f("arith.maximumf", a, w.vec2(0));
  case GemmEpilogue::GeluTanh: {
    std::string cube = w.f("arith.mulf", w.f("arith.mulf", a, a), a);
    std::string inner = w.f("arith.addf", a, w.f("arith.mulf", w.vec2(0.044715), cube));
    std::string y = w.f("arith.mulf", w.vec2(std::sqrt(2.0 / M_PI)), inner);
    std::string e = exp(w, w.f("arith.mulf", w.vec2(2), y));
    std::string tanhY = w.f("arith.subf", w.vec2(1),
                            w.f("arith.divf", w.vec2(2), w.f("arith.addf", e, w.vec2(1))));
    return w.f("arith.mulf", w.f("arith.mulf", w.vec2(0.5), a),
               w.f("arith.addf", w.vec2(1), tanhY));
  }
  case GemmEpilogue::Silu:
  case GemmEpilogue::SwiGlu: {
    std::string neg = w.let("arith.negf " + a + " : vector<2xf32>");
    std::string e = exp(w, neg);
    return w.f("arith.divf", a, w.f("arith.addf", w.vec2(1), e));
  }
  }
  return a;
}

} // namespace

std::string epiloguePair(Writer &w, const GemmKernelSpec &spec, const std::string &row,
                         const std::string &col, const std::function<std::string(int)> &sum) {
  auto value = [&](int gate) {
    std::string v = sum(gate);
    if (!spec.hasBias)
      return v;
    std::string b = w.let("vector.load %bias[" + w.addConst(col, gate * spec.N) +
                          "] : memref<?xf32>, vector<2xf32>");
    return w.f("arith.addf", v, b);
  };
  std::string e = spec.epilogue == GemmEpilogue::SwiGlu
                      ? w.f("arith.mulf", activation(w, GemmEpilogue::SwiGlu, value(0)), value(1))
                      : activation(w, spec.epilogue, value(0));
  if (!spec.hasResidual)
    return e;
  std::string at = w.add(w.mul(row, "%rs"), col);
  return w.f("arith.addf", e, w.let("vector.load %res[" + at + "] : memref<?xf32>, vector<2xf32>"));
}

std::string gemmKernelFunction(const std::string &entry, const char *weight, bool split,
                               const std::string &more, const std::string &workgroup,
                               const std::string &body, int maxRegisters, int threads) {
  std::string params =
      split ? llvm::formatv("%x: memref<?xf32>, %w: memref<?x{0}>, %out: memref<?xf32>, {1}"
                            "%m: index, %xs: index, %ws: index, %k: index, %kz: index",
                            weight, more)
                  .str()
            : llvm::formatv("%x: memref<?xf32>, %w: memref<?x{0}>, %bias: memref<?xf32>, "
                            "%res: memref<?xf32>, %out: memref<?xf32>, {1}%m: index, "
                            "%xs: index, %ws: index, %rs: index, %os: index, %k: index",
                            weight, more)
                  .str();
  return llvm::formatv("    gpu.func @{0}({1})\n"
                       "        {2}kernel attributes {{known_block_size = "
                       "array<i32: {3}, 1, 1>, nvvm.maxnreg = {4} : i32} {{\n{5}      "
                       "gpu.return\n    }\n",
                       entry, params, workgroup.empty() ? "" : "workgroup(" + workgroup + ") ",
                       threads, maxRegisters, body)
      .str();
}

// Columns below N of `row`'s pair at col (a column tail): the pair's epilogue where col < N,
// each of its columns below N stored alone (out's rows may be of any length: no pair alignment).
void storeColumns(Writer &w, const GemmKernelSpec &spec, const std::string &row,
                  const std::string &col, const std::function<std::string()> &pair) {
  auto below = [&](const std::string &c) {
    return w.let("arith.cmpi ult, " + c + ", " + w.index(spec.N) + " : index");
  };
  w.line("scf.if " + below(col) + " {");
  std::string values = pair();
  for (int e = 0; e < 2; ++e) {
    std::string c = w.addConst(col, e);
    if (e)
      w.line("scf.if " + below(c) + " {");
    std::string v =
        w.let("vector.extract " + values + "[" + std::to_string(e) + "] : f32 from vector<2xf32>");
    w.line("vector.store " + w.let("vector.from_elements " + v + " : vector<1xf32>") + ", %out[" +
           w.add(w.mul(row, "%os"), c) + "] : memref<?xf32>, vector<1xf32>");
    if (e)
      w.line("}");
  }
  w.line("}");
}

void storeSumPair(Writer &w, const GemmKernelSpec &spec, bool pastN, const std::string &row,
                  const std::string &col, const std::function<std::string(int)> &sum,
                  const std::string &partialsRow0) {
  auto store = [&](const std::string &v, const std::string &at) {
    w.line("vector.store " + v + ", %out[" + at +
           "] {alignment = 8} : memref<?xf32>, vector<2xf32>");
  };
  if (partialsRow0.empty() && tensorCoreColumnTail(spec)) {
    storeColumns(w, spec, row, col, [&] { return epiloguePair(w, spec, row, col, sum); });
  } else if (partialsRow0.empty()) {
    // Past N (wide tiles, N an odd multiple of 64): a pair is all in or all out.
    if (pastN)
      w.line("scf.if " + w.let("arith.cmpi ult, " + col + ", " + w.index(spec.N) + " : index") +
             " {");
    store(epiloguePair(w, spec, row, col, sum), w.add(w.mul(row, "%os"), col));
    if (pastN)
      w.line("}");
  } else {
    std::string at = w.add(w.mul(w.add(partialsRow0, row), w.index(spec.gates() * spec.N)), col);
    for (int gate = 0; gate < spec.gates(); ++gate)
      store(sum(gate), w.addConst(at, gate * spec.N));
  }
}

std::string splitReductionFunction(const GemmKernelSpec &spec, llvm::StringRef entry) {
  const int gates = spec.gates();
  Writer w;
  std::string tid = w.let("gpu.thread_id x");
  std::string bx = w.let("gpu.block_id x"), by = w.let("gpu.block_id y");
  std::string c32 = w.index(32);
  std::string row = w.add(w.mul(by, w.index(kTcReduceRows)),
                          w.let("arith.divui " + tid + ", " + c32 + " : index"));
  std::string col = w.add(w.mul(bx, w.index(kTcTileCols)),
                          w.mul(w.let("arith.remui " + tid + ", " + c32 + " : index"), w.index(2)));
  std::string inside = w.let("arith.cmpi ult, " + row + ", %m : index");
  w.line("scf.if " + inside + " {");
  std::string cols = w.index(gates * spec.N);
  std::string slab = w.mul("%m", cols), at = w.add(w.mul(row, cols), col);
  std::string zero = w.vec2(0), iterArgs, types, yield;
  for (int gate = 0; gate < gates; ++gate) {
    iterArgs += (gate ? ", %sum" : "%sum") + std::to_string(gate) + " = " + zero;
    types += gate ? ", vector<2xf32>" : "vector<2xf32>";
  }
  std::string loop = w.fresh();
  w.line(loop + ":" + std::to_string(gates) + " = scf.for %z = " + w.index(0) + " to %s step " +
         w.index(1) + " iter_args(" + iterArgs + ") -> (" + types + ") {");
  std::string from = w.add(w.mul("%z", slab), at);
  for (int gate = 0; gate < gates; ++gate) {
    std::string part = w.let("vector.load %p[" + w.addConst(from, gate * spec.N) +
                             "] {alignment = 8} : memref<?xf32>, vector<2xf32>");
    yield += (gate ? ", " : "") + w.f("arith.addf", "%sum" + std::to_string(gate), part);
  }
  w.line("scf.yield " + yield + " : " + types);
  w.line("}");
  std::string e = epiloguePair(w, spec, row, col, [&](int gate) {
    return loop + "#" + std::to_string(gate);
  });
  w.line("vector.store " + e + ", %out[" + w.add(w.mul(row, "%os"), col) +
         "] {alignment = 8} : memref<?xf32>, vector<2xf32>");
  w.line("}");
  return llvm::formatv("    gpu.func @{0}_reduce(%p: memref<?xf32>, %bias: memref<?xf32>, "
                       "%res: memref<?xf32>, %out: memref<?xf32>, %m: index, %rs: index, "
                       "%os: index, %s: index)\n"
                       "        kernel attributes {{known_block_size = array<i32: {1}, 1, 1>} "
                       "{{\n{2}      gpu.return\n    }\n",
                       entry, kTcThreads, w.text)
      .str();
}

} // namespace mlir::xf::tc
