//===- ScratchDirectory.cpp - xfc's temporary files, removed even on a signal -===//
//
// The handler only calls async-signal-safe functions (unlink, rmdir, sigaction, raise) on a
// fixed table filled before the files are created.
//
//===----------------------------------------------------------------------===//
#include "ScratchDirectory.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unistd.h>

using namespace mlir::xf;

namespace {

constexpr int kMaxDirectories = 4;
constexpr int kMaxFiles = 512; // objects of one build: host, kernels, Halide runtime
constexpr size_t kMaxPath = 512;

struct Registered {
  std::atomic<bool> live{false};
  char directory[kMaxPath];
  std::atomic<int> files{0};
  char file[kMaxFiles][kMaxPath];
};
Registered registered[kMaxDirectories];
std::mutex registration;

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV,
                            SIGBUS, SIGILL,  SIGFPE, SIGABRT};
struct sigaction previous[NSIG];

void removeRegistered() {
  // The directory is renamed first: a thread still compiling a kernel can then no longer create
  // its object in it (its path names the old directory) between the unlinks and the rmdir, which
  // left a directory behind when a signal landed mid-build on a loaded machine. The registered
  // files are unlinked under the new name.
  static char moved[kMaxPath + 8], file[2 * kMaxPath + 8];
  for (Registered &r : registered) {
    if (!r.live.exchange(false))
      continue;
    const size_t length = std::strlen(r.directory);
    std::memcpy(moved, r.directory, length);
    std::memcpy(moved + length, ".gone", 6);
    const bool renamed = ::rename(r.directory, moved) == 0;
    int n = r.files.load();
    for (int i = 0; i < n && i < kMaxFiles; ++i) {
      if (renamed && std::strncmp(r.file[i], r.directory, length) == 0) {
        std::memcpy(file, moved, length + 5);
        std::strcpy(file + length + 5, r.file[i] + length);
        ::unlink(file);
      } else {
        ::unlink(r.file[i]);
      }
    }
    ::rmdir(renamed ? moved : r.directory);
  }
}

void onSignal(int signal, siginfo_t *info, void *context) {
  removeRegistered();
  const struct sigaction &old = previous[signal];
  if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction) {
    old.sa_sigaction(signal, info, context);
    return;
  }
  if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN && old.sa_handler) {
    old.sa_handler(signal);
    return;
  }
  if (old.sa_handler == SIG_IGN)
    return;
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

void installHandlers() {
  // exit() from deep inside a library (Halide's LLVM on a write error) skips destructors.
  std::atexit(removeRegistered);
  for (int signal : kSignals) {
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_sigaction = onSignal;
    // On the alternate stack LLVM set up, so a stack overflow still cleans up.
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    ::sigaction(signal, &action, &previous[signal]);
  }
}

void copyPath(char *to, llvm::StringRef from) {
  size_t n = std::min(from.size(), kMaxPath - 1);
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}

} // namespace

llvm::Expected<ScratchDirectory> ScratchDirectory::create(llvm::StringRef prefix, bool keep) {
  ScratchDirectory dir;
  dir.keep_ = keep;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(prefix, dir.path_))
    return llvm::createStringError("cannot create a temporary directory: " + ec.message());
  if (keep) {
    llvm::errs() << "xfc: keeping the intermediate files in " << dir.path_ << "\n";
    return std::move(dir);
  }
  static std::once_flag installed;
  std::call_once(installed, installHandlers);
  std::lock_guard<std::mutex> lock(registration);
  for (int i = 0; i < kMaxDirectories; ++i) {
    Registered &r = registered[i];
    if (r.live.load())
      continue;
    copyPath(r.directory, dir.path_);
    r.files.store(0);
    r.live.store(true);
    dir.slot_ = i;
    break;
  }
  return std::move(dir);
}

ScratchDirectory::ScratchDirectory(ScratchDirectory &&other) noexcept
    : path_(std::move(other.path_)), keep_(other.keep_), slot_(other.slot_) {
  other.path_.clear();
  other.slot_ = -1;
}

ScratchDirectory::~ScratchDirectory() {
  if (slot_ >= 0) {
    std::lock_guard<std::mutex> lock(registration);
    registered[slot_].live.store(false);
  }
  if (!path_.empty() && !keep_)
    llvm::sys::fs::remove_directories(path_);
}

std::string ScratchDirectory::file(llvm::StringRef name) {
  llvm::SmallString<128> p(path_);
  llvm::sys::path::append(p, name);
  if (slot_ >= 0) {
    Registered &r = registered[slot_];
    int n = r.files.load();
    if (n < kMaxFiles && p.size() < kMaxPath) {
      copyPath(r.file[n], p);
      r.files.store(n + 1); // published after the name is complete
    }
  }
  return std::string(p);
}
