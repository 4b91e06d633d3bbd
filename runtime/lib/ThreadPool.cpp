//===- ThreadPool.cpp - Kernel thread pool whose workers stay awake -------===//
//
// A job is published by closing the last one (`work_` = (g - 1, kClosed)), storing its fields,
// then `work_` = (g, next index 0), then the futex word `generation_` = g. Anyone (caller or
// worker) claims index i of generation g by one compare-exchange of `work_` from (g, i) to
// (g, i + 1) after checking i < size: a claim that succeeds proves the job is still running
// (index i was not taken: two read-modify-writes never read the same value), so the fields it
// read before were that job's. The caller returns once `remaining_` reaches 0.
//
// Sleep/wake is Dekker-style on two sequentially consistent variables: a worker increments
// `sleepers_` and then re-reads `generation_` before futex_wait(generation_, seen); the caller
// stores `generation_` and then reads `sleepers_`, so either the worker sees the new job or the
// caller sees the sleeper and wakes it (and futex_wait itself rechecks the word).
//
//===----------------------------------------------------------------------===//
#include "xfrt/ThreadPool.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <sched.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

// The Halide runtime in the executable (weak: unit tests link libxfrt without it).
extern "C" {
using HalideDoParFor = int (*)(void *, xfrt::ParallelTask, int, int, uint8_t *);
__attribute__((weak)) HalideDoParFor halide_set_custom_do_par_for(HalideDoParFor);
__attribute__((weak)) int halide_set_num_threads(int);
}

namespace xfrt {
namespace {

// Waiting on another thread: a few pauses, then sched_yield. A thread that only pauses keeps
// its core while it waits, and when the cores are shared (builds beside a benchmark) that
// slows the threads doing the work: SmolLM2 q8 decode at load 3-4 took 9-16 ms/token with
// pause-only waits against 5-8 with Halide's pool. A yield returns at once on an idle core.
void pauseOrYield(int spins) {
  if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  } else {
    sched_yield();
  }
}

void futexWait(std::atomic<uint32_t> &word, uint32_t expected) {
#if defined(__linux__)
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
#else
  word.wait(expected, std::memory_order_seq_cst);
#endif
}

void futexWake(std::atomic<uint32_t> &word, int count) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAKE_PRIVATE, count, nullptr,
          nullptr, 0);
#else
  (void)count;
  word.notify_all();
#endif
}

constexpr uint64_t kClosed = 0xffffffff; // an index past every job's size

int clampThreads(int n) { return std::clamp(n, 1, 256); }

int runSerially(void *userContext, ParallelTask task, int min, int size, uint8_t *closure) {
  for (int i = 0; i < size; ++i)
    if (int result = task(userContext, min + i, closure))
      return result;
  return 0;
}

} // namespace

ThreadPool::ThreadPool(int threads, std::chrono::nanoseconds spin)
    : spin_(spin), threads_(clampThreads(threads)) {}

ThreadPool::~ThreadPool() { setThreads(1); }

void ThreadPool::setThreads(int threads) {
  bool expected = false;
  while (!busy_.compare_exchange_weak(expected, true, std::memory_order_acquire)) {
    expected = false;
    std::this_thread::yield();
  }
  stopWorkers();
  threads_.store(clampThreads(threads), std::memory_order_relaxed);
  busy_.store(false, std::memory_order_release);
}

void ThreadPool::startWorkers() {
  // A worker waits for the generation after this one: a job or a stop published before the
  // thread runs is not missed.
  uint32_t seen = generation_.load(std::memory_order_relaxed);
  for (int i = int(workers_.size()); i < threads() - 1; ++i)
    workers_.emplace_back([this, seen] { workerLoop(seen); });
}

void ThreadPool::stopWorkers() {
  if (workers_.empty())
    return;
  stopping_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  futexWake(generation_, INT_MAX);
  for (std::thread &worker : workers_)
    worker.join();
  workers_.clear();
  stopping_.store(false, std::memory_order_relaxed);
}

void ThreadPool::wake(int count) {
  if (sleepers_.load(std::memory_order_seq_cst) > 0)
    futexWake(generation_, count);
}

int ThreadPool::parallelFor(void *userContext, ParallelTask task, int min, int size,
                            uint8_t *closure) {
  if (size <= 1 || threads() <= 1 || busy_.exchange(true, std::memory_order_acquire)) {
    if (size > 1 && threads() > 1)
      serialJobs_.fetch_add(1, std::memory_order_relaxed);
    return runSerially(userContext, task, min, size, closure);
  }
  if (int(workers_.size()) != threads() - 1)
    startWorkers();

  // Close the last job to late claims first: a thread that read its all-claimed (g, size)
  // together with this job's larger size must not claim (g, size) (see runTasks).
  uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;
  work_.store(uint64_t(generation - 1) << 32 | kClosed, std::memory_order_relaxed);
  task_.store(task, std::memory_order_relaxed);
  userContext_.store(userContext, std::memory_order_relaxed);
  closure_.store(closure, std::memory_order_relaxed);
  min_.store(min, std::memory_order_relaxed);
  remaining_.store(size, std::memory_order_relaxed);
  error_.store(0, std::memory_order_relaxed);
  size_.store(size, std::memory_order_release);
  work_.store(uint64_t(generation) << 32, std::memory_order_release);
  generation_.store(generation, std::memory_order_seq_cst);
  wake(size - 1);

  runTasks(generation);
  // The workers finish the tasks they took.
  for (int spins = 0; remaining_.load(std::memory_order_acquire) > 0; ++spins)
    pauseOrYield(spins);
  int result = error_.load(std::memory_order_relaxed);
  busy_.store(false, std::memory_order_release);
  return result;
}

void ThreadPool::runTasks(uint32_t generation) {
  // Tasks done here are counted off `remaining_` once, when no index is left: one write of a
  // shared line per thread and job instead of one per task.
  int done = 0;
  uint64_t work = work_.load(std::memory_order_acquire);
  for (;;) {
    if (uint32_t(work >> 32) != generation)
      break;
    uint32_t index = uint32_t(work);
    // Acquire: a size written for a later job makes the close before it visible, so the
    // claim below fails rather than taking index `size` of a finished job.
    if (index >= uint32_t(size_.load(std::memory_order_acquire)))
      break;
    ParallelTask task = task_.load(std::memory_order_relaxed);
    void *userContext = userContext_.load(std::memory_order_relaxed);
    uint8_t *closure = closure_.load(std::memory_order_relaxed);
    int min = min_.load(std::memory_order_relaxed);
    if (!work_.compare_exchange_weak(work, work + 1, std::memory_order_acq_rel,
                                     std::memory_order_acquire))
      continue;
    // Like Halide's pool: once a task failed, the ones not yet started are skipped.
    if (error_.load(std::memory_order_relaxed) == 0)
      if (int result = task(userContext, min + int(index), closure)) {
        int none = 0;
        error_.compare_exchange_strong(none, result, std::memory_order_relaxed);
      }
    ++done;
    work = work_.load(std::memory_order_acquire);
  }
  if (done)
    remaining_.fetch_sub(done, std::memory_order_acq_rel);
}

uint32_t ThreadPool::waitForJob(uint32_t seen) {
  for (;;) {
    auto start = std::chrono::steady_clock::now();
    for (int spins = 0;; ++spins) {
      uint32_t generation = generation_.load(std::memory_order_acquire);
      if (generation != seen)
        return generation;
      pauseOrYield(spins);
      if (spins % 64 == 63 && std::chrono::steady_clock::now() - start >= spin_)
        break;
    }
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    if (generation_.load(std::memory_order_seq_cst) == seen)
      futexWait(generation_, seen);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
}

void ThreadPool::workerLoop(uint32_t seen) {
  for (;;) {
    seen = waitForJob(seen);
    if (stopping_.load(std::memory_order_acquire))
      return;
    runTasks(seen);
  }
}

int defaultKernelThreads() {
  for (const char *name : {"HL_NUM_THREADS", "HL_JOBS"})
    if (const char *value = std::getenv(name); value && *value)
      return clampThreads(std::atoi(value));
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return clampThreads(cores > 0 ? int(cores) : 1);
}

ThreadPool &kernelThreadPool() {
  static ThreadPool *pool = [] {
    std::chrono::nanoseconds spin = kDefaultSpin;
    if (const char *us = std::getenv("XF_THREAD_POOL_SPIN_US"); us && *us)
      spin = std::chrono::microseconds(std::max(0L, std::atol(us)));
    return new ThreadPool(defaultKernelThreads(), spin);
  }();
  return *pool;
}

namespace {
int kernelParFor(void *userContext, ParallelTask task, int min, int size, uint8_t *closure) {
  return kernelThreadPool().parallelFor(userContext, task, min, size, closure);
}
} // namespace

bool installKernelThreadPool(int (*&setNumThreads)(int)) {
  if (setNumThreads)
    setNumThreads = &setKernelThreads;
  if (!halide_set_custom_do_par_for)
    return false;
  if (const char *choice = std::getenv("XF_THREAD_POOL"); choice && !std::strcmp(choice, "halide"))
    return false;
  kernelThreadPool();
  halide_set_custom_do_par_for(kernelParFor);
  return true;
}

int setKernelThreads(int threads) {
  int old = kernelThreadPool().threads();
  kernelThreadPool().setThreads(threads > 0 ? threads : defaultKernelThreads());
  if (halide_set_num_threads)
    old = halide_set_num_threads(threads);
  return old;
}

} // namespace xfrt
