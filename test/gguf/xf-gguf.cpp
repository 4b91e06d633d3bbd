//===- xf-gguf.cpp - Command-line front end to libxfrt's GGUF reader -------===//
//
//   xf-gguf info FILE                      header, metadata and tensor list, one item a line:
//                                            version V / alignment A / data_start S
//                                            meta KEY DESCRIPTION
//                                            tensor NAME TYPE NE0,NE1,.. OFFSET BYTES
//   xf-gguf dequantize FILE DIR [NAME..]   each tensor (all when no NAME) as float32
//                                          DIR/<index>.npy in row-major shape() order;
//                                          prints "NAME DIR/<index>.npy" per tensor
// Errors print "error: <message>" on stderr, exit status 1; a bad command line, 2. Used by
// the test scripts in this directory to compare the reader with numpy and the `gguf` package.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Gguf.h"
#include "xfrt/Npy.h"

#include <cstdio>
#include <cstring>
#include <string>

using namespace xfrt;

static int usage() {
  std::fprintf(stderr, "usage: xf-gguf info FILE\n"
                       "       xf-gguf dequantize FILE DIR [NAME...]\n");
  return 2;
}

static int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

static void printInfo(const GgufHeader &h) {
  std::printf("version %u\nalignment %llu\ndata_start %llu\n", h.version,
              (unsigned long long)h.alignment, (unsigned long long)h.dataStart);
  for (const GgufKeyValue &kv : h.metadata)
    std::printf("meta %s %s\n", kv.key.c_str(), kv.value.describe().c_str());
  for (const GgufTensor &t : h.tensors) {
    std::string dims;
    for (size_t i = 0; i < t.dims.size(); ++i)
      dims += (i ? "," : "") + std::to_string(t.dims[i]);
    std::printf("tensor %s %s %s %llu %llu\n", t.name.c_str(), ggmlTypeName(t.type), dims.c_str(),
                (unsigned long long)t.offset, (unsigned long long)t.bytes);
  }
}

int main(int argc, char **argv) {
  if (argc < 3)
    return usage();
  std::string command = argv[1];
  Expected<std::unique_ptr<GgufFile>> file = GgufFile::open(argv[2]);
  if (!file)
    return fail(file.message());
  const GgufHeader &h = (*file)->header();
  if (command == "info" && argc == 3) {
    printInfo(h);
    return 0;
  }
  if (command != "dequantize" || argc < 4)
    return usage();
  std::string dir = argv[3];
  for (size_t i = 0; i < h.tensors.size(); ++i) {
    const GgufTensor &t = h.tensors[i];
    bool wanted = argc == 4;
    for (int a = 4; a < argc && !wanted; ++a)
      wanted = t.name == argv[a];
    if (!wanted)
      continue;
    Expected<AlignedBuffer> values = dequantizeTensor(h, t);
    if (!values)
      return fail(values.message());
    std::string path = dir + "/" + std::to_string(i) + ".npy";
    if (Status s = writeNpy(path, values->floats(), t.shape()); !s)
      return fail(s.message());
    std::printf("%s %s\n", t.name.c_str(), path.c_str());
  }
  return 0;
}
