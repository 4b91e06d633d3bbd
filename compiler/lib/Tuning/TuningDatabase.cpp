//===- TuningDatabase.cpp - read, validate and atomically write the db ----===//
//
// In: a path (load) or the entries (save). Out: the validated entries, or the
// file written by rename from a temporary file. The file format and its rules
// are in xf/Tuning/TuningDatabase.h. The file may be edited by hand or be
// damaged, so load never trusts it: every key and type is checked, and the
// file is opened so that a FIFO or device at the path cannot block us.
//
//===----------------------------------------------------------------------===//

#include "xf/Tuning/TuningDatabase.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Errc.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <charconv>
#include <cmath>
#include <map>
#include <tuple>

#if LLVM_ON_UNIX
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

using namespace llvm;
using namespace mlir::xf::tuning;

char TuningDatabaseMissing::ID = 0;

void TuningDatabaseMissing::log(raw_ostream &os) const { os << path << ": no such file"; }

std::error_code TuningDatabaseMissing::convertToErrorCode() const {
  return std::make_error_code(std::errc::no_such_file_or_directory);
}

namespace {

constexpr const char *kFormat = "xf-tuning-db";
constexpr int64_t kVersion = 1;
constexpr int64_t kMaxThreads = int64_t(1) << 20;
// llvm::json::parse recurses per nesting level; deeper input is refused
// before parsing so that a hostile file cannot exhaust the stack.
constexpr unsigned kMaxDepth = 64;
// MLIR's attribute parser also recurses per '[', '{', '(' or '<' of a
// schedule's text (10,000 nested '[' overflow its stack); a schedule is
// nested two levels deep, so this much is never a real one.
constexpr unsigned kMaxScheduleDepth = 32;
constexpr StringLiteral kScheduleOpeners = "[{(<", kScheduleClosers = "]})>";

Error fileError(StringRef path, const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), path + ": " + msg);
}

std::string at(size_t entry) { return "entries[" + std::to_string(entry) + "]"; }

std::string at(size_t entry, size_t trial) {
  return at(entry) + ".trials[" + std::to_string(trial) + "]";
}

bool finiteNonNegative(double v) { return std::isfinite(v) && v >= 0; }

/// The deepest nesting of `openers` (each closed by the same position in
/// `closers`) outside double-quoted strings, counting until `limit` + 1.
unsigned nestingDepth(StringRef text, unsigned limit, StringRef openers = "[{",
                      StringRef closers = "]}") {
  unsigned depth = 0, deepest = 0;
  bool inString = false, escaped = false;
  for (char c : text) {
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (openers.contains(c)) {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit)
        return deepest;
    } else if (closers.contains(c) && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

/// Why `schedule` may not reach MLIR's parser, if it may not.
std::optional<std::string> checkScheduleText(StringRef schedule) {
  if (nestingDepth(schedule, kMaxScheduleDepth, kScheduleOpeners, kScheduleClosers) >
      kMaxScheduleDepth)
    return "'schedule' is nested deeper than " + std::to_string(kMaxScheduleDepth) + " levels";
  return std::nullopt;
}

/// The value rules shared by load and save (types are already right).
/// Returns the first problem, prefixed by where it is.
std::optional<std::string> checkEntry(const TuningEntry &e, size_t i) {
  auto bad = [&](const std::string &msg) { return at(i) + ": " + msg; };
  for (auto [key, value] : {std::pair<const char *, const std::string *>{"kernel", &e.kernel},
                            {"target", &e.target},
                            {"xf_version", &e.xfVersion},
                            {"schedule", &e.schedule}})
    if (value->empty())
      return bad(std::string("'") + key + "' must be a non-empty string");
  for (auto [key, value] : {std::pair<const char *, const std::string *>{"kernel", &e.kernel},
                            {"target", &e.target},
                            {"xf_version", &e.xfVersion},
                            {"schedule", &e.schedule},
                            {"measured_at", &e.measuredAt}})
    if (!json::isUTF8(*value))
      return bad(std::string("'") + key + "' is not valid UTF-8");
  if (auto problem = checkScheduleText(e.schedule))
    return bad(*problem);
  if (e.threads < 1 || e.threads > kMaxThreads)
    return bad("'threads' must be a positive integer (at most " + std::to_string(kMaxThreads) +
               ")");
  for (auto [key, value] : {std::pair<const char *, double>{"cost_ms", e.costMs},
                            {"default_cost_ms", e.defaultCostMs},
                            {"roofline_fraction", e.rooflineFraction},
                            {"seconds_spent", e.secondsSpent}})
    if (!finiteNonNegative(value))
      return bad(std::string("'") + key + "' must be a finite non-negative number");
  for (size_t j = 0; j < e.trials.size(); ++j) {
    const TrialRecord &t = e.trials[j];
    std::string where = at(i, j) + ": ";
    if (t.schedule.empty())
      return where + "'schedule' must be a non-empty string";
    if (!json::isUTF8(t.schedule) || !json::isUTF8(t.failure) || !json::isUTF8(t.path))
      return where + "strings must be valid UTF-8";
    if (auto problem = checkScheduleText(t.schedule))
      return where + *problem;
    if (t.costMs.has_value() == !t.failure.empty())
      return where + "must have exactly one of 'cost_ms' and 'failure' (a non-empty string)";
    if (t.costMs && !finiteNonNegative(*t.costMs))
      return where + "'cost_ms' must be a finite non-negative number";
  }
  return std::nullopt;
}

using Key = std::tuple<std::string, std::string, int64_t, std::string>;

/// Every entry valid and no key twice; the first problem otherwise.
std::optional<std::string> checkAll(const std::vector<TuningEntry> &list) {
  std::map<Key, size_t> seen;
  for (size_t i = 0; i < list.size(); ++i) {
    const TuningEntry &e = list[i];
    if (auto problem = checkEntry(e, i))
      return problem;
    auto [it, inserted] = seen.try_emplace(Key{e.kernel, e.target, e.threads, e.xfVersion}, i);
    if (!inserted)
      return at(i) + ": duplicate of " + at(it->second) +
             " (same kernel, target, threads and xf_version)";
  }
  return std::nullopt;
}

/// Reads the typed fields of one JSON object, collecting the first problem.
class Fields {
public:
  Fields(const json::Object &obj, std::string where) : obj(obj), where(std::move(where)) {}

  const std::optional<std::string> &problem() const { return firstProblem; }

  const json::Value *require(StringRef key) {
    const json::Value *v = obj.get(key);
    if (!v)
      fail("'" + key.str() + "' is missing");
    return v;
  }

  void string(StringRef key, std::string &out) {
    if (const json::Value *v = require(key)) {
      if (auto s = v->getAsString())
        out = s->str();
      else
        fail("'" + key.str() + "' must be a string");
    }
  }

  void number(StringRef key, double &out) {
    if (const json::Value *v = require(key)) {
      if (auto d = v->getAsNumber())
        out = *d;
      else
        fail("'" + key.str() + "' must be a number");
    }
  }

  void positiveInteger(StringRef key, int64_t &out) {
    const json::Value *v = require(key);
    if (!v)
      return;
    // Range-check as a double first: getAsInteger converts doubles near
    // 2^63 without a range check of its own.
    std::optional<double> d = v->getAsNumber();
    std::optional<int64_t> i;
    if (d && *d >= 1 && *d <= double(kMaxThreads))
      i = v->getAsInteger();
    if (i)
      out = *i;
    else
      fail("'" + key.str() + "' must be a positive integer (at most " +
           std::to_string(kMaxThreads) + ")");
  }

  void fail(const std::string &msg) {
    if (!firstProblem)
      firstProblem = where + ": " + msg;
  }

private:
  const json::Object &obj;
  std::string where;
  std::optional<std::string> firstProblem;
};

/// Reads the whole of a regular file of at most `limit` bytes. The file is
/// opened non-blocking and checked again through the descriptor, so that a
/// FIFO swapped in after the caller's stat cannot block the open or read.
Expected<std::string> readRegularFile(StringRef path, uint64_t limit) {
#if LLVM_ON_UNIX
  SmallString<256> p(path);
  int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return fileError(path,
                     "cannot open: " + std::error_code(errno, std::generic_category()).message());
  llvm::scope_exit closeFd([&] { ::close(fd); });
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return fileError(path,
                     "cannot stat: " + std::error_code(errno, std::generic_category()).message());
  if (!S_ISREG(st.st_mode))
    return fileError(path, "not a regular file");
  if (uint64_t(st.st_size) > limit)
    return fileError(path, "larger than " + Twine(limit >> 20) + " MiB");
  std::string text;
  text.resize(size_t(st.st_size));
  size_t have = 0;
  for (;;) {
    // The file may grow while we read: never read past the limit.
    if (have == text.size()) {
      if (text.size() > limit)
        return fileError(path, "larger than " + Twine(limit >> 20) + " MiB");
      text.resize(std::min<size_t>(std::max<size_t>(text.size() * 2, 4096), limit + 1));
    }
    ssize_t got = ::read(fd, &text[have], text.size() - have);
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return fileError(path,
                       "cannot read: " + std::error_code(errno, std::generic_category()).message());
    }
    if (got == 0)
      break;
    have += size_t(got);
  }
  text.resize(have);
  if (text.size() > limit)
    return fileError(path, "larger than " + Twine(limit >> 20) + " MiB");
  return text;
#else
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return fileError(path, "cannot read: " + buf.getError().message());
  if ((*buf)->getBufferSize() > limit)
    return fileError(path, "larger than " + Twine(limit >> 20) + " MiB");
  return (*buf)->getBuffer().str();
#endif
}

/// Shortest text that reads back as exactly `v` (finite: checked before).
std::string formatNumber(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

} // namespace

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

Expected<TuningDatabase> TuningDatabase::load(StringRef path) {
  if (path.empty())
    return createStringError(inconvertibleErrorCode(), "tuning database: empty path");
  // Refuse directories, FIFOs and devices before opening anything.
  sys::fs::file_status st;
  if (std::error_code ec = sys::fs::status(path, st, /*follow=*/true)) {
    if (ec == errc::no_such_file_or_directory)
      return make_error<TuningDatabaseMissing>(path.str());
    return fileError(path, "cannot stat: " + ec.message());
  }
  if (st.type() != sys::fs::file_type::regular_file)
    return fileError(path, "not a regular file");
  if (st.getSize() > kMaxFileBytes)
    return fileError(path, "larger than " + Twine(kMaxFileBytes >> 20) + " MiB");

  Expected<std::string> text = readRegularFile(path, kMaxFileBytes);
  if (!text)
    return text.takeError();
  if (nestingDepth(*text, kMaxDepth) > kMaxDepth)
    return fileError(path, "nested deeper than " + Twine(kMaxDepth) + " levels");
  Expected<json::Value> parsed = json::parse(*text);
  if (!parsed)
    return fileError(path, "invalid JSON: " + toString(parsed.takeError()));

  const json::Object *root = parsed->getAsObject();
  if (!root)
    return fileError(path, "the top level must be an object");
  const json::Value *format = root->get("format");
  if (!format)
    return fileError(path, "'format' is missing (expected \"" + Twine(kFormat) + "\")");
  if (format->getAsString() != std::optional<StringRef>(kFormat))
    return fileError(path, "'format' must be \"" + Twine(kFormat) + "\"");
  const json::Value *version = root->get("version");
  if (!version)
    return fileError(path, "'version' is missing");
  std::optional<double> v = version->getAsNumber();
  if (!v || *v != double(kVersion))
    return fileError(path, "unsupported 'version' (this xf reads version " + Twine(kVersion) + ")");
  const json::Value *entriesValue = root->get("entries");
  if (!entriesValue)
    return fileError(path, "'entries' is missing");
  const json::Array *entries = entriesValue->getAsArray();
  if (!entries)
    return fileError(path, "'entries' must be an array");

  TuningDatabase db;
  db.list.reserve(entries->size());
  for (size_t i = 0; i < entries->size(); ++i) {
    const json::Object *obj = (*entries)[i].getAsObject();
    if (!obj)
      return fileError(path, at(i) + ": must be an object");
    TuningEntry e;
    Fields f(*obj, at(i));
    f.string("kernel", e.kernel);
    f.string("target", e.target);
    f.positiveInteger("threads", e.threads);
    f.string("xf_version", e.xfVersion);
    f.string("schedule", e.schedule);
    f.number("cost_ms", e.costMs);
    f.number("default_cost_ms", e.defaultCostMs);
    f.number("roofline_fraction", e.rooflineFraction);
    f.string("measured_at", e.measuredAt);
    f.number("seconds_spent", e.secondsSpent);
    if (const json::Value *trials = f.require("trials")) {
      if (const json::Array *arr = trials->getAsArray()) {
        for (size_t j = 0; j < arr->size() && !f.problem(); ++j) {
          const json::Object *tobj = (*arr)[j].getAsObject();
          if (!tobj) {
            f.fail("'trials[" + std::to_string(j) + "]' must be an object");
            break;
          }
          TrialRecord t;
          Fields tf(*tobj, at(i, j));
          tf.string("schedule", t.schedule);
          if (tobj->get("cost_ms")) {
            double c = 0;
            tf.number("cost_ms", c);
            t.costMs = c;
          }
          if (tobj->get("failure"))
            tf.string("failure", t.failure);
          if (tobj->get("path"))
            tf.string("path", t.path);
          if (tf.problem())
            return fileError(path, *tf.problem());
          e.trials.push_back(std::move(t));
        }
      } else {
        f.fail("'trials' must be an array");
      }
    }
    if (f.problem())
      return fileError(path, *f.problem());
    db.list.push_back(std::move(e));
  }
  if (auto problem = checkAll(db.list))
    return fileError(path, *problem);
  return db;
}

Expected<TuningDatabase> TuningDatabase::loadOrEmpty(StringRef path) {
  Expected<TuningDatabase> db = load(path);
  if (db)
    return db;
  Error err = db.takeError();
  if (err.isA<TuningDatabaseMissing>()) {
    consumeError(std::move(err));
    return TuningDatabase();
  }
  return std::move(err);
}

//===----------------------------------------------------------------------===//
// Saving
//===----------------------------------------------------------------------===//

Error TuningDatabase::save(StringRef path) const {
  if (path.empty())
    return createStringError(inconvertibleErrorCode(), "tuning database: empty path");
  if (auto problem = checkAll(list))
    return fileError(path, "not saved: " + *problem);

  // lstat: a symlink at the path is refused, not followed or replaced.
  sys::fs::file_status st;
  std::optional<sys::fs::perms> oldPerms;
  if (std::error_code ec = sys::fs::status(path, st, /*follow=*/false)) {
    if (ec != errc::no_such_file_or_directory)
      return fileError(path, "cannot stat: " + ec.message());
  } else if (st.type() != sys::fs::file_type::regular_file) {
    return fileError(path, "exists and is not a regular file (a symlink, directory, FIFO or "
                           "device); not overwritten");
  } else {
    oldPerms = st.permissions();
  }

  SmallString<256> dir(sys::path::parent_path(path));
  if (dir.empty())
    dir = ".";
  if (std::error_code ec = sys::fs::create_directories(dir))
    return fileError(path, "cannot create directory '" + dir + "': " + ec.message());

  SmallString<256> model(dir);
  sys::path::append(model, sys::path::filename(path) + ".tmp-%%%%%%%%%%%%");
  int fd = -1;
  SmallString<256> tmp;
  if (std::error_code ec = sys::fs::createUniqueFile(model, fd, tmp))
    return fileError(path, "cannot create a temporary file in '" + dir + "': " + ec.message());

  std::error_code writeError;
  {
    raw_fd_ostream os(fd, /*shouldClose=*/true);
    {
      json::OStream j(os, /*IndentSize=*/2);
      auto number = [&](StringRef key, double v) {
        j.attributeBegin(key);
        j.rawValue(formatNumber(v));
        j.attributeEnd();
      };
      j.object([&] {
        j.attribute("format", kFormat);
        j.attribute("version", kVersion);
        j.attributeArray("entries", [&] {
          for (const TuningEntry &e : list) {
            j.object([&] {
              j.attribute("kernel", e.kernel);
              j.attribute("target", e.target);
              j.attribute("threads", e.threads);
              j.attribute("xf_version", e.xfVersion);
              j.attribute("schedule", e.schedule);
              number("cost_ms", e.costMs);
              number("default_cost_ms", e.defaultCostMs);
              number("roofline_fraction", e.rooflineFraction);
              j.attribute("measured_at", e.measuredAt);
              j.attributeArray("trials", [&] {
                for (const TrialRecord &t : e.trials) {
                  j.object([&] {
                    j.attribute("schedule", t.schedule);
                    if (t.costMs)
                      number("cost_ms", *t.costMs);
                    else
                      j.attribute("failure", t.failure);
                    if (!t.path.empty())
                      j.attribute("path", t.path);
                  });
                }
              });
              number("seconds_spent", e.secondsSpent);
            });
          }
        });
      });
    }
    os << "\n";
    os.flush();
#if LLVM_ON_UNIX
    // The data must be on disk before the rename makes it the database.
    if (!os.has_error() && ::fsync(fd) != 0)
      writeError = std::error_code(errno, std::generic_category());
#endif
    os.close();
    if (os.has_error() && !writeError)
      writeError = os.error();
    os.clear_error(); // else raw_fd_ostream aborts in its destructor
  }
  if (writeError) {
    sys::fs::remove(tmp);
    return fileError(path, "cannot write '" + tmp + "': " + writeError.message());
  }
  if (oldPerms)
    (void)sys::fs::setPermissions(tmp, *oldPerms); // keep the old file's mode
  if (std::error_code ec = sys::fs::rename(tmp, path)) {
    sys::fs::remove(tmp);
    return fileError(path, "cannot rename '" + tmp + "' over it: " + ec.message());
  }
#if LLVM_ON_UNIX
  // Make the rename itself durable (best effort: not every file system
  // supports fsync on a directory).
  int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd >= 0) {
    (void)::fsync(dirFd);
    ::close(dirFd);
  }
#endif
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Lookup
//===----------------------------------------------------------------------===//

const TuningEntry *TuningDatabase::find(StringRef kernel, StringRef target, int64_t threads,
                                        StringRef xfVersion) const {
  for (const TuningEntry &e : list)
    if (e.kernel == kernel && e.target == target && e.threads == threads &&
        e.xfVersion == xfVersion)
      return &e;
  return nullptr;
}

std::vector<const TuningEntry *> TuningDatabase::findKernel(StringRef kernel) const {
  std::vector<const TuningEntry *> out;
  for (const TuningEntry &e : list)
    if (e.kernel == kernel)
      out.push_back(&e);
  return out;
}

TuningEntry &TuningDatabase::upsert(StringRef kernel, StringRef target, int64_t threads,
                                    StringRef xfVersion) {
  for (TuningEntry &e : list)
    if (e.kernel == kernel && e.target == target && e.threads == threads &&
        e.xfVersion == xfVersion)
      return e;
  TuningEntry &e = list.emplace_back();
  e.kernel = kernel.str();
  e.target = target.str();
  e.threads = threads;
  e.xfVersion = xfVersion.str();
  return e;
}

//===----------------------------------------------------------------------===//
// One writer at a time
//===----------------------------------------------------------------------===//

Expected<TuningDatabaseLock> TuningDatabaseLock::acquire(StringRef dbPath) {
#if LLVM_ON_UNIX
  SmallString<256> lockPath(dbPath);
  lockPath += ".lock";
  // The database's directory is created on first save; the lock needs it now.
  StringRef parent = sys::path::parent_path(dbPath);
  if (!parent.empty())
    (void)sys::fs::create_directories(parent);
  int fd = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0)
    return fileError(dbPath, "cannot open its lock file " + Twine(lockPath) + ": " +
                                 std::error_code(errno, std::generic_category()).message());
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fileError(dbPath, "its lock file " + Twine(lockPath) + " is not a regular file");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int error = errno;
    ::close(fd);
    if (error == EWOULDBLOCK)
      return fileError(dbPath, "another xfc tune is writing this database (it holds " +
                                   Twine(lockPath) + "); wait for it to finish, or give this run "
                                   "another --db");
    return fileError(dbPath, "cannot lock " + Twine(lockPath) + ": " +
                                 std::error_code(error, std::generic_category()).message());
  }
  return TuningDatabaseLock(fd);
#else
  (void)dbPath;
  return TuningDatabaseLock(-1);
#endif
}

TuningDatabaseLock::~TuningDatabaseLock() {
#if LLVM_ON_UNIX
  if (fd >= 0)
    ::close(fd); // releases the flock
#endif
}
