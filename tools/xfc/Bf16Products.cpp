//===- Bf16Products.cpp - whether --bf16-gemm-inputs runs bf16 products ---===//

#include "Bf16Products.h"

#include "Options.h"

#include "xfrt/Amx.h"
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
    say("bf16 dot products (--bf16-products=on; multi-row GEMMs on AMX tiles where the CPU "
        "running them has AMX bf16)");
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
  // AMX bf16 tiles, where this process may use them: the multi-row GEMMs run on them (the
  // Halide kernel's vdpbf16ps only where they cannot), so they are what must pay.
  const double amx = xfrt::measureAmxBf16Peak(threads, kIterations / 10);
  const std::string amxNote =
      amx > 0 ? "" : std::string("; no AMX bf16 (") + xfrt::amxBf16Unusable() + ")";
  if (amx > 0 && amx >= xfrt::kBf16ProductMargin * peaks.fp32) {
    say(llvm::formatv("this CPU's AMX bf16 tile peak {0:F0} GFLOP/s vs fp32 FMA {1:F0} on {2} "
                      "threads: bf16 inputs, multi-row GEMMs on AMX tiles (vdpbf16ps peak {3:F0})",
                      amx, peaks.fp32, threads, peaks.bf16)
            .str());
    return true;
  }
  if (peaks.bf16 == 0) {
    say("float32 products on bf16 weights: this CPU has no AVX512-BF16 dot product" + amxNote);
    return false;
  }
  const bool pays = xfrt::bf16ProductsPay(peaks);
  std::string numbers;
  llvm::raw_string_ostream(numbers)
      << llvm::format("this CPU's bf16 dot-product peak %.0f GFLOP/s vs fp32 FMA %.0f on %d "
                      "threads: ",
                      peaks.bf16, peaks.fp32, threads);
  if (amx > 0)
    numbers += llvm::formatv("AMX bf16 tiles {0:F0} do not pay either: ", amx).str();
  say(numbers +
      (pays ? "bf16 dot products"
            : "float32 products on bf16 weights (bf16 must beat fp32 by " +
                  llvm::formatv("{0}x", xfrt::kBf16ProductMargin).str() +
                  "; --bf16-products=on forces it)") +
      amxNote);
  return pays;
}
} // namespace

bool xfc::useBf16Products() {
  static const bool chosen = decide();
  return chosen;
}
