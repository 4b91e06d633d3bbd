//===- TwoThreadParallelFor.h - the Halide runtime's parallel loop, for unit tests -*- C++ -*-===//
//
// libxfrt's kernels (BlockGemv.cpp, DecodeAttention.cpp) run their tasks through a weak
// halide_do_par_for, which executables get from the Halide runtime. A unit test that links
// libxfrt alone includes this header once to define it: tasks claimed from the end, on two
// threads, so a task that read another's output or assumed an order would show.
// parallelCalls counts the calls.
//
//===----------------------------------------------------------------------===//
#ifndef XF_TEST_UNIT_TWOTHREADPARALLELFOR_H
#define XF_TEST_UNIT_TWOTHREADPARALLELFOR_H

#include <atomic>
#include <cstdint>
#include <thread>

static std::atomic<int> parallelCalls{0};
extern "C" int halide_do_par_for(void *user, int (*task)(void *, int, uint8_t *), int min,
                                 int size, uint8_t *closure) {
  ++parallelCalls;
  std::atomic<int> next{min + size - 1};
  std::atomic<int> status{0};
  auto worker = [&] {
    for (int i; (i = next--) >= min;)
      if (int rc = task(user, i, closure))
        status = rc;
  };
  std::thread other(worker);
  worker();
  other.join();
  return status;
}

#endif // XF_TEST_UNIT_TWOTHREADPARALLELFOR_H
