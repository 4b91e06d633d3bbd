//===- Chat.cpp - --chat and --interactive: conversations with a decoder --===//
//
// The conversation is kept three ways: as messages (what the template renders), as the ids fed
// to the model so far, and as the text those ids stand for. A new turn renders the whole
// conversation; when that text starts with the text already fed, only the rest is encoded and
// run on top of the cache. A template that rewrites earlier turns (Llama-2 strips replies) makes
// the texts differ, and then the whole conversation is encoded and run again from position 0.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Chat.h"

#include "xfrt/Generate.h"
#include "xfrt/MessageText.h"
#include "xfrt/Random.h"
#include "xfrt/TextStream.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

namespace xfrt {
namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", printableMessage(message).c_str());
  return 1;
}

// One line of `in` without its line break; nullopt at EOF.
std::optional<std::string> readLine(std::FILE *in) {
  char *buffer = nullptr;
  size_t capacity = 0;
  ssize_t n = ::getline(&buffer, &capacity, in);
  std::optional<std::string> line;
  if (n >= 0) {
    line = std::string(buffer, size_t(n));
    while (!line->empty() && (line->back() == '\n' || line->back() == '\r'))
      line->pop_back();
  }
  std::free(buffer);
  return line;
}

// KV-cache capacities grow in powers of two from 1024 positions, up to the model's limit: the
// cache's layout depends on its capacity, so growing it means running the conversation again.
int64_t capacityFor(int64_t positions, int64_t limit) {
  int64_t c = 1024;
  while (c < positions && c < limit)
    c *= 2;
  return std::min(c, limit);
}

} // namespace

Expected<ChatSetup> chatSetup(const Options &o, const LoadedTokenizer &loaded, const Manifest &m) {
  const char *flag = o.interactive ? "--interactive" : "--chat";
  ChatSetup setup;
  if (!o.chatTemplate.empty()) {
    setup.chatTemplate.format = *chatFormatNamed(o.chatTemplate);
  } else if (!loaded.chatTemplate) {
    return makeError(std::string(flag) + ": the tokenizer " + loaded.source +
                     " has no chat template (tokenizer.chat_template); is '" + m.model +
                     "' a chat model? Name a format with --chat-template " + chatFormatNames());
  } else {
    Expected<ChatTemplate> t =
        recognizeChatTemplate(*loaded.chatTemplate, loaded.source + ": tokenizer.chat_template");
    if (!t)
      return t.status();
    setup.chatTemplate = t.take();
  }
  std::string_view end = setup.chatTemplate.endOfTurn();
  std::optional<int32_t> id = loaded.tokenizer->tokenToId(end);
  if (!id || *id >= m.vocab)
    return makeError(
        std::string(flag) + ": the " + std::string(chatFormatName(setup.chatTemplate.format)) +
        " end-of-turn token " + std::string(end) + " is not a token of " + loaded.source);
  setup.endOfTurn = *id;
  return setup;
}

int runInteractive(const Options &o, const Manifest &m, Session &session, const Tokenizer &tok,
                   const ChatSetup &chat, std::FILE *turns) {
  GenerateOptions g;
  g.maxNewTokens = o.maxNewTokens > 0 ? o.maxNewTokens : kDefaultChatTokens;
  g.sampling = o.sampling;
  g.useCache = !o.noCache;
  g.cacheSizedByCaller = true; // for the whole conversation, below
  g.eos = o.noEos ? std::nullopt : o.eos ? std::optional<int32_t>(int32_t(*o.eos)) : chat.endOfTurn;
  bool cached = g.useCache && session.canCache();
  int64_t limit = positionLimit(session, cached), capacity = 0;
  Pcg32 rng(o.samplingSeed, fnv1a64("xfrt.sampling"));

  std::vector<ChatMessage> messages;
  if (o.system)
    messages.push_back({"system", *o.system});
  std::vector<int32_t> fed; // every id of the conversation so far
  std::string fedText;      // the text they stand for
  int64_t inCache = 0;      // positions of `fed` in the KV cache
  bool terminal = ::isatty(::fileno(turns));
  for (int turn = 1;; ++turn) {
    if (terminal) // a prompt for a person typing; none when turns come from a file or pipe
      std::fputs("> ", stderr);
    std::optional<std::string> line = readLine(turns);
    if (!line)
      return 0;
    if (line->empty()) { // a blank line is no turn
      --turn;
      continue;
    }
    messages.push_back({"user", *line});
    // The messages are plain text: special tokens only from the template's markup.
    RenderedChat rendered = chat.chatTemplate.renderMarked(messages, true);
    const std::string &text = rendered.text;
    bool extends = !fedText.empty() && text.compare(0, fedText.size(), fedText) == 0;
    Expected<std::vector<int32_t>> added =
        (extends ? rendered.from(fedText.size()) : rendered).encode(tok);
    if (!added)
      return fail("turn " + std::to_string(turn) + ": " + added.message());
    if (!extends)
      fed.clear(), inCache = 0;
    fed.insert(fed.end(), added->begin(), added->end());
    if (int64_t(fed.size()) > limit)
      return fail("turn " + std::to_string(turn) + ": the conversation has " +
                  std::to_string(fed.size()) + " tokens, more than the model's " +
                  std::to_string(limit) + " positions; start a new conversation");
    for (size_t i = 0; i < added->size(); ++i)
      if ((*added)[i] < 0 || (*added)[i] >= m.vocab)
        return fail("turn " + std::to_string(turn) + ": token id " + std::to_string((*added)[i]) +
                    " is out of the model's range [0, " + std::to_string(m.vocab) + ")");
    if (cached) {
      int64_t need = std::min(limit, int64_t(fed.size()) + g.maxNewTokens);
      if (need > capacity) {
        capacity = capacityFor(need, limit);
        session.reserveCache(capacity);
        inCache = 0; // a new cache: the conversation runs again from position 0
      }
    }
    g.cachedPrefix = inCache;

    TextStream out(&tok);
    Expected<GenerateResult> r = generate(session, fed, {}, g, rng, [&](int32_t id) {
      if (!(g.eos && id == *g.eos && id == chat.endOfTurn))
        out.add(id);
      std::fflush(stdout);
    });
    if (!r) {
      std::printf("\n");
      return fail(r.message());
    }
    out.finish();
    std::printf("\n");
    std::fflush(stdout);
    warnMissingIds(out);

    // The reply joins the conversation: its ids (all but the last are in the cache now) and its
    // text, the end-of-turn token left out of the message as the template writes it itself.
    std::vector<int32_t> reply = r->newTokens;
    fed.insert(fed.end(), reply.begin(), reply.end());
    inCache = r->cached ? int64_t(fed.size()) - 1 : 0;
    Expected<std::string> replyText = tok.decode(reply);
    if (!reply.empty() && reply.back() == chat.endOfTurn)
      reply.pop_back();
    Expected<std::string> content = tok.decode(reply);
    if (!replyText || !content) {
      // Undecodable ids: the next turn runs the whole conversation again.
      fedText.clear();
      messages.push_back({"assistant", ""});
    } else {
      fedText = text + *replyText;
      messages.push_back({"assistant", *content});
    }
    if (r->hitPositionLimit)
      std::fprintf(stderr, "stopped: %s\n", r->stopReason.c_str());
    std::fprintf(stderr,
                 "%s: turn %d: %zu new tokens (stop: %s, %s); %lld tokens run in %.2f ms, "
                 "decode %.2f ms; the conversation holds %zu tokens\n",
                 m.model.c_str(), turn, r->newTokens.size(),
                 r->hitPositionLimit ? "position limit" : r->stopReason.c_str(),
                 r->cached ? "KV cache" : "re-running the prefix", (long long)r->promptTokens,
                 r->prefillMs, r->decodeMs, fed.size());
  }
}

} // namespace xfrt
