//===- xf-chat-render.cpp - Conversations rendered by libxfrt's chat templates -===//
//
//   xf-chat-render --gguf MODEL.gguf [--format NAME]  < conversations
//   xf-chat-render --jinja TEMPLATE.jinja             < conversations
//   xf-chat-render --format chatml|llama2|llama3|zephyr < conversations
// Each input line is one conversation: "gen=0|1" (add the generation prompt) followed by
// messages "ROLE=HEX" (the content's bytes in hex), separated by spaces. Prints the rendered
// text in hex; with --gguf also a tab and the ids the file's tokenizer encodes it to. The
// template comes from --format, else from the file (tokenizer.chat_template) or --jinja,
// recognised as the executables' --chat does. A failing line prints "error: <message>".
//
//===----------------------------------------------------------------------===//
#include "../tokenizers/HexText.h"

#include "xfrt/ChatTemplate.h"
#include "xfrt/GgufTokenizer.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

using namespace xfrt;

static int usage() {
  std::fprintf(stderr, "usage: xf-chat-render --gguf MODEL.gguf [--format NAME]\n"
                       "       xf-chat-render --jinja TEMPLATE.jinja\n"
                       "       xf-chat-render --format chatml|llama2|llama3|zephyr\n");
  return 2;
}

int main(int argc, char **argv) {
  std::string gguf, jinja, format;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--gguf"))
      gguf = argv[i + 1];
    else if (!std::strcmp(argv[i], "--jinja"))
      jinja = argv[i + 1];
    else if (!std::strcmp(argv[i], "--format"))
      format = argv[i + 1];
    else
      return usage();
  }
  if (argc % 2 == 0 || (gguf.empty() && jinja.empty() && format.empty()))
    return usage();

  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
  std::string templateText, source;
  if (!gguf.empty()) {
    Expected<std::unique_ptr<GgufFile>> f = GgufFile::open(gguf);
    if (!f)
      return std::fprintf(stderr, "error: %s\n", f.message().c_str()), 1;
    file = f.take();
    Expected<GgufTokenizer> t = loadGgufTokenizer(file->header());
    if (!t)
      return std::fprintf(stderr, "error: %s\n", t.message().c_str()), 1;
    tok = std::move(t->tokenizer);
    if (Expected<std::string_view> text = file->header().getString("tokenizer.chat_template"))
      templateText = std::string(*text);
    source = gguf;
  } else if (!jinja.empty()) {
    std::ifstream in(jinja, std::ios::binary);
    if (!in)
      return std::fprintf(stderr, "error: %s: cannot open\n", jinja.c_str()), 1;
    templateText.assign(std::istreambuf_iterator<char>(in), {});
    source = jinja;
  }
  ChatTemplate chat;
  if (!format.empty()) {
    std::optional<ChatFormat> f = chatFormatNamed(format);
    if (!f)
      return std::fprintf(stderr, "error: unknown format %s\n", format.c_str()), 1;
    chat.format = *f;
  } else {
    Expected<ChatTemplate> t = recognizeChatTemplate(templateText, source);
    if (!t)
      return std::fprintf(stderr, "error: %s\n", t.message().c_str()), 1;
    chat = t.take();
  }

  int status = 0;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream items(line);
    std::string item, content;
    std::vector<ChatMessage> messages;
    bool generation = false, ok = true;
    while (items >> item) {
      size_t eq = item.find('=');
      if (eq == std::string::npos || !fromHex(item.substr(eq + 1), content)) {
        ok = item == "gen=0" || item == "gen=1";
        generation = item == "gen=1";
        if (!ok)
          break;
        continue;
      }
      messages.push_back({item.substr(0, eq), content});
    }
    if (!ok) {
      std::printf("error: bad input item '%s'\n", item.c_str());
      status = 1;
      continue;
    }
    std::string text = chat.render(messages, generation);
    std::string out = toHex(text);
    if (tok) {
      Expected<std::vector<int32_t>> ids = tok->encode(text);
      if (!ids) {
        std::printf("error: %s\n", ids.message().c_str());
        status = 1;
        continue;
      }
      out += "\t";
      for (size_t i = 0; i < ids->size(); ++i)
        out += (i ? " " : "") + std::to_string((*ids)[i]);
    }
    std::printf("%s\n", out.c_str());
  }
  return status;
}
