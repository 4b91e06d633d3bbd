//===- SpecialTokens.h - Special tokens found in text by a trie --*- C++ -*-===//
//
// A tokenizer's special tokens (<|im_start|>, a GGUF vocabulary's control and user-defined
// tokens) are cut out of the text before the rest is split and merged: at each position the
// longest special token that starts there, the leftmost such position first. A GGUF
// vocabulary may hold tens of thousands of them, so they are kept in a trie of their bytes:
// from each position of the text the search walks only as far as some special token's prefix
// matches, so it costs at most (longest special token + 1) steps per byte of text, whatever
// the number of specials (comparing each special at each position cost text × specials: 7.4 s
// for a 40 KB prompt, issue 33). Token lengths are capped by TokenizerLimits::maxTokenBytes.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_SPECIALTOKENS_H
#define XFRT_SPECIALTOKENS_H

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace xfrt {

class SpecialTokenTrie {
public:
  struct Match {
    size_t position = 0, length = 0;
    int32_t id = -1;
  };

  // Adds `token` (non-empty) for `id`; a token added twice keeps its first id.
  void add(std::string_view token, int32_t id);
  bool empty() const { return terminal_.size() <= 1; }

  // The leftmost match at or after `from`, the longest at its position; false if none.
  // `steps`, when given, counts the trie steps taken (for tests of the bound above).
  bool findNext(std::string_view text, size_t from, Match &match, size_t *steps = nullptr) const;

private:
  // Node 0 is the root; children keyed by node * 256 + byte.
  std::unordered_map<uint64_t, uint32_t> children_;
  std::vector<int32_t> terminal_{-1}; // the id ending at each node, −1 for none
};

} // namespace xfrt

#endif // XFRT_SPECIALTOKENS_H
