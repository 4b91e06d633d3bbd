//===- TextStream.cpp - Generated ids printed as text, token by token -----===//
#include "xfrt/TextStream.h"

#include <cstdio>

namespace xfrt {

void TextStream::write(const char *bytes, size_t n) {
  if (sink_)
    sink_(bytes, n);
  else
    std::fwrite(bytes, 1, n, stdout);
}

void TextStream::add(int32_t id) {
  if (!tok_->decode({id})) {
    // Not in the tokenizer's vocabulary (it is smaller than the model's, or has holes):
    // U+FFFD takes its place, and the caller says so on stderr.
    finish();
    write("\xEF\xBF\xBD", 3);
    missing_.push_back(id);
    ids_.clear();
    last_.clear();
    printed_ = 0;
    return;
  }
  ids_.push_back(id);
  Expected<std::string> text = tok_->decode(ids_);
  if (!text)
    return;
  size_t end = text->size();
  // Back off over a trailing partial UTF-8 sequence (at most 3 bytes).
  for (size_t back = 1; back <= 3 && back <= end; ++back) {
    unsigned char c = (unsigned char)(*text)[end - back];
    if ((c & 0xC0) != 0x80) {
      size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      if (need > back)
        end -= back;
      break;
    }
  }
  if (end > printed_ && text->compare(0, printed_, last_, 0, printed_) == 0) {
    write(text->data() + printed_, end - printed_);
    printed_ = end;
  }
  last_ = text.take();
}

void TextStream::finish() {
  if (last_.size() > printed_)
    write(last_.data() + printed_, last_.size() - printed_);
  printed_ = last_.size();
}

void warnMissingIds(const TextStream &text) {
  const std::vector<int32_t> &missing = text.missing();
  if (missing.empty())
    return;
  std::string ids;
  for (size_t k = 0; k < missing.size() && k < 8; ++k)
    ids += (k ? ", " : "") + std::to_string(missing[k]);
  if (missing.size() > 8)
    ids += ", ...";
  std::fprintf(stderr,
               "warning: %zu generated id%s not in the tokenizer's vocabulary, printed as "
               "U+FFFD: %s\n",
               missing.size(), missing.size() == 1 ? " is" : "s are", ids.c_str());
}

} // namespace xfrt
