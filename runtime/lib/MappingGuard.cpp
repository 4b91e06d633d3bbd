//===- MappingGuard.cpp - A clear error instead of SIGBUS on mapped files -===//
//
// The handler may only use async-signal-safe calls: it scans a fixed table (entries are
// published with a release store of `start`) and writes with write(2).
//
//===----------------------------------------------------------------------===//
#include "MappingGuard.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <unistd.h>

namespace xfrt {
namespace {

struct Guarded {
  std::atomic<uintptr_t> start{0};
  size_t size = 0;
  char path[512] = {};
};
// More mappings than this (a checkpoint of hundreds of shards) are simply not guarded.
constexpr size_t kMaxGuarded = 256;
Guarded guarded[kMaxGuarded];
std::mutex registration; // registration only; the handler never locks

void writeAll(const char *text, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(STDERR_FILENO, text, size);
    if (n <= 0)
      return;
    text += n;
    size -= size_t(n);
  }
}

void onBusError(int signal, siginfo_t *info, void *) {
  uintptr_t at = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Guarded &g : guarded) {
    uintptr_t start = g.start.load(std::memory_order_acquire);
    if (start == 0 || at < start || at - start >= g.size)
      continue;
    static const char before[] = "error: ";
    static const char after[] =
        ": the file shrank or was rewritten while this run had it mapped; do not modify a "
        "checkpoint while an executable reads it (replace it with a rename instead)\n";
    writeAll(before, sizeof before - 1);
    writeAll(g.path, ::strnlen(g.path, sizeof g.path));
    writeAll(after, sizeof after - 1);
    ::_exit(1);
  }
  // Not one of ours: the default action (core dump) on return, when the access faults again.
  ::signal(signal, SIG_DFL);
}

void installHandler() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_sigaction = onBusError;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, nullptr);
}

} // namespace

void guardMapping(const void *start, size_t size, const std::string &path) {
  static std::once_flag installed;
  std::call_once(installed, installHandler);
  std::lock_guard<std::mutex> lock(registration);
  for (Guarded &g : guarded) {
    if (g.start.load(std::memory_order_relaxed) != 0)
      continue;
    g.size = size;
    size_t n = std::min(path.size(), sizeof g.path - 1);
    std::memcpy(g.path, path.data(), n);
    g.path[n] = '\0';
    g.start.store(reinterpret_cast<uintptr_t>(start), std::memory_order_release);
    return;
  }
}

void unguardMapping(const void *start) {
  std::lock_guard<std::mutex> lock(registration);
  for (Guarded &g : guarded)
    if (g.start.load(std::memory_order_relaxed) == reinterpret_cast<uintptr_t>(start))
      g.start.store(0, std::memory_order_release);
}

} // namespace xfrt
