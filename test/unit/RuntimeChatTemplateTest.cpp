//===- RuntimeChatTemplateTest.cpp - Chat templates: recognition and rendering ===//
//
// Expected strings are written by hand from each family's Hugging Face template (the SmolLM2
// one is the text in SmolLM2-135M-Instruct's GGUF file); test/chat/check_chat_templates.py
// checks the same renderings against Jinja and transformers.
//
//===----------------------------------------------------------------------===//
#include "xfrt/ChatTemplate.h"

#include <gtest/gtest.h>

using namespace xfrt;

namespace {

// tokenizer.chat_template of SmolLM2-135M-Instruct.Q4_1.gguf, byte for byte (real newlines
// inside the Jinja string literals).
const char *kSmolLm2 =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ "
    "'<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|im_start|>assistant\n' }}{% endif %}";

ChatTemplate recognized(const std::string &jinja) {
  Expected<ChatTemplate> t = recognizeChatTemplate(jinja, "t.gguf");
  EXPECT_TRUE(bool(t)) << (t ? "" : t.message());
  return t ? t.take() : ChatTemplate{};
}

TEST(RuntimeChatTemplate, SmolLm2IsChatMlWithItsDefaultSystem) {
  ChatTemplate t = recognized(kSmolLm2);
  EXPECT_EQ(t.format, ChatFormat::ChatMl);
  EXPECT_EQ(t.defaultSystem,
            "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  EXPECT_EQ(t.endOfTurn(), "<|im_end|>");
  EXPECT_EQ(t.render({{"user", "What is the capital of France?"}}, true),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
            "Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(RuntimeChatTemplate, ChatMlGivenSystemReplacesTheDefault) {
  ChatTemplate t = recognized(kSmolLm2);
  EXPECT_EQ(t.render({{"system", "Be brief."}, {"user", "Hi"}}, false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST(RuntimeChatTemplate, ChatMlTurnsAreAppendedUnchanged) {
  ChatTemplate t = recognized(kSmolLm2);
  std::vector<ChatMessage> one = {{"user", " a \n"}};
  std::vector<ChatMessage> three = {{"user", " a \n"}, {"assistant", "b"}, {"user", "c"}};
  std::string first = t.render(one, true), all = t.render(three, true);
  // A later turn's text extends the earlier one by the reply and what follows it, which is what
  // --interactive feeds on top of the KV cache.
  ASSERT_EQ(all.compare(0, first.size(), first), 0);
  EXPECT_EQ(all.substr(first.size()),
            "b<|im_end|>\n<|im_start|>user\nc<|im_end|>\n<|im_start|>assistant\n");
}

TEST(RuntimeChatTemplate, ChatMlDefaultSystemWithEscapedNewline) {
  // Templates from tokenizer_config.json often keep Jinja's "\n" escape in the literal.
  ChatTemplate t = recognized("{% if messages[0]['role'] != 'system' %}{{ "
                              "'<|im_start|>system\\nYou\\'re kind.<|im_end|>\\n' }}{% endif %}"
                              "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + "
                              "m['content'] + '<|im_end|>\\n'}}{% endfor %}");
  EXPECT_EQ(t.defaultSystem, "You're kind.");
}

TEST(RuntimeChatTemplate, ChatMlWithoutDefaultSystem) {
  // The system text comes from the messages, not a literal: no default.
  ChatTemplate t = recognized("{% for m in messages %}{{'<|im_start|>' + m['role'] + '\n' + "
                              "m['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if "
                              "add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}");
  EXPECT_EQ(t.defaultSystem, "");
  EXPECT_EQ(t.render({{"user", "x"}}, true),
            "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n");
  ChatTemplate built = recognized("{% if messages[0]['role'] != 'system' %}{{ "
                                  "'<|im_start|>system\n' + default_system + '<|im_end|>' }}"
                                  "{% endif %}");
  EXPECT_EQ(built.defaultSystem, "");
}

TEST(RuntimeChatTemplate, Llama3) {
  ChatTemplate t = recognized("{% set content = '<|start_header_id|>' + message['role'] + "
                              "'<|end_header_id|>\\n\\n'+ message['content'] | trim + "
                              "'<|eot_id|>' %}");
  EXPECT_EQ(t.format, ChatFormat::Llama3);
  EXPECT_EQ(t.endOfTurn(), "<|eot_id|>");
  EXPECT_EQ(t.render({{"system", "S"}, {"user", "  hi \n"}, {"assistant", " yo"}}, true),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nyo<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(RuntimeChatTemplate, Llama2FoldsTheSystemIntoTheFirstTurn) {
  ChatTemplate t = recognized("{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}");
  EXPECT_EQ(t.format, ChatFormat::Llama2);
  EXPECT_EQ(t.endOfTurn(), "</s>");
  EXPECT_EQ(
      t.render({{"system", "S"}, {"user", "u1 "}, {"assistant", " a1"}, {"user", "u2"}}, true),
      "<s>[INST] <<SYS>>\nS\n<</SYS>>\n\nu1 [/INST] a1 </s><s>[INST] u2 [/INST]");
  EXPECT_EQ(t.render({{"user", "u"}}, true), "<s>[INST] u [/INST]");
}

TEST(RuntimeChatTemplate, Zephyr) {
  ChatTemplate t = recognized("{{ '<|user|>\n' + message['content'] + eos_token }}{{ "
                              "'<|assistant|>' }}");
  EXPECT_EQ(t.format, ChatFormat::Zephyr);
  EXPECT_EQ(t.render({{"system", "S"}, {"user", "u"}}, true),
            "<|system|>\nS</s>\n<|user|>\nu</s>\n<|assistant|>\n");
  EXPECT_EQ(t.render({{"user", "u"}}, false), "<|user|>\nu</s>\n");
}

// Issue 33: renderMarked says which bytes the template wrote; only there may the tokenizer find
// special tokens. Everything else is exactly the messages' contents (as the template trims
// them), whatever they spell.
TEST(RuntimeChatTemplate, MarkupIsTheTemplatesOwnText) {
  std::vector<ChatMessage> conversation = {
      {"system", "S <|im_end|>"}, {"user", "u1 </s>\n"}, {"assistant", " a1"}, {"user", "u2"}};
  struct Case {
    ChatFormat format;
    std::string contents; // the text outside the markup, in order
  };
  for (const Case &c : {Case{ChatFormat::ChatMl, "S <|im_end|>u1 </s>\n a1u2"},
                        Case{ChatFormat::Llama3, "S <|im_end|>u1 </s>a1u2"},
                        Case{ChatFormat::Llama2, "S <|im_end|>u1 </s>a1u2"},
                        Case{ChatFormat::Zephyr, "S <|im_end|>u1 </s>\n a1u2"}}) {
    ChatTemplate t;
    t.format = c.format;
    SCOPED_TRACE(std::string(chatFormatName(c.format)));
    RenderedChat r = t.renderMarked(conversation, true);
    EXPECT_EQ(r.text, t.render(conversation, true));
    std::string outside;
    size_t at = 0;
    for (TextSpan span : r.markup) {
      ASSERT_LE(at, span.begin);
      ASSERT_LT(span.begin, span.end);
      ASSERT_LE(span.end, r.text.size());
      outside += r.text.substr(at, span.begin - at);
      at = span.end;
    }
    outside += r.text.substr(at);
    EXPECT_EQ(outside, c.contents);
  }
  // A trailing-whitespace-only first turn: Llama-2's strip reaches back into the markup.
  ChatTemplate llama2;
  llama2.format = ChatFormat::Llama2;
  RenderedChat r = llama2.renderMarked({{"system", "S"}, {"user", " \n"}}, false);
  EXPECT_EQ(r.text, "<s>[INST] <<SYS>>\nS\n<</SYS>> [/INST]");
  ASSERT_EQ(r.markup.size(), 2u);
  EXPECT_EQ(r.text.substr(r.markup[1].begin, r.markup[1].end - r.markup[1].begin),
            "\n<</SYS>> [/INST]");
  // The tail of a rendering keeps its markup, shifted.
  RenderedChat tail = r.from(r.text.size() - 8);
  EXPECT_EQ(tail.text, " [/INST]");
  ASSERT_EQ(tail.markup.size(), 1u);
  EXPECT_EQ(tail.markup[0].begin, 0u);
  EXPECT_EQ(tail.markup[0].end, 8u);
}

TEST(RuntimeChatTemplate, UnknownTemplateIsNamed) {
  Expected<ChatTemplate> t = recognizeChatTemplate(
      "{% for m in messages %}\n### {{ m['content'] }}", "m.gguf: tokenizer.chat_template");
  ASSERT_FALSE(bool(t));
  EXPECT_EQ(t.message(),
            "m.gguf: tokenizer.chat_template: a chat template xf does not recognise (it knows "
            "chatml|llama2|llama3|zephyr): \"{% for m in messages %} ### {{ m['content'] }}\"; "
            "force one with --chat-template");
  // Long templates are quoted up to 60 bytes.
  Expected<ChatTemplate> long_ = recognizeChatTemplate(std::string(100, 'x'), "y");
  ASSERT_FALSE(bool(long_));
  EXPECT_NE(long_.message().find("\"" + std::string(60, 'x') + "...\""), std::string::npos)
      << long_.message();
  Expected<ChatTemplate> empty = recognizeChatTemplate("", "x");
  ASSERT_FALSE(bool(empty));
  EXPECT_NE(empty.message().find("\"\""), std::string::npos) << empty.message();
}

TEST(RuntimeChatTemplate, FormatNames) {
  for (const char *name : {"chatml", "llama2", "llama3", "zephyr"}) {
    std::optional<ChatFormat> f = chatFormatNamed(name);
    ASSERT_TRUE(f) << name;
    EXPECT_EQ(chatFormatName(*f), name);
  }
  EXPECT_FALSE(chatFormatNamed("ChatML"));
  EXPECT_FALSE(chatFormatNamed(""));
  EXPECT_EQ(chatFormatNames(), "chatml|llama2|llama3|zephyr");
}

} // namespace
