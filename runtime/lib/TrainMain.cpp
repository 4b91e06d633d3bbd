//===- TrainMain.cpp - main() of every trainer executable -----------------===//
//
// Compiled into libxfrt_train_main (target xfRuntimeTrainMain), linked instead
// of libxfrt_main by `xfc model.xf --train -o trainer`. The generated object
// provides xf_model_manifest, xf_training_manifest and the xf_train_* entry
// points (docs/training.md); the Halide runtime the thread and error hooks.
//
//===----------------------------------------------------------------------===//
#include "xfrt/ThreadPool.h"
#include "xfrt/Trainer.h"

#include <csignal>

extern "C" {
extern const char xf_model_manifest[];
extern const char xf_training_manifest[];
int32_t xf_train_prepare(void *const *params, void *const *derived);
int64_t xf_train_scratch_bytes(int64_t l, int64_t l_z);
int32_t xf_train_step(void *const *params, void *const *derived, const int32_t *tokens,
                      const int32_t *targets, int64_t l, const int32_t *source, int64_t l_z,
                      float *loss, float *const *grads, void *scratch);
__attribute__((weak)) int halide_set_num_threads(int);
using HalideErrorHandler = void (*)(void *, const char *);
__attribute__((weak)) HalideErrorHandler halide_set_error_handler(HalideErrorHandler handler);
}

int main(int argc, char **argv) {
  std::signal(SIGXFSZ, SIG_IGN); // a full file-size limit is an error, not a kill
  xfrt::TrainAbi abi{xf_model_manifest,      xf_training_manifest, xf_train_prepare,
                     xf_train_scratch_bytes, xf_train_step,        &halide_set_num_threads,
                     &halide_set_error_handler};
  // Every halide_do_par_for on libxfrt's pool; --threads sets its count and Halide's.
  xfrt::installKernelThreadPool(abi.setNumThreads);
  return xfrt::runTrainer(argc, argv, abi);
}
