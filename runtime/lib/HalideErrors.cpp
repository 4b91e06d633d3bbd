//===- HalideErrors.cpp - Halide runtime failures as xf errors ------------===//
//
// The handler runs when memory may be exhausted, so it copies into a fixed buffer and never
// allocates.
//
//===----------------------------------------------------------------------===//
#include "xfrt/HalideErrors.h"

#include "xfrt/DeviceLinks.h"

#include <cstring>
#include <mutex>

namespace xfrt {
namespace {
std::mutex lock;
char firstMessage[1024]; // guarded by lock; "" when nothing was reported
} // namespace

void halideErrorHandler(void *, const char *message) {
  std::lock_guard<std::mutex> guard(lock);
  if (firstMessage[0] != '\0')
    return;
  const char *text = message && *message ? message : "unknown error";
  size_t n = ::strnlen(text, sizeof firstMessage - 1);
  while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
    --n;
  std::memcpy(firstMessage, text, n);
  firstMessage[n] = '\0';
}

std::string takeHalideError() {
  // The server library's copy: the kernels' errors went to the executable's handler.
  if (deviceLinked() && deviceLinks().takeHalideError)
    return deviceLinks().takeHalideError();
  std::lock_guard<std::mutex> guard(lock);
  std::string message(firstMessage);
  firstMessage[0] = '\0';
  return message;
}

} // namespace xfrt
