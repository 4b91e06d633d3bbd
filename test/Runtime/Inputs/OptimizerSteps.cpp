//===- OptimizerSteps.cpp - libxfrt's optimizer on .npy files, for tests ---===//
//
// optimizer_e2e.py runs this and compares with test/reference/training.py:
//   xf-optimizer-steps adamw|sgd LR WARMUP TOTAL MIN_LR WEIGHT_DECAY MAX_NORM OUT W.npy B.npy
//                      GW_1.npy GB_1.npy [GW_2.npy GB_2.npy ...]
// W (a matrix: decays) and B (a vector: does not) take one step per gradient pair, each
// with the schedule's learning rate and clipping by the global norm; writes OUT.w.npy and
// OUT.b.npy and prints "step S lr LR norm N" per step.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Npy.h"
#include "xfrt/Optimizer.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace xfrt;

static NpyArray load(const char *path) {
  Expected<NpyArray> a = readNpy(path);
  if (!a) {
    std::fprintf(stderr, "%s\n", a.message().c_str());
    std::exit(2);
  }
  return a.take();
}

int main(int argc, char **argv) {
  if (argc < 13 || (argc - 11) % 2 != 0) {
    std::fprintf(stderr, "usage: see OptimizerSteps.cpp\n");
    return 2;
  }
  std::string kind = argv[1];
  LearningRateSchedule schedule{std::atof(argv[2]), std::atof(argv[5]), std::atoll(argv[3]),
                                std::atoll(argv[4])};
  double weightDecay = std::atof(argv[6]), maxNorm = std::atof(argv[7]);
  std::string out = argv[8];
  NpyArray w = load(argv[9]), b = load(argv[10]);
  AdamWOptions options;
  options.weightDecay = weightDecay;
  std::vector<TrainableTensor> tensors{{w.data.data(), nullptr, w.data.size(), true},
                                       {b.data.data(), nullptr, b.data.size(), false}};
  AdamW adamw(tensors, options);
  for (int i = 11, step = 0; i < argc; i += 2, ++step) {
    NpyArray gw = load(argv[i]), gb = load(argv[i + 1]);
    tensors[0].grad = gw.data.data(), tensors[1].grad = gb.data.data();
    double norm = globalGradientNorm(tensors), lr = schedule.at(step);
    double scale = clipFactor(norm, maxNorm);
    if (kind == "sgd")
      sgdStep(tensors, lr, scale);
    else
      adamw.step(tensors, lr, scale);
    std::printf("step %d lr %.17g norm %.17g\n", step, lr, norm);
  }
  if (!writeNpy(out + ".w.npy", w.data.data(), w.shape) ||
      !writeNpy(out + ".b.npy", b.data.data(), b.shape))
    return 2;
  return 0;
}
