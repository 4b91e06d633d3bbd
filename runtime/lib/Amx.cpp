//===- Amx.cpp - Whether this process may use Intel AMX tiles -------------===//
//
// xfrt/Amx.h.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Amx.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace xfrt {
namespace {

/// The products AMX has on this CPU (cpuid leaf 7, EDX).
enum AmxProducts : unsigned { kAmxBf16 = 1u << 22, kAmxInt8 = 1u << 25 };

/// Whether the environment says XF_AMX=`value`.
bool amxEnvironmentIs(const char *value) {
  const char *env = std::getenv("XF_AMX");
  return env && std::strcmp(env, value) == 0;
}

/// Why the tiles cannot run here at all ("" where they can): the environment, the tile unit,
/// the OS's state saving and Linux's permission, asked once.
const char *probeTiles() {
  if (amxEnvironmentIs("off"))
    return "turned off by XF_AMX=off";
  if (amxEnvironmentIs("emulate"))
    return "emulated in C++ by XF_AMX=emulate";
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
    return "no cpuid leaf 7";
  if (!(d & (1u << 24)))
    return "the CPU has no AMX tiles";
  // XCR0: the OS saves the tile configuration (bit 17) and data (bit 18).
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))
    return "no OSXSAVE";
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17))
    return "the OS does not save the AMX tile state";
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (::syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0)
    return "Linux refused the tile data permission (arch_prctl)";
  return "";
#else
  return "not an x86-64 CPU";
#endif
}

const char *tilesVerdict() {
  static const char *const why = probeTiles();
  return why;
}

/// Why `product` cannot run ("" where it can): the tiles' verdict, then the product's bit.
const char *productVerdict(AmxProducts product, const char *missing) {
  if (*tilesVerdict())
    return tilesVerdict();
#if defined(__x86_64__)
  unsigned a, b, c, d;
  __get_cpuid_count(7, 0, &a, &b, &c, &d);
  return d & product ? "" : missing;
#else
  (void)product;
  return missing;
#endif
}

} // namespace

bool amxEmulated() {
  static const bool emulated = [] {
    if (!amxEnvironmentIs("emulate"))
      return false;
    std::fprintf(stderr, "xfrt: XF_AMX=emulate: AMX tile operations emulated in C++ (slow)\n");
    return true;
  }();
  return emulated;
}

bool amxInt8Usable() { return *amxInt8Unusable() == '\0'; }
const char *amxInt8Unusable() {
  static const char *const why = productVerdict(kAmxInt8, "the CPU has no AMX int8");
  return why;
}

bool amxBf16Usable() { return *amxBf16Unusable() == '\0'; }
const char *amxBf16Unusable() {
  static const char *const why = productVerdict(kAmxBf16, "the CPU has no AMX bf16");
  return why;
}

#if defined(__x86_64__)
__attribute__((target("amx-tile"))) void amxLoadTileConfig(const AmxTileConfig &config) {
  _tile_loadconfig(&config);
}
__attribute__((target("amx-tile"))) void amxReleaseTiles() { _tile_release(); }
#else
void amxLoadTileConfig(const AmxTileConfig &) { std::abort(); }
void amxReleaseTiles() { std::abort(); }
#endif

} // namespace xfrt
