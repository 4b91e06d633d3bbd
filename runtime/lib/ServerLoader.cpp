//===- ServerLoader.cpp - load --serve's server only when it is asked for -===//
//
// Executables do not link the HTTP server (Server.h): its library, cpp-httplib as Debian
// builds it, pulls libssl, libcrypto, zlib and brotli into every process. --serve loads
// libxfrt_serve.so here instead and calls its entry point.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Server.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

// The build's own library (runtime/CMakeLists.txt defines it for libxfrt).
#ifndef XFRT_SERVE_LIBRARY_PATH
#define XFRT_SERVE_LIBRARY_PATH "libxfrt_serve.so"
#endif

namespace xfrt {
namespace {

/// Where to look, in order: $XF_SERVE_LIBRARY, beside the executable, the build's own.
std::vector<std::string> serveLibraryCandidates() {
  std::vector<std::string> candidates;
  if (const char *path = std::getenv("XF_SERVE_LIBRARY"); path && *path) {
    candidates.push_back(path);
    return candidates;
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    std::string exe(self, size_t(n));
    candidates.push_back(exe.substr(0, exe.rfind('/') + 1) + "libxfrt_serve.so");
  }
  candidates.push_back(XFRT_SERVE_LIBRARY_PATH);
  return candidates;
}

} // namespace

int runServerLibrary(const Options &options, const Manifest &manifest, const ModelAbi &abi,
                     WeightSet &weights, const LoadedTokenizer &tokenizer) {
  std::string tried, lastError;
  void *library = nullptr;
  for (const std::string &path : serveLibraryCandidates()) {
    bool explicitPath = std::getenv("XF_SERVE_LIBRARY") && *std::getenv("XF_SERVE_LIBRARY");
    if (!explicitPath && access(path.c_str(), F_OK) != 0) {
      tried += (tried.empty() ? "" : ", ") + path + " (absent)";
      continue;
    }
    library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library)
      break;
    const char *error = dlerror();
    tried += (tried.empty() ? "" : ", ") + path + " (" + (error ? error : "not loadable") + ")";
  }
  if (!library) {
    std::fprintf(stderr, "error: --serve needs the server library libxfrt_serve.so: tried %s\n",
                 tried.c_str());
    return 1;
  }
  auto entry = reinterpret_cast<ServeLibraryEntry>(dlsym(library, kServeLibraryEntry));
  if (!entry) {
    std::fprintf(stderr, "error: --serve: the server library has no %s\n", kServeLibraryEntry);
    return 1;
  }
  std::string identity = serveLibraryIdentity();
  return entry(identity.c_str(), &options, &manifest, &abi, &weights, &tokenizer);
}

} // namespace xfrt
