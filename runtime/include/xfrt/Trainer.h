//===- Trainer.h - main() of a trainer executable (issue 15) -----*- C++ -*-===//
//
// `xfc model.xf --train -o trainer` links the generated training step
// (xf_train_step, docs/training.md) with this driver: options, data,
// weights, the optimizer loop, evaluation, checkpoints and logs.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_TRAINER_H
#define XFRT_TRAINER_H

#include <cstdint>

namespace xfrt {

/// The generated object's training entry points (docs/training.md, "ABI").
struct TrainAbi {
  const char *manifest;         // xf_model_manifest
  const char *trainingManifest; // xf_training_manifest
  int32_t (*trainPrepare)(void *const *params, void *const *derived);
  int64_t (*trainScratchBytes)(int64_t l, int64_t l_z);
  int32_t (*trainStep)(void *const *params, void *const *derived, const int32_t *tokens,
                       const int32_t *targets, int64_t l, const int32_t *source, int64_t l_z,
                       float *loss, float *const *grads, void *scratch);
  int (*setNumThreads)(int); // may be null
  using ErrorHandler = void (*)(void *, const char *);
  ErrorHandler (*setErrorHandler)(ErrorHandler); // may be null
};

/// Runs the trainer; returns the process exit status (0 ok, 1 failure, 2 usage).
int runTrainer(int argc, char **argv, const TrainAbi &abi);

} // namespace xfrt

#endif // XFRT_TRAINER_H
