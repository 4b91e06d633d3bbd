//===- ObjectCacheTest.cpp - the object cache's entries, eviction, keys ---===//
//
// ObjectCache on a temporary directory: round trips, every kind of corrupt
// entry (reported, removed, a miss), least-recently-used eviction with
// controlled modification times, stale temporaries, failed stores, the
// environment settings; and ObjectKeys: every field of a kernel spec, the
// target and the host module change the key.
//
//===----------------------------------------------------------------------===//

#include "xf/Pipelines/ObjectCache.h"
#include "xf/Pipelines/ObjectKeys.h"
#include "xf/IR/XfDialect.h"

#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <set>
#include <vector>

using namespace mlir::xf;
namespace fs = llvm::sys::fs;

namespace {

class ObjectCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(fs::createUniqueDirectory("xf-object-cache-test", root));
    settings.directory = (root + "/cache").str();
  }
  void TearDown() override { fs::remove_directories(root); }

  ObjectCache open(uint64_t maxBytes = uint64_t(1) << 30) {
    settings.maxBytes = maxBytes;
    auto cache = ObjectCache::open(
        settings, [this](const llvm::Twine &message) { warnings.push_back(message.str()); });
    EXPECT_TRUE(bool(cache)) << llvm::toString(cache.takeError());
    return std::move(*cache);
  }

  /// A file in the test directory holding `bytes`.
  std::string object(llvm::StringRef name, llvm::StringRef bytes) {
    std::string path = (root + "/" + name).str();
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << bytes;
    return path;
  }

  static std::string read(llvm::StringRef path) {
    auto buffer = llvm::MemoryBuffer::getFile(path);
    return buffer ? (*buffer)->getBuffer().str() : "<absent>";
  }

  /// The names in the cache directory.
  std::set<std::string> listing() {
    std::set<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(settings.directory, ec), end; it != end && !ec; it.increment(ec))
      names.insert(llvm::sys::path::filename(it->path()).str());
    return names;
  }

  static void setModified(llvm::StringRef path, std::chrono::seconds ago) {
    int fd;
    ASSERT_FALSE(fs::openFileForRead(path, fd));
    ASSERT_FALSE(fs::setLastAccessAndModificationTime(fd, std::chrono::system_clock::now() - ago));
    ::close(fd);
  }

  llvm::SmallString<128> root;
  ObjectCacheSettings settings;
  std::vector<std::string> warnings;
};

TEST_F(ObjectCacheTest, StoredObjectComesBackByteForByte) {
  ObjectCache cache = open();
  std::string bytes("\x7f"
                    "ELF object with a \0 inside",
                    27);
  ObjectDigest key = digestOf("some key");
  std::string out = (root + "/out.o").str();
  EXPECT_FALSE(cache.fetch(key, out));
  cache.store(key, object("in.o", bytes));
  EXPECT_TRUE(cache.fetch(key, out));
  EXPECT_EQ(read(out), bytes);
  EXPECT_EQ(listing(), (std::set<std::string>{"key", hexOf(key) + ".xfo"})); // no temporaries
  EXPECT_FALSE(cache.fetch(digestOf("another key"), out));
  EXPECT_TRUE(warnings.empty());
}

TEST_F(ObjectCacheTest, CorruptEntriesAreReportedRemovedAndMissed) {
  ObjectCache cache = open();
  std::string bytes(1000, 'x');
  ObjectDigest key = digestOf("k");
  std::string entry = cache.entryPath(key);
  std::string out = (root + "/out.o").str();
  struct Damage {
    const char *reason;
    std::function<std::string(std::string)> apply;
  };
  std::vector<Damage> damages = {
      {"shorter than its header", [](std::string s) { return s.substr(0, 20); }},
      {"holds 999 bytes of an object of 1000",
       [](std::string s) { return s.substr(0, s.size() - 1); }},
      {"holds 1001 bytes", [](std::string s) { return s + "y"; }},
      {"checksum mismatch: changed, or not written with this cache's key",
       [](std::string s) {
         s[s.size() - 10] ^= 1;
         return s;
       }},
      {"not an xf object cache entry",
       [](std::string s) {
         s[0] = 'Y';
         return s;
       }},
      {"stored under another key",
       [](std::string s) {
         s[12] ^= 1;
         return s;
       }},
  };
  for (const Damage &damage : damages) {
    SCOPED_TRACE(damage.reason);
    warnings.clear();
    cache.store(key, object("in.o", bytes));
    std::string good = read(entry);
    object("damaged", damage.apply(good));
    ASSERT_FALSE(fs::rename(root + "/damaged", entry));
    EXPECT_FALSE(cache.fetch(key, out));
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("object cache entry " + entry + " is corrupt"), std::string::npos)
        << warnings[0];
    EXPECT_NE(warnings[0].find(damage.reason), std::string::npos) << warnings[0];
    EXPECT_FALSE(fs::exists(entry));
    // Stored again, it is whole.
    cache.store(key, object("in.o", bytes));
    EXPECT_TRUE(cache.fetch(key, out));
    EXPECT_EQ(read(out), bytes);
  }
}

TEST_F(ObjectCacheTest, EvictsLeastRecentlyUsedFirst) {
  // Five entries of 1080 bytes (1000 + the 80-byte header) in a cache of 3500 bytes.
  ObjectCache cache = open(3500);
  std::vector<ObjectDigest> keys;
  for (int i = 0; i < 5; ++i) {
    keys.push_back(digestOf("key " + std::to_string(i)));
    cache.store(keys.back(), object("in.o", std::string(1000, char('a' + i))));
    setModified(cache.entryPath(keys.back()), std::chrono::seconds(100 - 10 * i));
  }
  // Entry 0, the oldest, is used now: it becomes the newest.
  EXPECT_TRUE(cache.fetch(keys[0], (root + "/out.o").str()));
  cache.evict();
  // 5 × 1080 > 3500 ≥ 3 × 1080: the two least recently used (1 and 2) go.
  for (int i : {1, 2})
    EXPECT_FALSE(fs::exists(cache.entryPath(keys[i]))) << i;
  for (int i : {0, 3, 4})
    EXPECT_TRUE(fs::exists(cache.entryPath(keys[i]))) << i;
  cache.evict(); // within the limit: nothing more goes
  EXPECT_EQ(listing().size(), 4u); // and the key
  EXPECT_TRUE(warnings.empty());
}

TEST_F(ObjectCacheTest, ZeroSizeKeepsNothing) {
  ObjectCache cache = open(0);
  cache.store(digestOf("k"), object("in.o", "bytes"));
  cache.evict();
  EXPECT_EQ(listing(), std::set<std::string>{"key"});
}

TEST_F(ObjectCacheTest, StaleTemporariesAreRemovedFreshOnesKept) {
  ObjectCache cache = open();
  std::string stale = cache.entryPath(digestOf("a")) + ".tmp-12345678";
  std::string fresh = cache.entryPath(digestOf("b")) + ".tmp-87654321";
  object("stale", "half an entry");
  object("fresh", "being written");
  ASSERT_FALSE(fs::rename(root + "/stale", stale));
  ASSERT_FALSE(fs::rename(root + "/fresh", fresh));
  setModified(stale, std::chrono::hours(2));
  cache.evict();
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(fresh));
}

// Issue 33: an entry written by anyone else — here a whole, well-formed entry of another
// cache, as someone who could write into the directory would plant — is never fetched.
TEST_F(ObjectCacheTest, EntriesWrittenWithAnotherKeyAreRefused) {
  ObjectCache cache = open();
  ObjectCacheSettings otherSettings{(root + "/other").str(), uint64_t(1) << 30};
  auto other = ObjectCache::open(otherSettings, [](const llvm::Twine &) {});
  ASSERT_TRUE(bool(other)) << llvm::toString(other.takeError());
  ObjectDigest key = digestOf("k");
  other->store(key, object("planted.o", "planted object"));
  ASSERT_FALSE(fs::copy_file(other->entryPath(key), cache.entryPath(key)));
  std::string out = (root + "/out.o").str();
  EXPECT_FALSE(cache.fetch(key, out));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("not written with this cache's key"), std::string::npos)
      << warnings[0];
  EXPECT_FALSE(fs::exists(cache.entryPath(key)));
  EXPECT_NE(read(out), "planted object");
  // The two caches made different keys.
  EXPECT_NE(read(settings.directory + "/key"), read(otherSettings.directory + "/key"));
}

TEST_F(ObjectCacheTest, DirectoriesOthersCanWriteAreRefused) {
  open();
  for (auto [mode, why] : {std::pair<mode_t, const char *>{0777, "writable by others (mode 0777)"},
                           {01777, "writable by others"},
                           {0775, "writable by its group (mode 0775)"}}) {
    ASSERT_EQ(::chmod(settings.directory.c_str(), mode), 0);
    auto cache = ObjectCache::open(settings, [](const llvm::Twine &) {});
    ASSERT_FALSE(bool(cache)) << why;
    std::string message = llvm::toString(cache.takeError());
    EXPECT_NE(message.find("is not safe to link from"), std::string::npos) << message;
    EXPECT_NE(message.find(why), std::string::npos) << message;
  }
  ASSERT_EQ(::chmod(settings.directory.c_str(), 0755), 0);
  EXPECT_TRUE(bool(ObjectCache::open(settings, [](const llvm::Twine &) {})));
  if (::geteuid() == 0) { // only root can give a directory away
    ASSERT_EQ(::chown(settings.directory.c_str(), 4242, 4242), 0);
    auto cache = ObjectCache::open(settings, [](const llvm::Twine &) {});
    ASSERT_FALSE(bool(cache));
    EXPECT_NE(llvm::toString(cache.takeError()).find("owned by user id 4242, not by you"),
              std::string::npos);
  }
}

TEST_F(ObjectCacheTest, KeyFilesOthersCouldReadOrReplaceAreRefused) {
  open();
  std::string key = settings.directory + "/key";
  ASSERT_EQ(::chmod(key.c_str(), 0644), 0);
  auto readable = ObjectCache::open(settings, [](const llvm::Twine &) {});
  ASSERT_FALSE(bool(readable));
  EXPECT_NE(llvm::toString(readable.takeError()).find("mode 0600"), std::string::npos);
  ASSERT_EQ(::unlink(key.c_str()), 0);
  std::string elsewhere = object("elsewhere", std::string(32, 'k'));
  ASSERT_EQ(::chmod(elsewhere.c_str(), 0600), 0);
  ASSERT_EQ(::symlink(elsewhere.c_str(), key.c_str()), 0);
  EXPECT_FALSE(bool(ObjectCache::open(settings, [](const llvm::Twine &) {})));
  ASSERT_EQ(::unlink(key.c_str()), 0);
  open(); // a new key is made
  EXPECT_EQ(read(key).size(), 32u);
}

// Eviction removes entries and its own stale temporaries by their exact names, nothing else in
// the directory (it used to delete any file whose name contained ".tmp-", or ended in ".xfo").
TEST_F(ObjectCacheTest, EvictionTouchesOnlyItsOwnNames) {
  ObjectCache cache = open(0);
  std::string hex = hexOf(digestOf("a"));
  std::vector<std::string> foreign = {"notes.tmp-old", "backup.tmp-12345678",
                                      "thesis.xfo", hex.substr(1) + ".xfo",
                                      hex + ".xfo.tmp-1234567", hex + ".xfo.tmp-ABCDEF12",
                                      "x" + hex + ".xfo.tmp-12345678", "key.tmp-12345678.bak"};
  for (const std::string &name : foreign) {
    std::string path = settings.directory + "/" + name;
    ASSERT_FALSE(fs::rename(object("f", "user data"), path)) << name;
    setModified(path, std::chrono::hours(2));
  }
  std::string staleEntry = settings.directory + "/" + hex + ".xfo.tmp-0123abcd";
  std::string staleKey = settings.directory + "/key.tmp-89abcdef";
  for (const std::string &path : {staleEntry, staleKey}) {
    ASSERT_FALSE(fs::rename(object("f", "half"), path));
    setModified(path, std::chrono::hours(2));
  }
  cache.store(digestOf("b"), object("in.o", "bytes"));
  cache.evict();
  for (const std::string &name : foreign)
    EXPECT_EQ(read(settings.directory + "/" + name), "user data") << name;
  EXPECT_FALSE(fs::exists(staleEntry));
  EXPECT_FALSE(fs::exists(staleKey));
  EXPECT_FALSE(fs::exists(cache.entryPath(digestOf("b"))));
  EXPECT_TRUE(fs::exists(settings.directory + "/key"));
}

TEST_F(ObjectCacheTest, FailedStoreIsAWarning) {
  ObjectCache cache = open();
  ASSERT_FALSE(fs::remove_directories(settings.directory));
  cache.store(digestOf("k"), object("in.o", "bytes"));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("cannot write to the object cache"), std::string::npos) << warnings[0];
  cache.store(digestOf("k"), (root + "/absent.o").str());
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[1].find("to cache it"), std::string::npos) << warnings[1];
}

TEST_F(ObjectCacheTest, OpenRefusesAFile) {
  object("cache", "a file, not a directory");
  auto cache = ObjectCache::open(settings, [](const llvm::Twine &) {});
  ASSERT_FALSE(bool(cache));
  EXPECT_NE(llvm::toString(cache.takeError()).find("cache"), std::string::npos);
}

TEST(ObjectCacheSettings, ByteSizes) {
  EXPECT_EQ(parseByteSize("4096"), 4096u);
  EXPECT_EQ(parseByteSize("300K"), 300u << 10);
  EXPECT_EQ(parseByteSize("512m"), 512ull << 20);
  EXPECT_EQ(parseByteSize("1G"), 1ull << 30);
  EXPECT_EQ(parseByteSize(" 2T "), 2ull << 40);
  EXPECT_EQ(parseByteSize("0"), 0u);
  for (const char *bad :
       {"", "G", "1.5G", "-1", "1GB", "abc", "99999999999999999999", "20000000000T"})
    EXPECT_FALSE(parseByteSize(bad).has_value()) << bad;
}

TEST(ObjectCacheSettings, FromTheEnvironment) {
  ::setenv("XF_CACHE_DIR", "/some/dir", 1);
  ::setenv("XF_CACHE_MAX", "64M", 1);
  auto settings = objectCacheSettingsFromEnvironment();
  ASSERT_TRUE(bool(settings) && settings->has_value());
  EXPECT_EQ((*settings)->directory, "/some/dir");
  EXPECT_EQ((*settings)->maxBytes, 64ull << 20);
  ::setenv("XF_CACHE_MAX", "lots", 1);
  auto bad = objectCacheSettingsFromEnvironment();
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("XF_CACHE_MAX='lots'"), std::string::npos);
  ::unsetenv("XF_CACHE_MAX");
  ::unsetenv("XF_CACHE_DIR");
  ::setenv("XDG_CACHE_HOME", "/home/u/.cache", 1);
  auto defaults = objectCacheSettingsFromEnvironment();
  ASSERT_TRUE(bool(defaults) && defaults->has_value());
  EXPECT_EQ((*defaults)->directory, "/home/u/.cache/xf/objects");
  EXPECT_EQ((*defaults)->maxBytes, 1ull << 30);
  ::unsetenv("XDG_CACHE_HOME");
}

//===----------------------------------------------------------------------===//
// Keys
//===----------------------------------------------------------------------===//

constexpr const char *kTarget = "x86-64-linux-avx512_skylake-no_runtime";

/// How many distinct keys `base` and each of its `changes` have.
template <typename Spec, typename KeyOf>
size_t distinctKeys(const Spec &base, const std::vector<std::function<void(Spec &)>> &changes,
                    KeyOf keyOf) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::xf::XfDialect>();
  std::set<std::string> keys{keyOf(&ctx, base, kTarget)};
  for (auto &change : changes) {
    Spec spec = base;
    change(spec);
    keys.insert(keyOf(&ctx, spec, kTarget));
  }
  return keys.size();
}

TEST(ObjectKeys, EveryGemmFieldChangesTheKey) {
  GemmKernelSpec base;
  base.name = "xf_gemm_0", base.K = 768, base.N = 2304;
  std::vector<std::function<void(GemmKernelSpec &)>> changes = {
      [](GemmKernelSpec &s) { s.name = "xf_gemm_1"; },
      [](GemmKernelSpec &s) { s.K = 769; },
      [](GemmKernelSpec &s) { s.N = 2305; },
      [](GemmKernelSpec &s) { s.transposeWeight = true; },
      [](GemmKernelSpec &s) { s.bf16Weights = true; },
      [](GemmKernelSpec &s) { s.bf16Weights = s.bf16Activations = true; },
      [](GemmKernelSpec &s) { s.transposeWeight = true, s.weightBlocks = WeightBlocks::Q8_0; },
      [](GemmKernelSpec &s) { s.transposeWeight = true, s.weightBlocks = WeightBlocks::Q4_1; },
      [](GemmKernelSpec &s) { s.packedWeight = true; },
      [](GemmKernelSpec &s) { s.hasBias = true; },
      [](GemmKernelSpec &s) { s.hasResidual = true; },
      [](GemmKernelSpec &s) { s.epilogue = GemmEpilogue::GeluTanh; },
      [](GemmKernelSpec &s) { s.epilogue = GemmEpilogue::SwiGlu; },
      [](GemmKernelSpec &s) { s.schedule.tileCols = 32; },
      [](GemmKernelSpec &s) { s.schedule.tileRows = 6; },
      [](GemmKernelSpec &s) { s.schedule.kBlock = 128; },
      [](GemmKernelSpec &s) { s.schedule.packWeights = false; },
      [](GemmKernelSpec &s) { s.schedule.rowsPerTask = 64; },
      [](GemmKernelSpec &s) { s.schedule.panelCols = 96; },
      [](GemmKernelSpec &s) { s.schedule.gemvRowsBelow = 0; },
      [](GemmKernelSpec &s) { s.schedule.gemvRowsPerPass = 8; },
      [](GemmKernelSpec &s) { s.schedule.gemvTasks = 3; },
      [](GemmKernelSpec &s) { s.gpuSchedule.registerTiles = false; },
      [](GemmKernelSpec &s) { s.gpuSchedule.regTileCols = 32; },
      [](GemmKernelSpec &s) { s.gpuSchedule.regTileRows = 16; },
      [](GemmKernelSpec &s) { s.gpuSchedule.regTallRows = 256; },
      [](GemmKernelSpec &s) { s.gpuSchedule.regTallTileRows = 64; },
      [](GemmKernelSpec &s) { s.gpuSchedule.regThreadRows = 2; },
      [](GemmKernelSpec &s) { s.gpuSchedule.regUnrollK = 4; },
      [](GemmKernelSpec &s) { s.gpuSchedule.tileCols = 128; },
      [](GemmKernelSpec &s) { s.gpuSchedule.tileRows = 64; },
      [](GemmKernelSpec &s) { s.gpuSchedule.threadCols = 8; },
      [](GemmKernelSpec &s) { s.gpuSchedule.threadRows = 8; },
      [](GemmKernelSpec &s) { s.gpuSchedule.sliceK = 32; },
      [](GemmKernelSpec &s) { s.gpuSchedule.gemvCols = 64; },
      [](GemmKernelSpec &s) { s.gpuSchedule.gemvSlices = 8; },
      [](GemmKernelSpec &s) { s.gpuSchedule.gemvLaneCols = 4; },
      [](GemmKernelSpec &s) { s.gpuSchedule.regSplitK = 2; },
      [](GemmKernelSpec &s) { s.gpuSchedule.regFillBlocks = 128; },
      [](GemmKernelSpec &s) { s.gpuSchedule.nkThreadRows = 4; },
      [](GemmKernelSpec &s) { s.gpuSchedule.batchCols = 8; },
      [](GemmKernelSpec &s) { s.gpuSchedule.batchSlices = 32; },
      [](GemmKernelSpec &s) { s.gpuSchedule.batchLaneCols = 4; },
      [](GemmKernelSpec &s) { s.prologue = GemmPrologue::RmsNorm, s.normEpsilon = 1e-6; },
      [](GemmKernelSpec &s) { s.prologue = GemmPrologue::LayerNorm, s.normEpsilon = 1e-6; },
      [](GemmKernelSpec &s) { s.prologue = GemmPrologue::LayerNorm, s.normEpsilon = 1e-5; },
      [](GemmKernelSpec &s) {
        s.prologue = GemmPrologue::RmsNorm, s.normEpsilon = 1e-6, s.normGamma = true;
      },
      [](GemmKernelSpec &s) {
        s.prologue = GemmPrologue::LayerNorm, s.normEpsilon = 1e-6;
        s.normGamma = s.normBeta = true;
      },
  };
  EXPECT_EQ(distinctKeys(base, changes, gemmObjectKey), changes.size() + 1);
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::xf::XfDialect>();
  EXPECT_EQ(gemmObjectKey(&ctx, base, kTarget), gemmObjectKey(&ctx, base, kTarget));
  EXPECT_NE(gemmObjectKey(&ctx, base, kTarget),
            gemmObjectKey(&ctx, base, "x86-64-linux-avx2-fma-no_runtime"));
}

TEST(ObjectKeys, EveryAttentionFieldChangesTheKey) {
  AttentionKernelSpec base;
  base.name = "xf_attention_0", base.heads = 12, base.dK = 64, base.dV = 64, base.scale = 0.125;
  std::vector<std::function<void(AttentionKernelSpec &)>> changes = {
      [](AttentionKernelSpec &s) { s.name = "xf_attention_1"; },
      [](AttentionKernelSpec &s) { s.heads = 6; },
      [](AttentionKernelSpec &s) { s.dK = 32; },
      [](AttentionKernelSpec &s) { s.dV = 32; },
      [](AttentionKernelSpec &s) { s.kvHeads = 4; },
      [](AttentionKernelSpec &s) { s.causal = true; },
      // The last bit of the scale is a different constant in the kernel.
      [](AttentionKernelSpec &s) { s.scale = std::nextafter(0.125, 1.0); },
      [](AttentionKernelSpec &s) { s.rope = AttentionKernelSpec::Rope::Halves; },
      [](AttentionKernelSpec &s) { s.ropeBase = std::nextafter(10000.0, 1e5); },
      [](AttentionKernelSpec &s) { s.ropeKeys = false; },
      [](AttentionKernelSpec &s) { s.causal = s.batchedDecode = true; },
      [](AttentionKernelSpec &s) { s.halfKeyValues = true; },
      [](AttentionKernelSpec &s) { s.segmented = true; },
      [](AttentionKernelSpec &s) { s.schedule.queryBlock = 32; },
      [](AttentionKernelSpec &s) { s.schedule.keyBlock = 32; },
      [](AttentionKernelSpec &s) { s.schedule.rowTile = 2; },
      [](AttentionKernelSpec &s) { s.schedule.decodeKeyTile = 8; },
  };
  EXPECT_EQ(distinctKeys(base, changes, attentionObjectKey), changes.size() + 1);
}

TEST(ObjectKeys, VersionsAndGeneratorsAreInEveryKey) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::xf::XfDialect>();
  GemmKernelSpec gemm;
  gemm.K = gemm.N = 64;
  for (const std::string &key : {gemmObjectKey(&ctx, gemm, kTarget), halideRuntimeObjectKey(kTarget),
                                 hostObjectKey("module", 3)}) {
    EXPECT_NE(key.find("xf 0."), std::string::npos) << key;
  }
  std::string kernel = gemmObjectKey(&ctx, gemm, kTarget);
  // The kernel itself: its name and its description's text.
  EXPECT_NE(kernel.find("gemm name=\n#xf.gemm_kernel<k = 64, n = 64, weight = kn, schedule = "
                        "#xf.gemm_schedule<tile_cols = 48"),
            std::string::npos)
      << kernel;
  EXPECT_NE(kernel.find("halide 21."), std::string::npos) << kernel;
  EXPECT_NE(kernel.find(std::string("kernel generator ") + kKernelGeneratorIdentity),
            std::string::npos);
  EXPECT_NE(kernel.find(std::string("target ") + kTarget), std::string::npos);
  EXPECT_EQ(llvm::StringRef(kKernelGeneratorIdentity).size(), 64u); // a SHA-256 in hex
  EXPECT_EQ(llvm::StringRef(kHostCodegenIdentity).size(), 64u);
  std::string host = hostObjectKey("module", 3);
  EXPECT_NE(host.find("llvm 22."), std::string::npos) << host;
  EXPECT_NE(host.find(std::string("host codegen ") + kHostCodegenIdentity), std::string::npos);
  EXPECT_NE(host.find("cpu "), std::string::npos);
  EXPECT_NE(hostObjectKey("module", 3), hostObjectKey("module", 2));
  EXPECT_NE(hostObjectKey("module", 3), hostObjectKey("module'", 3));
  EXPECT_NE(halideRuntimeObjectKey(kTarget), halideRuntimeObjectKey("x86-64-linux-no_runtime"));
  EXPECT_NE(digestOf(hostObjectKey("a", 3)), digestOf(hostObjectKey("b", 3)));
}

} // namespace
