//===- Memory.cpp - Resident memory of this process -----------------------===//
#include "xfrt/Memory.h"

#include <cstdio>
#include <cstring>

namespace xfrt {
namespace {

int64_t statusField(const char *field) {
  std::FILE *f = std::fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  int64_t bytes = -1;
  size_t n = std::strlen(field);
  while (std::fgets(line, sizeof line, f)) {
    long long kb;
    if (!std::strncmp(line, field, n) && line[n] == ':' &&
        std::sscanf(line + n + 1, "%lld", &kb) == 1) {
      bytes = int64_t(kb) * 1024;
      break;
    }
  }
  std::fclose(f);
  return bytes;
}

std::string mib(int64_t bytes) {
  if (bytes < 0)
    return "unknown";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / (1024.0 * 1024.0));
  return buf;
}

} // namespace

int64_t peakResidentBytes() { return statusField("VmHWM"); }
int64_t residentBytes() { return statusField("VmRSS"); }

std::string memoryReport(int64_t checkpointBytes, int64_t parameterBytes, int64_t readyBytes) {
  std::string out = "memory: peak resident " + mib(peakResidentBytes()) + " (VmHWM)";
  if (checkpointBytes > 0)
    out += ", checkpoint " + mib(checkpointBytes) + " on disk";
  out += ", parameters " + mib(parameterBytes) + " as f32";
  // The peak is often loading (originals beside xf_prepare's copies, freed after it).
  if (readyBytes >= 0)
    out += ", resident when ready " + mib(readyBytes) + " (VmRSS)";
  return out;
}

} // namespace xfrt
