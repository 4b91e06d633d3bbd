//===- Trainer.cpp - the trainer executable's driver (issue 15) -----------===//
//
// options (TrainerOptions.cpp) → manifests → data → weights (float32 master copies) → steps:
//   zero the gradients; per sequence of the batch (next-token windows,
//   Alg. 12's masked tokens: TokenMasker, or Alg. 11's source/target pairs:
//   PairSampler) xf_train_step adds its
//   gradients (gradient accumulation); the mean over the batch is clipped and
//   applied by AdamW or the plain step (Optimizer.h); xf_train_prepare
//   refreshes derived weights from the updated parameters.
// Batches come from a seeded sampler, so a seed and thread count give the
// same run (docs/training.md).
//
//===----------------------------------------------------------------------===//
#include "xfrt/Trainer.h"
#include "TrainerOptions.h"

#include "xfrt/AlignedBuffer.h"
#include "xfrt/Cli.h"
#include "xfrt/HalideErrors.h"
#include "xfrt/Inputs.h"
#include "xfrt/Json.h"
#include "xfrt/Manifest.h"
#include "xfrt/MessageText.h"
#include "xfrt/Optimizer.h"
#include "xfrt/OutputFile.h"
#include "xfrt/Tokenizer.h"
#include "xfrt/TrainingData.h"
#include "xfrt/Weights.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace xfrt {
namespace {

/// The generated xf_training_manifest: gradients in xf_train_step's order,
/// each naming its parameter; the training derived weights.
struct TrainingManifest {
  std::vector<int64_t> gradientParameter;
  std::vector<int64_t> derivedBytes;
  std::string objective = "next-token"; // the model's default loss
};

Expected<TrainingManifest> parseTrainingManifest(const char *text, const Manifest &m) {
  Expected<JsonValue> json = parseJson(text ? text : "");
  if (!json)
    return makeError("training manifest: " + json.message());
  TrainingManifest t;
  const JsonValue *grads = json->find("gradients"), *derived = json->find("derived");
  if (!grads || !grads->isArray() || !derived || !derived->isArray())
    return makeError("training manifest: no gradients or derived");
  for (const JsonValue &g : grads->items) {
    const JsonValue *p = g.find("parameter");
    if (!p || !p->isInteger || p->integer < 0 || p->integer >= int64_t(m.parameters.size()))
      return makeError("training manifest: a gradient without its parameter");
    t.gradientParameter.push_back(p->integer);
  }
  if (const JsonValue *objective = json->find("objective"); objective && objective->isString())
    t.objective = objective->string;
  for (const JsonValue &d : derived->items) {
    if (!d.isInteger || d.integer < 0)
      return makeError("training manifest: bad derived size");
    t.derivedBytes.push_back(d.integer);
  }
  return t;
}

/// A state file (--save-state, --resume) is a safetensors file of the
/// parameters, then "optimizer.m.NAME" for each, "optimizer.v.NAME" for each, and
/// "optimizer.step": [1] (steps taken, exact in float32 below 2^24).
Manifest stateManifest(const Manifest &m) {
  Manifest s = m;
  for (const char *kind : {"optimizer.m.", "optimizer.v."})
    for (const ParameterSpec &p : m.parameters) {
      ParameterSpec q = p;
      q.name = kind + p.name;
      s.parameters.push_back(q);
    }
  ParameterSpec step;
  step.name = "optimizer.step";
  step.shape = {1};
  step.numel = 1;
  s.parameters.push_back(step);
  return s;
}

class Trainer {
public:
  Trainer(const TrainAbi &abi, const TrainOptions &o, const Manifest &m, const TrainingManifest &t)
      : abi(abi), o(o), m(m), t(t) {}
  int run();

private:
  Status setUp();
  /// Where a batch's sequences come from: windows of one stream (masked for
  /// Alg. 12 when `masker` is set), or an encoder-decoder's pairs (Alg. 11).
  struct Stream {
    SequenceSampler *windows = nullptr;
    TokenMasker *masker = nullptr;
    PairSampler *pairs = nullptr;
  };
  /// One batch's gradients summed into grads (zeroed first); the mean loss.
  Expected<double> accumulate(Stream &stream, int64_t sequences);
  /// The next sequence of a batch into inputs / targets / source, l, lz.
  void draw(Stream &stream);
  Status chooseObjective(const Tokenizer *tokenizer);
  Status evaluate(double &loss);
  Status writeLog();
  Status saveState(const std::string &path);
  Status loadState(const std::string &path);
  std::vector<TrainableTensor> tensors();

  const TrainAbi &abi;
  const TrainOptions &o;
  const Manifest &m;
  const TrainingManifest &t;
  std::vector<AlignedBuffer> master, derived, grads;
  std::vector<void *> paramPtrs, derivedPtrs;
  std::vector<float *> gradPtrs;
  AlignedBuffer scratch;
  std::vector<int32_t> inputs, targets, source;
  int64_t l = 0, lz = 0; // the drawn sequence's target and source positions
  int64_t positions = 0; // trained target positions, for tokens/s
  TrainingSplit split;
  PairSplit pairSplit;
  std::string log = "step,loss,lr,grad_norm,tokens_per_s,eval_loss\n";
  int64_t startStep = 0;
  std::unique_ptr<AdamW> adamw;
  bool masked = false; // Alg. 12's objective
  bool seq2seq = false; // Alg. 11's: pairs
  int32_t maskToken = 0;
  double maskProb = 0.15;
  std::string drawn; // --gradients: each sequence's masked positions
};

Status Trainer::chooseObjective(const Tokenizer *tokenizer) {
  if (t.objective == "seq2seq") {
    seq2seq = true;
    if (!o.objective.empty() && o.objective != "seq2seq")
      return makeError("--objective " + o.objective + ": an encoder-decoder trains on "
                       "source/target pairs (seq2seq)");
    if (o.maskToken >= 0 || o.maskProb >= 0)
      return makeError(std::string(o.maskToken >= 0 ? "--mask-token" : "--mask-prob") +
                       " is for --objective masked-token (this run: seq2seq)");
    return Status::success();
  }
  std::string objective = o.objective.empty() ? t.objective : o.objective;
  if (objective == "seq2seq")
    return makeError("--objective seq2seq needs an encoder-decoder (a source and a target "
                     "sequence); this model takes one sequence");
  if (objective != "next-token" && objective != "masked-token")
    return makeError("this trainer's model is trained with the " + objective +
                     " loss, which this driver does not run");
  masked = objective == "masked-token";
  if (!masked) {
    if (o.maskToken >= 0 || o.maskProb >= 0)
      return makeError(std::string(o.maskToken >= 0 ? "--mask-token" : "--mask-prob") +
                       " is for --objective masked-token (this run: next-token)");
    return Status::success();
  }
  if (o.maskProb >= 0)
    maskProb = o.maskProb;
  if (o.maskToken >= 0) {
    maskToken = int32_t(o.maskToken);
  } else if (std::optional<int32_t> id = tokenizer ? tokenizer->tokenToId("[MASK]") : std::nullopt) {
    maskToken = *id;
  } else {
    return makeError("masked-token training needs --mask-token ID (the id masked inputs "
                     "become), or a --tokenizer with a [MASK] token");
  }
  if (maskToken >= m.vocab)
    return makeError("--mask-token " + std::to_string(maskToken) +
                     " is outside the vocabulary (N_V = " + std::to_string(m.vocab) + ")");
  return Status::success();
}

void Trainer::draw(Stream &stream) {
  if (stream.pairs) {
    stream.pairs->next(source.data(), lz, inputs.data(), targets.data(), l);
    return;
  }
  l = o.seqLen, lz = 0;
  stream.windows->next(inputs.data(), targets.data());
  if (stream.masker)
    stream.masker->apply(inputs.data(), targets.data(), o.seqLen);
}

Status Trainer::setUp() {
  for (const ParameterSpec &p : m.parameters)
    if (p.bf16 || p.blocks)
      return makeError("parameter '" + p.name + "' is not float32; a trainer keeps float32 "
                       "master weights (build it without --weight-type / --quantized-like)");
  Expected<WeightSet> start = makeError("");
  if (!o.weights.empty())
    start = loadWeights(o.weights, m);
  else
    start = randomWeights(o.seed, m);
  if (!start)
    return start.status();
  // Training from NaN or infinite weights only spreads them: refuse at once.
  if (!o.weights.empty())
    if (std::string bad = findNonFiniteWeights(m, *start); !bad.empty())
      return makeError(o.weights + ": " + bad);
  // Own, writable float32 copies: loaded tensors may be read-only mappings.
  for (size_t i = 0; i < m.parameters.size(); ++i) {
    Expected<AlignedBuffer> buf = AlignedBuffer::allocate(uint64_t(m.parameters[i].numel) * 4);
    if (!buf)
      return buf.status();
    std::memcpy(buf->data(), start->params[i], size_t(m.parameters[i].numel) * 4);
    paramPtrs.push_back(buf->data());
    master.push_back(buf.take());
  }
  for (int64_t bytes : t.derivedBytes) {
    Expected<AlignedBuffer> buf = AlignedBuffer::allocate(uint64_t(bytes));
    if (!buf)
      return buf.status();
    derivedPtrs.push_back(buf->data());
    derived.push_back(buf.take());
  }
  for (int64_t p : t.gradientParameter) {
    Expected<AlignedBuffer> buf = AlignedBuffer::allocate(uint64_t(m.parameters[p].numel) * 4);
    if (!buf)
      return buf.status();
    gradPtrs.push_back(buf->floats());
    grads.push_back(buf.take());
  }
  Expected<AlignedBuffer> s = AlignedBuffer::allocate(
      uint64_t(abi.trainScratchBytes(o.seqLen, seq2seq ? o.seqLen : 0)));
  if (!s)
    return s.status();
  scratch = s.take();
  inputs.resize(size_t(o.seqLen));
  targets.resize(size_t(o.seqLen));
  source.resize(size_t(o.seqLen));
  AdamWOptions options;
  options.weightDecay = o.weightDecay;
  adamw = std::make_unique<AdamW>(tensors(), options);
  return Status::success();
}

std::vector<TrainableTensor> Trainer::tensors() {
  std::vector<TrainableTensor> out;
  for (size_t g = 0; g < gradPtrs.size(); ++g) {
    const ParameterSpec &p = m.parameters[size_t(t.gradientParameter[g])];
    out.push_back({master[size_t(t.gradientParameter[g])].floats(), gradPtrs[g], size_t(p.numel),
                   p.shape.size() >= 2});
  }
  return out;
}

Expected<double> Trainer::accumulate(Stream &stream, int64_t sequences) {
  for (size_t g = 0; g < grads.size(); ++g)
    std::memset(gradPtrs[g], 0, size_t(m.parameters[size_t(t.gradientParameter[g])].numel) * 4);
  if (int32_t rc = abi.trainPrepare(paramPtrs.data(), derivedPtrs.data()); rc != 0)
    return makeError("xf_train_prepare failed with code " + std::to_string(rc));
  double total = 0;
  drawn.clear();
  for (int64_t b = 0; b < sequences; ++b) {
    draw(stream);
    positions += l;
    if (stream.masker) {
      drawn += "masked";
      for (int64_t i = 0; i < o.seqLen; ++i)
        if (targets[size_t(i)] >= 0)
          drawn += " " + std::to_string(i);
      drawn += "\n";
    }
    float loss = 0;
    if (abi.trainStep(paramPtrs.data(), derivedPtrs.data(), inputs.data(), targets.data(), l,
                      seq2seq ? source.data() : nullptr, lz, &loss, gradPtrs.data(),
                      scratch.data()) != 0) {
      std::string why = takeHalideError();
      return makeError("xf_train_step failed" + (why.empty() ? "" : ": Halide: " + why));
    }
    total += loss;
  }
  return total / double(sequences);
}

Status Trainer::evaluate(double &loss) {
  // The same held-out sequences every time: samplers from a fixed seed.
  const uint64_t seed = o.seed ^ 0x65766131;
  Stream stream;
  Expected<SequenceSampler> windows = makeError("");
  Expected<PairSampler> pairs = makeError("");
  if (seq2seq) {
    pairs = PairSampler::create(pairSplit.heldOut, o.seqLen, seed, o.data + " (held out)");
    if (!pairs)
      return pairs.status();
    stream.pairs = &*pairs;
  } else {
    windows = SequenceSampler::create(split.heldOut, o.seqLen, seed, o.data + " (held out)");
    if (!windows)
      return windows.status();
    stream.windows = &*windows;
  }
  TokenMasker masker(maskProb, maskToken, seed);
  if (masked)
    stream.masker = &masker;
  int64_t trained = positions; // evaluation does not count as training throughput
  Expected<double> mean = accumulate(stream, o.evalSequences);
  positions = trained;
  if (!mean)
    return mean.status();
  loss = *mean;
  return Status::success();
}

Status Trainer::writeLog() {
  if (o.log.empty())
    return Status::success();
  return writeFileAtomically(o.log, log.data(), log.size());
}

Status Trainer::saveState(const std::string &path) {
  Manifest sm = stateManifest(m);
  WeightSet w;
  for (auto &b : master)
    w.params.push_back(b.floats());
  std::vector<float> zeros;
  // Moments by parameter (zeros for a parameter without a gradient).
  std::vector<const float *> m1(m.parameters.size(), nullptr), m2(m.parameters.size(), nullptr);
  for (size_t i = 0; i < t.gradientParameter.size(); ++i) {
    m1[size_t(t.gradientParameter[i])] = adamw->firstMoment(i);
    m2[size_t(t.gradientParameter[i])] = adamw->secondMoment(i);
  }
  size_t largest = 0;
  for (const ParameterSpec &p : m.parameters)
    largest = std::max(largest, size_t(p.numel));
  zeros.assign(largest, 0.f);
  for (auto *list : {&m1, &m2})
    for (const float *p : *list)
      w.params.push_back(const_cast<float *>(p ? p : zeros.data()));
  float step = float(adamw->steps());
  w.params.push_back(&step);
  return saveWeights(path, sm, w);
}

Status Trainer::loadState(const std::string &path) {
  Manifest sm = stateManifest(m);
  Expected<WeightSet> w = loadWeights(path, sm);
  if (!w)
    return w.status();
  size_t n = m.parameters.size();
  for (size_t i = 0; i < n; ++i)
    std::memcpy(master[i].data(), w->params[i], size_t(m.parameters[i].numel) * 4);
  float step = w->params[3 * n][0];
  if (!(step >= 0) || step != std::floor(step))
    return makeError(path + ": tensor 'optimizer.step': not a step count");
  std::vector<const float *> ms;
  for (size_t i = 0; i < t.gradientParameter.size(); ++i) {
    size_t p = size_t(t.gradientParameter[i]);
    ms.push_back(w->params[n + p]);
    ms.push_back(w->params[2 * n + p]);
  }
  adamw->restore(ms, int64_t(step));
  startStep = int64_t(step);
  return Status::success();
}

int Trainer::run() {
  auto fail = [&](const std::string &message) {
    std::fprintf(stderr, "error: %s\n", printableMessage(message).c_str());
    return 1;
  };
  LoadedTokenizer tokenizer;
  if (!o.tokenizer.empty()) {
    Options cli;
    cli.tokenizer = o.tokenizer;
    Expected<LoadedTokenizer> t = loadTokenizer(cli);
    if (!t)
      return fail(t.message());
    tokenizer = t.take();
  }
  if (Status s = chooseObjective(tokenizer.tokenizer.get()); !s)
    return fail(s.message());
  Stream stream;
  Expected<SequenceSampler> windows = makeError("");
  Expected<PairSampler> pairs = makeError("");
  if (seq2seq) {
    Expected<std::vector<SequencePair>> all =
        readTrainingPairs(o.data, tokenizer.tokenizer.get(), m.vocab);
    if (!all)
      return fail(all.message());
    pairSplit = splitHeldOut(*all, o.heldOut);
    pairs = PairSampler::create(pairSplit.train, o.seqLen, o.seed, o.data);
    if (!pairs)
      return fail(pairs.message());
    stream.pairs = &*pairs;
    if (o.evalEvery > 0 && pairSplit.heldOut.empty()) {
      char fraction[32];
      std::snprintf(fraction, sizeof fraction, "%g", o.heldOut);
      return fail(o.data + ": no pair is held out (--held-out " + fraction + " of " +
                  std::to_string(all->size()) + " pairs)");
    }
  } else {
    Expected<std::vector<int32_t>> ids =
        readTrainingTokens(o.data, tokenizer.tokenizer.get(), m.vocab);
    if (!ids)
      return fail(ids.message());
    split = splitHeldOut(*ids, o.heldOut);
    windows = SequenceSampler::create(split.train, o.seqLen, o.seed, o.data);
    if (!windows)
      return fail(windows.message());
    stream.windows = &*windows;
    if (o.evalEvery > 0) {
      Expected<SequenceSampler> held = SequenceSampler::create(split.heldOut, o.seqLen, 0,
                                                               o.data + " (held-out part)");
      if (!held)
        return fail(held.message());
    }
  }
  if (Status s = setUp(); !s)
    return fail(s.message());
  TokenMasker trainMasker(maskProb, maskToken, o.seed);
  if (masked)
    stream.masker = &trainMasker;
  if (!o.resume.empty())
    if (Status s = loadState(o.resume); !s)
      return fail(s.message());

  if (!o.gradients.empty()) {
    Expected<double> loss = accumulate(stream, o.batch);
    if (!loss)
      return fail(loss.message());
    // The mean over the batch, named like the parameters.
    Manifest gm;
    WeightSet w;
    for (size_t g = 0; g < gradPtrs.size(); ++g) {
      const ParameterSpec &p = m.parameters[size_t(t.gradientParameter[g])];
      for (int64_t i = 0; i < p.numel; ++i)
        gradPtrs[g][i] /= float(o.batch);
      gm.parameters.push_back(p);
      w.params.push_back(gradPtrs[g]);
    }
    if (Status s = saveWeights(o.gradients, gm, w); !s)
      return fail(s.message());
    std::printf("loss %.9g\n%s", *loss, drawn.c_str());
    return 0;
  }

  // Batches already taken by the run being resumed are drawn again and dropped.
  for (int64_t i = 0; i < startStep * o.batch; ++i)
    draw(stream);
  LearningRateSchedule schedule{o.lr, o.minLr, o.warmup, std::max<int64_t>(o.steps, 1)};
  const int64_t printEvery = std::max<int64_t>(1, o.steps / 50);
  auto begin = std::chrono::steady_clock::now();
  double lastLoss = NAN;
  for (int64_t step = startStep; step < o.stopAt; ++step) {
    Expected<double> loss = accumulate(stream, o.batch);
    if (!loss)
      return fail(loss.message());
    if (!std::isfinite(*loss))
      return fail("the loss is " + std::to_string(*loss) + " at step " + std::to_string(step + 1) +
                  ": training diverged (lower --lr?)");
    std::vector<TrainableTensor> ts = tensors();
    double mean = 1.0 / double(o.batch);
    double norm = globalGradientNorm(ts) * mean;
    double scale = mean * clipFactor(norm, o.clip);
    double lr = schedule.at(step);
    if (o.sgd)
      sgdStep(ts, lr, scale);
    else
      adamw->step(ts, lr, scale);
    lastLoss = *loss;
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    int64_t done = step + 1 - startStep;
    double tokensPerSecond = double(positions) / std::max(seconds, 1e-9);
    std::string evalText;
    if (o.evalEvery > 0 && ((step + 1) % o.evalEvery == 0 || step + 1 == o.stopAt)) {
      double evalLoss = 0;
      if (Status s = evaluate(evalLoss); !s)
        return fail(s.message());
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.6f", evalLoss);
      evalText = buf;
    }
    char line[256];
    std::snprintf(line, sizeof line, "%lld,%.6f,%.6g,%.6g,%.1f,%s\n", (long long)(step + 1),
                  *loss, lr, norm, tokensPerSecond, evalText.c_str());
    log += line;
    if (!o.quiet && ((step + 1) % printEvery == 0 || step + 1 == o.stopAt || !evalText.empty())) {
      double eta = seconds / double(done) * double(o.stopAt - step - 1);
      std::fprintf(stderr, "step %lld/%lld  loss %.4f%s%s  lr %.3g  %.0f tok/s  ETA %.0f s\n",
                   (long long)(step + 1), (long long)o.steps, *loss,
                   evalText.empty() ? "" : "  eval ", evalText.c_str(), lr, tokensPerSecond, eta);
    }
  }
  if (Status s = writeLog(); !s)
    return fail(s.message());
  if (!o.save.empty()) {
    WeightSet w;
    for (auto &b : master)
      w.params.push_back(b.floats());
    if (Status s = saveWeights(o.save, m, w); !s)
      return fail(s.message());
  }
  if (!o.saveState.empty())
    if (Status s = saveState(o.saveState); !s)
      return fail(s.message());
  if (!o.quiet && std::isfinite(lastLoss))
    std::fprintf(stderr, "final loss %.4f\n", lastLoss);
  return 0;
}

} // namespace

int runTrainer(int argc, char **argv, const TrainAbi &abi) {
  const char *program = argc > 0 ? argv[0] : "trainer";
  Expected<TrainOptions> options = parseTrainerOptions(argc, argv);
  if (!options) {
    std::fprintf(stderr, "error: %s\n", printableMessage(options.message()).c_str());
    return 2;
  }
  Expected<Manifest> manifest = parseManifest(abi.manifest);
  if (!manifest) {
    std::fprintf(stderr, "error: %s\n", printableMessage(manifest.message()).c_str());
    return 1;
  }
  Expected<TrainingManifest> training = parseTrainingManifest(abi.trainingManifest, *manifest);
  if (!training) {
    std::fprintf(stderr, "error: %s\n", printableMessage(training.message()).c_str());
    return 1;
  }
  if (options->help) {
    std::printf(kTrainerUsage, program, program, training->objective.c_str());
    return 0;
  }
  TrainOptions o = options.take();
  if (o.seqLen == 0)
    o.seqLen = manifest->maxPositions > 0 ? std::min<int64_t>(64, manifest->maxPositions) : 64;
  if (manifest->maxPositions > 0 && o.seqLen > manifest->maxPositions) {
    std::fprintf(stderr, "error: --seq-len %lld is longer than the model's %lld positions\n",
                 (long long)o.seqLen, (long long)manifest->maxPositions);
    return 2;
  }
  std::vector<NamedPath> outputs, inputs{{"--data", o.data}, runningExecutable()};
  for (auto [name, path] : {std::pair<const char *, std::string>{"--save", o.save},
                            {"--save-state", o.saveState}, {"--log", o.log},
                            {"--gradients", o.gradients}})
    if (!path.empty())
      outputs.push_back({name, path});
  for (auto [name, path] : {std::pair<const char *, std::string>{"--weights", o.weights},
                            {"--resume", o.resume}, {"--tokenizer", o.tokenizer}})
    if (!path.empty())
      inputs.push_back({name, path});
  for (const NamedPath &out : outputs)
    if (Status s = checkOutputTarget(out.path); !s) {
      std::fprintf(stderr, "error: %s\n", printableMessage(s.message()).c_str());
      return 2;
    }
  if (Status s = checkDistinctPaths(outputs, inputs); !s) {
    std::fprintf(stderr, "error: %s\n", printableMessage(s.message()).c_str());
    return 2;
  }
  if (abi.setErrorHandler)
    abi.setErrorHandler(halideErrorHandler);
  if (o.threads > 0 && abi.setNumThreads)
    abi.setNumThreads(int(o.threads));
  Trainer trainer(abi, o, *manifest, *training);
  return trainer.run();
}

} // namespace xfrt
