//===- TuningDatabase.h - tuned schedules, one JSON file --------*- C++ -*-===//
//
// In: a tuning database file (or nothing, the first time) and the results of
// `xfc tune`. Out: the best schedule measured for a kernel on a target, and
// the file written back. Schedules are opaque text here (the printed
// schedule attribute); this file only stores and validates.
//
// File format (version 1), one JSON object:
//
//   { "format": "xf-tuning-db", "version": 1,
//     "entries": [
//       { "kernel": "<signature string>", "target": "<Halide target string>",
//         "threads": 2, "xf_version": "<string>",
//         "schedule": "<schedule text, e.g. #xf.gemm_schedule<tile_cols = 48, ...>>",
//         "cost_ms": 1.23, "default_cost_ms": 1.50, "roofline_fraction": 0.8,
//         "measured_at": "<ISO time>",
//         "trials": [ { "schedule": "<text>", "cost_ms": 1.4, "path": "gemm" },
//                     { "schedule": "<text>", "failure": "timeout" } ],
//         "seconds_spent": 42.0 } ] }
//
// Rules, checked on load and on save:
//  - "format" is "xf-tuning-db" and "version" is 1; "entries" is an array.
//  - Every entry has every key above. "kernel", "target", "xf_version" and
//    "schedule" are non-empty strings, "measured_at" a string; "threads" a
//    positive integer; "cost_ms", "default_cost_ms", "roofline_fraction" and
//    "seconds_spent" finite non-negative numbers; "trials" an array (possibly
//    empty) of objects with a non-empty "schedule" string and exactly one of
//    "cost_ms" (finite non-negative) or "failure" (non-empty string), and
//    optionally a "path" string (the code path the trial was timed on; its
//    cost is relative to the default's on that path's lengths).
//  - At most one entry per (kernel, target, threads, xf_version).
//  - Unknown keys are ignored on load and dropped on save (room for later
//    additions without a new version). Strings are UTF-8.
//  - Files over 256 MiB, nested deeper than 64 levels, or not regular files
//    are refused, and so is a schedule (entry or trial) whose brackets
//    ([ { ( <) nest deeper than 32 levels: MLIR's attribute parser recurses
//    per level, and a real schedule nests two.
// Entries keep their order; save writes keys in the order shown above,
// pretty-printed with two-space indentation, so diffs of the file are small.
//
// Errors name the file and the place, e.g.
//   tuning.db: entries[3]: 'threads' must be a positive integer
//
//===----------------------------------------------------------------------===//

#ifndef XF_TUNING_TUNINGDATABASE_H
#define XF_TUNING_TUNINGDATABASE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::xf::tuning {

/// One measured schedule: costMs set, or failure non-empty (e.g. "timeout",
/// "crash", "wrong result", "compile error").
struct TrialRecord {
  std::string schedule;
  std::optional<double> costMs;
  std::string failure;
  /// The code path it was timed for ("gemv", "gemm", "decode", "prefill":
  /// costs relative to the default on that path's lengths only); empty for
  /// a trial timed on all lengths (written by xf before paths were searched
  /// apart).
  std::string path;
};

struct TuningEntry {
  // The key.
  std::string kernel;
  std::string target;
  int64_t threads = 1;
  std::string xfVersion;
  // The best schedule and what it costs.
  std::string schedule;
  double costMs = 0;
  double defaultCostMs = 0;
  double rooflineFraction = 0;
  std::string measuredAt;
  double secondsSpent = 0;
  std::vector<TrialRecord> trials;
};

/// The error load() returns when the file does not exist (tell it apart with
/// `err.isA<TuningDatabaseMissing>()`, or use loadOrEmpty).
class TuningDatabaseMissing : public llvm::ErrorInfo<TuningDatabaseMissing> {
public:
  static char ID;
  explicit TuningDatabaseMissing(std::string path) : path(std::move(path)) {}
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;
  const std::string &getPath() const { return path; }

private:
  std::string path;
};

class TuningDatabase {
public:
  /// The largest file load() reads.
  static constexpr uint64_t kMaxFileBytes = uint64_t(256) << 20;

  /// Reads and validates `path`. A missing file gives TuningDatabaseMissing;
  /// anything else wrong (not a regular file, too large, unreadable,
  /// malformed JSON, a rule above broken) gives an error naming the file.
  /// Never blocks on a FIFO and never crashes on any content.
  static llvm::Expected<TuningDatabase> load(llvm::StringRef path);

  /// Like load, but a missing file gives an empty database.
  static llvm::Expected<TuningDatabase> loadOrEmpty(llvm::StringRef path);

  /// Writes the database atomically: a uniquely named temporary file in the
  /// same directory, flushed and fsync'ed, then renamed over `path`. Creates
  /// missing parent directories. Refuses (leaving it untouched) a `path` that
  /// exists and is not a regular file, symlinks included, and refuses
  /// entries that break a rule above. On failure the old file is unchanged.
  llvm::Error save(llvm::StringRef path) const;

  /// The entry for exactly this key, or null.
  const TuningEntry *find(llvm::StringRef kernel, llvm::StringRef target, int64_t threads,
                          llvm::StringRef xfVersion) const;

  /// Every entry for `kernel`, whatever its target, threads or version (to
  /// tell the user that a kernel was tuned, but for something else).
  std::vector<const TuningEntry *> findKernel(llvm::StringRef kernel) const;

  /// The entry for this key, appended (key set, everything else default) if
  /// there is none. The reference is valid until the next upsert.
  TuningEntry &upsert(llvm::StringRef kernel, llvm::StringRef target, int64_t threads,
                      llvm::StringRef xfVersion);

  const std::vector<TuningEntry> &entries() const { return list; }

private:
  std::vector<TuningEntry> list;
};

/// One writer at a time: `xfc tune` holds this for its whole run, so two runs
/// on one database can never each save its own copy and silently drop the
/// other's entries. An exclusive flock on "<db>.lock" (created if missing,
/// left in place; the kernel releases it when the process ends, however).
class TuningDatabaseLock {
public:
  /// Refuses, naming the database, when another process holds it.
  static llvm::Expected<TuningDatabaseLock> acquire(llvm::StringRef dbPath);
  TuningDatabaseLock(TuningDatabaseLock &&other) noexcept : fd(other.fd) { other.fd = -1; }
  TuningDatabaseLock &operator=(TuningDatabaseLock &&) = delete;
  ~TuningDatabaseLock();

private:
  explicit TuningDatabaseLock(int fd) : fd(fd) {}
  int fd = -1;
};

} // namespace mlir::xf::tuning

#endif // XF_TUNING_TUNINGDATABASE_H
