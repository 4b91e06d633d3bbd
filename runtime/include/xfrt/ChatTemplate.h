//===- ChatTemplate.h - A conversation as the text a chat model expects -*- C++ -*-===//
//
// In: the Jinja text of a GGUF file's tokenizer.chat_template (or a format named on the command
// line) and a conversation of {role, content} messages. Out: the prompt text, special tokens
// written out as text, and which of its bytes are the template's own (renderMarked): only there
// does the tokenizer map special tokens to their ids (Tokenizer::encodeMarkup), so a message
// that spells out "<|im_end|>" cannot end its turn or forge another. xf does not run Jinja: it
// recognises the common template families by their markers and renders them as Hugging Face's
// apply_chat_template does:
//   chatml  <|im_start|>ROLE\nCONTENT<|im_end|>\n ... <|im_start|>assistant\n   (SmolLM2, Qwen)
//   llama3  <|begin_of_text|><|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|> ...
//   llama2  <s>[INST] <<SYS>>\nSYSTEM\n<</SYS>>\n\nUSER [/INST] REPLY </s><s>[INST] ...
//   zephyr  <|system|>\nCONTENT</s>\n<|user|>\nCONTENT</s>\n<|assistant|>\n
// A ChatML template that inserts a system message when the conversation has none (SmolLM2's
// "You are a helpful AI assistant named SmolLM, trained by Hugging Face") keeps that default.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_CHATTEMPLATE_H
#define XFRT_CHATTEMPLATE_H

#include "xfrt/Status.h"
#include "xfrt/Tokenizer.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xfrt {

enum class ChatFormat { ChatMl, Llama2, Llama3, Zephyr };

struct ChatMessage {
  std::string role; // "system", "user" or "assistant"
  std::string content;
};

// A rendered conversation: its text, and the spans of it the template wrote (headers, turn
// markers); everything else is message content, to be tokenized as plain text.
struct RenderedChat {
  std::string text;
  std::vector<TextSpan> markup;
  // The text from byte `offset` on, its spans shifted (and cut) to match.
  RenderedChat from(size_t offset) const;
  // Its ids: special tokens only from the markup.
  Expected<std::vector<int32_t>> encode(const Tokenizer &tokenizer) const;
};

struct ChatTemplate {
  ChatFormat format = ChatFormat::ChatMl;
  // Inserted as the first message when the conversation does not start with a system message;
  // empty: none.
  std::string defaultSystem;

  // The conversation as text; `addGenerationPrompt` appends the header of the assistant's turn.
  std::string render(const std::vector<ChatMessage> &messages, bool addGenerationPrompt) const;
  // The same text, with the spans of it that are the template's own.
  RenderedChat renderMarked(const std::vector<ChatMessage> &messages,
                            bool addGenerationPrompt) const;
  // The token that ends a turn, as text: <|im_end|>, <|eot_id|> or </s>.
  std::string_view endOfTurn() const;
};

std::string_view chatFormatName(ChatFormat format); // "chatml", "llama2", "llama3", "zephyr"
// The names --chat-template accepts; nullopt for any other.
std::optional<ChatFormat> chatFormatNamed(std::string_view name);
// "chatml|llama2|llama3|zephyr", for help and error messages.
std::string chatFormatNames();

// Recognises a Jinja chat template. An unknown one is an error that quotes its start; `source`
// prefixes it (e.g. "model.gguf: metadata 'tokenizer.chat_template'").
Expected<ChatTemplate> recognizeChatTemplate(std::string_view jinja, const std::string &source);

} // namespace xfrt

#endif // XFRT_CHATTEMPLATE_H
