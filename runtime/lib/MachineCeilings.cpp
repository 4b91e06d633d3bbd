//===- MachineCeilings.cpp - the FMA peak and bandwidth, measured once ----===//
//
// --profile reads each kernel against the machine's ceilings. Measuring them
// takes a second or two, so they are kept per CPU model, ISA and thread
// count in a small JSON file under the user's cache directory.
//
//===----------------------------------------------------------------------===//

#include "xfrt/MachinePeak.h"

#include "xfrt/Json.h"
#include "xfrt/OutputFile.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include <sys/stat.h>

namespace xfrt {

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
  if (!cacheFile.empty()) {
    std::ifstream in(cacheFile, std::ios::binary);
    if (in) {
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      Expected<JsonValue> parsed = parseJson(text);
      if (parsed && parsed->isObject()) {
        root = std::move(*parsed);
        if (const JsonValue *e = root.find(key)) {
          const JsonValue *g = e->find("gflops"), *b = e->find("read_gbs");
          if (g && b && g->isNumber() && b->isNumber() && g->number > 0 && b->number > 0)
            return {g->number, b->number, "cache " + cacheFile};
        }
      } else {
        note = cacheFile + ": not a machine cache (" +
               (parsed ? std::string("not an object") : parsed.message()) + "); measuring again";
        root = JsonValue();
      }
    }
  }
  MachinePeak peak = measurePeak(threads);
  MachineCeilings c{peak.gflops, peak.readGBs, "measured"};
  if (cacheFile.empty())
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
  if (root.isObject())
    for (size_t i = 0; i < root.keys.size(); ++i) {
      const JsonValue *g = root.items[i].find("gflops"), *b = root.items[i].find("read_gbs");
      if (root.keys[i] != key && g && b && g->isNumber() && b->isNumber())
        entry(root.keys[i], g->number, b->number);
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
