//===- Bf16Products.cpp - whether --bf16-gemm-inputs runs bf16 products ---===//

#include "Bf16Products.h"

#include "Options.h"

#include "xfrt/MachinePeak.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace xfc;

namespace {
// 10M iterations a chain: ~20 ms a pass on Zen 5, enough to tell a 2x from a 0.5x ratio.
constexpr long kIterations = 10'000'000;

bool decide() {
  if (!bf16GemmInputs)
    return false;
  auto say = [](const llvm::Twine &why) {
    if (verbose)
      llvm::errs() << "xfc: --bf16-gemm-inputs: " << why << "\n";
  };
  switch (bf16Products) {
  case Bf16Products::On:
    say("bf16 dot products (--bf16-products=on)");
    return true;
  case Bf16Products::Off:
    say("float32 products on bf16 weights (--bf16-products=off)");
    return false;
  case Bf16Products::Auto:
    break;
  }
  if (target != "host") {
    say("bf16 dot products: --target " + target.getValue() +
        " is not measured here (--bf16-products=off keeps float32 products)");
    return true;
  }
  const int threads = int(threadCount());
  xfrt::ProductPeaks peaks = xfrt::measureProductPeaks(threads, kIterations, /*withBf16=*/true);
  if (peaks.bf16 == 0) {
    say("float32 products on bf16 weights: this CPU has no AVX512-BF16 dot product");
    return false;
  }
  const bool pays = xfrt::bf16ProductsPay(peaks);
  std::string numbers;
  llvm::raw_string_ostream(numbers)
      << llvm::format("this CPU's bf16 dot-product peak %.0f GFLOP/s vs fp32 FMA %.0f on %d "
                      "threads: ",
                      peaks.bf16, peaks.fp32, threads);
  say(numbers + (pays ? "bf16 dot products"
                      : "float32 products on bf16 weights (bf16 must beat fp32 by " +
                            llvm::formatv("{0}x", xfrt::kBf16ProductMargin).str() +
                            "; --bf16-products=on forces it)"));
  return pays;
}
} // namespace

bool xfc::useBf16Products() {
  static const bool chosen = decide();
  return chosen;
}
