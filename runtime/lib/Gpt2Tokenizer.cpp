//===- Gpt2Tokenizer.cpp - GPT-2 byte-level BPE ---------------------------===//
//
// Text → ids as Hugging Face tokenizers' ByteLevel(add_prefix_space=False) + BPE do it:
//  1. split the text with the GPT-2 pattern (hand-written matcher below)
//       's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//     where a byte that is not valid UTF-8 counts as one character of [^\s\p{L}\p{N}];
//  2. map each byte of a piece to its byte-level character (bytes_to_unicode);
//  3. merge adjacent symbols, lowest merge rank first (leftmost on ties), until none applies.
// Decoding concatenates the byte-level strings and maps them back to the exact bytes.
//
//===----------------------------------------------------------------------===//
#include "TokenizerFiles.h"
#include "xfrt/Json.h"
#include "xfrt/Tokenizer.h"
#include "xfrt/Unicode.h"

#include <mutex>
#include <queue>
#include <unordered_map>

namespace xfrt {
namespace {

using unicode::decodeUtf8;

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes map to themselves, the other 68 bytes
// to U+0100 + n in byte order. Returns the code point of byte `b`.
char32_t byteToCodepoint(uint8_t b) {
  auto printable = [](int c) {
    return (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
  };
  if (printable(b))
    return b;
  int n = 0;
  for (int c = 0; c < b; ++c)
    n += !printable(c);
  return 0x100 + n;
}

enum class CharClass { Letter, Number, Space, Other };

struct PieceChar {
  CharClass cls;
  uint32_t length;
};

PieceChar classify(std::string_view text, size_t i) {
  unicode::Utf8Char ch = decodeUtf8(text, i);
  if (!ch.valid)
    return {CharClass::Other, 1};
  CharClass cls = unicode::isWhitespace(ch.codepoint) ? CharClass::Space
                  : unicode::isLetter(ch.codepoint)   ? CharClass::Letter
                  : unicode::isNumber(ch.codepoint)   ? CharClass::Number
                                                      : CharClass::Other;
  return {cls, ch.length};
}

// End of the piece the GPT-2 pattern matches at `start` (< text.size()).
size_t matchPiece(std::string_view text, size_t start) {
  size_t n = text.size();
  if (text[start] == '\'' && start + 1 < n) {
    std::string_view rest = text.substr(start + 1);
    for (std::string_view c : {"s", "t", "re", "ve", "m", "ll", "d"})
      if (rest.substr(0, c.size()) == c)
        return start + 1 + c.size();
  }
  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional space, then a run of one class.
  size_t k = text[start] == ' ' ? start + 1 : start;
  if (k < n) {
    CharClass cls = classify(text, k).cls;
    if (cls != CharClass::Space) {
      size_t end = k;
      while (end < n) {
        PieceChar c = classify(text, end);
        if (c.cls != cls)
          break;
        end += c.length;
      }
      return end;
    }
  }
  // `\s+(?!\S)|\s+`: a whitespace run; before a non-space it gives up its last character
  // unless that is its only one.
  size_t end = start, last = start;
  int count = 0;
  while (end < n) {
    PieceChar c = classify(text, end);
    if (c.cls != CharClass::Space)
      break;
    last = end;
    end += c.length;
    ++count;
  }
  if (end < n && count >= 2)
    return last;
  return end;
}

class Gpt2Tokenizer final : public Tokenizer {
public:
  std::unordered_map<std::string, int32_t> tokenToId_;
  std::vector<std::string> idToToken_; // byte-level strings; empty for unused ids
  std::vector<std::string> idToBytes_; // decoded bytes
  std::vector<bool> idUsed_;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_; // (a,b) → (rank, id)
  int32_t byteIds_[256];
  std::optional<int32_t> endOfText_;
  mutable std::mutex cacheMutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;

  Expected<std::vector<int32_t>> encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    for (size_t start = 0; start < text.size();) {
      size_t end = matchPiece(text, start);
      if (Status s = encodePiece(text.substr(start, end - start), ids); !s)
        return s;
      start = end;
    }
    return ids;
  }

  Expected<std::string> decode(const std::vector<int32_t> &ids) const override {
    std::string out;
    for (int32_t id : ids) {
      if (id < 0 || size_t(id) >= idUsed_.size() || !idUsed_[size_t(id)])
        return makeError("token id " + std::to_string(id) + " is not in the vocabulary");
      out += idToBytes_[size_t(id)];
    }
    return out;
  }

  int64_t vocabSize() const override { return int64_t(idUsed_.size()); }
  std::optional<int32_t> endOfText() const override { return endOfText_; }
  std::optional<int32_t> tokenToId(std::string_view token) const override {
    auto it = tokenToId_.find(std::string(token));
    if (it == tokenToId_.end())
      return std::nullopt;
    return it->second;
  }

private:
  static constexpr size_t kMaxCachedPiece = 256;
  static constexpr size_t kMaxCacheEntries = size_t(1) << 16;

  Status encodePiece(std::string_view piece, std::vector<int32_t> &ids) const {
    bool cacheable = piece.size() <= kMaxCachedPiece;
    if (cacheable) {
      std::lock_guard<std::mutex> lock(cacheMutex_);
      auto it = cache_.find(std::string(piece));
      if (it != cache_.end()) {
        ids.insert(ids.end(), it->second.begin(), it->second.end());
        return Status::success();
      }
    }
    std::vector<int32_t> pieceIds;
    if (Status s = mergePiece(piece, pieceIds); !s)
      return s;
    ids.insert(ids.end(), pieceIds.begin(), pieceIds.end());
    if (cacheable) {
      std::lock_guard<std::mutex> lock(cacheMutex_);
      if (cache_.size() >= kMaxCacheEntries)
        cache_.clear();
      cache_.emplace(std::string(piece), std::move(pieceIds));
    }
    return Status::success();
  }

  // The BPE merge loop over one piece: symbols in a linked list, candidate merges in a heap
  // ordered by (rank, position); a popped candidate whose symbols changed is skipped.
  Status mergePiece(std::string_view piece, std::vector<int32_t> &out) const {
    struct Symbol {
      int32_t id;
      int32_t prev, next; // -1 at the ends
      bool alive;
    };
    struct Candidate {
      int32_t rank, pos, newId;
      bool operator>(const Candidate &o) const {
        return rank != o.rank ? rank > o.rank : pos > o.pos;
      }
    };
    std::vector<Symbol> symbols(piece.size());
    for (size_t i = 0; i < piece.size(); ++i) {
      int32_t id = byteIds_[uint8_t(piece[i])];
      if (id < 0)
        return makeError("byte " + std::to_string(int(uint8_t(piece[i]))) +
                         " has no byte-level token in the vocabulary");
      symbols[i] = {id, int32_t(i) - 1, i + 1 < piece.size() ? int32_t(i + 1) : -1, true};
    }
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    auto consider = [&](int32_t pos) {
      if (pos < 0 || symbols[size_t(pos)].next < 0)
        return;
      auto it = merges_.find(
          pairKey(symbols[size_t(pos)].id, symbols[size_t(symbols[size_t(pos)].next)].id));
      if (it != merges_.end())
        heap.push({it->second.first, pos, it->second.second});
    };
    for (size_t i = 0; i + 1 < piece.size(); ++i)
      consider(int32_t(i));
    while (!heap.empty()) {
      Candidate c = heap.top();
      heap.pop();
      Symbol &left = symbols[size_t(c.pos)];
      if (!left.alive || left.next < 0)
        continue;
      Symbol &right = symbols[size_t(left.next)];
      auto it = merges_.find(pairKey(left.id, right.id));
      if (it == merges_.end() || it->second.first != c.rank || it->second.second != c.newId)
        continue;
      left.id = c.newId;
      right.alive = false;
      left.next = right.next;
      if (right.next >= 0)
        symbols[size_t(right.next)].prev = c.pos;
      consider(left.prev);
      consider(c.pos);
    }
    for (int32_t i = piece.empty() ? -1 : 0; i >= 0; i = symbols[size_t(i)].next)
      out.push_back(symbols[size_t(i)].id);
    return Status::success();
  }

public:
  static uint64_t pairKey(int32_t a, int32_t b) {
    return (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
  }
};

} // namespace

Expected<std::unique_ptr<Tokenizer>> parseGpt2Tokenizer(std::string_view vocabText,
                                                        std::string_view mergesText,
                                                        const std::string &vocabName,
                                                        const std::string &mergesName,
                                                        const TokenizerLimits &limits) {
  auto tok = std::make_unique<Gpt2Tokenizer>();
  if (vocabText.size() > limits.maxFileBytes)
    return makeError(vocabName + ": file exceeds the limit of " +
                     std::to_string(limits.maxFileBytes) + " bytes");
  if (mergesText.size() > limits.maxFileBytes)
    return makeError(mergesName + ": file exceeds the limit of " +
                     std::to_string(limits.maxFileBytes) + " bytes");

  // vocab.json: one object mapping byte-level token strings to distinct ids.
  JsonLimits jsonLimits;
  jsonLimits.maxBytes = limits.maxFileBytes;
  jsonLimits.maxDepth = 2;
  jsonLimits.maxValues = limits.maxVocab + 1;
  Expected<JsonValue> json = parseJson(vocabText, jsonLimits);
  if (!json)
    return makeError(fileError(vocabName, vocabText, json.message()));
  if (!json->isObject())
    return makeError(vocabName + ": expected a JSON object mapping tokens to ids");
  size_t maxId = 0;
  for (size_t i = 0; i < json->keys.size(); ++i) {
    const std::string &key = json->keys[i];
    const JsonValue &v = json->items[i];
    std::string where = vocabName + ": entry " + quoteJson(key.substr(0, 64)) + ": ";
    if (key.empty() || key.size() > limits.maxTokenBytes)
      return makeError(where + "token must have 1 to " + std::to_string(limits.maxTokenBytes) +
                       " bytes");
    if (!v.isNumber() || !v.isInteger || v.integer < 0 || size_t(v.integer) >= limits.maxVocab)
      return makeError(where + "id must be an integer in [0, " + std::to_string(limits.maxVocab) +
                       "), got " + describeJson(v));
    maxId = std::max(maxId, size_t(v.integer));
  }
  tok->idToToken_.assign(json->keys.empty() ? 0 : maxId + 1, std::string());
  tok->idToBytes_.assign(tok->idToToken_.size(), std::string());
  tok->idUsed_.assign(tok->idToToken_.size(), false);

  // Reverse byte-level map for decoding: code point (< 0x144) → byte.
  int16_t codepointToByte[0x144];
  std::fill(std::begin(codepointToByte), std::end(codepointToByte), int16_t(-1));
  std::string byteTokens[256];
  for (int b = 0; b < 256; ++b) {
    codepointToByte[byteToCodepoint(uint8_t(b))] = int16_t(b);
    unicode::appendUtf8(byteTokens[b], byteToCodepoint(uint8_t(b)));
  }
  for (size_t i = 0; i < json->keys.size(); ++i) {
    const std::string &key = json->keys[i];
    size_t id = size_t(json->items[i].integer);
    if (tok->idUsed_[id])
      return makeError(vocabName + ": entry " + quoteJson(key.substr(0, 64)) + ": id " +
                       std::to_string(id) + " is also used by " +
                       quoteJson(tok->idToToken_[id].substr(0, 64)));
    tok->idUsed_[id] = true;
    tok->idToToken_[id] = key;
    tok->tokenToId_.emplace(key, int32_t(id));
    std::string &bytes = tok->idToBytes_[id];
    for (size_t k = 0; k < key.size();) {
      unicode::Utf8Char ch = decodeUtf8(key, k); // the JSON parser checked UTF-8
      if (ch.codepoint < 0x144 && codepointToByte[ch.codepoint] >= 0)
        bytes += char(codepointToByte[ch.codepoint]);
      else
        bytes.append(key, k, ch.length); // not a byte-level character: kept as UTF-8
      k += ch.length;
    }
  }
  for (int b = 0; b < 256; ++b) {
    auto it = tok->tokenToId_.find(byteTokens[b]);
    tok->byteIds_[b] = it == tok->tokenToId_.end() ? -1 : it->second;
  }
  if (auto it = tok->tokenToId_.find("<|endoftext|>"); it != tok->tokenToId_.end())
    tok->endOfText_ = it->second;

  // merges.txt: an optional "#version" line, then "left right" per line, rank = order.
  int32_t rank = 0;
  size_t lineNo = 0;
  for (std::string_view rest = mergesText; !rest.empty();) {
    size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    ++lineNo;
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    std::string where = mergesName + ":" + std::to_string(lineNo) + ": ";
    if (line.empty() || (lineNo == 1 && line.substr(0, 8) == "#version"))
      continue;
    size_t space = line.find(' ');
    if (space == 0 || space == std::string_view::npos || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos)
      return makeError(where + "expected two tokens separated by one space");
    std::string left(line.substr(0, space)), right(line.substr(space + 1));
    auto l = tok->tokenToId_.find(left), r = tok->tokenToId_.find(right);
    auto m = tok->tokenToId_.find(left + right);
    if (l == tok->tokenToId_.end() || r == tok->tokenToId_.end() || m == tok->tokenToId_.end())
      return makeError(where +
                       quoteJson(l == tok->tokenToId_.end()   ? left
                                 : r == tok->tokenToId_.end() ? right
                                                              : left + right) +
                       " is not in " + vocabName);
    if (size_t(rank) >= limits.maxVocab)
      return makeError(where + "more than " + std::to_string(limits.maxVocab) + " merges");
    // The first occurrence of a pair keeps its rank.
    tok->merges_.emplace(Gpt2Tokenizer::pairKey(l->second, r->second),
                         std::make_pair(rank, m->second));
    ++rank;
  }
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

Expected<std::unique_ptr<Tokenizer>> loadGpt2Tokenizer(const std::string &vocabJson,
                                                       const std::string &merges) {
  TokenizerLimits limits;
  Expected<std::string> vocabText = readTextFile(vocabJson, limits.maxFileBytes);
  if (!vocabText)
    return vocabText.status();
  Expected<std::string> mergesText = readTextFile(merges, limits.maxFileBytes);
  if (!mergesText)
    return mergesText.status();
  return parseGpt2Tokenizer(*vocabText, *mergesText, vocabJson, merges, limits);
}

} // namespace xfrt
