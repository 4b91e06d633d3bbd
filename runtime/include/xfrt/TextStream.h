//===- TextStream.h - Generated ids printed as text, token by token -*- C++ -*-===//
//
// add(id) decodes the ids so far and writes to stdout (or to a sink) the bytes not yet printed,
// holding back an incomplete UTF-8 tail until it completes. An id the tokenizer cannot decode (its vocabulary is
// smaller than the model's) is printed as U+FFFD and remembered in missing().
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_TEXTSTREAM_H
#define XFRT_TEXTSTREAM_H

#include "xfrt/Tokenizer.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace xfrt {

class TextStream {
public:
  using Sink = std::function<void(const char *bytes, size_t n)>;
  explicit TextStream(const Tokenizer *tok, Sink sink = nullptr) : tok_(tok), sink_(std::move(sink)) {}
  void add(int32_t id);
  // Writes whatever is held back (an incomplete UTF-8 sequence at the end).
  void finish();
  // Generated ids the tokenizer could not decode, in order.
  const std::vector<int32_t> &missing() const { return missing_; }

private:
  void write(const char *bytes, size_t n);
  const Tokenizer *tok_;
  Sink sink_;
  std::vector<int32_t> missing_;
  std::vector<int32_t> ids_;
  std::string last_;
  size_t printed_ = 0;
};

// "warning: N generated ids are not in the tokenizer's vocabulary, ..." on stderr, when any.
void warnMissingIds(const TextStream &text);

} // namespace xfrt

#endif // XFRT_TEXTSTREAM_H
