//===- HalideInProcessTest.cpp - Halide JIT beside libMLIR ----------------===//
//
// xfc links libMLIR (LLVM 22) and libHalide (its own hidden LLVM) into one
// process. This test proves the two coexist: it parses and verifies xf IR,
// JIT-compiles and runs a Halide matmul, then uses MLIR again.
//
//===----------------------------------------------------------------------===//

#include "xf/IR/XfDialect.h"
#include "xf/IR/XfOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "KernelPipelines.h"

#include "Halide.h"
#include <gtest/gtest.h>

#include <random>

namespace {

const char *kLinearModule = R"mlir(
func.func @f(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %w = xf.parameter "w" : tensor<64x32xf32>
  %y = xf.linear %x, %w : tensor<?x64xf32>, tensor<64x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
)mlir";

size_t parseAndCountXfOps(mlir::MLIRContext &context) {
  auto module = mlir::parseSourceString<mlir::ModuleOp>(kLinearModule, &context);
  if (!module)
    return 0;
  size_t count = 0;
  module->walk([&](mlir::Operation *op) {
    if (llvm::isa<mlir::xf::XfDialect>(op->getDialect()))
      ++count;
  });
  return count;
}

TEST(HalideInProcess, MatmulMatchesNaiveLoopBesideMLIR) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::xf::XfDialect, mlir::func::FuncDialect>();
  ASSERT_EQ(parseAndCountXfOps(context), 2u);

  constexpr int N = 64;
  Halide::Buffer<float> a(N, N), b(N, N); // (column j, row i)
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  a.for_each_value([&](float &v) { v = dist(rng); });
  b.for_each_value([&](float &v) { v = dist(rng); });

  // C(j, i) = Σ_k A(k, i) · B(j, k), with a vectorized, parallel schedule.
  Halide::Var i("i"), j("j");
  Halide::RDom k(0, N, "k");
  Halide::Func product("product");
  product(j, i) = 0.f;
  product(j, i) += a(k, i) * b(j, k);
  product.vectorize(j, 8).parallel(i);
  Halide::Buffer<float> c = product.realize({N, N}, mlir::xf::hostHalideTarget());

  float maxError = 0.f;
  for (int row = 0; row < N; ++row)
    for (int col = 0; col < N; ++col) {
      double ref = 0;
      for (int kk = 0; kk < N; ++kk)
        ref += double(a(kk, row)) * double(b(col, kk));
      maxError = std::max(maxError, float(std::abs(ref - c(col, row))));
    }
  EXPECT_LT(maxError, 1e-4f);

  // MLIR still works after Halide's LLVM has run in this process.
  mlir::MLIRContext second;
  second.loadDialect<mlir::xf::XfDialect, mlir::func::FuncDialect>();
  EXPECT_EQ(parseAndCountXfOps(second), 2u);
}

TEST(HalideInProcess, AheadOfTimeObjectForHostTarget) {
  Halide::Var x("x");
  Halide::Func twice("twice");
  Halide::ImageParam in(Halide::Float(32), 1, "in");
  twice(x) = in(x) * 2.f;
  twice.vectorize(x, 16);
  Halide::Target target = mlir::xf::hostHalideTarget().with_feature(Halide::Target::NoRuntime);
  std::string dir = ::testing::TempDir();
  twice.compile_to_object(dir + "/twice.o", {in}, "twice", target);
  FILE *f = std::fopen((dir + "/twice.o").c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::fseek(f, 0, SEEK_END);
  EXPECT_GT(std::ftell(f), 0);
  std::fclose(f);
}

} // namespace
