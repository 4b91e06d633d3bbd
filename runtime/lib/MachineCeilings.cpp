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

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

namespace xfrt {
namespace {
// One machine's entry: {"gflops": G, "read_gbs": B, "load": L, "bf16_gflops": P,
// "int8_gops": Q, "amx_bf16_gflops": A, "amx_int8_gops": I}, G and B positive; L (the load
// average when measured) is absent in files written before it was kept: then -1; P, Q, A and I
// only where measured (else -1; A and I are absent in files written before they were kept).
struct Entry {
  MachineCeilings ceilings;
  double load = -1;
};
std::optional<Entry> readEntry(const JsonValue &entry) {
  const JsonValue *g = entry.find("gflops"), *b = entry.find("read_gbs");
  if (!g || !b || !g->isNumber() || !b->isNumber() || g->number <= 0 || b->number <= 0)
    return std::nullopt;
  Entry e;
  e.ceilings.gflops = g->number, e.ceilings.readGBs = b->number;
  auto optional = [&](const char *key) {
    const JsonValue *v = entry.find(key);
    return v && v->isNumber() && v->number >= 0 ? v->number : -1.0;
  };
  e.load = optional("load");
  e.ceilings.bf16Gflops = optional("bf16_gflops");
  e.ceilings.int8Gops = optional("int8_gops");
  e.ceilings.amxBf16Gflops = optional("amx_bf16_gflops");
  e.ceilings.amxInt8Gops = optional("amx_int8_gops");
  return e;
}
int onlineCpus() {
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? int(n) : 1;
}
std::string loadNote(double load, int cpus) {
  char text[96];
  std::snprintf(text, sizeof text, "at load average %.1f on %d CPUs", load, cpus);
  return text;
}
// A machine cache is an object of ceilings entries only (empty at first): any other file at
// $XF_MACHINE_FILE (notes, a tokenizer.json, ...) is the user's, read but never rewritten.
bool isMachineCache(const JsonValue &root) {
  if (!root.isObject())
    return false;
  for (const JsonValue &entry : root.items)
    if (!readEntry(entry))
      return false;
  return true;
}
} // namespace

double loadAverage(const char *path) {
  std::FILE *f = std::fopen(path, "r");
  if (!f)
    return -1;
  double load = -1;
  if (std::fscanf(f, "%lf", &load) != 1)
    load = -1;
  std::fclose(f);
  return load;
}

bool measuredBusy(double load, int cpus, int threads) {
  return load >= 0 && load > double(std::max(cpus - threads, 0)) + kBusyLoadMargin;
}

bool remeasureCeilings(double entryLoad, double nowLoad, int cpus, int threads) {
  bool entryTrusted = entryLoad >= 0 && !measuredBusy(entryLoad, cpus, threads);
  return !entryTrusted && nowLoad >= 0 && !measuredBusy(nowLoad, cpus, threads);
}

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

namespace {
// The cache file rewritten with `key`'s entry set (the others kept; numbers round-trip with
// %.17g); "" on success, else why not.
std::string keepEntry(const std::string &cacheFile, const JsonValue &root, const std::string &key,
                      const MachineCeilings &c, double load) {
  std::string text = "{\n";
  bool first = true;
  auto entry = [&](const std::string &k, const MachineCeilings &e, double entryLoad) {
    char numbers[384];
    int n = std::snprintf(numbers, sizeof numbers, "{\"gflops\": %.17g, \"read_gbs\": %.17g",
                          e.gflops, e.readGBs);
    if (entryLoad >= 0)
      n += std::snprintf(numbers + n, sizeof numbers - n, ", \"load\": %.2f", entryLoad);
    if (e.bf16Gflops >= 0 && e.int8Gops >= 0)
      n += std::snprintf(numbers + n, sizeof numbers - n,
                    ", \"bf16_gflops\": %.17g, \"int8_gops\": %.17g", e.bf16Gflops, e.int8Gops);
    if (e.amxBf16Gflops >= 0 && e.amxInt8Gops >= 0)
      std::snprintf(numbers + n, sizeof numbers - n,
                    ", \"amx_bf16_gflops\": %.17g, \"amx_int8_gops\": %.17g", e.amxBf16Gflops,
                    e.amxInt8Gops);
    text += (first ? "  " : ",\n  ") + quoteJson(k) + ": " + numbers + "}";
    first = false;
  };
  for (size_t i = 0; i < root.keys.size(); ++i)
    if (std::optional<Entry> e = readEntry(root.items[i]); e && root.keys[i] != key)
      entry(root.keys[i], e->ceilings, e->load);
  entry(key, c, load);
  text += "\n}\n";
  std::string dir = cacheFile.substr(0, cacheFile.rfind('/'));
  std::string parent = dir.substr(0, dir.rfind('/'));
  ::mkdir(parent.c_str(), 0755);
  ::mkdir(dir.c_str(), 0755);
  if (Status s = writeFileAtomically(cacheFile, text.data(), text.size()); !s)
    return s.message();
  return "";
}
} // namespace

MachineCeilings keptCeilings(const std::string &key, const std::string &cacheFile,
                             std::string &note, int loadThreads,
                             const std::function<Expected<MachineCeilings>()> &measure,
                             bool withProducts) {
  JsonValue root;
  bool keep = !cacheFile.empty();
  const int cpus = onlineCpus();
  const double nowLoad = loadThreads > 0 ? loadAverage() : -1;
  const bool busyNow = loadThreads > 0 && measuredBusy(nowLoad, cpus, loadThreads);
  // A busy entry kept for want of a better one: the larger of it and a new measurement.
  MachineCeilings kept{0, 0, "", 0, 0};
  struct stat st;
  if (keep && ::lstat(cacheFile.c_str(), &st) == 0) {
    // A few entries of a few numbers: anything near the limit is not this file.
    Expected<std::string> text = readTextFile(cacheFile, size_t(1) << 20);
    Expected<JsonValue> parsed = text ? parseJson(*text) : Expected<JsonValue>(text.status());
    if (parsed && isMachineCache(*parsed)) {
      root = std::move(*parsed);
      if (const JsonValue *found = root.find(key)) {
        Entry e = *readEntry(*found);
        const bool hasProducts = e.ceilings.bf16Gflops >= 0 && e.ceilings.int8Gops >= 0 &&
                                 e.ceilings.amxBf16Gflops >= 0 && e.ceilings.amxInt8Gops >= 0;
        if ((!withProducts || hasProducts) &&
            (loadThreads <= 0 || !remeasureCeilings(e.load, nowLoad, cpus, loadThreads))) {
          bool busy = loadThreads > 0 && measuredBusy(e.load, cpus, loadThreads);
          e.ceilings.source =
              "cache " + cacheFile + (busy ? ", measured " + loadNote(e.load, cpus) : "");
          return e.ceilings;
        }
        kept = e.ceilings;
      }
    } else {
      note = cacheFile + ": not a machine cache (" +
             (parsed ? std::string("not an object of ceilings") : parsed.message()) +
             "); measuring, and leaving the file as it is";
      keep = false;
    }
  }
  Expected<MachineCeilings> measured = measure();
  if (!measured) {
    note = "no roofline: " + measured.message();
    return {};
  }
  // Interference only lowers a peak: a kept busy entry above the new measurement still counts.
  MachineCeilings c = *measured;
  c.gflops = std::max(c.gflops, kept.gflops), c.readGBs = std::max(c.readGBs, kept.readGBs);
  for (auto peak : {&MachineCeilings::bf16Gflops, &MachineCeilings::int8Gops,
                    &MachineCeilings::amxBf16Gflops, &MachineCeilings::amxInt8Gops})
    if (c.*peak >= 0)
      c.*peak = std::max(c.*peak, kept.*peak);
  const std::string busy = busyNow ? " " + loadNote(nowLoad, cpus) : "";
  c.source += busy;
  if (!keep)
    return c;
  if (std::string why = keepEntry(cacheFile, root, key, c, nowLoad); !why.empty())
    note = "cannot keep the machine's ceilings: " + why;
  else
    c.source += ", kept in " + cacheFile;
  return c;
}

MachineCeilings machineCeilings(int threads, const std::string &cacheFile, std::string &note,
                                bool withProducts) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const std::string key = cpuModelName() + " | " + (avx512 ? "avx512" : "avx2") + " | " +
                          std::to_string(threads) + " threads";
  return keptCeilings(
      key, cacheFile, note, threads,
      [threads, withProducts]() -> Expected<MachineCeilings> {
        MachinePeak peak = measurePeak(threads, withProducts);
        MachineCeilings c{peak.gflops, peak.readGBs, "measured"};
        if (withProducts) {
          c.bf16Gflops = peak.bf16Gflops, c.int8Gops = peak.int8Gops;
          c.amxBf16Gflops = peak.amxBf16Gflops, c.amxInt8Gops = peak.amxInt8Gops;
        }
        return c;
      },
      withProducts);
}

} // namespace xfrt
