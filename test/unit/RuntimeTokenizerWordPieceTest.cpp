//===- RuntimeTokenizerWordPieceTest.cpp - libxfrt BERT WordPiece ---------===//
#include "xfrt/Tokenizer.h"
#include "xfrt/Unicode.h"

#include <gtest/gtest.h>

using namespace xfrt;

namespace {

using Ids = std::vector<int32_t>;

const std::string kVocab = XF_WORDPIECE_VOCAB;

std::unique_ptr<Tokenizer> &miniLm() {
  static std::unique_ptr<Tokenizer> tok = [] {
    Expected<std::unique_ptr<Tokenizer>> t = loadWordPieceTokenizer(kVocab);
    return t ? t.take() : nullptr;
  }();
  return tok;
}

#define REQUIRE_MINILM()                                                                           \
  if (!miniLm())                                                                                   \
  GTEST_SKIP() << "all-MiniLM-L6-v2 vocab.txt not found at '" << kVocab << "'"

TEST(RuntimeTokenizerWordPiece, KnownIds) {
  REQUIRE_MINILM();
  const Tokenizer &tok = *miniLm();
  // Ids from Hugging Face tokenizers' BertWordPieceTokenizer(vocab.txt, lowercase=True).
  EXPECT_EQ(*tok.encode("Hello, World!"), (Ids{101, 7592, 1010, 2088, 999, 102}));
  EXPECT_EQ(*tok.encode("H\xC3\xA9llo na\xC3\xAFve CAF\xC3\x89"),
            (Ids{101, 7592, 15743, 7668, 102}));
  EXPECT_EQ(*tok.encode("\xE4\xB8\xAD\xE6\x96\x87\xE5\xAD\x97"), (Ids{101, 1746, 1861, 100, 102}));
  EXPECT_EQ(*tok.encode("unaffable"), (Ids{101, 14477, 20961, 3468, 102}));
  EXPECT_EQ(*tok.encode("\xC4\xB0stanbul \xCE\xA3\xCE\x8A\xCE\xA3\xCE\xA5\xCE\xA6\xCE\x9F\xCE\xA3"),
            (Ids{101, 9960, 1173, 18199, 29733, 29735, 29736, 29730, 29733, 102}));
  EXPECT_EQ(*tok.encode(std::string(101, 'a')), (Ids{101, 100, 102}));
  EXPECT_EQ(*tok.encode("zero\xE2\x80\x8Bwidth"), (Ids{101, 5717, 9148, 11927, 2232, 102}));
  EXPECT_EQ(*tok.encode(""), (Ids{101, 102}));
  // Hangul syllables decompose into jamo (NFD).
  EXPECT_EQ(*tok.encode("\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4"),
            (Ids{101, 1469, 30006, 30021, 29991, 30014, 30020, 29999, 30008, 102}));
  EXPECT_EQ(tok.vocabSize(), 30522);
  EXPECT_EQ(tok.endOfText(), std::optional<int32_t>(102));
  EXPECT_EQ(tok.tokenToId("##ffa"), std::optional<int32_t>(20961));
}

TEST(RuntimeTokenizerWordPiece, InvalidUtf8BecomesReplacementAndIsDropped) {
  REQUIRE_MINILM();
  const Tokenizer &tok = *miniLm();
  // Each ill-formed byte is U+FFFD, which BERT's text cleaning removes.
  EXPECT_EQ(*tok.encode("caf\xE9 ok"), *tok.encode("caf ok"));
  EXPECT_EQ(*tok.encode("a\xC0\xAF"
                        "b"),
            *tok.encode("ab"));
  EXPECT_EQ(*tok.encode("\xFF"), (Ids{101, 102}));
}

TEST(RuntimeTokenizerWordPiece, Decode) {
  REQUIRE_MINILM();
  const Tokenizer &tok = *miniLm();
  EXPECT_EQ(*tok.decode(*tok.encode("Hello, World! unaffable don't")),
            "hello, world! unaffable don ' t"); // as HF decodes it
  EXPECT_EQ(*tok.decode({101, 100, 102}), "");
  EXPECT_FALSE(tok.decode({30522}));
}

TEST(RuntimeTokenizerWordPiece, SmallVocab) {
  Expected<std::unique_ptr<Tokenizer>> tok =
      parseWordPieceTokenizer("[PAD]\n[UNK]\n[CLS]\n[SEP]\nun\n##aff\n##able\naff\n,\r\n");
  ASSERT_TRUE(tok) << tok.message();
  EXPECT_EQ(*(*tok)->encode("UnAffable, aff xyz"), (Ids{2, 4, 5, 6, 8, 7, 1, 3}));
  EXPECT_EQ(*(*tok)->decode({2, 4, 5, 6, 8, 7, 1, 3}), "unaffable, aff");
  Expected<std::unique_ptr<Tokenizer>> cased =
      parseWordPieceTokenizer("[UNK]\n[CLS]\n[SEP]\nUn\n##Aff\n", /*lowercase=*/false);
  ASSERT_TRUE(cased) << cased.message();
  EXPECT_EQ(*(*cased)->encode("UnAff unaff"), (Ids{1, 3, 4, 0, 2}));
}

TEST(RuntimeTokenizerWordPiece, MalformedVocabIsAOneLineError) {
  auto error = [](const std::string &text) {
    Expected<std::unique_ptr<Tokenizer>> tok = parseWordPieceTokenizer(text);
    return tok ? std::string() : tok.message();
  };
  EXPECT_EQ(error("[UNK]\n[CLS]\n"), "vocab.txt: missing the special token [SEP]");
  EXPECT_EQ(error("[UNK]\n[CLS]\n[SEP]\nbad\xFFtoken\n"), "vocab.txt:4: token is not valid UTF-8");
  EXPECT_EQ(error("[UNK]\n" + std::string(2000, 'x') + "\n"),
            "vocab.txt:2: token longer than 1024 bytes");
  TokenizerLimits small;
  small.maxVocab = 3;
  Expected<std::unique_ptr<Tokenizer>> tok =
      parseWordPieceTokenizer("[UNK]\n[CLS]\n[SEP]\nx\n", true, "v.txt", small);
  ASSERT_FALSE(tok);
  EXPECT_EQ(tok.message(), "v.txt:4: more than 3 tokens");
  Expected<std::unique_ptr<Tokenizer>> missing = loadWordPieceTokenizer("/nonexistent/vocab.txt");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.message().find("/nonexistent/vocab.txt"), std::string::npos);
}

TEST(RuntimeUnicode, Classes) {
  using namespace unicode;
  EXPECT_TRUE(isLetter(U'a') && isLetter(0x4E2D) && isLetter(0x1F1) && !isLetter(U'1'));
  EXPECT_TRUE(isNumber(U'7') && isNumber(0x2167) && isNumber(0xBD) && !isNumber(U'x'));
  EXPECT_TRUE(isWhitespace(U'\t') && isWhitespace(0x3000) && !isWhitespace(0x200B));
  EXPECT_TRUE(isPunctuation(U'!') && isPunctuation(0x3002) && !isPunctuation(U'$'));
  EXPECT_TRUE(isOther(0x200B) && isOther(0x7F) && isOther(0xE000) && !isOther(U'a'));
  EXPECT_TRUE(isNonspacingMark(0x301) && !isNonspacingMark(U'e'));
  std::vector<char32_t> out;
  appendWithoutAccents(out, 0xE9);   // é → e
  appendLowercase(out, 0x130);       // İ → i + U+0307
  appendWithoutAccents(out, 0xD55C); // 한 → ᄒ ᅡ ᆫ
  EXPECT_EQ(out, (std::vector<char32_t>{U'e', U'i', 0x307, 0x1112, 0x1161, 0x11AB}));
  std::string s;
  appendUtf8(s, 0x1F600);
  EXPECT_EQ(s, "\xF0\x9F\x98\x80");
  Utf8Char c = decodeUtf8(s, 0);
  EXPECT_TRUE(c.valid && c.codepoint == 0x1F600 && c.length == 4);
  for (std::string bad : {"\x80", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE2\x82"}) {
    Utf8Char d = decodeUtf8(bad, 0);
    EXPECT_FALSE(d.valid) << bad;
    EXPECT_EQ(d.length, 1u);
  }
}

} // namespace
