//===- Chat.h - --chat and --interactive: conversations with a decoder -*- C++ -*-===//
//
// chatSetup picks the template (--chat-template, else the tokenizer's tokenizer.chat_template,
// which must be one ChatTemplate.h recognises) and the id of its end-of-turn token, which ends
// each reply. runInteractive reads user turns from a stream, one per line until EOF, and keeps
// the KV cache across turns: each turn appends only the tokens of the text the template adds
// after what the cache holds (the new user turn and the assistant's header).
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_CHAT_H
#define XFRT_CHAT_H

#include "xfrt/ChatTemplate.h"
#include "xfrt/Cli.h"
#include "xfrt/Inputs.h"
#include "xfrt/Manifest.h"
#include "xfrt/Session.h"
#include "xfrt/Status.h"

#include <cstdint>
#include <cstdio>

namespace xfrt {

struct ChatSetup {
  ChatTemplate chatTemplate;
  int32_t endOfTurn = 0; // the id of chatTemplate.endOfTurn()
};

Expected<ChatSetup> chatSetup(const Options &options, const LoadedTokenizer &tokenizer,
                              const Manifest &manifest);

// Prints each reply on stdout followed by a newline, a summary per turn on stderr. Returns the
// exit status: 0 at EOF; 1 when the conversation outgrows the model's positions or a forward
// pass fails (an error line on stderr).
int runInteractive(const Options &options, const Manifest &manifest, Session &session,
                   const Tokenizer &tokenizer, const ChatSetup &chat, std::FILE *turns);

} // namespace xfrt

#endif // XFRT_CHAT_H
