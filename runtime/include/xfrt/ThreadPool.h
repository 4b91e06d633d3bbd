//===- ThreadPool.h - Kernel thread pool whose workers stay awake -*- C++ -*-===//
//
// Every parallel loop of a generated executable (Halide kernels, MLIR loop kernels,
// xfrt_block_gemv) goes through halide_do_par_for. A decode step runs ~150 of them of
// 10-50 µs each; Halide's own pool puts its workers to sleep on a futex between them, so each
// region pays a wake-up (and the caller often finishes most tasks before the worker is up).
// This pool's workers spin on a job generation for a bounded time after their last task
// (XF_THREAD_POOL_SPIN_US, default 1 ms: a decode step's regions follow each other within
// microseconds), yielding the core to any other runnable thread while they do, and only then
// sleep on a futex; the caller wakes sleepers only when there are some (no system call while
// the workers are awake), takes tasks itself and waits for the others' last tasks by spinning.
//
// Installed as Halide's do_par_for by installKernelThreadPool() (Main.cpp, TrainMain.cpp)
// unless XF_THREAD_POOL=halide. Contract of halide_do_par_for: every index in [min, min +
// size) runs once, in any order and on any thread; the result is 0 or a nonzero one of the
// tasks returned (tasks not yet started when one fails are skipped). A call made while the pool
// is already running a job — a task calling par_for, or another thread — runs its tasks
// serially on the calling thread: par_for promises no concurrency, and that never deadlocks.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_THREADPOOL_H
#define XFRT_THREADPOOL_H

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace xfrt {

/// halide_task_t: runs loop index `index`; nonzero is an error.
using ParallelTask = int (*)(void *userContext, int index, uint8_t *closure);

class ThreadPool {
public:
  /// `threads` counts the caller: threads - 1 workers, started at the first parallel job.
  ThreadPool(int threads, std::chrono::nanoseconds spin);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int parallelFor(void *userContext, ParallelTask task, int min, int size, uint8_t *closure);

  /// Waits for a running job, stops the workers; the next job starts `threads` - 1 new ones.
  void setThreads(int threads);
  int threads() const { return threads_.load(std::memory_order_relaxed); }
  /// Workers asleep on the futex (for tests).
  int sleepingWorkers() const { return sleepers_.load(std::memory_order_relaxed); }
  /// Jobs run serially because the pool was busy (for tests).
  int64_t serialJobs() const { return serialJobs_.load(std::memory_order_relaxed); }

private:
  void startWorkers();
  void stopWorkers();
  void workerLoop(uint32_t seen);
  uint32_t waitForJob(uint32_t seen);
  void runTasks(uint32_t generation);
  void wake(int count);

  std::chrono::nanoseconds spin_;
  std::atomic<int> threads_;
  std::vector<std::thread> workers_; // started and stopped only by the owner of busy_

  // One caller at a time owns the job below (try-lock; a busy pool runs a call serially).
  std::atomic<bool> busy_{false};
  // The job, written by its caller before publishing its generation; relaxed atomics because a
  // worker may read them for a generation that just ended (its claim then fails).
  std::atomic<ParallelTask> task_{nullptr};
  std::atomic<void *> userContext_{nullptr};
  std::atomic<uint8_t *> closure_{nullptr};
  std::atomic<int> min_{0}, size_{0};
  // generation << 32 | next index: a claim is one compare-exchange that also checks the job.
  alignas(64) std::atomic<uint64_t> work_{0};
  alignas(64) std::atomic<int> remaining_{0};
  std::atomic<int> error_{0};
  alignas(64) std::atomic<uint32_t> generation_{0}; // futex word
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> serialJobs_{0};
};

/// HL_NUM_THREADS (or HL_JOBS), else the online cores, within [1, 256]: Halide's default.
int defaultKernelThreads();

/// The executable's pool (never destroyed: workers must not hold up or crash exit). Its spin
/// is XF_THREAD_POOL_SPIN_US if set, else kDefaultSpin.
ThreadPool &kernelThreadPool();
inline constexpr std::chrono::microseconds kDefaultSpin{1000};

/// The threads kernels split their work for: --threads, else defaultKernelThreads().
inline int kernelThreads() { return kernelThreadPool().threads(); }

/// Makes kernelThreadPool() Halide's do_par_for, unless XF_THREAD_POOL=halide or no Halide
/// runtime is linked in (unit tests), and points an executable's --threads hook
/// (`setNumThreads`, halide_set_num_threads where linked, else null) at setKernelThreads.
/// Returns whether it installed the pool.
bool installKernelThreadPool(int (*&setNumThreads)(int));

/// --threads N (ModelAbi::setNumThreads): the pool's count and halide_set_num_threads's.
int setKernelThreads(int threads);

} // namespace xfrt

#endif // XFRT_THREADPOOL_H
