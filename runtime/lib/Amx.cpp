//===- Amx.cpp - Whether this process may use Intel AMX tiles -------------===//
//
// xfrt/Amx.h.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Amx.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace xfrt {
namespace {

const char *probe() {
  if (const char *env = std::getenv("XF_AMX"); env && std::strcmp(env, "off") == 0)
    return "turned off by XF_AMX=off";
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
    return "no cpuid leaf 7";
  const bool tile = d & (1u << 24), int8 = d & (1u << 25);
  if (!tile || !int8)
    return "the CPU has no AMX int8";
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

const char *verdict() {
  static const char *const why = probe();
  return why;
}

} // namespace

bool amxInt8Usable() { return *verdict() == '\0'; }
const char *amxInt8Unusable() { return verdict(); }

} // namespace xfrt
