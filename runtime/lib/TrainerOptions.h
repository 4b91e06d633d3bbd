//===- TrainerOptions.h - a trainer executable's command line ---*- C++ -*-===//
//
// The trainer's options (--help prints kTrainerUsage) and their parser: `--name value` or
// `--name=value`, each at most once, ranges checked, the defaults that follow from other
// options filled in. What needs the model (--seq-len against its positions, the outputs'
// paths) is checked by runTrainer.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_LIB_TRAINEROPTIONS_H
#define XFRT_LIB_TRAINEROPTIONS_H

#include "xfrt/Status.h"

#include <cstdint>
#include <string>

namespace xfrt {

struct TrainOptions {
  std::string data, tokenizer, weights, resume, save, saveState, log, gradients, objective;
  int64_t maskToken = -1;
  double maskProb = -1;
  int64_t steps = 100, stopAt = -1, seqLen = 0, batch = 1, warmup = 0, evalEvery = 0,
          evalSequences = 8;
  int64_t threads = 0;
  uint64_t seed = 0;
  double lr = 1e-3, minLr = 0, weightDecay = 0.01, clip = 1.0, heldOut = -1;
  bool sgd = false, quiet = false, help = false;
};

/// The --help text: a printf format taking the program's name twice and the model's
/// default objective.
extern const char *const kTrainerUsage;

Expected<TrainOptions> parseTrainerOptions(int argc, char **argv);

} // namespace xfrt

#endif // XFRT_LIB_TRAINEROPTIONS_H
