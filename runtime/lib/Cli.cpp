//===- Cli.cpp - The command line of every generated executable -----------===//
#include "xfrt/Cli.h"

#include "xfrt/ChatTemplate.h"
#include "xfrt/MessageText.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>
#include <type_traits>

namespace xfrt {
namespace {

bool parseUnsigned(std::string_view s, uint64_t max, uint64_t &out) {
  if (s.empty() || s.size() > 20)
    return false;
  out = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return false;
    if (__builtin_mul_overflow(out, uint64_t(10), &out) ||
        __builtin_add_overflow(out, uint64_t(c - '0'), &out))
      return false;
  }
  return out <= max;
}

// A finite decimal number ("0.8", "1e-3"); no hex, inf or nan.
bool parseReal(const std::string &s, double &out) {
  if (s.empty() || s.size() > 64 || s.find_first_not_of("0123456789.eE+-") != std::string::npos)
    return false;
  char *end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(out);
}

// A size in bytes: digits, optionally followed by K, M or G (1024-based).
bool parseByteSize(const std::string &s, uint64_t &out) {
  if (s.empty())
    return false;
  uint64_t scale = 1;
  std::string digits = s;
  switch (s.back()) {
  case 'K':
  case 'k':
    scale = uint64_t(1) << 10;
    break;
  case 'M':
  case 'm':
    scale = uint64_t(1) << 20;
    break;
  case 'G':
  case 'g':
    scale = uint64_t(1) << 30;
    break;
  default:
    break;
  }
  if (scale != 1)
    digits.pop_back();
  return parseUnsigned(digits, uint64_t(1) << 50, out) && !__builtin_mul_overflow(out, scale, &out);
}

enum class Kind { Flag, String, Seed, Count, Real, Id, Many };

// A flag's value as the parser read it (number: Seed, Count, Id; real: Real).
struct Arg {
  const std::string &text;
  uint64_t number;
  double real;
};
// Stores a checked value in Options, or says why it is wrong.
using Apply = Status (*)(Options &, const Arg &);

template <auto Field> Status setTrue(Options &o, const Arg &) {
  o.*Field = true;
  return Status::success();
}
template <auto Field> Status setText(Options &o, const Arg &a) {
  o.*Field = a.text;
  return Status::success();
}
template <auto Field> Status append(Options &o, const Arg &a) {
  (o.*Field).push_back(a.text);
  return Status::success();
}
template <auto Field> Status setCount(Options &o, const Arg &a) {
  o.*Field = std::remove_reference_t<decltype(o.*Field)>(a.number);
  return Status::success();
}

// The models a flag is for; --help marks it "[not for this model]" on the others.
enum class For { All, EncoderDecoders, Logits, HiddenStates, Decoders };
bool isFor(For f, const Manifest &m) {
  switch (f) {
  case For::All:
    return true;
  case For::EncoderDecoders:
    return m.encoderDecoder;
  case For::Logits:
    return m.outputIsLogits;
  case For::HiddenStates:
    return !m.outputIsLogits;
  case For::Decoders: // chat: a decoder-only model
    return m.outputIsLogits && !m.encoderDecoder;
  }
  return true;
}

// One flag, one row: its name, value, what it is for, how it is stored and its --help line.
struct Spec {
  const char *name;
  Kind kind;
  const char *value; // metavariable
  For forModels;
  Apply apply;
  const char *help;
  const char *section = nullptr; // starts a group in --help
};
const Spec kSpecs[] = {
    {"--help", Kind::Flag, nullptr, For::All, setTrue<&Options::help>, "print this help and exit",
     "general"},
    {"--weights", Kind::String, "FILE", For::All, setText<&Options::weights>,
     "load a .safetensors checkpoint, a sharded one's model.safetensors.index.json, or a "
     ".gguf file (which also brings its tokenizer and chat template)"},
    {"--random-weights", Kind::Seed, "SEED", For::All,
     [](Options &o, const Arg &a) -> Status {
       o.randomWeights = true, o.seed = a.number;
       return Status::success();
     },
     "use deterministic random weights (PCG32 + Box-Muller) instead of a "
     "checkpoint"},
    {"--save-weights", Kind::String, "FILE", For::All, setText<&Options::saveWeights>,
     "write the weights in use as F32 .safetensors"},
    {"--threads", Kind::Count, "N", For::All,
     [](Options &o, const Arg &a) -> Status {
       // Halide's thread pool runs at most 256 threads and silently clamps larger counts.
       if (a.number > kMaxThreads)
         return makeError("--threads: " + a.text + " is more than " + std::to_string(kMaxThreads) +
                          ", the most the kernels' thread pool runs");
       o.threads = int(a.number);
       return Status::success();
     },
     "worker threads for the kernels (halide_set_num_threads)"},
    {"--print-memory", Kind::Flag, nullptr, For::All, setTrue<&Options::printMemory>,
     "print peak resident memory (VmHWM) next to the checkpoint's size, and the "
     "resident memory once loaded (VmRSS), to stderr"},
    {"--tokens", Kind::Many, "IDS", For::All, append<&Options::tokens>,
     "comma-separated token ids, e.g. 464,2068,7586; repeat for several "
     "sequences",
     "inputs (repeat a flag for a batch; one kind of input per run)"},
    {"--text", Kind::Many, "TEXT", For::All, append<&Options::texts>,
     "a text to tokenize and run (needs a tokenizer); repeatable"},
    {"--prompt", Kind::Many, "TEXT", For::Logits, append<&Options::prompts>,
     "a text to tokenize and continue (generation; needs a tokenizer); "
     "repeatable"},
    {"--source-tokens", Kind::Many, "IDS", For::EncoderDecoders, append<&Options::sourceTokens>,
     "source ids of an encoder-decoder (one per target sequence, or one for "
     "all)"},
    {"--source-prompt", Kind::Many, "TEXT", For::EncoderDecoders, append<&Options::sourcePrompts>,
     "source text of an encoder-decoder (tokenized)"},
    {"--batch-file", Kind::String, "FILE", For::All, setText<&Options::batchFile>,
     "one input per line (texts with a tokenizer, else id lists; blank lines skipped; an "
     "encoder-decoder's: SOURCE<TAB>TARGET, or SOURCE with --bos); writes JSON Lines to stdout: "
     "embeddings (encoders) or generated ids and text (decoders, encoder-decoders)"},
    {"--batch", Kind::Count, "N", For::All, setCount<&Options::batchSize>,
     "run up to N sequences together: one packed forward pass per N inputs, N sequences "
     "decoding together (default 32)"},
    {"--tokenizer", Kind::String, "PATH", For::All, setText<&Options::tokenizer>,
     "tokenizer files: a directory holding vocab.json + merges.txt (GPT-2 BPE) "
     "or vocab.txt "
     "(BERT WordPiece), one of those files, or a .gguf file's tokenizer; default with "
     "--weights X.gguf: X.gguf's own"},
    {"--vocab", Kind::String, "FILE", For::All, setText<&Options::vocab>,
     "vocab.json (GPT-2 BPE, with --merges) or vocab.txt (WordPiece)"},
    {"--merges", Kind::String, "FILE", For::All, setText<&Options::merges>,
     "merges.txt of a GPT-2 BPE tokenizer"},
    {"--logits-out", Kind::String, "FILE", For::Logits, setText<&Options::logitsOut>,
     "write the logits as float32 .npy: [l, d_out]; [n, l_max, d_out] "
     "zero-padded for n > 1 "
     "sequences",
     "forward-pass outputs"},
    {"--hidden-out", Kind::String, "FILE", For::HiddenStates, setText<&Options::hiddenOut>,
     "write the hidden states as float32 .npy (same layout)"},
    {"--embeddings-out", Kind::String, "FILE", For::HiddenStates, setText<&Options::embeddingsOut>,
     "write one pooled vector per sequence as float32 .npy [n, d_out]"},
    {"--pool", Kind::String, "mean|cls", For::HiddenStates,
     [](Options &o, const Arg &a) -> Status {
       if (a.text != "mean" && a.text != "cls")
         return makeError("--pool: " + quoteInput(a.text) + " is not 'mean' or 'cls'");
       o.pool = a.text == "mean" ? Pooling::Mean : Pooling::Cls;
       o.poolGiven = true;
       return Status::success();
     },
     "embedding pooling: mean over all tokens ([CLS]/[SEP] included), or the "
     "first token"},
    {"--normalize", Kind::Flag, nullptr, For::HiddenStates, setTrue<&Options::normalize>,
     "L2-normalize each embedding"},
    {"--print", Kind::Flag, nullptr, For::All, setTrue<&Options::print>,
     "print the top-5 ids (and values) of each sequence's last row"},
    {"--repeat", Kind::Count, "N", For::All, setCount<&Options::repeat>,
     "run the forward pass N times; print min/median ms to stderr"},
    {"--cuda-graphs", Kind::String, "on|off", For::All,
     [](Options &o, const Arg &a) -> Status {
       if (a.text != "on" && a.text != "off")
         return makeError("--cuda-graphs: " + quoteInput(a.text) + " is not 'on' or 'off'");
       o.cudaGraphs = a.text == "on";
       return Status::success();
     },
     "CUDA builds: replay each decode step, and each forward of a length seen before, as one "
     "CUDA graph launch after the first two (default on, off under --profile, which then times "
     "every kernel call)"},
    {"--verbose", Kind::Flag, nullptr, For::All, setTrue<&Options::verbose>,
     "-v: notes on stderr, such as why a CUDA graph is not used"},
    {"--profile", Kind::Flag, nullptr, For::All, setTrue<&Options::profile>,
     "print per-kernel calls, total ms, GFLOP/s and share of the run to "
     "stderr"},
    {"--profile-out", Kind::String, "FILE", For::All, setText<&Options::profileOut>,
     "write the per-kernel times, FLOPs, bytes and roofline as JSON (tools/plot_roofline.py)"},
    {"--peak", Kind::String, "GFLOPS,GB/S", For::All,
     [](Options &o, const Arg &a) -> Status {
       size_t comma = a.text.find(',');
       if (comma == std::string::npos || !parseReal(a.text.substr(0, comma), o.peakGflops) ||
           !parseReal(a.text.substr(comma + 1), o.peakGBs) || o.peakGflops <= 0 || o.peakGBs <= 0)
         return makeError("--peak: " + quoteInput(a.text) +
                          " is not two positive numbers GFLOPS,GB/S (e.g. 180,30)");
       return Status::success();
     },
     "the roofline's FMA peak and read bandwidth (default: measured once, kept in "
     "$XF_MACHINE_FILE or ~/.cache/xf/machine.json)"},
    {"--trace-out", Kind::String, "FILE", For::All, setText<&Options::traceOut>,
     "write every kernel call as a Chrome trace JSON (opens in Perfetto)"},
    {"--max-new-tokens", Kind::Count, "N", For::Logits, setCount<&Options::maxNewTokens>,
     "generate N tokens after each prompt (Alg. 14/15); default 32 with "
     "--prompt",
     "generation (stdout: new ids, or decoded text with a tokenizer; stderr: "
     "timing summary)"},
    {"--temperature", Kind::Real, "T", For::Logits,
     [](Options &o, const Arg &a) -> Status {
       if (a.real < 0)
         return makeError("--temperature: " + a.text + " is negative");
       o.sampling.temperature = a.real, o.samplingGiven = true;
       return Status::success();
     },
     "0 (default): greedy argmax, ties to the lowest id"},
    {"--top-k", Kind::Count, "K", For::Logits,
     [](Options &o, const Arg &a) -> Status {
       o.sampling.topK = int64_t(a.number), o.samplingGiven = true;
       return Status::success();
     },
     "sample among the K most likely tokens only"},
    {"--top-p", Kind::Real, "P", For::Logits,
     [](Options &o, const Arg &a) -> Status {
       if (!(a.real > 0 && a.real <= 1))
         return makeError("--top-p: " + a.text + " is not in (0, 1]");
       o.sampling.topP = a.real, o.samplingGiven = true;
       return Status::success();
     },
     "sample from the smallest set with probability >= P (0 < P <= 1)"},
    {"--seed", Kind::Seed, "S", For::Logits,
     [](Options &o, const Arg &a) -> Status {
       o.samplingSeed = a.number, o.seedGiven = true;
       return Status::success();
     },
     "sampling seed (PCG32); default 0"},
    {"--eos", Kind::Id, "ID|none", For::Logits,
     [](Options &o, const Arg &a) -> Status {
       if (a.text == "none")
         o.noEos = true;
       else
         o.eos = int64_t(a.number);
       return Status::success();
     },
     "stop after this id; default: with --chat the end-of-turn token, else the tokenizer's "
     "end-of-text id (a .gguf's eos_token_id), else none"},
    {"--output", Kind::String, "text|ids|json", For::Logits,
     [](Options &o, const Arg &a) -> Status {
       if (a.text != "text" && a.text != "ids" && a.text != "json")
         return makeError("--output: '" + a.text + "' is not 'text', 'ids' or 'json'");
       o.output = a.text == "text"  ? GenerationOutput::Text
                  : a.text == "ids" ? GenerationOutput::Ids
                                    : GenerationOutput::Json;
       return Status::success();
     },
     "what generation prints per sequence: the decoded text (default with a tokenizer), the "
     "new ids comma-separated (default without one), or one JSON line {\"index\", "
     "\"prompt_tokens\", \"ids\", \"text\" (with a tokenizer), \"stop\"}"},
    {"--bos", Kind::Id, "ID", For::EncoderDecoders,
     [](Options &o, const Arg &a) -> Status {
       if (a.text == "none")
         return makeError("--bos: 'none' is not a token id");
       o.bos = int64_t(a.number);
       return Status::success();
     },
     "encoder-decoders: the initial target when no --tokens are given"},
    {"--no-cache", Kind::Flag, nullptr, For::Logits, setTrue<&Options::noCache>,
     "re-run the whole prefix every step even when the model has a KV-cache "
     "entry point"},
    {"--decode-steps", Kind::Flag, nullptr, For::Logits, setTrue<&Options::decodeSteps>,
     "forward passes: compute every position's logits as generation's decode steps do, one "
     "token at a time through the KV cache (xf_forward_cached), instead of one xf_forward "
     "over the sequence; the same logits up to rounding, through the decode kernels"},
    {"--chat", Kind::Flag, nullptr, For::Decoders, setTrue<&Options::chat>,
     "wrap each --prompt in the model's chat template (a .gguf's tokenizer.chat_template) as "
     "the user's turn; the reply stops at the end-of-turn token",
     "chat (a decoder with a chat template)"},
    {"--interactive", Kind::Flag, nullptr, For::Decoders, setTrue<&Options::interactive>,
     "chat: read user turns from stdin, one per line, until EOF; keeps the KV cache across "
     "turns"},
    {"--chat-template", Kind::String, "NAME", For::Decoders,
     [](Options &o, const Arg &a) -> Status {
       if (!chatFormatNamed(a.text))
         return makeError("--chat-template: " + quoteInput(a.text) + " is not one of " + chatFormatNames());
       o.chatTemplate = a.text;
       return Status::success();
     },
     "chatml|llama2|llama3|zephyr: use this format instead of the tokenizer's template (also "
     "for --serve's chat completions)"},
    {"--system", Kind::String, "TEXT", For::Decoders, setText<&Options::system>,
     "chat: the system message, instead of the template's default one"},
    {"--serve", Kind::Flag, nullptr, For::All, setTrue<&Options::serve>,
     "run an HTTP server: POST /v1/completions and /v1/chat/completions (decoders; the "
     "generation options above are the defaults of a request) or /v1/embeddings (encoders; "
     "--pool, --normalize), requests "
     "batched together, up to --batch N sequences at a time (default 32); stops on "
     "SIGINT/SIGTERM after finishing what runs (docs/serving.md)",
     "serving (HTTP, JSON; OpenAI-style API)"},
    {"--host", Kind::String, "ADDR", For::All,
     [](Options &o, const Arg &a) -> Status {
       o.host = a.text, o.hostGiven = true;
       return Status::success();
     },
     "--serve: the address to listen on (default 127.0.0.1, this machine only; 0.0.0.0: "
     "every interface)"},
    {"--port", Kind::String, "PORT", For::All,
     [](Options &o, const Arg &a) -> Status {
       uint64_t port = 0;
       if (!parseUnsigned(a.text, 65535, port))
         return makeError("--port: " + quoteInput(a.text) + " is not a port number in [0, 65535]");
       o.port = int(port), o.portGiven = true;
       return Status::success();
     },
     "--serve: the TCP port (default 8080; 0: any free port, printed on stderr)"},
    {"--max-context", Kind::Count, "N", For::Decoders, setCount<&Options::maxContext>,
     "--serve: positions one sequence may reach, prompt included (default: the model's "
     "cache positions); each place's KV cache holds N"},
    {"--kv-memory", Kind::String, "BYTES", For::Decoders,
     [](Options &o, const Arg &a) -> Status {
       if (!parseByteSize(a.text, o.kvMemory) || o.kvMemory == 0)
         return makeError("--kv-memory: '" + a.text + "' is not a size in bytes (e.g. 512M, 2G)");
       return Status::success();
     },
     "--serve: the most memory the running sequences' KV caches may reserve (bytes, or with "
     "K/M/G: 1024-based); a request waits for room, and one that can never fit gets 413 "
     "(default: no limit beyond --batch places of --max-context)"},
    {"--step-tokens", Kind::Count, "N", For::All, setCount<&Options::stepTokens>,
     "--serve: the most token rows one packed call runs (default 512): long prompts are "
     "split over steps (chunked prefill), embedding requests over passes"},
    {"--max-request-tokens", Kind::Count, "N", For::HiddenStates,
     setCount<&Options::maxRequestTokens>,
     "--serve: the most tokens of all inputs of one embeddings request (default 300000; "
     "more: 413)"},
    {"--api-key", Kind::String, "KEY", For::All,
     [](Options &o, const Arg &a) -> Status {
       if (a.text.empty())
         return makeError("--api-key: the key is empty");
       o.apiKey = a.text, o.apiKeyGiven = true;
       return Status::success();
     },
     "--serve: requests must send 'Authorization: Bearer KEY' (default: $XF_API_KEY; /health "
     "and /ready are open)"},
    {"--insecure", Kind::Flag, nullptr, For::All, setTrue<&Options::insecure>,
     "--serve: allow a --host beyond loopback without an API key"},
    {"--allowed-origin", Kind::Many, "ORIGIN", For::All, append<&Options::allowedOrigins>,
     "--serve: a browser origin (scheme://host[:port]) allowed besides loopback ones"},
    {"--access-log", Kind::String, "FILE", For::All, setText<&Options::accessLog>,
     "--serve: one JSON line per request, appended to FILE ('-': stderr)"},
    {"--request-timeout", Kind::Count, "SECONDS", For::All, setCount<&Options::requestTimeout>,
     "--serve: a request's head and body must arrive within SECONDS of its first byte "
     "(default 30)"},
};

const Spec *findSpec(const std::string &name) {
  for (const Spec &s : kSpecs)
    if (name == s.name)
      return &s;
  return nullptr;
}

} // namespace

Expected<Options> parseCommandLine(int argc, const char *const *argv) {
  Options o;
  std::set<std::string> seen;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i] ? argv[i] : "";
    std::string name = arg, value;
    bool inlineValue = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inlineValue = true;
    }
    if (name == "-h")
      name = "--help";
    if (name == "-v")
      name = "--verbose";
    const Spec *spec = findSpec(name);
    if (!spec) {
      if (arg.rfind("-", 0) == 0)
        return makeError("unknown option " + quoteInput(name));
      return makeError("unexpected argument " + quoteInput(arg));
    }
    if (!seen.insert(name).second && spec->kind != Kind::Many)
      return makeError("option " + quoteInput(name) + " given twice");
    if (spec->kind == Kind::Flag) {
      if (inlineValue)
        return makeError("option " + quoteInput(name) + " takes no value");
    } else if (!inlineValue) {
      if (i + 1 >= argc || !argv[i + 1])
        return makeError("option " + quoteInput(name) + " needs a value (" + spec->value + ")");
      value = argv[++i];
    }
    uint64_t number = 0;
    double real = 0;
    if (spec->kind == Kind::Seed && !parseUnsigned(value, UINT64_MAX, number))
      return makeError(name + ": " + quoteInput(value) + " is not an unsigned 64-bit integer");
    if (spec->kind == Kind::Count && (!parseUnsigned(value, 1000000, number) || number == 0))
      return makeError(name + ": " + quoteInput(value) + " is not an integer in [1, 1000000]");
    if (spec->kind == Kind::Id && value != "none" &&
        !parseUnsigned(value, uint64_t(INT32_MAX), number))
      return makeError(name + ": " + quoteInput(value) + " is not a token id");
    if (spec->kind == Kind::Real && !parseReal(value, real))
      return makeError(name + ": " + quoteInput(value) + " is not a finite number");
    // Texts may be empty (an empty prompt is refused later, with the sequence
    // it belongs to).
    if (spec->kind == Kind::String && value.empty())
      return makeError("option " + quoteInput(name) + " needs a non-empty value");

    if (Status stored = spec->apply(o, Arg{value, number, real}); !stored)
      return stored;
  }
  return o;
}

bool isLoopbackHost(std::string_view host) {
  if (host == "localhost" || host == "::1" || host == "[::1]")
    return true;
  if (host.substr(0, 4) != "127.")
    return false;
  return host.find_first_not_of("0123456789.") == std::string_view::npos;
}

namespace {

// --serve takes its inputs from requests; the generation (decoders) or pooling (encoders)
// options are the server's defaults.
Status checkServeOptions(const Options &o, const Manifest &m) {
  if (m.encoderDecoder)
    return makeError("--serve: model '" + m.model + "' is an encoder-decoder; the server runs "
                     "decoders (completions) and encoders (embeddings)");
  if (o.haveInput() || o.haveSource() || o.bos)
    return makeError("--serve takes its inputs from HTTP requests: give no --tokens, --text, "
                     "--prompt, --batch-file or sources");
  const char *notHere = !o.logitsOut.empty()       ? "--logits-out"
                        : !o.hiddenOut.empty()     ? "--hidden-out"
                        : !o.embeddingsOut.empty() ? "--embeddings-out"
                        : !o.saveWeights.empty()   ? "--save-weights"
                        : o.print                  ? "--print"
                        : o.repeat                 ? "--repeat"
                        : o.profiling()            ? "--profile/--profile-out/--trace-out"
                        : o.chat || o.interactive  ? "--chat/--interactive"
                        : o.system                 ? "--system"
                        : o.noCache                ? "--no-cache"
                        : o.decodeSteps            ? "--decode-steps"
                        : o.outputGiven()          ? "--output"
                                                   : nullptr;
  if (notHere)
    return makeError(std::string(notHere) + " is not for --serve");
  if (o.maxContext > 0 && o.maxContext > m.cachePositions)
    return makeError("--max-context: " + std::to_string(o.maxContext) + " is more than model '" +
                     m.model + "''s " + std::to_string(m.cachePositions) + " cache positions");
  if (!o.tokenizer.empty() && !o.vocab.empty())
    return makeError("give either --tokenizer or --vocab, not both");
  if (!o.merges.empty() && o.vocab.empty())
    return makeError("--merges needs --vocab vocab.json");
  const char *envKey = std::getenv("XF_API_KEY");
  if (!isLoopbackHost(o.host) && o.apiKey.empty() && !(envKey && *envKey) && !o.insecure)
    return makeError("--host " + o.host + " can be reached from other machines: give "
                     "--api-key KEY (or XF_API_KEY), or --insecure to serve without "
                     "authentication");
  if (!o.chatTemplate.empty() && (!m.outputIsLogits || !o.haveTokenizer()))
    return makeError(!m.outputIsLogits ? "--chat-template: model '" + m.model +
                                             "' is not a decoder that outputs logits"
                                       : std::string("--chat-template needs a tokenizer: "
                                                     "--tokenizer PATH or --weights X.gguf"));
  if (m.outputIsLogits) {
    if (o.poolGiven || o.normalize)
      return makeError(std::string(o.poolGiven ? "--pool" : "--normalize") + ": model '" +
                       m.model + "' outputs logits, not hidden states to pool");
    if (o.sampling.temperature == 0 && (o.sampling.topK > 1 || o.sampling.topP < 1))
      return makeError("--top-k/--top-p need --temperature > 0 (0 is greedy)");
    if (o.eos && *o.eos >= m.vocab)
      return makeError("--eos: token id " + std::to_string(*o.eos) + " is out of range [0, " +
                       std::to_string(m.vocab) + ")");
    if (o.maxRequestTokens)
      return makeError("--max-request-tokens: model '" + m.model + "' outputs logits; the "
                       "limit is for embeddings requests");
  } else if (o.maxContext || o.kvMemory) {
    return makeError(std::string(o.maxContext ? "--max-context" : "--kv-memory") + ": model '" +
                     m.model + "' outputs hidden states (embeddings); it keeps no KV cache");
  } else if (o.maxNewTokens || o.samplingGiven || o.seedGiven || o.eos || o.noEos) {
    return makeError("model '" + m.model + "' outputs hidden states (embeddings); "
                     "--max-new-tokens/--temperature/--top-k/--top-p/--seed/--eos are for "
                     "decoders");
  }
  return Status::success();
}

/// The options of --serve given without it.
Status checkServeOnlyOptions(const Options &o) {
  if (o.hostGiven || o.portGiven)
    return makeError(std::string(o.hostGiven ? "--host" : "--port") + " needs --serve");
  if (o.maxContext || o.kvMemory || o.stepTokens || o.maxRequestTokens)
    return makeError(std::string(o.maxContext   ? "--max-context"
                                 : o.kvMemory   ? "--kv-memory"
                                 : o.stepTokens ? "--step-tokens"
                                                : "--max-request-tokens") +
                     " needs --serve");
  if (o.apiKeyGiven || o.insecure || !o.allowedOrigins.empty() || !o.accessLog.empty() ||
      o.requestTimeout)
    return makeError(std::string(o.apiKeyGiven         ? "--api-key"
                                 : o.insecure          ? "--insecure"
                                 : o.requestTimeout    ? "--request-timeout"
                                 : o.accessLog.empty() ? "--allowed-origin"
                                                       : "--access-log") +
                     " needs --serve");
  return Status::success();
}

/// Output files against what the model outputs.
Status checkOutputs(const Options &o, const Manifest &m) {
  if (!o.logitsOut.empty() && !m.outputIsLogits)
    return makeError("--logits-out: model '" + m.model +
                     "' outputs hidden states; use --hidden-out");
  if (o.decodeSteps && !(m.cached && m.cachePositions > 0))
    return makeError("--decode-steps: model '" + m.model +
                     "' has no KV-cache entry point (xf_forward_cached)");
  if (o.decodeSteps && o.profiling())
    return makeError("--decode-steps: --profile/--profile-out/--trace-out account for "
                     "xf_forward calls; profile a generation instead");
  if (!o.hiddenOut.empty() && m.outputIsLogits)
    return makeError("--hidden-out: model '" + m.model + "' outputs logits; use --logits-out");
  if (!o.embeddingsOut.empty() && m.outputIsLogits)
    return makeError("--embeddings-out: model '" + m.model +
                     "' outputs logits, not hidden states to pool");
  if ((o.poolGiven || o.normalize) && o.embeddingsOut.empty() && o.batchFile.empty())
    return makeError(std::string(o.poolGiven ? "--pool" : "--normalize") +
                     " needs --embeddings-out or --batch-file");

  return Status::success();
}

/// Tokenizer files and the kind of input (--tokens, --text, --prompt, --batch-file); `kinds`
/// is how many kinds were given.
Status checkInputs(const Options &o, const Manifest &m, int &kinds) {
  if (!o.tokenizer.empty() && !o.vocab.empty())
    return makeError("give either --tokenizer or --vocab, not both");
  if (!o.merges.empty() && o.vocab.empty())
    return makeError("--merges needs --vocab vocab.json");
  kinds = !o.tokens.empty() + !o.texts.empty() + !o.prompts.empty() + !o.batchFile.empty();
  if (kinds > 1)
    return makeError("give one kind of input: --tokens, --text, --prompt or --batch-file");
  if (!o.batchFile.empty()) {
    if (m.encoderDecoder && o.haveSource())
      return makeError("--batch-file holds the sources of encoder-decoder '" + m.model +
                       "' (SOURCE<TAB>TARGET lines): give no " +
                       (o.sourceTokens.empty() ? "--source-prompt" : "--source-tokens"));
    if (m.outputIsLogits && o.maxNewTokens == 0)
      return makeError("--batch-file on " + std::string(m.encoderDecoder ? "encoder-decoder" : "decoder") +
                       " '" + m.model + "' generates: give --max-new-tokens N");
    if (o.chat || o.interactive)
      return makeError("--batch-file takes plain inputs, not --chat or --interactive");
  }
  if ((!o.texts.empty() || !o.prompts.empty() || !o.sourcePrompts.empty()) && !o.haveTokenizer())
    return makeError(std::string(!o.texts.empty()     ? "--text"
                                 : !o.prompts.empty() ? "--prompt"
                                                      : "--source-prompt") +
                     " needs a tokenizer: --tokenizer PATH, --vocab FILE or --weights X.gguf");
  if (!o.sourceTokens.empty() && !o.sourcePrompts.empty())
    return makeError("give either --source-tokens or --source-prompt, not both");

  return Status::success();
}

/// Chat: text turns for a decoder.
Status checkChat(const Options &o, const Manifest &m) {
  if (!o.chatTemplate.empty() && !o.chat && !o.interactive)
    return makeError("--chat-template needs --chat or --interactive");
  if (o.system && !o.chat && !o.interactive)
    return makeError("--system needs --chat or --interactive");
  if (o.chat || o.interactive) {
    const char *flag = o.interactive ? "--interactive" : "--chat";
    if (m.encoderDecoder || !m.outputIsLogits)
      return makeError(std::string(flag) + ": model '" + m.model +
                       "' is not a decoder that outputs logits");
    if (!o.tokens.empty() || !o.texts.empty())
      return makeError(std::string(flag) + " takes text turns, not " +
                       (o.tokens.empty() ? "--text" : "--tokens") +
                       (o.interactive ? " (user turns come from stdin)" : " (give --prompt)"));
    if (o.interactive && !o.prompts.empty())
      return makeError("--interactive reads the user turns from stdin; give no --prompt");
    if (o.chat && o.prompts.empty() && !o.interactive)
      return makeError("--chat needs --prompt TEXT (the user's turn), or --interactive");
    if (!o.haveTokenizer())
      return makeError(std::string(flag) +
                       " needs a tokenizer: --weights X.gguf, or --tokenizer PATH");
  }

  return Status::success();
}

/// Encoder-decoder sources against the targets; `targets` is how many target sequences run.
Status checkSources(const Options &o, const Manifest &m, int kinds, size_t &targets) {
  if (o.haveSource() && !m.encoderDecoder)
    return makeError(std::string(o.sourceTokens.empty() ? "--source-prompt" : "--source-tokens") +
                     ": model '" + m.model + "' is not an encoder-decoder");
  if (o.bos && !m.encoderDecoder)
    return makeError("--bos: model '" + m.model + "' is not an encoder-decoder");
  if (o.bos && kinds - !o.batchFile.empty())
    return makeError("give either --bos or a target (--tokens/--prompt), not both");
  size_t sources = std::max(o.sourceTokens.size(), o.sourcePrompts.size());
  targets = std::max({o.tokens.size(), o.texts.size(), o.prompts.size(),
                             size_t(!o.batchFile.empty())});
  if (o.bos && o.batchFile.empty())
    targets = sources;
  if (targets && m.encoderDecoder && !sources && o.batchFile.empty())
    return makeError("--source-tokens is required: model '" + m.model + "' is an encoder-decoder");
  if (sources > 1 && targets && sources != targets)
    return makeError(std::to_string(sources) + " sources for " + std::to_string(targets) +
                     " target sequences: give one source, or one per sequence");

  return Status::success();
}

/// Generation's options, or their absence without it.
Status checkGeneration(const Options &o, const Manifest &m, size_t targets) {
  if (o.generating()) {
    if (!m.outputIsLogits)
      return makeError("model '" + m.model + "' outputs hidden states; it cannot generate");
    if (!o.texts.empty())
      return makeError("--text is for forward passes; give --prompt to generate");
    if (!targets && !o.interactive)
      return makeError(m.encoderDecoder ? "generation needs a target: --tokens IDS or --bos ID"
                                        : "generation needs --tokens or --prompt");
    const char *forwardOnly = !o.logitsOut.empty()       ? "--logits-out"
                              : !o.embeddingsOut.empty() ? "--embeddings-out"
                              : o.print                  ? "--print"
                              : o.repeat                 ? "--repeat"
                              : o.decodeSteps            ? "--decode-steps"
                                                         : nullptr;
    if (forwardOnly)
      return makeError(std::string(forwardOnly) + " is for forward passes, not generation");
    if (o.sampling.temperature == 0 && (o.sampling.topK > 1 || o.sampling.topP < 1))
      return makeError("--top-k/--top-p need --temperature > 0 (0 is greedy)");
    if (o.eos && *o.eos >= m.vocab)
      return makeError("--eos: token id " + std::to_string(*o.eos) + " is out of range [0, " +
                       std::to_string(m.vocab) + ")");
    if (o.bos && *o.bos >= m.vocab)
      return makeError("--bos: token id " + std::to_string(*o.bos) + " is out of range [0, " +
                       std::to_string(m.vocab) + ")");
    if (o.outputGiven() && (o.chat || o.interactive))
      return makeError("--output is for plain generation, not --chat or --interactive");
    if (o.output == GenerationOutput::Text && !o.haveTokenizer())
      return makeError("--output text needs a tokenizer: --tokenizer PATH, --vocab FILE or "
                       "--weights X.gguf");
    if (!o.batchFile.empty() && o.outputGiven() && o.output != GenerationOutput::Json)
      return makeError("--batch-file writes JSON lines; --output text/ids are for --tokens and "
                       "--prompt");
  } else {
    const char *needs = o.samplingGiven    ? "--temperature/--top-k/--top-p"
                        : o.seedGiven      ? "--seed"
                        : o.eos || o.noEos ? "--eos"
                        : o.bos            ? "--bos"
                        : o.noCache        ? "--no-cache"
                        : o.outputGiven()  ? "--output"
                                           : nullptr;
    if (needs)
      return makeError(std::string(needs) + " needs generation (--max-new-tokens N or --prompt)");
  }

  return Status::success();
}

} // namespace

Status checkOptions(const Options &o, const Manifest &m) {
  if (o.weights.empty() == !o.randomWeights)
    return makeError(o.randomWeights ? "give either --weights or --random-weights, not both"
                                     : "give --weights FILE or --random-weights SEED");
  if (o.serve)
    return checkServeOptions(o, m);
  int kinds = 0;
  size_t targets = 0;
  if (Status s = checkServeOnlyOptions(o); !s)
    return s;
  if (Status s = checkOutputs(o, m); !s)
    return s;
  if (Status s = checkInputs(o, m, kinds); !s)
    return s;
  if (Status s = checkChat(o, m); !s)
    return s;
  if (Status s = checkSources(o, m, kinds, targets); !s)
    return s;
  if (Status s = checkGeneration(o, m, targets); !s)
    return s;

  if (!targets && !o.interactive) {
    const char *needs = !o.logitsOut.empty()       ? "--logits-out"
                        : !o.hiddenOut.empty()     ? "--hidden-out"
                        : !o.embeddingsOut.empty() ? "--embeddings-out"
                        : o.print                  ? "--print"
                        : o.repeat                 ? "--repeat"
                        : o.profile                ? "--profile"
                        : !o.traceOut.empty()      ? "--trace-out"
                        : !o.profileOut.empty()    ? "--profile-out"
                        : o.haveSource()           ? "--source-tokens"
                                                   : nullptr;
    if (needs)
      return makeError(std::string(needs) + " needs --tokens");
    if (o.saveWeights.empty() && !o.printMemory)
      return makeError("nothing to do: give --tokens (or --save-weights)");
  }
  return Status::success();
}

Expected<std::vector<int32_t>> parseTokenList(std::string_view text, const char *flag,
                                              const Manifest &m) {
  int64_t limit = m.maxPositions > 0 ? m.maxPositions : kMaxTokensWithoutLimit;
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (true) {
    size_t comma = text.find(',', pos);
    std::string_view item =
        text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    while (!item.empty() && item.front() == ' ')
      item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ')
      item.remove_suffix(1);
    std::string shown(item.substr(0, 24));
    if (item.empty())
      return makeError(std::string(flag) + ": empty token id at position " +
                       std::to_string(ids.size()));
    uint64_t id;
    bool negative = item.front() == '-' && item.size() > 1;
    if (!parseUnsigned(negative ? item.substr(1) : item, UINT64_MAX, id))
      return makeError(std::string(flag) + ": " + quoteInput(item) + " is not a token id");
    if (negative || id >= uint64_t(m.vocab))
      return makeError(std::string(flag) + ": token id " + shown + " at position " +
                       std::to_string(ids.size()) + " is out of range [0, " +
                       std::to_string(m.vocab) + ")");
    if (int64_t(ids.size()) >= limit)
      return makeError(std::string(flag) + ": more than " + std::to_string(limit) + " tokens" +
                       (m.maxPositions > 0 ? " (the model's max_positions)" : ""));
    ids.push_back(int32_t(id));
    if (comma == std::string_view::npos)
      break;
    pos = comma + 1;
  }
  return ids;
}

std::string usageText(const std::string &program, const Manifest *m) {
  std::string out = "usage: " + program +
                    " (--weights FILE | --random-weights SEED) [--tokens IDS] [options]\n"
                    "       " +
                    program +
                    " --weights FILE --tokenizer DIR --prompt TEXT [--max-new-tokens N] "
                    "[--temperature T --seed S]\n"
                    "       " +
                    program +
                    " --weights FILE --vocab vocab.txt --text TEXT [--text TEXT ...] "
                    "--embeddings-out E.npy [--pool mean --normalize]\n"
                    "       " +
                    program + " --weights MODEL.gguf (--chat --prompt TEXT | --interactive)\n";
  if (m) {
    out += "\nmodel: " + m->model + " (" + m->kindName() + ", output " + m->outputName() + " [l, " +
           std::to_string(m->dOut) + "], vocab " + std::to_string(m->vocab) + ", max_positions " +
           (m->maxPositions > 0 ? std::to_string(m->maxPositions) : std::string("unlimited")) +
           ", " + std::to_string(m->parameters.size()) + " parameters)\n";
    if (!m->hyperparameters.empty()) {
      out += "hyperparameters:";
      for (auto &[name, value] : m->hyperparameters)
        out += " " + name + "=" + value;
      out += "\n";
    }
  }
  if (m && m->outputIsLogits)
    out += std::string("generation: ") +
           (m->cached ? "KV cache of " + std::to_string(m->cachePositions) + " positions (" +
                            (m->cacheHalf ? "float16" : "float32") + ")"
                      : "re-runs the whole prefix every step (no cached entry point)") +
           "\n";
  for (const Spec &s : kSpecs) {
    if (s.section)
      out += std::string("\n") + s.section + ":\n";
    bool notHere = m && !isFor(s.forModels, *m);
    std::string left = std::string("  ") + s.name + (s.value ? std::string(" ") + s.value : "");
    left.append(left.size() < 26 ? 26 - left.size() : 1, ' ');
    out += left + s.help + (notHere ? " [not for this model]" : "") + "\n";
  }
  out += "\nExit status: 0 success, 1 bad weights or runtime failure, 2 bad "
         "command line.\n";
  return out;
}

} // namespace xfrt
