//===- xf-tokenize.cpp - Command-line front end to libxfrt's tokenizers ---===//
//
//   xf-tokenize [--hex] [--decode] gpt2 vocab.json merges.txt  < lines
//   xf-tokenize [--hex] [--decode] wordpiece vocab.txt          < lines
//   xf-tokenize [--hex] [--decode] gguf model.gguf               < lines
// Encoding: each input line (without its newline) is one text; prints its ids separated by
// spaces. With --hex each input line is the text's bytes in hex (so texts may hold newlines
// and invalid UTF-8). Decoding: each input line is ids separated by spaces; prints the text
// (in hex with --hex). A failing line prints "error: <message>" and the exit status is 1.
//
//===----------------------------------------------------------------------===//
#include "HexText.h"

#include "xfrt/GgufTokenizer.h"
#include "xfrt/Tokenizer.h"

#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

using namespace xfrt;

static int usage() {
  std::fprintf(stderr, "usage: xf-tokenize [--hex] [--decode] gpt2 vocab.json merges.txt\n"
                       "       xf-tokenize [--hex] [--decode] wordpiece vocab.txt\n"
                       "       xf-tokenize [--hex] [--decode] gguf model.gguf\n");
  return 2;
}

static Expected<std::unique_ptr<Tokenizer>> loadGgufFileTokenizer(const std::string &path) {
  Expected<std::unique_ptr<GgufFile>> file = GgufFile::open(path);
  if (!file)
    return file.status();
  Expected<GgufTokenizer> tok = loadGgufTokenizer((*file)->header());
  if (!tok)
    return tok.status();
  return std::move(tok->tokenizer);
}

int main(int argc, char **argv) {
  bool hex = false, decode = false;
  int arg = 1;
  for (; arg < argc && argv[arg][0] == '-'; ++arg) {
    if (!std::strcmp(argv[arg], "--hex"))
      hex = true;
    else if (!std::strcmp(argv[arg], "--decode"))
      decode = true;
    else
      return usage();
  }
  if (arg >= argc)
    return usage();
  std::string kind = argv[arg];
  Expected<std::unique_ptr<Tokenizer>> tok = makeError("unknown tokenizer kind");
  if (kind == "gpt2" && argc - arg == 3)
    tok = loadGpt2Tokenizer(argv[arg + 1], argv[arg + 2]);
  else if (kind == "wordpiece" && argc - arg == 2)
    tok = loadWordPieceTokenizer(argv[arg + 1]);
  else if (kind == "gguf" && argc - arg == 2)
    tok = loadGgufFileTokenizer(argv[arg + 1]);
  else
    return usage();
  if (!tok) {
    std::fprintf(stderr, "error: %s\n", tok.message().c_str());
    return 1;
  }
  int status = 0;
  std::string line, text;
  while (std::getline(std::cin, line)) {
    if (decode) {
      std::vector<int32_t> ids;
      std::istringstream in(line);
      long long id;
      while (in >> id)
        ids.push_back(int32_t(id));
      Expected<std::string> out = (*tok)->decode(ids);
      if (!out) {
        std::printf("error: %s\n", out.message().c_str());
        status = 1;
        continue;
      }
      std::printf("%s\n", hex ? toHex(*out).c_str() : out->c_str());
      continue;
    }
    if (!hex)
      text = line;
    else if (!fromHex(line, text)) {
      std::printf("error: input line is not hex\n");
      status = 1;
      continue;
    }
    Expected<std::vector<int32_t>> ids = (*tok)->encode(text);
    if (!ids) {
      std::printf("error: %s\n", ids.message().c_str());
      status = 1;
      continue;
    }
    std::string out;
    for (size_t i = 0; i < ids->size(); ++i)
      out += (i ? " " : "") + std::to_string((*ids)[i]);
    std::printf("%s\n", out.c_str());
  }
  return status;
}
