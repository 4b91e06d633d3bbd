//===- ServerLoader.cpp - load --serve's server only when it is asked for -===//
//
// Executables do not link the HTTP server (Server.h): --serve loads libxfrt_serve.so here and
// calls its entry point. Loading a library runs its code, so only one the user named
// ($XF_SERVE_LIBRARY) or the one of the build whose xfc linked the executable is loaded —
// never one found beside the executable, which anyone who can write to that directory could
// plant — and only if its owner is the user or root and no one else may write to it. The
// checked file is loaded through its open descriptor, so it cannot be swapped in between.
//
//===----------------------------------------------------------------------===//
#include "xfrt/MessageText.h"
#include "xfrt/Server.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

// The build's own library (runtime/CMakeLists.txt defines it for libxfrt).
#ifndef XFRT_SERVE_LIBRARY_PATH
#define XFRT_SERVE_LIBRARY_PATH "libxfrt_serve.so"
#endif

namespace xfrt {
namespace {

// Opens `path` for loading, or says why it may not be loaded.
int openTrusted(const std::string &path, std::string &why) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    why = std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    why = "not a regular file";
  else if (st.st_uid != getuid() && st.st_uid != 0)
    why = "owned by user " + std::to_string(st.st_uid) + ", neither you nor root";
  else if (st.st_mode & (S_IWGRP | S_IWOTH))
    why = "writable by its group or by others (chmod go-w it)";
  if (!why.empty()) {
    close(fd);
    return -1;
  }
  return fd;
}

} // namespace

int runServerLibrary(const Options &options, const Manifest &manifest, const ModelAbi &abi,
                     WeightSet &weights, const LoadedTokenizer &tokenizer) {
  const char *named = std::getenv("XF_SERVE_LIBRARY");
  std::string path = named && *named ? named : XFRT_SERVE_LIBRARY_PATH;
  std::string why;
  int fd = openTrusted(path, why);
  void *library = nullptr;
  if (fd >= 0) {
    std::string byFd = "/proc/self/fd/" + std::to_string(fd);
    library = dlopen(byFd.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char *error = dlerror();
      why = error ? error : "not loadable";
    }
    close(fd);
  }
  if (!library) {
    std::fprintf(stderr, "error: --serve needs the server library libxfrt_serve.so: %s (%s)%s\n",
                 xfrt::printableMessage(path).c_str(), xfrt::printableMessage(why).c_str(),
                 named && *named ? "" : "; XF_SERVE_LIBRARY=PATH names another");
    return 1;
  }
  auto entry = reinterpret_cast<ServeLibraryEntry>(dlsym(library, kServeLibraryEntry));
  if (!entry) {
    std::fprintf(stderr, "error: --serve: the server library has no %s\n", kServeLibraryEntry);
    return 1;
  }
  std::string identity = serveLibraryIdentity();
  DeviceLinks links = ownDeviceLinks();
  return entry(identity.c_str(), &options, &manifest, &abi, &weights, &tokenizer, &links);
}

} // namespace xfrt
