//===- KernelTasks.h - libxfrt's kernels' tasks on the Halide runtime's pool -*- C++ -*-===//
//
// The Halide runtime's parallel loop (on libxfrt's pool, ThreadPool.h, in executables): linked
// into every executable, absent from unit tests that link libxfrt alone, which then run the
// tasks in a loop. Internal to libxfrt.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_LIB_KERNELTASKS_H
#define XFRT_LIB_KERNELTASKS_H

#include <cstdint>

extern "C" int halide_do_par_for(void *userContext, int (*task)(void *, int, uint8_t *), int min,
                                 int size, uint8_t *closure) __attribute__((weak));

namespace xfrt {

/// Tasks [0, tasks) on the Halide runtime's pool where the executable has one, else in a loop.
inline int32_t runTasks(int (*task)(void *, int, uint8_t *), int64_t tasks, void *call) {
  uint8_t *closure = reinterpret_cast<uint8_t *>(call);
  if (halide_do_par_for && tasks > 1)
    return halide_do_par_for(nullptr, task, 0, int(tasks), closure);
  for (int64_t t = 0; t < tasks; ++t)
    task(nullptr, int(t), closure);
  return 0;
}

} // namespace xfrt

#endif // XFRT_LIB_KERNELTASKS_H
