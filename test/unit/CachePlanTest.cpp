//===- CachePlanTest.cpp - which entry points a model gets, its KV cache --===//
//
// planCache (compiler/include/xf/Conversion/CachePlan.h) on small @forward
// functions written out by hand: a causal decoder gets cached and packed
// entry points and a K and a V slot per attention; what mixes rows across
// positions or sequences (bidirectional attention, a product of two
// activations, two token sequences, length(x)) takes them away.
//
//===----------------------------------------------------------------------===//

#include "xf/Conversion/CachePlan.h"
#include "ParsedForward.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir;
using namespace mlir::xf;

namespace {

using Parsed = xftest::ParsedForward;

/// A decoder of two causal attentions over one QKV projection; `attributes`
/// go on the module, `mask` is the attentions' mask.
std::string decoder(llvm::StringRef attributes, llvm::StringRef mask = "causal") {
  // Ops in order: 0 wte, 1 wqkv, 2 wo, 3 x, 4 qkv, 5 q, 6 k, 7 v, 8 a, 9 b, 10 y, 11 logits.
  return (R"mlir(module attributes {)mlir" + attributes + R"mlir(} {
func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x8xf32> {
  %wte = xf.parameter "wte" : tensor<8x4xf32>
  %wqkv = xf.parameter "wqkv" : tensor<4x12xf32>
  %wo = xf.parameter "wo" : tensor<4x8xf32>
  %x = xf.token_embed %wte[%tokens] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %qkv = xf.gemm %x, %wqkv activation none : (tensor<?x4xf32>, tensor<4x12xf32>) -> tensor<?x12xf32>
  %q = xf.slice %qkv axis 1 offset 0 : tensor<?x12xf32> -> tensor<?x4xf32>
  %k = xf.slice %qkv axis 1 offset 4 : tensor<?x12xf32> -> tensor<?x4xf32>
  %v = xf.slice %qkv axis 1 offset 8 : tensor<?x12xf32> -> tensor<?x4xf32>
  %a = xf.attention )mlir" +
          mask +
          R"mlir( heads 1 %q, %k, %v : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  %b = xf.attention )mlir" +
          mask +
          R"mlir( heads 1 %a, %k, %v : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  %y = xf.add %b, %x : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  %logits = xf.gemm %y, %wo activation none : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  return %logits : tensor<?x8xf32>
}
})mlir")
      .str();
}

CachePlan planned(Parsed &p, bool halfElements = false) {
  EXPECT_TRUE(p.module) << p.diagnostics;
  FailureOr<TensorPlacement> placed = placeForward(p.forward());
  EXPECT_TRUE(succeeded(placed)) << p.diagnostics;
  return planCache(p.forward(), *placed, halfElements);
}

TEST(CachePlan, CausalDecoderGetsEveryEntryPoint) {
  Parsed p(decoder(""));
  CachePlan plan = planned(p);
  EXPECT_TRUE(plan.cacheable);
  EXPECT_TRUE(plan.packable);
  EXPECT_TRUE(plan.packedCacheable);
  // No positional table and no l_max: the default capacity.
  EXPECT_EQ(plan.positions, 4096);
  // K then V of each attention, in program order, 4 columns each.
  EXPECT_EQ(plan.columns, 16);
  EXPECT_EQ(plan.offsets.lookup(p.op(8)), std::make_pair(int64_t(0), int64_t(4)));
  EXPECT_EQ(plan.offsets.lookup(p.op(9)), std::make_pair(int64_t(8), int64_t(12)));
  // The tail (y, logits) reads the last attention's output and the embedding.
  ASSERT_EQ(plan.tailInputRoots.size(), 2u);
  EXPECT_EQ(plan.tailInputRoots[0], p.result(9));
  EXPECT_EQ(plan.tailInputRoots[1], p.result(3));
}

TEST(CachePlan, ElementsAreFloat16WhenAsked) {
  Parsed p(decoder(""));
  EXPECT_EQ(planned(p).elementBytes, 4);
  CachePlan half = planned(p, /*halfElements=*/true);
  EXPECT_EQ(half.elementBytes, 2);
  EXPECT_TRUE(half.half());
  // Offsets and widths are in elements, whatever their size.
  EXPECT_EQ(half.columns, 16);
  EXPECT_EQ(half.offsets.lookup(p.op(9)), std::make_pair(int64_t(8), int64_t(12)));
  // No cache, no half elements.
  Parsed bidirectional(decoder("", "bidirectional"));
  EXPECT_EQ(planned(bidirectional, /*halfElements=*/true).elementBytes, 4);
}

TEST(CachePlan, PositionsFollowLMaxWithoutATable) {
  Parsed p(decoder("xf.hyperparameters = {l_max = 100 : i64}"));
  EXPECT_EQ(hyperparameterPositionLimit(p.forward()), 100);
  EXPECT_EQ(planned(p).positions, 100);
}

TEST(CachePlan, PositionsFollowThePositionalTable) {
  Parsed p(R"mlir(module attributes {xf.hyperparameters = {l_max = 100 : i64}} {
func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x4xf32> {
  %wpe = xf.parameter "wpe" : tensor<32x4xf32>
  %x = xf.pos_embed %wpe for %tokens : tensor<32x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %a = xf.attention causal heads 1 %x, %x, %x : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  return %a : tensor<?x4xf32>
}
})mlir");
  EXPECT_EQ(hyperparameterPositionLimit(p.forward()), 0);
  CachePlan plan = planned(p);
  EXPECT_TRUE(plan.cacheable);
  EXPECT_EQ(plan.positions, 32);
  // Nothing after the last attention: no tail to compact.
  EXPECT_TRUE(plan.tailInputRoots.empty());
  EXPECT_TRUE(plan.packedCacheable);
}

TEST(CachePlan, BidirectionalAttentionIsPackedButNotCached) {
  Parsed p(decoder("", "bidirectional"));
  CachePlan plan = planned(p);
  EXPECT_FALSE(plan.cacheable);
  EXPECT_TRUE(plan.packable);
  EXPECT_FALSE(plan.packedCacheable);
  EXPECT_EQ(plan.columns, 0);
  EXPECT_TRUE(plan.offsets.empty());
}

TEST(CachePlan, AProductOfActivationsIsNeither) {
  std::string text = decoder("");
  std::string y = "  %y = xf.add %b, %x";
  text.replace(text.find(y), y.size(),
               "  %m = xf.gemm %b, %k activation none : (tensor<?x4xf32>, tensor<?x4xf32>) -> "
               "tensor<?x4xf32>\n  %y = xf.add %m, %x");
  Parsed p(text);
  CachePlan plan = planned(p);
  EXPECT_FALSE(plan.cacheable);
  EXPECT_FALSE(plan.packable);
}

TEST(CachePlan, LengthOfTheSequenceIsNeither) {
  std::string text = decoder("");
  std::string y = "  %y = xf.add %b, %x";
  text.replace(text.find(y), y.size(),
               "  %n = xf.length %tokens : tensor<?xi32>\n"
               "  %s = xf.scale %b by 1.0 times %n : tensor<?x4xf32>\n"
               "  %y = xf.add %s, %x");
  Parsed p(text);
  EXPECT_TRUE(usesLength(p.forward()));
  CachePlan plan = planned(p);
  EXPECT_FALSE(plan.cacheable);
  EXPECT_FALSE(plan.packable);
}

// An encoder-decoder packs (its cross attention runs per source/target pair; whether its
// rows meet elsewhere is xf-pack-sequences' call) but has no KV cache: its decoder re-reads
// the source.
TEST(CachePlan, EncoderDecoderPacksButDoesNotCache) {
  Parsed p(R"mlir(
func.func @forward(%source: tensor<?xi32>, %target: tensor<?xi32>) -> tensor<?x4xf32> {
  %e = xf.parameter "e" : tensor<8x4xf32>
  %z = xf.token_embed %e[%source] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %x = xf.token_embed %e[%target] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %y = xf.attention causal heads 1 %x, %x, %x : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
)mlir");
  CachePlan plan = planned(p);
  EXPECT_FALSE(plan.cacheable);
  EXPECT_TRUE(plan.packable);
  EXPECT_FALSE(plan.packedCacheable);
}

} // namespace
