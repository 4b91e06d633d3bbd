//===- RuntimeThreadPoolTest.cpp - the kernel thread pool keeps par_for's contract ===//
//
// Every index runs exactly once over many jobs of random sizes, nested and concurrent calls
// run serially and completely, the first error comes back, thread-count changes take effect,
// and sleeping workers wake for the next job. No timing is asserted: where a test needs the
// workers to take part, its tasks wait for each other (a barrier that a serial pool would never
// pass fails after 30 s instead of hanging).
//
//===----------------------------------------------------------------------===//

#include "xfrt/ThreadPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using xfrt::ThreadPool;

/// Counts how often each index [0, n) ran.
struct IndexCounts {
  explicit IndexCounts(int n) : counts(size_t(n)) {}
  std::vector<std::atomic<int>> counts;
  int offset = 0;

  static int task(void *, int index, uint8_t *closure) {
    auto *self = reinterpret_cast<IndexCounts *>(closure);
    self->counts[size_t(index - self->offset)].fetch_add(1);
    return 0;
  }
  int ranOtherThanOnce() const {
    int bad = 0;
    for (const std::atomic<int> &c : counts)
      bad += c.load() != 1;
    return bad;
  }
};

/// Tasks that each wait until `parties` tasks are running at once: passes only on that many
/// threads. `timedOut` says a task gave up.
struct Barrier {
  int parties;
  std::atomic<int> arrived{0};
  std::atomic<bool> timedOut{false};
  std::mutex mutex;
  std::set<std::thread::id> threads;

  static int task(void *, int, uint8_t *closure) {
    auto *self = reinterpret_cast<Barrier *>(closure);
    {
      std::lock_guard<std::mutex> lock(self->mutex);
      self->threads.insert(std::this_thread::get_id());
    }
    self->arrived.fetch_add(1);
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (self->arrived.load() < self->parties)
      if (std::chrono::steady_clock::now() > deadline) {
        self->timedOut = true;
        return 1;
      }
    return 0;
  }
};

void expectConcurrent(ThreadPool &pool, int parties) {
  Barrier barrier{parties};
  EXPECT_EQ(
      pool.parallelFor(nullptr, Barrier::task, 0, parties, reinterpret_cast<uint8_t *>(&barrier)),
      0);
  EXPECT_FALSE(barrier.timedOut) << parties << " tasks never ran at once";
  EXPECT_EQ(int(barrier.threads.size()), parties);
}

TEST(ThreadPool, EveryIndexRunsOnceOverManyJobsOfRandomSizes) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads, 200us);
    std::mt19937 random(threads);
    for (int job = 0; job < 3000; ++job) {
      int size = int(random() % 300);
      IndexCounts counts(size);
      counts.offset = int(random() % 2000) - 1000;
      ASSERT_EQ(pool.parallelFor(nullptr, IndexCounts::task, counts.offset, size,
                                 reinterpret_cast<uint8_t *>(&counts)),
                0);
      ASSERT_EQ(counts.ranOtherThanOnce(), 0) << "job " << job << " of " << size << " tasks";
    }
    EXPECT_EQ(pool.serialJobs(), 0);
    expectConcurrent(pool, threads);
  }
}

struct Nested {
  ThreadPool *pool;
  std::vector<IndexCounts> inner;
  static int task(void *, int index, uint8_t *closure) {
    auto *self = reinterpret_cast<Nested *>(closure);
    IndexCounts &counts = self->inner[size_t(index)];
    return self->pool->parallelFor(nullptr, IndexCounts::task, 0, int(counts.counts.size()),
                                   reinterpret_cast<uint8_t *>(&counts));
  }
};

TEST(ThreadPool, NestedCallsRunSeriallyAndCompletely) {
  ThreadPool pool(2, 100us);
  Nested nested{&pool, {}};
  for (int i = 0; i < 16; ++i)
    nested.inner.emplace_back(37 + i);
  EXPECT_EQ(pool.parallelFor(nullptr, Nested::task, 0, 16, reinterpret_cast<uint8_t *>(&nested)),
            0);
  for (const IndexCounts &counts : nested.inner)
    EXPECT_EQ(counts.ranOtherThanOnce(), 0);
  EXPECT_EQ(pool.serialJobs(), 16);
}

int failSome(void *, int index, uint8_t *closure) {
  reinterpret_cast<std::atomic<int> *>(closure)->fetch_add(1);
  return index % 7 == 3 ? 100 + index : 0;
}

TEST(ThreadPool, ReturnsAnErrorOfATaskAndTheNextJobStartsClean) {
  ThreadPool pool(2, 100us);
  for (int job = 0; job < 200; ++job) {
    std::atomic<int> ran{0};
    int result = pool.parallelFor(nullptr, failSome, 0, 50, reinterpret_cast<uint8_t *>(&ran));
    EXPECT_TRUE(result >= 103 && (result - 100) % 7 == 3) << result;
    EXPECT_GE(ran.load(), 1);
    EXPECT_LE(ran.load(), 50);
    IndexCounts counts(50);
    EXPECT_EQ(
        pool.parallelFor(nullptr, IndexCounts::task, 0, 50, reinterpret_cast<uint8_t *>(&counts)),
        0);
    EXPECT_EQ(counts.ranOtherThanOnce(), 0);
  }
  // Serially too (one thread), the first failing index's error.
  pool.setThreads(1);
  std::atomic<int> ran{0};
  EXPECT_EQ(pool.parallelFor(nullptr, failSome, 0, 50, reinterpret_cast<uint8_t *>(&ran)), 103);
  EXPECT_EQ(ran.load(), 4);
}

TEST(ThreadPool, ConcurrentCallersEachGetEveryIndexOnce) {
  ThreadPool pool(2, 100us);
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      std::mt19937 random(c);
      for (int job = 0; job < 500; ++job) {
        IndexCounts counts(1 + int(random() % 100));
        int result = pool.parallelFor(nullptr, IndexCounts::task, 0, int(counts.counts.size()),
                                      reinterpret_cast<uint8_t *>(&counts));
        if (result != 0 || counts.ranOtherThanOnce() != 0) {
          ++failures;
          std::string ran;
          for (const std::atomic<int> &c : counts.counts)
            ran += std::to_string(c.load());
          ADD_FAILURE() << "caller " << c << " job " << job << ": result " << result
                        << ", each index ran " << ran << " times";
        }
      }
    });
  for (std::thread &caller : callers)
    caller.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ThreadPool, ThreadCountChangesTakeEffect) {
  ThreadPool pool(2, 100us);
  expectConcurrent(pool, 2);
  pool.setThreads(4);
  EXPECT_EQ(pool.threads(), 4);
  expectConcurrent(pool, 4);
  pool.setThreads(1);
  Barrier serial{1};
  EXPECT_EQ(pool.parallelFor(nullptr, Barrier::task, 0, 8, reinterpret_cast<uint8_t *>(&serial)),
            0);
  EXPECT_EQ(serial.threads, std::set<std::thread::id>{std::this_thread::get_id()});
  pool.setThreads(1000); // Halide's limit
  EXPECT_EQ(pool.threads(), 256);
  pool.setThreads(3);
  expectConcurrent(pool, 3);
}

TEST(ThreadPool, WorkersSpinThenSleepAndWakeForTheNextJob) {
  for (auto spin : {0us, 2000us}) {
    ThreadPool pool(3, spin);
    expectConcurrent(pool, 3);
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (pool.sleepingWorkers() < 2 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    ASSERT_EQ(pool.sleepingWorkers(), 2) << "workers never went to sleep";
    expectConcurrent(pool, 3);
    IndexCounts counts(1000);
    EXPECT_EQ(
        pool.parallelFor(nullptr, IndexCounts::task, 0, 1000, reinterpret_cast<uint8_t *>(&counts)),
        0);
    EXPECT_EQ(counts.ranOtherThanOnce(), 0);
  }
}

TEST(ThreadPool, StopsWorkersThatHaveNotStartedYet) {
  // A job and the stop can both come before a new worker thread first runs.
  for (int i = 0; i < 200; ++i) {
    ThreadPool pool(2, 100us);
    IndexCounts counts(4);
    EXPECT_EQ(
        pool.parallelFor(nullptr, IndexCounts::task, 0, 4, reinterpret_cast<uint8_t *>(&counts)),
        0);
    EXPECT_EQ(counts.ranOtherThanOnce(), 0);
  }
}

TEST(ThreadPool, DefaultThreadsFollowHalide) {
  const char *saved = std::getenv("HL_NUM_THREADS");
  setenv("HL_NUM_THREADS", "3", 1);
  EXPECT_EQ(xfrt::defaultKernelThreads(), 3);
  setenv("HL_NUM_THREADS", "9999", 1);
  EXPECT_EQ(xfrt::defaultKernelThreads(), 256);
  if (saved)
    setenv("HL_NUM_THREADS", saved, 1);
  else
    unsetenv("HL_NUM_THREADS");
}

TEST(ThreadPool, ThreadsFlagSetsTheKernelThreads) {
  // --threads N (setKernelThreads) is the count xfrt_block_gemv splits its rows for.
  xfrt::setKernelThreads(3);
  EXPECT_EQ(xfrt::kernelThreads(), 3);
  xfrt::setKernelThreads(0);
  EXPECT_EQ(xfrt::kernelThreads(), xfrt::defaultKernelThreads());
}

TEST(ThreadPool, NotInstalledWithoutAHalideRuntime) {
  // libxfrt alone (this test) has no halide_set_custom_do_par_for to install into; the
  // --threads hook still goes to the pool when there is one, and stays null when not.
  int (*setNumThreads)(int) = nullptr;
  EXPECT_FALSE(xfrt::installKernelThreadPool(setNumThreads));
  EXPECT_EQ(setNumThreads, nullptr);
  setNumThreads = [](int) { return 0; };
  EXPECT_FALSE(xfrt::installKernelThreadPool(setNumThreads));
  EXPECT_EQ(setNumThreads, &xfrt::setKernelThreads);
}

} // namespace
