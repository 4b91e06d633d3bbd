//===- Npy.cpp - NumPy .npy v1.0 float32 matrices -------------------------===//
#include "xfrt/Npy.h"

#include "xfrt/AlignedBuffer.h"
#include "xfrt/MappedFile.h"
#include "xfrt/OutputFile.h"

#include <cstring>

namespace xfrt {

std::string npyHeader(const std::vector<int64_t> &shape) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    dict += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1)
    dict += ",";
  dict += "), }";
  // magic(6) + version(2) + length(2) + dict + padding + '\n' == 0 mod 64
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += char(dict.size() & 0xFF);
  out += char(dict.size() >> 8);
  return out + dict;
}

Status writeNpy(const std::string &path, const float *data, int64_t rows, int64_t cols) {
  return writeNpy(path, data, std::vector<int64_t>{rows, cols});
}

Status writeNpy(const std::string &path, const float *data, const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t d : shape)
    if (d < 0 || !checkedMul(count, d, count))
      return makeError(path + ": bad array shape");
  std::string header = npyHeader(shape);
  Expected<AtomicOutputFile> file = AtomicOutputFile::create(path);
  if (!file)
    return file.status();
  if (Status s = file->write(header.data(), header.size()); !s)
    return s;
  if (Status s = file->write(data, size_t(count) * sizeof(float)); !s)
    return s;
  return file->commit();
}

Expected<NpyArray> readNpy(const std::string &path) {
  Expected<std::unique_ptr<MappedFile>> file = MappedFile::open(path);
  if (!file)
    return file.status();
  const uint8_t *p = (*file)->data();
  size_t size = (*file)->size();
  if (size < 10 || std::memcmp(p, "\x93NUMPY\x01\x00", 8) != 0)
    return makeError(path + ": not a .npy v1.0 file");
  size_t hlen = size_t(p[8]) | size_t(p[9]) << 8;
  if (10 + hlen > size)
    return makeError(path + ": truncated header");
  std::string dict(reinterpret_cast<const char *>(p + 10), hlen);
  if (dict.find("'descr': '<f4'") == std::string::npos ||
      dict.find("'fortran_order': False") == std::string::npos)
    return makeError(path + ": not a C-order '<f4' array");
  size_t open = dict.find("'shape': (");
  size_t close = open == std::string::npos ? open : dict.find(')', open);
  if (close == std::string::npos)
    return makeError(path + ": no shape");
  NpyArray array;
  int64_t count = 1;
  std::string dims = dict.substr(open + 10, close - open - 10);
  size_t pos = 0;
  while (pos < dims.size()) {
    while (pos < dims.size() && (dims[pos] == ' ' || dims[pos] == ','))
      ++pos;
    if (pos == dims.size())
      break;
    int64_t d = 0;
    if (!(dims[pos] >= '0' && dims[pos] <= '9'))
      return makeError(path + ": bad shape");
    while (pos < dims.size() && dims[pos] >= '0' && dims[pos] <= '9') {
      if (!checkedMul(d, int64_t(10), d) || __builtin_add_overflow(d, dims[pos] - '0', &d))
        return makeError(path + ": bad shape");
      ++pos;
    }
    array.shape.push_back(d);
    if (!checkedMul(count, d, count))
      return makeError(path + ": bad shape");
  }
  uint64_t bytes;
  if (!checkedMul(uint64_t(count), uint64_t(4), bytes) || bytes != size - 10 - hlen)
    return makeError(path + ": data size does not match the shape");
  array.data.resize(size_t(count));
  if (count)
    std::memcpy(array.data.data(), p + 10 + hlen, size_t(bytes));
  return array;
}

} // namespace xfrt
