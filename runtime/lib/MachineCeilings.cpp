//===- MachineCeilings.cpp - the FMA peak and bandwidth, measured once ----===//
//
// --profile reads each kernel against the machine's ceilings. Measuring them
// takes a second or two, so they are kept per CPU model, ISA and thread
// count in a small JSON file under the user's cache directory.
//
//===----------------------------------------------------------------------===//

#include "xfrt/MachinePeak.h"

#include "xfrt/Json.h"
#include "xfrt/MappedFile.h"
#include "xfrt/OutputFile.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

namespace xfrt {
namespace {
// One machine's entry: {"gflops": G, "read_gbs": B}, both positive.
bool readCeilings(const JsonValue &entry, double &gflops, double &gbs) {
  const JsonValue *g = entry.find("gflops"), *b = entry.find("read_gbs");
  if (!g || !b || !g->isNumber() || !b->isNumber() || g->number <= 0 || b->number <= 0)
    return false;
  gflops = g->number, gbs = b->number;
  return true;
}
// A machine cache is an object of ceilings entries only (empty at first): any other file at
// $XF_MACHINE_FILE (notes, a tokenizer.json, ...) is the user's, read but never rewritten.
bool isMachineCache(const JsonValue &root) {
  if (!root.isObject())
    return false;
  double gflops, gbs;
  for (const JsonValue &entry : root.items)
    if (!readCeilings(entry, gflops, gbs))
      return false;
  return true;
}
} // namespace

std::string defaultMachineCacheFile() {
  std::string base;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    base = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    base = std::string(home) + "/.cache";
  else
    return "";
  return base + "/xf/machine.json";
}

MachineCeilings machineCeilings(int threads, const std::string &cacheFile, std::string &note) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const std::string key = cpuModelName() + " | " + (avx512 ? "avx512" : "avx2") +
                          " | " + std::to_string(threads) + " threads";
  JsonValue root;
  bool keep = !cacheFile.empty();
  struct stat st;
  if (keep && ::lstat(cacheFile.c_str(), &st) == 0) {
    // A few entries of two numbers: anything near the limit is not this file.
    Expected<std::string> text = readTextFile(cacheFile, size_t(1) << 20);
    Expected<JsonValue> parsed = text ? parseJson(*text) : Expected<JsonValue>(text.status());
    if (parsed && isMachineCache(*parsed)) {
      root = std::move(*parsed);
      double gflops, gbs;
      if (const JsonValue *e = root.find(key); e && readCeilings(*e, gflops, gbs))
        return {gflops, gbs, "cache " + cacheFile};
    } else {
      note = cacheFile + ": not a machine cache (" +
             (parsed ? std::string("not an object of ceilings") : parsed.message()) +
             "); measuring, and leaving the file as it is";
      keep = false;
    }
  }
  MachinePeak peak = measurePeak(threads);
  MachineCeilings c{peak.gflops, peak.readGBs, "measured"};
  if (!keep)
    return c;
  // Keep the other machines' entries; numbers round-trip with %.17g.
  std::string text = "{\n";
  bool first = true;
  auto entry = [&](const std::string &k, double gflops, double gbs) {
    char numbers[96];
    std::snprintf(numbers, sizeof numbers, "{\"gflops\": %.17g, \"read_gbs\": %.17g}", gflops,
                  gbs);
    text += (first ? "  " : ",\n  ") + quoteJson(k) + ": " + numbers;
    first = false;
  };
  for (size_t i = 0; i < root.keys.size(); ++i) {
    double gflops, gbs;
    if (root.keys[i] != key && readCeilings(root.items[i], gflops, gbs))
      entry(root.keys[i], gflops, gbs);
  }
  entry(key, c.gflops, c.readGBs);
  text += "\n}\n";
  std::string dir = cacheFile.substr(0, cacheFile.rfind('/'));
  std::string parent = dir.substr(0, dir.rfind('/'));
  ::mkdir(parent.c_str(), 0755);
  ::mkdir(dir.c_str(), 0755);
  if (Status s = writeFileAtomically(cacheFile, text.data(), text.size()); !s)
    note = "cannot keep the machine's ceilings: " + s.message();
  else
    c.source = "measured, kept in " + cacheFile;
  return c;
}

} // namespace xfrt
