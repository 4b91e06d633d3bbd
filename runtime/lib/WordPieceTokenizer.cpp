//===- WordPieceTokenizer.cpp - BERT WordPiece ----------------------------===//
//
// Text → ids as Hugging Face tokenizers' BertWordPieceTokenizer(lowercase=True) does it:
//  1. decode UTF-8 (each ill-formed byte becomes U+FFFD, which step 2 removes);
//  2. clean: drop NUL, U+FFFD and controls (Cc Cf Co Cs except \t \n \r); whitespace → ' ';
//  3. put spaces around CJK ideographs;
//  4. if lowercasing: NFD without nonspacing marks (strip accents), then lowercase;
//  5. split on whitespace, and around each punctuation character (ASCII punctuation or P*);
//  6. WordPiece each word: greedy longest match first, continuations prefixed "##"; a word of
//     more than 100 characters, or one that cannot be covered, is [UNK];
//  7. [CLS] ids [SEP].
// Decoding drops [CLS] [SEP] [PAD] [MASK] [UNK], joins with spaces, glues "##" pieces and
// applies the WordPiece decoder's cleanup (" ." → "." etc.).
//
//===----------------------------------------------------------------------===//
#include "TokenizerFiles.h"
#include "xfrt/Tokenizer.h"
#include "xfrt/Unicode.h"

#include <unordered_map>

namespace xfrt {
namespace {

constexpr size_t kMaxCharsPerWord = 100;

bool isBertPunctuation(char32_t c) {
  bool asciiPunct = (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
                    (c >= 123 && c <= 126);
  return asciiPunct || unicode::isPunctuation(c);
}

// Steps 1–4: the normalized text as code points.
std::vector<char32_t> normalize(std::string_view text, bool lowercase) {
  std::vector<char32_t> cleaned;
  cleaned.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    unicode::Utf8Char ch = unicode::decodeUtf8(text, i);
    i += ch.length;
    char32_t c = ch.codepoint;
    bool keepAsSpace = c == '\t' || c == '\n' || c == '\r';
    if (c == 0 || c == 0xFFFD || (!keepAsSpace && unicode::isOther(c)))
      continue;
    if (keepAsSpace || unicode::isWhitespace(c))
      c = ' ';
    if (unicode::isCjkIdeograph(c)) {
      cleaned.push_back(' ');
      cleaned.push_back(c);
      cleaned.push_back(' ');
    } else {
      cleaned.push_back(c);
    }
  }
  if (!lowercase)
    return cleaned;
  std::vector<char32_t> stripped, lowered;
  stripped.reserve(cleaned.size());
  for (char32_t c : cleaned)
    unicode::appendWithoutAccents(stripped, c);
  lowered.reserve(stripped.size());
  for (char32_t c : stripped)
    unicode::appendLowercase(lowered, c);
  return lowered;
}

class WordPieceTokenizer final : public Tokenizer {
public:
  std::unordered_map<std::string, int32_t> tokenToId_;
  std::vector<std::string> idToToken_;
  std::vector<bool> isSpecial_;
  int32_t unk_ = -1, cls_ = -1, sep_ = -1;
  bool lowercase_ = true;

  Expected<std::vector<int32_t>> encode(std::string_view text) const override {
    std::vector<char32_t> chars = normalize(text, lowercase_);
    std::vector<int32_t> ids{cls_};
    std::vector<char32_t> word;
    auto flush = [&] {
      if (!word.empty())
        encodeWord(word, ids);
      word.clear();
    };
    for (char32_t c : chars) {
      if (unicode::isWhitespace(c)) {
        flush();
      } else if (isBertPunctuation(c)) {
        flush();
        word.push_back(c);
        flush();
      } else {
        word.push_back(c);
      }
    }
    flush();
    ids.push_back(sep_);
    return ids;
  }

  Expected<std::string> decode(const std::vector<int32_t> &ids) const override {
    std::string out;
    bool first = true;
    for (int32_t id : ids) {
      if (id < 0 || size_t(id) >= idToToken_.size())
        return makeError("token id " + std::to_string(id) + " is not in the vocabulary");
      if (isSpecial_[size_t(id)])
        continue;
      const std::string &token = idToToken_[size_t(id)];
      std::string piece;
      if (!first && token.compare(0, 2, "##") == 0)
        piece = token.substr(2);
      else
        piece = first ? token : " " + token;
      first = false;
      out += cleanup(piece);
    }
    return out;
  }

  int64_t vocabSize() const override { return int64_t(idToToken_.size()); }
  std::optional<int32_t> endOfText() const override { return sep_; }
  std::optional<int32_t> tokenToId(std::string_view token) const override {
    auto it = tokenToId_.find(std::string(token));
    if (it == tokenToId_.end())
      return std::nullopt;
    return it->second;
  }

private:
  void encodeWord(const std::vector<char32_t> &word, std::vector<int32_t> &ids) const {
    if (word.size() > kMaxCharsPerWord) {
      ids.push_back(unk_);
      return;
    }
    // offsets[k]: byte offset of character k in the UTF-8 form of the word.
    std::string utf8;
    std::vector<size_t> offsets;
    for (char32_t c : word) {
      offsets.push_back(utf8.size());
      unicode::appendUtf8(utf8, c);
    }
    offsets.push_back(utf8.size());
    size_t mark = ids.size();
    std::string candidate;
    for (size_t start = 0; start < word.size();) {
      int32_t found = -1;
      size_t end = word.size();
      for (; end > start; --end) {
        candidate.assign(start > 0 ? "##" : "");
        candidate.append(utf8, offsets[start], offsets[end] - offsets[start]);
        auto it = tokenToId_.find(candidate);
        if (it != tokenToId_.end()) {
          found = it->second;
          break;
        }
      }
      if (found < 0) {
        ids.resize(mark);
        ids.push_back(unk_);
        return;
      }
      ids.push_back(found);
      start = end;
    }
  }

  // Hugging Face's WordPiece decoder cleanup, applied to each decoded piece.
  static std::string cleanup(std::string s) {
    static const std::pair<std::string_view, std::string_view> rules[] = {
        {" .", "."},   {" ?", "?"},     {" !", "!"},    {" ,", ","},
        {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},  {" do not", " don't"},
        {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto &[from, to] : rules) {
      std::string result;
      size_t pos = 0;
      for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size())
        result.append(s, pos, hit - pos).append(to);
      result.append(s, pos, std::string::npos);
      s = std::move(result);
    }
    return s;
  }
};

} // namespace

Expected<std::unique_ptr<Tokenizer>> parseWordPieceTokenizer(std::string_view text, bool lowercase,
                                                             const std::string &vocabName,
                                                             const TokenizerLimits &limits) {
  if (text.size() > limits.maxFileBytes)
    return makeError(vocabName + ": file exceeds the limit of " +
                     std::to_string(limits.maxFileBytes) + " bytes");
  auto tok = std::make_unique<WordPieceTokenizer>();
  tok->lowercase_ = lowercase;
  // One token per line, id = line index; trailing whitespace (and \r) is not part of it.
  size_t lineNo = 0;
  for (std::string_view rest = text; !rest.empty();) {
    std::string_view line = takeLine(rest);
    ++lineNo;
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r' ||
                             line.back() == '\v' || line.back() == '\f'))
      line.remove_suffix(1);
    std::string where = vocabName + ":" + std::to_string(lineNo) + ": ";
    if (line.size() > limits.maxTokenBytes)
      return makeError(where + "token longer than " + std::to_string(limits.maxTokenBytes) +
                       " bytes");
    if (!unicode::isValidUtf8(line))
      return makeError(where + "token is not valid UTF-8");
    if (lineNo > limits.maxVocab)
      return makeError(where + "more than " + std::to_string(limits.maxVocab) + " tokens");
    int32_t id = int32_t(tok->idToToken_.size());
    // A repeated token would leave an id that encoding never produces; Hugging Face keeps the
    // last silently, which hides a corrupted file.
    auto [it, added] = tok->tokenToId_.emplace(std::string(line), id);
    if (!added)
      return makeError(where + "token \"" + std::string(line.substr(0, 64)) + "\" repeats line " +
                       std::to_string(it->second + 1));
    tok->idToToken_.emplace_back(line);
  }
  tok->isSpecial_.assign(tok->idToToken_.size(), false);
  for (const char *name : {"[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"}) {
    auto it = tok->tokenToId_.find(name);
    if (it == tok->tokenToId_.end()) {
      if (std::string_view(name) == "[PAD]" || std::string_view(name) == "[MASK]")
        continue;
      return makeError(vocabName + ": missing the special token " + name);
    }
    tok->isSpecial_[size_t(it->second)] = true;
  }
  tok->unk_ = tok->tokenToId_["[UNK]"];
  tok->cls_ = tok->tokenToId_["[CLS]"];
  tok->sep_ = tok->tokenToId_["[SEP]"];
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

Expected<std::unique_ptr<Tokenizer>> loadWordPieceTokenizer(const std::string &vocabTxt,
                                                            bool lowercase) {
  TokenizerLimits limits;
  Expected<std::string> text = readTextFile(vocabTxt, limits.maxFileBytes);
  if (!text)
    return text.status();
  return parseWordPieceTokenizer(*text, lowercase, vocabTxt, limits);
}

} // namespace xfrt
