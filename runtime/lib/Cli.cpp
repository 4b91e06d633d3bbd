//===- Cli.cpp - The command line of every generated executable -----------===//
#include "xfrt/Cli.h"

#include <cstring>
#include <set>

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

enum class Kind { Flag, String, Seed, Count };
struct Spec {
  const char *name;
  Kind kind;
  const char *value; // metavariable
  const char *help;
};
const Spec kSpecs[] = {
    {"--help", Kind::Flag, nullptr, "print this help and exit"},
    {"--weights", Kind::String, "FILE",
     "load a .safetensors checkpoint, or a sharded one's model.safetensors.index.json"},
    {"--random-weights", Kind::Seed, "SEED",
     "use deterministic random weights (PCG32 + Box-Muller) instead of a checkpoint"},
    {"--save-weights", Kind::String, "FILE", "write the weights in use as F32 .safetensors"},
    {"--tokens", Kind::String, "IDS", "comma-separated token ids, e.g. 464,2068,7586"},
    {"--source-tokens", Kind::String, "IDS",
     "comma-separated source token ids (encoder-decoder models only; required there)"},
    {"--logits-out", Kind::String, "FILE", "write the logits [l, d_out] as float32 .npy"},
    {"--hidden-out", Kind::String, "FILE", "write the hidden states [l, d_out] as float32 .npy"},
    {"--threads", Kind::Count, "N", "worker threads for the kernels (halide_set_num_threads)"},
    {"--repeat", Kind::Count, "N", "run the forward pass N times; print min/median ms to stderr"},
    {"--print", Kind::Flag, nullptr, "print the top-5 ids (and values) of the last row"},
    {"--profile", Kind::Flag, nullptr,
     "print per-kernel calls, total ms, GFLOP/s and share of the run to stderr"},
    {"--trace-out", Kind::String, "FILE",
     "write every kernel call as a Chrome trace JSON (opens in Perfetto)"},
};

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
    const Spec *spec = nullptr;
    for (const Spec &s : kSpecs)
      if (name == s.name)
        spec = &s;
    if (!spec) {
      if (arg.rfind("-", 0) == 0)
        return makeError("unknown option '" + name + "'");
      return makeError("unexpected argument '" + arg + "'");
    }
    if (!seen.insert(name).second)
      return makeError("option '" + name + "' given twice");
    if (spec->kind == Kind::Flag) {
      if (inlineValue)
        return makeError("option '" + name + "' takes no value");
    } else if (!inlineValue) {
      if (i + 1 >= argc || !argv[i + 1])
        return makeError("option '" + name + "' needs a value (" + spec->value + ")");
      value = argv[++i];
    }
    uint64_t number = 0;
    if (spec->kind == Kind::Seed && !parseUnsigned(value, UINT64_MAX, number))
      return makeError(name + ": '" + value + "' is not an unsigned 64-bit integer");
    if (spec->kind == Kind::Count && (!parseUnsigned(value, 1000000, number) || number == 0))
      return makeError(name + ": '" + value + "' is not an integer in [1, 1000000]");
    if (spec->kind == Kind::String && value.empty())
      return makeError("option '" + name + "' needs a non-empty value");

    if (name == "--help")
      o.help = true;
    else if (name == "--weights")
      o.weights = value;
    else if (name == "--random-weights")
      o.randomWeights = true, o.seed = number;
    else if (name == "--save-weights")
      o.saveWeights = value;
    else if (name == "--tokens")
      o.haveTokens = true, o.tokens = value;
    else if (name == "--source-tokens")
      o.haveSourceTokens = true, o.sourceTokens = value;
    else if (name == "--logits-out")
      o.logitsOut = value;
    else if (name == "--hidden-out")
      o.hiddenOut = value;
    else if (name == "--threads") {
      if (number > 4096)
        return makeError("--threads: " + value + " is more than 4096");
      o.threads = int(number);
    } else if (name == "--repeat")
      o.repeat = int(number);
    else if (name == "--print")
      o.print = true;
    else if (name == "--profile")
      o.profile = true;
    else if (name == "--trace-out")
      o.traceOut = value;
  }
  return o;
}

Status checkOptions(const Options &o, const Manifest &m) {
  if (o.weights.empty() == !o.randomWeights)
    return makeError(o.randomWeights ? "give either --weights or --random-weights, not both"
                                     : "give --weights FILE or --random-weights SEED");
  if (!o.logitsOut.empty() && !m.outputIsLogits)
    return makeError("--logits-out: model '" + m.model +
                     "' outputs hidden states; use --hidden-out");
  if (!o.hiddenOut.empty() && m.outputIsLogits)
    return makeError("--hidden-out: model '" + m.model + "' outputs logits; use --logits-out");
  if (o.haveSourceTokens && !m.encoderDecoder)
    return makeError("--source-tokens: model '" + m.model + "' is not an encoder-decoder");
  if (o.haveTokens && m.encoderDecoder && !o.haveSourceTokens)
    return makeError("--source-tokens is required: model '" + m.model + "' is an encoder-decoder");
  if (!o.haveTokens) {
    const char *needs = !o.logitsOut.empty()   ? "--logits-out"
                        : !o.hiddenOut.empty() ? "--hidden-out"
                        : o.print              ? "--print"
                        : o.repeat             ? "--repeat"
                        : o.profile            ? "--profile"
                        : !o.traceOut.empty()  ? "--trace-out"
                        : o.haveSourceTokens   ? "--source-tokens"
                                               : nullptr;
    if (needs)
      return makeError(std::string(needs) + " needs --tokens");
    if (o.saveWeights.empty())
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
      return makeError(std::string(flag) + ": '" + shown + "' is not a token id");
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
  std::string out =
      "usage: " + program + " (--weights FILE | --random-weights SEED) [--tokens IDS] [options]\n";
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
  out += "\noptions:\n";
  for (const Spec &s : kSpecs) {
    bool notHere = m && ((!std::strcmp(s.name, "--source-tokens") && !m->encoderDecoder) ||
                         (!std::strcmp(s.name, "--logits-out") && !m->outputIsLogits) ||
                         (!std::strcmp(s.name, "--hidden-out") && m->outputIsLogits));
    std::string left = std::string("  ") + s.name + (s.value ? std::string(" ") + s.value : "");
    left.append(left.size() < 26 ? 26 - left.size() : 1, ' ');
    out += left + s.help + (notHere ? " [not for this model]" : "") + "\n";
  }
  out += "\nExit status: 0 success, 1 bad weights or runtime failure, 2 bad command line.\n";
  return out;
}

} // namespace xfrt
