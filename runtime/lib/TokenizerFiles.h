//===- TokenizerFiles.h - Shared helpers of the tokenizer loaders -*- C++ -*-===//
//
// Internal to libxfrt: reading tokenizer files line by line and phrasing their errors as one
// line, "<file>:<line>: <what>".
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_LIB_TOKENIZERFILES_H
#define XFRT_LIB_TOKENIZERFILES_H

#include "xfrt/MappedFile.h"
#include "xfrt/Status.h"

#include <cstdio>
#include <string>
#include <string_view>

namespace xfrt {

// "<file>:<line>: <message>" for a JSON parser message "invalid JSON at byte N: ...";
// "<file>: <message>" when the message names no byte.
inline std::string fileError(const std::string &file, std::string_view text,
                             const std::string &message) {
  unsigned long long byte = 0;
  if (std::sscanf(message.c_str(), "invalid JSON at byte %llu", &byte) != 1 || byte > text.size())
    return file + ": " + message;
  size_t line = 1;
  for (size_t i = 0; i < size_t(byte); ++i)
    line += text[i] == '\n';
  return file + ":" + std::to_string(line) + ": " + message;
}

/// The first line of `rest` (without its '\n'), which then starts after it.
inline std::string_view takeLine(std::string_view &rest) {
  size_t eol = rest.find('\n');
  std::string_view line = rest.substr(0, eol);
  rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
  return line;
}

} // namespace xfrt

#endif // XFRT_LIB_TOKENIZERFILES_H
