//===- TuningDatabaseTest.cpp - the tuning database file ------------------===//
//
// In: databases built in memory and files written by hand (valid, malformed,
// hostile: FIFOs, symlinks, huge or deeply nested files). Out: checks that a
// save/load round trip is exact, that every malformed file gives an error
// naming the file, and that save is atomic and never writes through a
// symlink, FIFO or directory.
//
//===----------------------------------------------------------------------===//

#include "xf/Tuning/TuningDatabase.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fcntl.h>
#include <future>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace mlir::xf::tuning;
namespace fs = llvm::sys::fs;

namespace {

class TuningDatabaseTest : public ::testing::Test {
protected:
  void SetUp() override { ASSERT_FALSE(fs::createUniqueDirectory("xf-tuning-db-test", dir)); }
  void TearDown() override {
    ::chmod(dir.c_str(), 0755);
    fs::remove_directories(dir);
  }

  std::string path(llvm::StringRef name) const {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }

  static void write(const std::string &p, llvm::StringRef text) {
    std::error_code ec;
    llvm::raw_fd_ostream os(p, ec);
    ASSERT_FALSE(ec) << ec.message();
    os << text;
  }

  static std::string read(const std::string &p) {
    auto buf = llvm::MemoryBuffer::getFile(p);
    return buf ? (*buf)->getBuffer().str() : "<unreadable>";
  }

  llvm::SmallString<256> dir;
};

TuningDatabase sample() {
  TuningDatabase db;
  TuningEntry &a = db.upsert("gemm m=128 n=768 k=768 f32", "x86-64-linux-avx2-fma", 2, "0.2.0");
  a.schedule = "#xf.gemm_schedule<tile_cols = 48, tile_rows = 4>";
  a.costMs = 1.23;
  a.defaultCostMs = 0.1 + 0.2; // not short in decimal: must still round-trip exactly
  a.rooflineFraction = 0.8;
  a.measuredAt = "2025-01-02T03:04:05Z";
  a.secondsSpent = 42;
  a.trials = {{"#xf.gemm_schedule<tile_cols = 32>", 1.4, "", "gemv"},
              {"#xf.gemm_schedule<tile_cols = 96>", std::nullopt, "timeout", "gemm"},
              {"#xf.gemm_schedule<tile_cols = 48, tile_rows = 4>", 1.23, ""}};
  TuningEntry &b = db.upsert("attention \"quoted\" \u00e9", "arm-64-linux", 1, "0.2.0");
  b.schedule = "s\n\t\\";
  b.costMs = 1e-7;
  b.defaultCostMs = 3e10;
  b.rooflineFraction = 0;
  b.secondsSpent = 0.5;
  return db;
}

void expectEqual(const TuningDatabase &x, const TuningDatabase &y) {
  ASSERT_EQ(x.entries().size(), y.entries().size());
  for (size_t i = 0; i < x.entries().size(); ++i) {
    const TuningEntry &a = x.entries()[i], &b = y.entries()[i];
    EXPECT_EQ(a.kernel, b.kernel);
    EXPECT_EQ(a.target, b.target);
    EXPECT_EQ(a.threads, b.threads);
    EXPECT_EQ(a.xfVersion, b.xfVersion);
    EXPECT_EQ(a.schedule, b.schedule);
    EXPECT_EQ(a.costMs, b.costMs);
    EXPECT_EQ(a.defaultCostMs, b.defaultCostMs);
    EXPECT_EQ(a.rooflineFraction, b.rooflineFraction);
    EXPECT_EQ(a.measuredAt, b.measuredAt);
    EXPECT_EQ(a.secondsSpent, b.secondsSpent);
    ASSERT_EQ(a.trials.size(), b.trials.size());
    for (size_t j = 0; j < a.trials.size(); ++j) {
      EXPECT_EQ(a.trials[j].schedule, b.trials[j].schedule);
      EXPECT_EQ(a.trials[j].costMs, b.trials[j].costMs);
      EXPECT_EQ(a.trials[j].failure, b.trials[j].failure);
      EXPECT_EQ(a.trials[j].path, b.trials[j].path);
    }
  }
}

/// A valid file with one entry; `entry` replaces the entry's members.
std::string fileWith(const std::string &entry) {
  return R"({ "format": "xf-tuning-db", "version": 1, "entries": [ {)" + entry + "} ] }";
}

// Members separated by ", " (entryWith relies on it); trials last.
const char *kValidEntry =
    R"("kernel": "k", "target": "t", "threads": 2, "xf_version": "0.2.0", )"
    R"("schedule": "s", "cost_ms": 1.5, "default_cost_ms": 2, "roofline_fraction": 0.5, )"
    R"("measured_at": "2025-01-01T00:00:00Z", "seconds_spent": 3, )"
    R"("trials": [ { "schedule": "s", "cost_ms": 1.5 }, { "schedule": "u", "failure": "crash" } ])";

/// `kValidEntry` with the member `key` replaced by `replacement` (which may
/// be empty, to drop it).
std::string entryWith(const std::string &key, const std::string &replacement) {
  std::string e = kValidEntry;
  size_t at = e.find("\"" + key + "\":");
  EXPECT_NE(at, std::string::npos) << key;
  // The member ends at the next top-level comma (trials is last: to the end).
  size_t end = key == "trials" ? e.size() : e.find(", ", at);
  std::string rest = e.substr(end);
  if (replacement.empty() && !rest.empty())
    rest = rest.substr(2);
  std::string before = e.substr(0, at);
  if (replacement.empty() && rest.empty()) // dropping the last member
    before = before.substr(0, before.rfind(','));
  return before + replacement + rest;
}

} // namespace

//===----------------------------------------------------------------------===//
// Round trip and lookup
//===----------------------------------------------------------------------===//

TEST_F(TuningDatabaseTest, RoundTrip) {
  TuningDatabase db = sample();
  std::string p = path("sub/dir/tuning.db"); // parents are created
  ASSERT_FALSE(llvm::errorToBool(db.save(p)));
  llvm::Expected<TuningDatabase> loaded = TuningDatabase::load(p);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  expectEqual(db, *loaded);

  // Stable output: saving what was loaded gives the same bytes, keys in
  // schema order.
  std::string first = read(p);
  ASSERT_FALSE(llvm::errorToBool(loaded->save(p)));
  EXPECT_EQ(read(p), first);
  EXPECT_EQ(
      first.rfind("{\n  \"format\": \"xf-tuning-db\",\n  \"version\": 1,\n  \"entries\": [", 0), 0u)
      << first;
  EXPECT_LT(first.find("\"kernel\""), first.find("\"seconds_spent\""));
  EXPECT_NE(first.find("\"cost_ms\": 1.23,"), std::string::npos) << first;

  // No temporary files left behind.
  std::error_code ec;
  size_t files = 0;
  for (fs::directory_iterator it(path("sub/dir"), ec), end; !ec && it != end; it.increment(ec))
    ++files;
  EXPECT_EQ(files, 1u);
}

TEST_F(TuningDatabaseTest, FindAndUpsert) {
  TuningDatabase db = sample();
  const TuningEntry *e = db.find("gemm m=128 n=768 k=768 f32", "x86-64-linux-avx2-fma", 2, "0.2.0");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->costMs, 1.23);
  EXPECT_FALSE(db.find("gemm m=128 n=768 k=768 f32", "x86-64-linux-avx2-fma", 1, "0.2.0"));
  EXPECT_FALSE(db.find("gemm m=128 n=768 k=768 f32", "x86-64-linux-avx512", 2, "0.2.0"));
  EXPECT_FALSE(db.find("gemm m=128 n=768 k=768 f32", "x86-64-linux-avx2-fma", 2, "0.1.0"));

  db.upsert("gemm m=128 n=768 k=768 f32", "x86-64-linux-avx512", 2, "0.2.0").costMs = 0.9;
  EXPECT_EQ(db.findKernel("gemm m=128 n=768 k=768 f32").size(), 2u);
  EXPECT_TRUE(db.findKernel("nothing").empty());

  // Upserting an existing key updates it in place.
  size_t n = db.entries().size();
  TuningEntry &again = db.upsert("gemm m=128 n=768 k=768 f32", "x86-64-linux-avx2-fma", 2, "0.2.0");
  EXPECT_EQ(again.costMs, 1.23);
  again.costMs = 1.0;
  EXPECT_EQ(db.entries().size(), n);
  EXPECT_EQ(db.find("gemm m=128 n=768 k=768 f32", "x86-64-linux-avx2-fma", 2, "0.2.0")->costMs,
            1.0);
}

TEST_F(TuningDatabaseTest, EmptyDatabaseRoundTrips) {
  std::string p = path("empty.db");
  ASSERT_FALSE(llvm::errorToBool(TuningDatabase().save(p)));
  llvm::Expected<TuningDatabase> db = TuningDatabase::load(p);
  ASSERT_TRUE(bool(db)) << llvm::toString(db.takeError());
  EXPECT_TRUE(db->entries().empty());
}

TEST_F(TuningDatabaseTest, UnknownKeysAreIgnored) {
  std::string p = path("extra.db");
  write(p, R"({ "format": "xf-tuning-db", "version": 1, "comment": "hi", "entries": [ {)" +
               std::string(kValidEntry) + R"(, "future": [1, {"x": null}] } ] })");
  llvm::Expected<TuningDatabase> db = TuningDatabase::load(p);
  ASSERT_TRUE(bool(db)) << llvm::toString(db.takeError());
  ASSERT_EQ(db->entries().size(), 1u);
  EXPECT_EQ(db->entries()[0].trials.size(), 2u);
  EXPECT_EQ(db->entries()[0].trials[1].failure, "crash");
}

//===----------------------------------------------------------------------===//
// Load errors
//===----------------------------------------------------------------------===//

TEST_F(TuningDatabaseTest, MissingFileIsDistinguishable) {
  std::string p = path("none.db");
  llvm::Expected<TuningDatabase> db = TuningDatabase::load(p);
  ASSERT_FALSE(bool(db));
  llvm::Error err = db.takeError();
  EXPECT_TRUE(err.isA<TuningDatabaseMissing>());
  llvm::consumeError(std::move(err));

  llvm::Expected<TuningDatabase> empty = TuningDatabase::loadOrEmpty(p);
  ASSERT_TRUE(bool(empty));
  EXPECT_TRUE(empty->entries().empty());

  // Other errors are not "missing", and loadOrEmpty passes them on.
  write(p, "{");
  llvm::Expected<TuningDatabase> bad = TuningDatabase::loadOrEmpty(p);
  ASSERT_FALSE(bool(bad));
  llvm::Error badErr = bad.takeError();
  EXPECT_FALSE(badErr.isA<TuningDatabaseMissing>());
  llvm::consumeError(std::move(badErr));
}

TEST_F(TuningDatabaseTest, MalformedFilesGiveErrorsNamingTheFile) {
  std::string valid = fileWith(kValidEntry);
  struct Case {
    const char *name;
    std::string text;
    const char *expect; // in the message
  };
  std::vector<Case> cases = {
      {"empty file", "", "invalid JSON"},
      {"bad JSON", "{ \"format\": ", "invalid JSON"},
      {"truncated", valid.substr(0, valid.size() / 2), "invalid JSON"},
      {"trailing garbage", valid + " x", "invalid JSON"},
      {"NaN literal", fileWith(entryWith("cost_ms", "\"cost_ms\": NaN")), "invalid JSON"},
      {"invalid UTF-8", fileWith(entryWith("kernel", "\"kernel\": \"\xff\xfe\"")), "invalid JSON"},
      {"top level array", "[]", "top level must be an object"},
      {"no format", R"({ "version": 1, "entries": [] })", "'format' is missing"},
      {"wrong format", R"({ "format": "xf-tuning", "version": 1, "entries": [] })",
       "'format' must be"},
      {"format not a string", R"({ "format": 1, "version": 1, "entries": [] })",
       "'format' must be"},
      {"no version", R"({ "format": "xf-tuning-db", "entries": [] })", "'version' is missing"},
      {"wrong version", R"({ "format": "xf-tuning-db", "version": 2, "entries": [] })",
       "unsupported 'version'"},
      {"version string", R"({ "format": "xf-tuning-db", "version": "1", "entries": [] })",
       "unsupported 'version'"},
      {"no entries", R"({ "format": "xf-tuning-db", "version": 1 })", "'entries' is missing"},
      {"entries object", R"({ "format": "xf-tuning-db", "version": 1, "entries": {} })",
       "'entries' must be an array"},
      {"entry not object", R"({ "format": "xf-tuning-db", "version": 1, "entries": [3] })",
       "entries[0]: must be an object"},
      {"kernel number", fileWith(entryWith("kernel", "\"kernel\": 5")),
       "'kernel' must be a string"},
      {"kernel empty", fileWith(entryWith("kernel", "\"kernel\": \"\"")),
       "'kernel' must be a non-empty"},
      {"target null", fileWith(entryWith("target", "\"target\": null")),
       "'target' must be a string"},
      {"threads string", fileWith(entryWith("threads", "\"threads\": \"2\"")),
       "'threads' must be a positive integer"},
      {"threads zero", fileWith(entryWith("threads", "\"threads\": 0")),
       "'threads' must be a positive integer"},
      {"threads negative", fileWith(entryWith("threads", "\"threads\": -2")),
       "'threads' must be a positive integer"},
      {"threads fraction", fileWith(entryWith("threads", "\"threads\": 1.5")),
       "'threads' must be a positive integer"},
      {"threads huge", fileWith(entryWith("threads", "\"threads\": 9.3e18")),
       "'threads' must be a positive integer"},
      {"threads huge int", fileWith(entryWith("threads", "\"threads\": 18446744073709551615")),
       "'threads' must be a positive integer"},
      {"schedule array", fileWith(entryWith("schedule", "\"schedule\": []")),
       "'schedule' must be a string"},
      {"cost string", fileWith(entryWith("cost_ms", "\"cost_ms\": \"1\"")),
       "'cost_ms' must be a number"},
      {"cost negative", fileWith(entryWith("cost_ms", "\"cost_ms\": -1")),
       "'cost_ms' must be a finite non-negative"},
      {"cost infinite", fileWith(entryWith("cost_ms", "\"cost_ms\": 1e999")), "cost_ms"},
      {"default cost negative", fileWith(entryWith("default_cost_ms", "\"default_cost_ms\": -0.5")),
       "'default_cost_ms' must be"},
      {"roofline bool", fileWith(entryWith("roofline_fraction", "\"roofline_fraction\": true")),
       "'roofline_fraction' must be a number"},
      {"measured_at number", fileWith(entryWith("measured_at", "\"measured_at\": 1")),
       "'measured_at' must be a string"},
      {"seconds negative", fileWith(entryWith("seconds_spent", "\"seconds_spent\": -3")),
       "'seconds_spent' must be"},
      {"trials object", fileWith(entryWith("trials", "\"trials\": {}")),
       "'trials' must be an array"},
      {"trial not object", fileWith(entryWith("trials", "\"trials\": [1]")),
       "'trials[0]' must be an object"},
      {"trial both",
       fileWith(
           entryWith("trials", R"("trials": [{"schedule": "s", "cost_ms": 1, "failure": "x"}])")),
       "entries[0].trials[0]: must have exactly one"},
      {"trial neither", fileWith(entryWith("trials", R"("trials": [{"schedule": "s"}])")),
       "entries[0].trials[0]: must have exactly one"},
      {"trial empty failure",
       fileWith(entryWith("trials", R"("trials": [{"schedule": "s", "failure": ""}])")),
       "must have exactly one"},
      {"trial negative cost",
       fileWith(entryWith("trials", R"("trials": [{"schedule": "s", "cost_ms": -1}])")),
       "entries[0].trials[0]: 'cost_ms' must be a finite"},
      {"trial cost string",
       fileWith(entryWith("trials", R"("trials": [{"schedule": "s", "cost_ms": "1"}])")),
       "entries[0].trials[0]: 'cost_ms' must be a number"},
      {"trial no schedule", fileWith(entryWith("trials", R"("trials": [{"cost_ms": 1}])")),
       "entries[0].trials[0]: 'schedule' is missing"},
      {"trial path number",
       fileWith(entryWith("trials", R"("trials": [{"schedule": "s", "cost_ms": 1, "path": 2}])")),
       "entries[0].trials[0]: 'path' must be a string"},
      {"duplicate entries",
       R"({ "format": "xf-tuning-db", "version": 1, "entries": [ {)" + std::string(kValidEntry) +
           "}, {" + kValidEntry + "} ] }",
       "entries[1]: duplicate of entries[0]"},
      {"deep nesting", std::string(100000, '[') + std::string(100000, ']'), "nested deeper"},
      {"deep nesting in entry",
       fileWith(entryWith("trials", "\"trials\": " + std::string(70, '[') + std::string(70, ']'))),
       "nested deeper"},
      // MLIR's attribute parser recurses per bracket of a schedule: 10,000 '[' crashed it.
      {"deep schedule",
       fileWith(entryWith("schedule", "\"schedule\": \"" + std::string(10000, '[') + "\"")),
       "entries[0]: 'schedule' is nested deeper than 32 levels"},
      {"deep trial schedule",
       fileWith(entryWith("trials", "\"trials\": [{\"schedule\": \"#a<" + std::string(40, '(') +
                                        "\", \"cost_ms\": 1}]")),
       "entries[0].trials[0]: 'schedule' is nested deeper than 32 levels"},
  };
  // Every required member, missing.
  for (const char *key :
       {"kernel", "target", "threads", "xf_version", "schedule", "cost_ms", "default_cost_ms",
        "roofline_fraction", "measured_at", "seconds_spent", "trials"})
    cases.push_back({key, fileWith(entryWith(key, "")),
                     key}); // the message names the key; checked below for "is missing"

  // The valid file itself loads (so the cases fail for their own reason).
  std::string p = path("tuning.db");
  write(p, valid);
  {
    llvm::Expected<TuningDatabase> db = TuningDatabase::load(p);
    ASSERT_TRUE(bool(db)) << llvm::toString(db.takeError());
  }

  for (const Case &c : cases) {
    write(p, c.text);
    llvm::Expected<TuningDatabase> db = TuningDatabase::load(p);
    ASSERT_FALSE(bool(db)) << c.name << ": loaded";
    std::string msg = llvm::toString(db.takeError());
    EXPECT_EQ(msg.rfind(p + ": ", 0), 0u) << c.name << ": " << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.name << ": " << msg;
    if (std::string(c.name) == c.expect) // a missing member
      EXPECT_NE(msg.find("is missing"), std::string::npos) << c.name << ": " << msg;
  }
}

TEST_F(TuningDatabaseTest, MutatedFilesNeverCrash) {
  // A cheap stand-in for the fuzzer: flip, drop and duplicate bytes of a
  // valid file; every result loads or fails cleanly.
  std::string p = path("fuzz.db");
  ASSERT_FALSE(llvm::errorToBool(sample().save(p)));
  std::string valid = read(p);
  uint64_t h = 88172645463325252ULL;
  auto rnd = [&] {
    h ^= h << 13;
    h ^= h >> 7;
    h ^= h << 17;
    return h;
  };
  const char tokens[] = "{}[]\",:-0123456789.eE \\nulltruefalse\xff";
  for (int i = 0; i < 2000; ++i) {
    std::string text = valid;
    for (int m = 0, n = 1 + int(rnd() % 4); m < n && !text.empty(); ++m) {
      size_t at = rnd() % text.size();
      switch (rnd() % 3) {
      case 0:
        text[at] = tokens[rnd() % (sizeof(tokens) - 1)];
        break;
      case 1:
        text.erase(at, 1 + rnd() % 8);
        break;
      default:
        text.insert(at, text.substr(at, 1 + rnd() % 16));
        break;
      }
    }
    write(p, text);
    llvm::Expected<TuningDatabase> db = TuningDatabase::load(p);
    if (!db) {
      std::string msg = llvm::toString(db.takeError());
      EXPECT_EQ(msg.rfind(p + ": ", 0), 0u) << msg;
    }
  }
}

TEST_F(TuningDatabaseTest, LoadRefusesDirectoryAndHugeFile) {
  std::string d = path("adir");
  ASSERT_FALSE(fs::create_directory(d));
  llvm::Expected<TuningDatabase> db = TuningDatabase::load(d);
  ASSERT_FALSE(bool(db));
  EXPECT_NE(llvm::toString(db.takeError()).find("not a regular file"), std::string::npos);

  // A sparse file just over the cap: refused by size, without reading it.
  std::string big = path("big.db");
  int fd = ::open(big.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, off_t(TuningDatabase::kMaxFileBytes + 1)), 0);
  ::close(fd);
  llvm::Expected<TuningDatabase> huge = TuningDatabase::load(big);
  ASSERT_FALSE(bool(huge));
  std::string msg = llvm::toString(huge.takeError());
  EXPECT_EQ(msg.rfind(big + ": ", 0), 0u) << msg;
  EXPECT_NE(msg.find("larger than 256 MiB"), std::string::npos) << msg;
}

TEST_F(TuningDatabaseTest, LoadRefusesFifoWithoutBlocking) {
  std::string p = path("fifo.db");
  ASSERT_EQ(::mkfifo(p.c_str(), 0644), 0);
  std::promise<std::string> done;
  std::future<std::string> result = done.get_future();
  std::thread loader([&] {
    llvm::Expected<TuningDatabase> db = TuningDatabase::load(p);
    done.set_value(db ? std::string("<loaded>") : llvm::toString(db.takeError()));
  });
  bool prompt = result.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  if (!prompt) {
    // Unblock the loader so that the test can fail instead of hanging.
    int fd = ::open(p.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0)
      ::close(fd);
  }
  loader.join();
  ASSERT_TRUE(prompt) << "load blocked on a FIFO";
  std::string msg = result.get();
  EXPECT_EQ(msg.rfind(p + ": ", 0), 0u) << msg;
  EXPECT_NE(msg.find("not a regular file"), std::string::npos) << msg;
}

//===----------------------------------------------------------------------===//
// Save safety
//===----------------------------------------------------------------------===//

TEST_F(TuningDatabaseTest, SaveRefusesSymlinkAndLeavesItUntouched) {
  std::string target = path("real.db");
  write(target, "precious");
  std::string link = path("link.db");
  ASSERT_FALSE(fs::create_link(target, link));
  llvm::Error err = sample().save(link);
  ASSERT_TRUE(bool(err));
  std::string msg = llvm::toString(std::move(err));
  EXPECT_EQ(msg.rfind(link + ": ", 0), 0u) << msg;
  EXPECT_NE(msg.find("not a regular file"), std::string::npos) << msg;
  fs::file_status st;
  ASSERT_FALSE(fs::status(link, st, /*follow=*/false));
  EXPECT_EQ(st.type(), fs::file_type::symlink_file);
  EXPECT_EQ(read(target), "precious");

  // A dangling symlink is refused too (nothing is created at its target).
  std::string dangling = path("dangling.db");
  ASSERT_FALSE(fs::create_link(path("nowhere.db"), dangling));
  EXPECT_TRUE(llvm::errorToBool(sample().save(dangling)));
  EXPECT_FALSE(fs::exists(path("nowhere.db")));
}

TEST_F(TuningDatabaseTest, SaveRefusesFifoAndDirectory) {
  std::string fifo = path("fifo.db");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  llvm::Error err = sample().save(fifo);
  ASSERT_TRUE(bool(err));
  std::string msg = llvm::toString(std::move(err));
  EXPECT_EQ(msg.rfind(fifo + ": ", 0), 0u) << msg;
  fs::file_status st;
  ASSERT_FALSE(fs::status(fifo, st, /*follow=*/false));
  EXPECT_EQ(st.type(), fs::file_type::fifo_file);

  std::string d = path("dir.db");
  ASSERT_FALSE(fs::create_directory(d));
  EXPECT_TRUE(llvm::errorToBool(sample().save(d)));
  EXPECT_TRUE(fs::is_directory(d));
}

TEST_F(TuningDatabaseTest, FailedSaveLeavesOldFileIntact) {
  std::string p = path("tuning.db");
  ASSERT_FALSE(llvm::errorToBool(sample().save(p)));
  std::string before = read(p);

  // Entries that break the rules are refused before anything is written.
  TuningDatabase bad = sample();
  TuningEntry &b = bad.upsert("k", "t", 1, "v");
  b.schedule = "s";
  b.costMs = std::nan("");
  llvm::Error err = bad.save(p);
  ASSERT_TRUE(bool(err));
  std::string msg = llvm::toString(std::move(err));
  EXPECT_EQ(msg.rfind(p + ": ", 0), 0u) << msg;
  EXPECT_NE(msg.find("'cost_ms' must be a finite non-negative number"), std::string::npos) << msg;
  EXPECT_EQ(read(p), before);

  TuningDatabase utf = sample();
  TuningEntry &u = utf.upsert("k", "t", 1, "v");
  u.schedule = "\xff";
  EXPECT_TRUE(llvm::errorToBool(utf.save(p)));
  EXPECT_EQ(read(p), before);

  TuningDatabase dup = sample();
  TuningEntry &d = dup.upsert("k2", "t", 1, "v");
  d.schedule = "s";
  d.kernel = dup.entries()[0].kernel; // now the same key as entry 0
  d.target = dup.entries()[0].target;
  d.threads = dup.entries()[0].threads;
  d.xfVersion = dup.entries()[0].xfVersion;
  llvm::Error dupErr = dup.save(p);
  ASSERT_TRUE(bool(dupErr));
  EXPECT_NE(llvm::toString(std::move(dupErr)).find("duplicate of entries[0]"), std::string::npos);
  EXPECT_EQ(read(p), before);

  TuningDatabase threads;
  TuningEntry &t = threads.upsert("k", "t", -1, "v");
  t.schedule = "s";
  llvm::Error threadsErr = threads.save(p);
  ASSERT_TRUE(bool(threadsErr));
  EXPECT_NE(llvm::toString(std::move(threadsErr)).find("'threads' must be a positive integer"),
            std::string::npos);
  EXPECT_EQ(read(p), before);
}

TEST_F(TuningDatabaseTest, FailedSaveInReadOnlyDirectoryLeavesOldFileIntact) {
  if (::geteuid() == 0)
    GTEST_SKIP() << "root can write into a read-only directory";
  std::string p = path("tuning.db");
  ASSERT_FALSE(llvm::errorToBool(sample().save(p)));
  std::string before = read(p);
  ASSERT_EQ(::chmod(dir.c_str(), 0555), 0);
  TuningDatabase other = sample();
  other.upsert("new", "t", 1, "v").schedule = "s";
  llvm::Error err = other.save(p);
  ::chmod(dir.c_str(), 0755);
  ASSERT_TRUE(bool(err));
  std::string msg = llvm::toString(std::move(err));
  EXPECT_EQ(msg.rfind(p + ": ", 0), 0u) << msg;
  EXPECT_EQ(read(p), before);
}

TEST_F(TuningDatabaseTest, SaveKeepsFileMode) {
  std::string p = path("mode.db");
  ASSERT_FALSE(llvm::errorToBool(sample().save(p)));
  ASSERT_EQ(::chmod(p.c_str(), 0640), 0);
  ASSERT_FALSE(llvm::errorToBool(sample().save(p)));
  struct stat st;
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

// Issue 33: two `xfc tune` runs on one database each saved their own copy, and the last one
// dropped the other's entries. Now one run holds the database's lock; a second is refused.
TEST_F(TuningDatabaseTest, OneWriterAtATime) {
  std::string db = path("sub/tuning.db");
  {
    llvm::Expected<TuningDatabaseLock> first = TuningDatabaseLock::acquire(db);
    ASSERT_TRUE(bool(first)) << llvm::toString(first.takeError());
    llvm::Expected<TuningDatabaseLock> second = TuningDatabaseLock::acquire(db);
    ASSERT_FALSE(bool(second));
    std::string msg = llvm::toString(second.takeError());
    EXPECT_EQ(msg.rfind(db + ": another xfc tune is writing this database", 0), 0u) << msg;
    // Moved, it is still held.
    TuningDatabaseLock moved = std::move(*first);
    EXPECT_FALSE(bool(TuningDatabaseLock::acquire(db)));
    llvm::consumeError(TuningDatabaseLock::acquire(db).takeError());
  }
  // Released with its holder.
  llvm::Expected<TuningDatabaseLock> again = TuningDatabaseLock::acquire(db);
  EXPECT_TRUE(bool(again)) << llvm::toString(again.takeError());
  // A lock path that is a symlink is not followed.
  std::string other = path("other.db");
  ASSERT_EQ(::symlink(path("elsewhere").c_str(), (other + ".lock").c_str()), 0);
  llvm::Expected<TuningDatabaseLock> linked = TuningDatabaseLock::acquire(other);
  EXPECT_FALSE(bool(linked));
  llvm::consumeError(linked.takeError());
  EXPECT_FALSE(fs::exists(path("elsewhere")));
}
