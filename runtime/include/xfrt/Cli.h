//===- Cli.h - The command line of every generated executable ----*- C++ -*-===//
//
// parseCommandLine turns argv into Options without knowing the model; checkOptions and
// parseTokenList then check them against the manifest. Every error is one line for
// "error: <message>" followed by the usage text (exit code 2).
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_CLI_H
#define XFRT_CLI_H

#include "xfrt/Manifest.h"
#include "xfrt/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xfrt {

// Without max_positions, at most this many tokens per sequence.
constexpr int64_t kMaxTokensWithoutLimit = int64_t(1) << 20;

struct Options {
  bool help = false;
  std::string weights;        // --weights
  bool randomWeights = false; // --random-weights SEED
  uint64_t seed = 0;
  std::string saveWeights; // --save-weights
  bool haveTokens = false, haveSourceTokens = false;
  std::string tokens, sourceTokens; // raw lists, checked by parseTokenList
  std::string logitsOut, hiddenOut; // --logits-out / --hidden-out
  int threads = 0;                  // 0: leave the runtime's default
  int repeat = 0;                   // 0: not given (one run)
  bool print = false;
  bool profile = false;    // --profile: per-kernel table on stderr
  std::string traceOut;    // --trace-out: Chrome trace JSON
};

// Accepts "--flag value" and "--flag=value". A flag given twice is an error.
Expected<Options> parseCommandLine(int argc, const char *const *argv);

// Combinations that need the manifest: weights source, output kind, encoder-decoder sources.
Status checkOptions(const Options &options, const Manifest &manifest);

// "1,2,3" -> ids; each 0 <= id < vocab, 1 <= count <= max_positions (when > 0).
// `flag` names the option in errors.
Expected<std::vector<int32_t>> parseTokenList(std::string_view text, const char *flag,
                                              const Manifest &manifest);

// The --help text; `manifest` may be null (then the model lines are omitted).
std::string usageText(const std::string &program, const Manifest *manifest);

} // namespace xfrt

#endif // XFRT_CLI_H
