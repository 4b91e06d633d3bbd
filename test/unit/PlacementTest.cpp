//===- PlacementTest.cpp - where the host lowering puts each tensor -------===//
//
// The placement analysis (compiler/include/xf/Conversion/Placement.h) on
// small @forward functions written out by hand: which storage each tensor
// gets, how views chain to their root, how long each scratch slot lives and
// where the arena puts it, and the located errors for what it cannot place.
//
//===----------------------------------------------------------------------===//

#include "xf/Conversion/Placement.h"
#include "ParsedForward.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir;
using namespace mlir::xf;

namespace {

using Parsed = xftest::ParsedForward;

// Ops in order: 0 wte, 1 w, 2 x, 3 g, 4 s, 5 v, 6 y, 7 z, 8 wt, 9 logits.
constexpr const char *decoder = R"mlir(
func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x8xf32> {
  %wte = xf.parameter "wte" : tensor<8x4xf32>
  %w = xf.parameter "w" : tensor<4x12xf32>
  %x = xf.token_embed %wte[%tokens] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %g = xf.gemm %x, %w activation none : (tensor<?x4xf32>, tensor<4x12xf32>) -> tensor<?x12xf32>
  %s = xf.slice %g axis 1 offset 4 : tensor<?x12xf32> -> tensor<?x8xf32>
  %v = xf.slice %s axis 1 offset 4 : tensor<?x8xf32> -> tensor<?x4xf32>
  %y = xf.add %x, %v : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  %z = xf.add %y, %y : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  %wt = xf.transpose %wte : tensor<8x4xf32> -> tensor<4x8xf32>
  %logits = xf.gemm %z, %wt activation none : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  return %logits : tensor<?x8xf32>
}
)mlir";

TEST(Placement, StorageOfEachTensor) {
  Parsed p(decoder);
  ASSERT_TRUE(p.module) << p.diagnostics;
  FailureOr<TensorPlacement> placed = placeForward(p.forward());
  ASSERT_TRUE(succeeded(placed)) << p.diagnostics;
  auto at = [&](Value v) { return placed->placements.lookup(v); };

  Placement tokens = at(p.forward().getArgument(0));
  EXPECT_EQ(tokens.storage, Storage::Tokens);
  EXPECT_EQ(tokens.rows, Rows::Target);
  EXPECT_FALSE(placed->encoderDecoder);

  // Checkpoint tensors in first-use order; the transposed table is derived.
  ASSERT_EQ(placed->parameters.size(), 2u);
  EXPECT_EQ(placed->parameters[0].first, "wte");
  EXPECT_EQ(placed->parameters[1].first, "w");
  EXPECT_EQ(at(p.result(0)).storage, Storage::Parameter);
  EXPECT_EQ(at(p.result(1)).index, 1);
  Placement wt = at(p.result(8));
  EXPECT_EQ(wt.storage, Storage::Derived);
  EXPECT_EQ(wt.index, 0);
  EXPECT_EQ(wt.staticRows, 4);
  EXPECT_EQ(wt.cols, 8);
  ASSERT_EQ(placed->derived.size(), 1u);
  EXPECT_EQ(placed->derived[0], p.result(8));

  // Activations own slots with ℓ rows; column slices are views of the GEMM's
  // slot, a slice of a slice of the same root.
  Placement g = at(p.result(3));
  EXPECT_EQ(g.storage, Storage::Scratch);
  EXPECT_EQ(g.rows, Rows::Target);
  EXPECT_EQ(g.cols, 12);
  Placement v = at(p.result(5));
  EXPECT_EQ(v.storage, Storage::View);
  EXPECT_EQ(v.root, p.result(3));
  EXPECT_EQ(v.colOffset, 8);
  EXPECT_EQ(v.cols, 4);
  EXPECT_EQ(v.stride, 12);
  EXPECT_EQ(placed->rootOf(p.result(5)), p.result(3));
  EXPECT_EQ(placed->rootOf(p.result(3)), p.result(3));

  // The returned GEMM writes straight into `out`.
  EXPECT_EQ(placed->result, p.result(9));
  EXPECT_EQ(at(p.result(9)).storage, Storage::Output);
}

TEST(Placement, SlotsLiveUntilTheirLastReaderThroughViews) {
  Parsed p(decoder);
  ASSERT_TRUE(p.module) << p.diagnostics;
  FailureOr<TensorPlacement> placed = placeForward(p.forward());
  ASSERT_TRUE(succeeded(placed)) << p.diagnostics;
  // x, g, y, z, logits; reading the view v (op 6) keeps g alive until op 6.
  ASSERT_EQ(placed->requests.size(), 5u);
  struct Expected {
    unsigned op;
    int64_t columns, firstUse, lastUse, offset;
  };
  for (const Expected &e :
       {Expected{2, 4, 2, 6, 0}, Expected{3, 12, 3, 6, 4}, Expected{6, 4, 6, 7, 16},
        Expected{7, 4, 7, 9, 0}, Expected{9, 0, 9, 9, 0}}) {
    int64_t i = placed->placements.lookup(p.result(e.op)).index;
    SCOPED_TRACE("op " + std::to_string(e.op));
    EXPECT_EQ(placed->requestValue[i], p.result(e.op));
    EXPECT_EQ(placed->requests[i].columns, e.columns);
    EXPECT_EQ(placed->requests[i].firstUse, e.firstUse);
    EXPECT_EQ(placed->requests[i].lastUse, e.lastUse);
    EXPECT_EQ(placed->plan.columnOffset[i], e.offset);
  }
  // y cannot reuse x's or g's columns (both are read by y's own op); z can.
  EXPECT_EQ(placed->plan.totalColumns, 20);
}

TEST(Placement, EncoderDecoderRowsFollowTheirSequence) {
  Parsed p(R"mlir(
func.func @forward(%source: tensor<?xi32>, %target: tensor<?xi32>) -> tensor<?x4xf32> {
  %e = xf.parameter "e" : tensor<8x4xf32>
  %z = xf.token_embed %e[%source] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %x = xf.token_embed %e[%target] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %y = xf.attention cross heads 1 %x, %z, %z : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
)mlir");
  ASSERT_TRUE(p.module) << p.diagnostics;
  FailureOr<TensorPlacement> placed = placeForward(p.forward());
  ASSERT_TRUE(succeeded(placed)) << p.diagnostics;
  EXPECT_TRUE(placed->encoderDecoder);
  EXPECT_EQ(placed->placements.lookup(p.result(1)).rows, Rows::Source);
  EXPECT_EQ(placed->placements.lookup(p.result(2)).rows, Rows::Target);
  EXPECT_EQ(placed->placements.lookup(p.result(3)).rows, Rows::Target);
}

/// The diagnostics placeForward gives for `body`, a @forward of one token
/// argument returning `result`.
std::string placementErrors(llvm::StringRef result, llvm::StringRef body) {
  Parsed p(
      ("func.func @forward(%tokens: tensor<?xi32>) -> " + result + " {\n" + body + "\n}\n").str());
  EXPECT_TRUE(p.module) << p.diagnostics;
  if (!p.module)
    return "";
  EXPECT_TRUE(failed(placeForward(p.forward())));
  return p.diagnostics;
}

TEST(Placement, LocatedErrors) {
  EXPECT_EQ(placementErrors("tensor<?x4xf32>", R"mlir(
  %t = xf.parameter "t" : tensor<8x4xf32>
  %w = xf.parameter "w" : tensor<4x4xf32>
  %y = xf.token_embed %t[%tokens] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %z = xf.linear %y, %w : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  return %z : tensor<?x4xf32>)mlir"),
            "'xf.linear' reached host lowering; run the fusion pipeline first\n");
  EXPECT_EQ(placementErrors("tensor<?x4xf32>", R"mlir(
  %a = xf.parameter "w" : tensor<8x4xf32>
  %b = xf.parameter "w" : tensor<4x8xf32>
  %y = xf.token_embed %a[%tokens] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>)mlir"),
            "parameter 'w' is used with two shapes\n");
  EXPECT_EQ(placementErrors("tensor<?xi32>", "  return %tokens : tensor<?xi32>"),
            "@forward must return a computed activation\n");
}

} // namespace
