//===- TrainerOptions.cpp - a trainer executable's command line -----------===//
#include "TrainerOptions.h"

#include "xfrt/MessageText.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <vector>

using namespace xfrt;

const char *const xfrt::kTrainerUsage =
    "usage: %s --data FILE [options]\n"
    "Trains the model this executable was compiled from (xfc MODEL.xf --train -o %s):\n"
    "next-token (Alg. 13), masked-token (Alg. 12) or sequence-to-sequence (Alg. 11)\n"
    "loss, gradients from the compiled backward, AdamW or plain steps.\n"
    "  --data FILE          training text (encoded by --tokenizer) or token ids (FILE.ids:\n"
    "                       decimal ids separated by whitespace or commas); for an\n"
    "                       encoder-decoder, one pair per line: source<TAB>target\n"
    "  --tokenizer PATH     tokenizer for a text --data (vocab.json + merges.txt directory,\n"
    "                       vocab.json, vocab.txt or a .gguf file)\n"
    "  --weights FILE       start from this checkpoint (.safetensors); default: random\n"
    "                       weights drawn from --seed\n"
    "  --resume FILE        continue a run from a state file written by --save-state\n"
    "  --steps N            optimizer steps in total (default 100)\n"
    "  --stop-at N          stop after step N, keeping the schedule of --steps (a run to\n"
    "                       continue later with --save-state / --resume)\n"
    "  --seq-len N          positions per sequence (default min(64, max positions));\n"
    "                       longer pairs are cut to it\n"
    "  --objective NAME     next-token: predict each next id (Alg. 13); masked-token:\n"
    "                       predict the ids of randomly masked inputs (Alg. 12);\n"
    "                       seq2seq: an encoder-decoder's pairs (Alg. 11). Default:\n"
    "                       %s (the model's: masked-token when no attention is causal)\n"
    "  --mask-token ID      masked-token: the id masked inputs become (default: the\n"
    "                       tokenizer's [MASK])\n"
    "  --mask-prob P        masked-token: each input is masked with probability P\n"
    "                       (default 0.15)\n"
    "  --batch N            sequences per step, their gradients averaged (default 1)\n"
    "  --lr X               peak learning rate (default 1e-3)\n"
    "  --min-lr X           learning rate at the end of the cosine (default 0)\n"
    "  --warmup N           linear warm-up steps (default 0)\n"
    "  --optimizer NAME     adamw (default) or sgd (the paper's plain step)\n"
    "  --weight-decay X     AdamW's decoupled decay on matrices (default 0.01)\n"
    "  --clip X             clip the global gradient norm to X; 0: off (default 1)\n"
    "  --seed N             weights and batches (default 0)\n"
    "  --held-out X         fraction of --data kept for evaluation (default 0.1 with\n"
    "                       --eval-every, else 0)\n"
    "  --eval-every N       held-out loss every N steps (0: never; default 0)\n"
    "  --eval-sequences N   held-out sequences per evaluation (default 8)\n"
    "  --save FILE          the trained weights (.safetensors, checkpoint names)\n"
    "  --save-state FILE    weights, optimizer moments and step, for --resume\n"
    "  --log FILE           one CSV line per step: step,loss,lr,grad_norm,tokens_per_s,eval_loss\n"
    "  --gradients FILE     write the gradients of one batch at the starting weights\n"
    "                       (.safetensors, the parameters' names) and the loss; no steps\n"
    "  --threads N          worker threads of the kernels\n"
    "  --quiet              no progress lines\n"
    "  --help               this text\n";

static bool parseInt(const std::string &text, int64_t lo, int64_t hi, int64_t &out) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno || *end || v < lo || v > hi)
    return false;
  out = v;
  return true;
}

static bool parseReal(const std::string &text, double lo, double hi, double &out) {
  if (text.empty())
    return false;
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (*end || !std::isfinite(v) || v < lo || v > hi)
    return false;
  out = v;
  return true;
}

Expected<TrainOptions> xfrt::parseTrainerOptions(int argc, char **argv) {
  TrainOptions o;
  std::vector<std::string> seen;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    bool hasValue = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos)
      value = arg.substr(eq + 1), arg = arg.substr(0, eq), hasValue = true;
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      continue;
    }
    if (arg == "--quiet") {
      o.quiet = true;
      continue;
    }
    static const char *const withValue[] = {
        "--data",         "--tokenizer",      "--weights", "--resume",
        "--save",         "--save-state",     "--log",     "--gradients",
        "--steps",        "--stop-at",        "--seq-len", "--batch",
        "--lr",           "--min-lr",         "--warmup",  "--optimizer",
        "--weight-decay", "--clip",           "--seed",    "--held-out",
        "--eval-every",   "--eval-sequences", "--threads", "--objective",
        "--mask-token",   "--mask-prob"};
    bool known = false;
    for (const char *name : withValue)
      known |= arg == name;
    if (!known)
      return makeError("unknown option " + quoteInput(arg) + " (see --help)");
    for (const std::string &s : seen)
      if (s == arg)
        return makeError(arg + " given twice");
    seen.push_back(arg);
    if (!hasValue) {
      if (i + 1 >= argc)
        return makeError(arg + " needs a value");
      value = argv[++i];
    }
    auto integer = [&](int64_t lo, int64_t hi, int64_t &out) -> Status {
      if (!parseInt(value, lo, hi, out))
        return makeError(arg + " " + quoteInput(value) + ": expected an integer from " + std::to_string(lo) +
                         " to " + std::to_string(hi));
      return Status::success();
    };
    auto real = [&](double lo, double hi, double &out, const char *what) -> Status {
      if (!parseReal(value, lo, hi, out))
        return makeError(arg + " " + quoteInput(value) + ": expected " + what);
      return Status::success();
    };
    Status s;
    if (arg == "--data")
      o.data = value;
    else if (arg == "--tokenizer")
      o.tokenizer = value;
    else if (arg == "--weights")
      o.weights = value;
    else if (arg == "--resume")
      o.resume = value;
    else if (arg == "--save")
      o.save = value;
    else if (arg == "--save-state")
      o.saveState = value;
    else if (arg == "--log")
      o.log = value;
    else if (arg == "--gradients")
      o.gradients = value;
    else if (arg == "--steps")
      s = integer(0, int64_t(1) << 40, o.steps);
    else if (arg == "--stop-at")
      s = integer(0, int64_t(1) << 40, o.stopAt);
    else if (arg == "--seq-len")
      s = integer(1, int64_t(1) << 20, o.seqLen);
    else if (arg == "--batch")
      s = integer(1, int64_t(1) << 20, o.batch);
    else if (arg == "--warmup")
      s = integer(0, int64_t(1) << 40, o.warmup);
    else if (arg == "--eval-every")
      s = integer(0, int64_t(1) << 40, o.evalEvery);
    else if (arg == "--eval-sequences")
      s = integer(1, int64_t(1) << 20, o.evalSequences);
    else if (arg == "--threads")
      s = integer(1, 256, o.threads);
    else if (arg == "--mask-token")
      s = integer(0, INT32_MAX, o.maskToken);
    else if (arg == "--mask-prob") {
      s = real(0, 1, o.maskProb, "a probability in (0, 1]");
      if (s && o.maskProb == 0)
        s = makeError("--mask-prob " + quoteInput(value) + ": expected a probability in (0, 1]");
    } else if (arg == "--objective") {
      o.objective = value;
      if (value != "next-token" && value != "masked-token" && value != "seq2seq")
        s = makeError("--objective " + quoteInput(value) + ": expected next-token, masked-token or seq2seq");
    } else if (arg == "--seed") {
      int64_t seed = 0;
      s = integer(0, INT64_MAX, seed);
      o.seed = uint64_t(seed);
    } else if (arg == "--lr")
      s = real(1e-12, 1e3, o.lr, "a learning rate in (0, 1000]");
    else if (arg == "--min-lr")
      s = real(0, 1e3, o.minLr, "a learning rate in [0, 1000]");
    else if (arg == "--weight-decay")
      s = real(0, 1e3, o.weightDecay, "a number >= 0");
    else if (arg == "--clip")
      s = real(0, 1e12, o.clip, "a norm >= 0");
    else if (arg == "--held-out") {
      s = real(0, 0.9, o.heldOut, "a fraction from 0 to 0.9");
    } else if (arg == "--optimizer") {
      if (value == "sgd")
        o.sgd = true;
      else if (value != "adamw")
        s = makeError("--optimizer " + quoteInput(value) + ": expected adamw or sgd");
    }
    if (!s)
      return s;
  }
  if (o.help)
    return o;
  if (o.data.empty())
    return makeError("--data FILE is required");
  if (!o.weights.empty() && !o.resume.empty())
    return makeError("--weights and --resume both give the starting weights; use one");
  if (o.stopAt < 0 || o.stopAt > o.steps)
    o.stopAt = o.steps;
  if (o.minLr > o.lr)
    return makeError("--min-lr is above --lr");
  if (o.heldOut < 0)
    o.heldOut = o.evalEvery > 0 ? 0.1 : 0.0;
  if (o.evalEvery > 0 && o.heldOut == 0)
    return makeError("--eval-every needs held-out data (--held-out > 0)");
  return o;
}
