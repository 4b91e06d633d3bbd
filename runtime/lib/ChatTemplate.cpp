//===- ChatTemplate.cpp - A conversation as the text a chat model expects -===//
//
// Recognition looks for each family's markers in the Jinja text (no Jinja interpreter); rendering
// follows the Hugging Face templates of SmolLM2 (ChatML), Llama-3-Instruct, Llama-2-chat and
// Zephyr, including their strip/trim of message contents.
//
//===----------------------------------------------------------------------===//
#include "xfrt/ChatTemplate.h"

#include <algorithm>

namespace xfrt {
namespace {

constexpr ChatFormat kFormats[] = {ChatFormat::ChatMl, ChatFormat::Llama2, ChatFormat::Llama3,
                                   ChatFormat::Zephyr};

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// Python's str.strip() / Jinja's trim on ASCII whitespace.
std::string_view strip(std::string_view s) {
  const char *space = " \t\n\r\v\f";
  size_t begin = s.find_first_not_of(space);
  if (begin == std::string_view::npos)
    return {};
  return s.substr(begin, s.find_last_not_of(space) - begin + 1);
}

// The system message a ChatML template writes when the first message is not one, e.g.
// {% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are ...
// <|im_end|>\n' }}{% endif %}: the literal between "<|im_start|>system\n" and "<|im_end|>",
// with Jinja's escapes undone. "" when there is no such literal (a quote or {{ inside means
// the text is built from the messages, not written out).
std::string chatMlDefaultSystem(std::string_view jinja) {
  if (!contains(jinja, "!= 'system'") && !contains(jinja, "!= \"system\""))
    return "";
  for (std::string_view marker : {"<|im_start|>system\n", "<|im_start|>system\\n"}) {
    size_t at = jinja.find(marker);
    if (at == std::string_view::npos)
      continue;
    size_t begin = at + marker.size(), end = jinja.find("<|im_end|>", begin);
    if (end == std::string_view::npos)
      continue;
    std::string text;
    bool literal = true;
    for (size_t i = begin; i < end && literal; ++i) {
      char c = jinja[i];
      if (c == '\\' && i + 1 < end) {
        char e = jinja[++i];
        text += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else if (c == '\'' || c == '"' || (c == '{' && i + 1 < end && jinja[i + 1] == '{')) {
        literal = false;
      } else {
        text += c;
      }
    }
    if (literal)
      return text;
  }
  return "";
}

// A rendered conversation built piece by piece: the template's own text (markup) or a
// message's content.
class ChatText {
public:
  ChatText &markup(std::string_view s) {
    if (s.empty())
      return *this;
    if (!out_.markup.empty() && out_.markup.back().end == out_.text.size())
      out_.markup.back().end += s.size();
    else
      out_.markup.push_back({out_.text.size(), out_.text.size() + s.size()});
    out_.text += s;
    return *this;
  }
  ChatText &content(std::string_view s) {
    out_.text += s;
    return *this;
  }
  ChatText &append(const ChatText &other) {
    size_t at = out_.text.size();
    out_.text += other.out_.text;
    for (TextSpan span : other.out_.markup)
      if (!out_.markup.empty() && out_.markup.back().end == at + span.begin)
        out_.markup.back().end = at + span.end;
      else
        out_.markup.push_back({at + span.begin, at + span.end});
    return *this;
  }
  // Python's rstrip on ASCII whitespace, whatever wrote it.
  ChatText &stripTrailing() {
    size_t end = out_.text.find_last_not_of(" \t\n\r\v\f");
    out_.text.resize(end == std::string::npos ? 0 : end + 1);
    while (!out_.markup.empty() && out_.markup.back().begin >= out_.text.size())
      out_.markup.pop_back();
    if (!out_.markup.empty())
      out_.markup.back().end = std::min(out_.markup.back().end, out_.text.size());
    return *this;
  }
  RenderedChat take() { return std::move(out_); }

private:
  RenderedChat out_;
};

RenderedChat renderChatMl(const ChatTemplate &t, const std::vector<ChatMessage> &messages,
                          bool generation) {
  ChatText out;
  if (!t.defaultSystem.empty() && (messages.empty() || messages[0].role != "system"))
    out.markup("<|im_start|>system\n").content(t.defaultSystem).markup("<|im_end|>\n");
  for (const ChatMessage &m : messages)
    out.markup("<|im_start|>" + m.role + "\n").content(m.content).markup("<|im_end|>\n");
  if (generation)
    out.markup("<|im_start|>assistant\n");
  return out.take();
}

RenderedChat renderLlama3(const std::vector<ChatMessage> &messages, bool generation) {
  ChatText out;
  out.markup("<|begin_of_text|>");
  for (const ChatMessage &m : messages)
    out.markup("<|start_header_id|>" + m.role + "<|end_header_id|>\n\n")
        .content(strip(m.content))
        .markup("<|eot_id|>");
  if (generation)
    out.markup("<|start_header_id|>assistant<|end_header_id|>\n\n");
  return out.take();
}

// Llama-2-chat: the system message is folded into the first user turn; every user turn opens a
// new <s>, every reply ends with </s>. The assistant's turn needs no header.
RenderedChat renderLlama2(const std::vector<ChatMessage> &messages) {
  ChatText out;
  std::string system;
  size_t first = 0;
  if (!messages.empty() && messages[0].role == "system")
    system = messages[0].content, first = 1;
  for (size_t i = first; i < messages.size(); ++i) {
    // strip(content), where the first turn's content starts with the system block.
    ChatText content;
    if (i == first && first == 1)
      content.markup("<<SYS>>\n")
          .content(system)
          .markup("\n<</SYS>>\n\n")
          .content(messages[i].content)
          .stripTrailing();
    else
      content.content(strip(messages[i].content));
    if (messages[i].role == "user")
      out.markup("<s>[INST] ").append(content).markup(" [/INST]");
    else if (messages[i].role == "assistant")
      out.markup(" ").append(content).markup(" </s>");
  }
  return out.take();
}

RenderedChat renderZephyr(const std::vector<ChatMessage> &messages, bool generation) {
  ChatText out;
  for (const ChatMessage &m : messages)
    out.markup("<|" + m.role + "|>\n").content(m.content).markup("</s>\n");
  if (generation)
    out.markup("<|assistant|>\n");
  return out.take();
}

} // namespace

std::string ChatTemplate::render(const std::vector<ChatMessage> &messages,
                                 bool addGenerationPrompt) const {
  return renderMarked(messages, addGenerationPrompt).text;
}

RenderedChat ChatTemplate::renderMarked(const std::vector<ChatMessage> &messages,
                                        bool addGenerationPrompt) const {
  switch (format) {
  case ChatFormat::ChatMl:
    return renderChatMl(*this, messages, addGenerationPrompt);
  case ChatFormat::Llama3:
    return renderLlama3(messages, addGenerationPrompt);
  case ChatFormat::Llama2:
    return renderLlama2(messages);
  case ChatFormat::Zephyr:
    return renderZephyr(messages, addGenerationPrompt);
  }
  return {};
}

RenderedChat RenderedChat::from(size_t offset) const {
  RenderedChat rest;
  rest.text = text.substr(std::min(offset, text.size()));
  for (TextSpan span : markup)
    if (span.end > offset)
      rest.markup.push_back({std::max(span.begin, offset) - offset, span.end - offset});
  return rest;
}

Expected<std::vector<int32_t>> RenderedChat::encode(const Tokenizer &tokenizer) const {
  return tokenizer.encodeMarkup(text, markup);
}

std::string_view ChatTemplate::endOfTurn() const {
  switch (format) {
  case ChatFormat::ChatMl:
    return "<|im_end|>";
  case ChatFormat::Llama3:
    return "<|eot_id|>";
  case ChatFormat::Llama2:
  case ChatFormat::Zephyr:
    return "</s>";
  }
  return "";
}

std::string_view chatFormatName(ChatFormat format) {
  switch (format) {
  case ChatFormat::ChatMl:
    return "chatml";
  case ChatFormat::Llama2:
    return "llama2";
  case ChatFormat::Llama3:
    return "llama3";
  case ChatFormat::Zephyr:
    return "zephyr";
  }
  return "";
}

std::optional<ChatFormat> chatFormatNamed(std::string_view name) {
  for (ChatFormat f : kFormats)
    if (chatFormatName(f) == name)
      return f;
  return std::nullopt;
}

std::string chatFormatNames() {
  std::string names;
  for (ChatFormat f : kFormats)
    names += (names.empty() ? "" : "|") + std::string(chatFormatName(f));
  return names;
}

Expected<ChatTemplate> recognizeChatTemplate(std::string_view jinja, const std::string &source) {
  ChatTemplate t;
  // Llama-3 first: its templates may also mention other families' markers in comments.
  if (contains(jinja, "<|start_header_id|>") && contains(jinja, "<|eot_id|>"))
    t.format = ChatFormat::Llama3;
  else if (contains(jinja, "<|im_start|>") && contains(jinja, "<|im_end|>"))
    t.format = ChatFormat::ChatMl, t.defaultSystem = chatMlDefaultSystem(jinja);
  else if (contains(jinja, "<|user|>") && contains(jinja, "<|assistant|>"))
    t.format = ChatFormat::Zephyr;
  else if (contains(jinja, "[INST]") && contains(jinja, "[/INST]"))
    t.format = ChatFormat::Llama2;
  else {
    std::string start(jinja.substr(0, 60));
    for (char &c : start)
      if (c == '\n' || c == '\r' || c == '\t')
        c = ' ';
    return makeError(source + ": a chat template xf does not recognise (it knows " +
                     chatFormatNames() + "): \"" + start + (jinja.size() > 60 ? "...\"" : "\"") +
                     "; force one with --chat-template");
  }
  return t;
}

} // namespace xfrt
