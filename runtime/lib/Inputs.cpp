//===- Inputs.cpp - The sequences a run works on, from the command line ---===//
#include "xfrt/Inputs.h"

#include "xfrt/Gguf.h"
#include "xfrt/GgufTokenizer.h"
#include "xfrt/MappedFile.h"

#include <sys/stat.h>

namespace xfrt {
namespace {

bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool endsWith(const std::string &s, const char *suffix) {
  std::string t(suffix);
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Checks tokenizer output against the model: ids < vocab, 1 <= l <= limit.
Status checkIds(const std::vector<int32_t> &ids, const std::string &what, const Manifest &m) {
  int64_t limit = m.maxPositions > 0 ? m.maxPositions : kMaxTokensWithoutLimit;
  if (ids.empty())
    return makeError(what + ": no tokens");
  if (int64_t(ids.size()) > limit)
    return makeError(what + ": " + std::to_string(ids.size()) + " tokens, more than " +
                     std::to_string(limit) +
                     (m.maxPositions > 0 ? " (the model's max_positions)" : ""));
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= m.vocab)
      return makeError(what + ": token id " + std::to_string(ids[i]) + " at position " +
                       std::to_string(i) + " is out of the model's range [0, " +
                       std::to_string(m.vocab) + "); does the tokenizer fit the model?");
  return Status::success();
}

Status encodeAll(const std::vector<std::string> &texts, const char *flag, const Tokenizer &tok,
                 const Manifest &m, std::vector<std::vector<int32_t>> &out,
                 const ChatTemplate *chat = nullptr, std::optional<int32_t> bos = {},
                 const std::optional<std::string> &system = std::nullopt) {
  for (size_t i = 0; i < texts.size(); ++i) {
    std::string what = std::string(flag) + (texts.size() > 1 ? " " + std::to_string(i + 1) : "");
    // A chat prompt's messages are plain text: special tokens only from the template.
    Expected<std::vector<int32_t>> ids =
        !chat    ? tok.encode(texts[i])
        : system ? chat->renderMarked({{"system", *system}, {"user", texts[i]}}, true).encode(tok)
                 : chat->renderMarked({{"user", texts[i]}}, true).encode(tok);
    if (!ids)
      return makeError(what + ": " + ids.message());
    if (bos && !chat) // a chat template writes its own BOS text
      ids->insert(ids->begin(), *bos);
    if (Status s = checkIds(*ids, what, m); !s)
      return s;
    out.push_back(ids.take());
  }
  return Status::success();
}

Status parseAll(const std::vector<std::string> &lists, const char *flag, const Manifest &m,
                std::vector<std::vector<int32_t>> &out) {
  for (const std::string &list : lists) {
    Expected<std::vector<int32_t>> ids = parseTokenList(list, flag, m);
    if (!ids)
      return ids.status();
    out.push_back(ids.take());
  }
  return Status::success();
}

// The tokenizer in a GGUF file's metadata, and its chat template.
// `implicit` (the --weights file, no --tokenizer): a file without tokenizer metadata gives no
// tokenizer, so token ids (--tokens) still run; a text input then asks for one as usual.
Expected<LoadedTokenizer> loadGgufFileTokenizer(const std::string &path, bool implicit = false) {
  Expected<std::unique_ptr<GgufFile>> file = GgufFile::open(path);
  if (!file)
    return file.status();
  const GgufHeader &h = (*file)->header();
  if (implicit && !h.find("tokenizer.ggml.model"))
    return Expected<LoadedTokenizer>(LoadedTokenizer{});
  Expected<GgufTokenizer> tok = loadGgufTokenizer(h);
  if (!tok)
    return tok.status();
  LoadedTokenizer out;
  out.tokenizer = std::move(tok->tokenizer);
  if (tok->addBos && tok->bos)
    out.bos = tok->bos;
  out.source = path;
  if (h.find("tokenizer.chat_template")) {
    Expected<std::string_view> text = h.getString("tokenizer.chat_template");
    if (!text)
      return text.status();
    out.chatTemplate = std::string(*text);
  }
  return Expected<LoadedTokenizer>(std::move(out));
}

Expected<LoadedTokenizer> loadFileTokenizer(const Options &o) {
  std::string vocab = o.vocab, merges = o.merges;
  if (!o.tokenizer.empty()) {
    if (isDirectory(o.tokenizer)) {
      std::string dir = o.tokenizer + "/";
      if (exists(dir + "vocab.json") && exists(dir + "merges.txt"))
        vocab = dir + "vocab.json", merges = dir + "merges.txt";
      else if (exists(dir + "vocab.txt"))
        vocab = dir + "vocab.txt";
      else
        return makeError("--tokenizer: " + o.tokenizer +
                         " holds neither vocab.json + merges.txt nor vocab.txt");
    } else {
      vocab = o.tokenizer;
    }
  }
  if (vocab.empty())
    return LoadedTokenizer{};
  LoadedTokenizer out;
  out.source = o.tokenizer.empty() ? vocab : o.tokenizer;
  Expected<std::unique_ptr<Tokenizer>> tok = makeError("");
  if (endsWith(vocab, ".json")) {
    if (merges.empty())
      merges = directoryOf(vocab) + "/merges.txt";
    tok = loadGpt2Tokenizer(vocab, merges);
  } else if (!merges.empty()) {
    return makeError("--merges: " + vocab + " is a WordPiece vocabulary (vocab.json has merges)");
  } else {
    tok = loadWordPieceTokenizer(vocab);
  }
  if (!tok)
    return tok.status();
  out.tokenizer = tok.take();
  return Expected<LoadedTokenizer>(std::move(out));
}

// --batch-file: one input per line, "\n" or "\r\n" ended; blank lines are skipped. With a
// tokenizer an input is a text, else a comma-separated id list. An encoder-decoder's line is
// SOURCE<TAB>TARGET, or SOURCE alone with `sourcesOnly` (--bos gives the targets). Errors
// name FILE:LINE.
Status readBatchFile(const std::string &path, const Manifest &m, const Tokenizer *tok,
                     bool sourcesOnly, Batch &b) {
  auto read = [&](std::string_view input, const std::string &where,
                  std::vector<std::vector<int32_t>> &into) -> Status {
    Expected<std::vector<int32_t>> ids = makeError("");
    if (tok) {
      ids = tok->encode(input);
      if (!ids)
        return makeError(where + ": " + ids.message());
      if (Status s = checkIds(*ids, where, m); !s)
        return s;
    } else {
      ids = parseTokenList(input, where.c_str(), m);
      if (!ids)
        return ids.status();
    }
    into.push_back(ids.take());
    return Status::success();
  };
  Expected<std::string> text = readTextFile(path, kMaxBatchFileBytes);
  if (!text)
    return text.status();
  size_t pos = 0;
  for (int64_t line = 1; pos < text->size(); ++line) {
    size_t end = text->find('\n', pos);
    if (end == std::string::npos)
      end = text->size();
    std::string_view input(text->data() + pos, end - pos);
    pos = end + 1;
    if (!input.empty() && input.back() == '\r')
      input.remove_suffix(1);
    if (input.find_first_not_of(" \t") == std::string_view::npos)
      continue;
    std::string where = path + ":" + std::to_string(line);
    if (m.encoderDecoder) {
      size_t tab = input.find('\t');
      if (sourcesOnly && tab != std::string_view::npos)
        return makeError(where + ": a source only (--bos gives the target), not SOURCE<TAB>TARGET");
      if (!sourcesOnly && (tab == std::string_view::npos ||
                           input.find('\t', tab + 1) != std::string_view::npos))
        return makeError(where + ": encoder-decoder '" + m.model +
                         "' takes SOURCE<TAB>TARGET (one tab) on each line");
      if (Status s = read(input.substr(0, tab), where + " (source)", b.sources); !s)
        return s;
      if (!sourcesOnly)
        if (Status s = read(input.substr(tab + 1), where + " (target)", b.targets); !s)
          return s;
    } else if (Status s = read(input, where, b.targets); !s) {
      return s;
    }
    b.lines.push_back(line);
  }
  if (b.lines.empty())
    return makeError(path + ": no inputs (every line is blank)");
  return Status::success();
}

} // namespace

Expected<LoadedTokenizer> loadTokenizer(const Options &o) {
  if (!o.tokenizer.empty() && endsWith(o.tokenizer, ".gguf") && !isDirectory(o.tokenizer))
    return loadGgufFileTokenizer(o.tokenizer);
  if (o.tokenizer.empty() && o.vocab.empty() && o.weightsAreGguf())
    return loadGgufFileTokenizer(o.weights, /*implicit=*/true);
  return loadFileTokenizer(o);
}

Expected<Batch> buildBatch(const Options &o, const Manifest &m, const Tokenizer *tok,
                           const ChatTemplate *chat, std::optional<int32_t> bos) {
  Batch b;
  if ((!o.texts.empty() || !o.prompts.empty() || !o.sourcePrompts.empty()) && !tok)
    return makeError("text input needs a tokenizer");
  Status s = Status::success();
  if (!o.tokens.empty())
    s = parseAll(o.tokens, "--tokens", m, b.targets);
  else if (!o.texts.empty())
    s = encodeAll(o.texts, "--text", *tok, m, b.targets, nullptr, bos);
  else if (!o.prompts.empty())
    s = encodeAll(o.prompts, "--prompt", *tok, m, b.targets, chat, bos, o.system);
  else if (!o.batchFile.empty())
    s = readBatchFile(o.batchFile, m, tok, o.bos.has_value(), b);
  if (!s)
    return s;
  if (!o.sourceTokens.empty())
    s = parseAll(o.sourceTokens, "--source-tokens", m, b.sources);
  else if (!o.sourcePrompts.empty())
    s = encodeAll(o.sourcePrompts, "--source-prompt", *tok, m, b.sources);
  if (!s)
    return s;
  if (o.bos)
    b.targets.assign(b.sources.size(), std::vector<int32_t>{int32_t(*o.bos)});
  if (b.sources.size() == 1 && b.targets.size() > 1)
    b.sources.assign(b.targets.size(), b.sources.front());
  return b;
}

} // namespace xfrt
