//===- SpecialTokens.cpp - Special tokens found in text by a trie ---------===//
#include "xfrt/SpecialTokens.h"

namespace xfrt {

void SpecialTokenTrie::add(std::string_view token, int32_t id) {
  if (token.empty())
    return;
  uint32_t node = 0;
  for (unsigned char byte : token) {
    auto [it, inserted] =
        children_.try_emplace(uint64_t(node) * 256 + byte, uint32_t(terminal_.size()));
    if (inserted)
      terminal_.push_back(-1);
    node = it->second;
  }
  if (terminal_[node] < 0)
    terminal_[node] = id;
}

bool SpecialTokenTrie::findNext(std::string_view text, size_t from, Match &match,
                                size_t *steps) const {
  if (empty())
    return false;
  for (size_t start = from; start < text.size(); ++start) {
    uint32_t node = 0;
    bool found = false;
    for (size_t i = start; i < text.size(); ++i) {
      if (steps)
        ++*steps;
      auto it = children_.find(uint64_t(node) * 256 + (unsigned char)text[i]);
      if (it == children_.end())
        break;
      node = it->second;
      if (terminal_[node] >= 0) {
        match = {start, i + 1 - start, terminal_[node]};
        found = true;
      }
    }
    if (found)
      return true;
  }
  return false;
}

} // namespace xfrt
