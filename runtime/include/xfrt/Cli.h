//===- Cli.h - The command line of every generated executable ----*- C++
//-*-===//
//
// parseCommandLine turns argv into Options without knowing the model;
// checkOptions and parseTokenList then check them against the manifest. Every
// error is one line for "error: <message>" followed by the usage text (exit
// code 2).
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_CLI_H
#define XFRT_CLI_H

#include "xfrt/Embeddings.h"
#include "xfrt/Manifest.h"
#include "xfrt/Sampling.h"
#include "xfrt/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xfrt {

class Tokenizer;

// Without max_positions, at most this many tokens per sequence.
constexpr int64_t kMaxTokensWithoutLimit = int64_t(1) << 20;
// --batch-file: the largest file read (one input per line).
constexpr size_t kMaxBatchFileBytes = size_t(1) << 30;
// Halide's thread pool limit (MAX_THREADS in its runtime); --threads above it is an error.
constexpr uint64_t kMaxThreads = 256;
// --max-new-tokens without a value when --prompt asks for generation.
constexpr int64_t kDefaultNewTokens = 32;
// --max-new-tokens without a value for a chat reply (--chat, --interactive), which usually ends
// earlier at the end-of-turn token.
constexpr int64_t kDefaultChatTokens = 256;

// --serve without --port.
constexpr int kDefaultServePort = 8080;

// What generation prints on stdout for each sequence (--output).
enum class GenerationOutput { Default, Text, Ids, Json };

struct Options {
  bool help = false;
  std::string weights;        // --weights
  bool randomWeights = false; // --random-weights SEED
  uint64_t seed = 0;
  std::string saveWeights; // --save-weights

  // Inputs. Each flag may repeat; every occurrence is one sequence of the
  // batch.
  std::vector<std::string> tokens,
      sourceTokens;                                       // raw id lists (parseTokenList)
  std::vector<std::string> texts, prompts, sourcePrompts; // need a tokenizer
  std::string tokenizer, vocab, merges;                   // --tokenizer / --vocab / --merges
  std::string batchFile; // --batch-file: one input per line; JSON Lines on stdout (BatchFile.h)
  int64_t batchSize = 0; // --batch N: sequences per packed call / decoding together; 0: default

  // Chat (ChatTemplate.h): --chat wraps each --prompt in the chat template; --interactive reads
  // user turns from stdin. --chat-template names the format instead of the tokenizer's template.
  bool chat = false, interactive = false;
  std::string chatTemplate;
  // --system TEXT: the conversation's system message (replaces the template's default one).
  std::optional<std::string> system;

  // Forward-pass outputs.
  std::string logitsOut, hiddenOut; // --logits-out / --hidden-out
  std::string embeddingsOut;        // --embeddings-out
  Pooling pool = Pooling::Mean;     // --pool mean|cls
  bool poolGiven = false;
  bool normalize = false; // --normalize

  // Generation (Alg. 14 / 15): on with --max-new-tokens or --prompt.
  int64_t maxNewTokens = 0; // 0: not given
  SamplingOptions sampling; // --temperature / --top-k / --top-p
  bool samplingGiven = false;
  uint64_t samplingSeed = 0; // --seed
  bool seedGiven = false;
  std::optional<int64_t> eos; // --eos ID
  bool noEos = false;         // --eos none
  std::optional<int64_t> bos; // --bos ID (encoder-decoders: the initial target)
  bool noCache = false;       // --no-cache: re-run xf_forward on the prefix every step
  bool decodeSteps = false;   // --decode-steps: forward passes one token at a time, cached
  // --output text|ids|json: what generation prints per sequence; Default is text with a
  // tokenizer, else ids (and JSON lines with --batch-file).
  GenerationOutput output = GenerationOutput::Default;

  int threads = 0; // 0: leave the runtime's default
  int repeat = 0;  // 0: not given (one run)
  bool print = false;
  bool profile = false; // --profile: per-kernel table on stderr
  std::string traceOut; // --trace-out: Chrome trace JSON
  std::string profileOut; // --profile-out: per-kernel roofline JSON
  double peakGflops = 0, peakGBs = 0; // --peak G,B: the roofline's ceilings (0: measured)
  bool profiling() const { return profile || !traceOut.empty() || !profileOut.empty(); }
  bool printMemory = false;
  // --cuda-graphs on|off (CUDA builds' decode steps and repeated forwards); not given: on,
  // but off under --profile, which times every kernel call (a graph's kernels are not).
  std::optional<bool> cudaGraphs;
  bool cudaGraphsOn() const { return cudaGraphs.value_or(!profiling()); }
  bool verbose = false;   // -v: notes, e.g. why a CUDA graph is not used

  // --serve: an HTTP server (Server.h, docs/serving.md) on --host (default loopback only)
  // and --port (0: any free port, printed on stderr).
  bool serve = false;
  std::string host = "127.0.0.1";
  int port = kDefaultServePort;
  bool hostGiven = false, portGiven = false;
  // --serve's bounds on work and memory (docs/serving.md "Limits"); 0: the default.
  int64_t maxContext = 0;       // --max-context N: positions of one sequence (decoders)
  uint64_t kvMemory = 0;        // --kv-memory BYTES: the KV caches' budget (decoders)
  int64_t stepTokens = 0;       // --step-tokens N: token rows of one packed call
  int64_t maxRequestTokens = 0; // --max-request-tokens N: tokens of an embeddings request
  // --api-key (else $XF_API_KEY, read by the server): Bearer authentication; without one a
  // --host beyond loopback needs --insecure. --allowed-origin: browser origins beyond loopback
  // ones. --access-log: one JSON line per request ("-": stderr).
  std::string apiKey;
  bool apiKeyGiven = false, insecure = false;
  std::vector<std::string> allowedOrigins;
  std::string accessLog;
  int64_t requestTimeout = 0; // --request-timeout: seconds for a request's head and body (0: 30)

  bool haveTokens() const { return !tokens.empty(); }
  bool haveSource() const { return !sourceTokens.empty() || !sourcePrompts.empty(); }
  // A GGUF checkpoint brings its own tokenizer.
  bool weightsAreGguf() const {
    return weights.size() > 5 && weights.compare(weights.size() - 5, 5, ".gguf") == 0;
  }
  bool haveTokenizer() const { return !tokenizer.empty() || !vocab.empty() || weightsAreGguf(); }
  // Whether any target sequence is given (ids, --text or --prompt).
  bool haveInput() const {
    return haveTokens() || !texts.empty() || !prompts.empty() || !batchFile.empty();
  }
  bool generating() const { return maxNewTokens > 0 || !prompts.empty() || interactive; }
  bool outputGiven() const { return output != GenerationOutput::Default; }
  // Generation prints one JSON line per finished sequence (--output json, --batch-file).
  bool jsonGeneration() const { return output == GenerationOutput::Json || !batchFile.empty(); }
  // The tokenizer generation decodes its printed ids with: none for --output ids.
  const Tokenizer *textTokenizer(const Tokenizer *loaded) const {
    return output == GenerationOutput::Ids ? nullptr : loaded;
  }
};

// Accepts "--flag value" and "--flag=value". A flag given twice is an error,
// except the input flags (--tokens, --source-tokens, --text, --prompt,
// --source-prompt), which repeat.
Expected<Options> parseCommandLine(int argc, const char *const *argv);

// Combinations that need the manifest: weights source, output kind,
// encoder-decoder sources, generation, pooling.
Status checkOptions(const Options &options, const Manifest &manifest);
// Whether --host names this machine only: 127.x.y.z, ::1 or localhost.
bool isLoopbackHost(std::string_view host);

// "1,2,3" -> ids; each 0 <= id < vocab, 1 <= count <= max_positions (when > 0).
// `flag` names the option in errors.
Expected<std::vector<int32_t>> parseTokenList(std::string_view text, const char *flag,
                                              const Manifest &manifest);

// The --help text; `manifest` may be null (then the model lines are omitted).
std::string usageText(const std::string &program, const Manifest *manifest);

} // namespace xfrt

#endif // XFRT_CLI_H
