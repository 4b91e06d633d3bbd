//===- Server.cpp - --serve: the model behind an HTTP API -----------------===//
//
// HttpServer (HttpServer.h) reads requests; its loop thread answers the cheap ones and the
// refusals (onHead), its workers parse the bodies (ServeRequests.h) and wait; the one
// ServeScheduler thread runs the model and hands results back through a shared
// Completion / pending-embeddings state per request.
//
//===----------------------------------------------------------------------===//
#include "xfrt/MessageText.h"
#include "xfrt/Server.h"

#include "xfrt/BatchFile.h"
#include "xfrt/Chat.h"
#include "xfrt/HttpServer.h"
#include "xfrt/Json.h"
#include "xfrt/PackedBatch.h"
#include "xfrt/ServeAccess.h"
#include "xfrt/ServeMetrics.h"
#include "xfrt/ServeRequests.h"
#include "xfrt/ServeScheduler.h"
#include "xfrt/TextStream.h"

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <pthread.h>
#include <unistd.h>

namespace xfrt {
namespace {

// After SIGINT/SIGTERM, how long running requests may take to finish.
constexpr int kDrainSeconds = 60;
// After the drain, how long stopping may take before the process ends regardless.
constexpr int kStopSeconds = 30;
// Connections open at once, and complete requests waiting for a worker (503 beyond).
constexpr size_t kMaxConnections = 256;
constexpr size_t kMaxQueuedRequests = 64;
// Requests the scheduler may hold beyond its places: more than the workers can hand it.
constexpr size_t kMaxScheduledRequests = 1024;
// How often a worker waiting for the model looks whether its client is still there.
constexpr std::chrono::milliseconds kClientCheck{50};

std::string errorJson(const std::string &message, const char *type,
                      const std::string &param = "") {
  return "{\"error\": {\"message\": " + quoteJson(validUtf8(message)) + ", \"type\": \"" + type +
         "\", \"param\": " + (param.empty() ? "null" : quoteJson(param)) + ", \"code\": null}}";
}

HttpResponse errorResponse(int status, const std::string &message,
                           const std::string &param = "") {
  HttpResponse res;
  res.status = status;
  const char *type = status == 503   ? "server_busy"
                     : status >= 500 ? "server_error"
                     : status == 404 ? "not_found_error"
                     : status == 401 ? "authentication_error"
                     : status == 403 ? "permission_error"
                                     : "invalid_request_error";
  res.body = errorJson(message, type, param) + "\n";
  if (status == 503)
    res.headers.emplace_back("Retry-After", "1");
  return res;
}

HttpResponse jsonResponse(std::string body) {
  HttpResponse res;
  res.body = std::move(body);
  return res;
}

std::string idList(const std::vector<int32_t> &ids, size_t from = 0) {
  std::string out = "[";
  for (size_t i = from; i < ids.size(); ++i)
    out += (i > from ? "," : "") + std::to_string(ids[i]);
  return out + "]";
}

// One completion's results, filled by the scheduler thread and read by its connection thread.
struct Completion {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int32_t> ids; // new tokens so far
  bool done = false;
  std::string error;      // set with done when the model failed
  std::string finish;     // "stop" (eos) or "length"
  std::atomic<bool> cancelled{false}; // the client went away
};

// The access log (--access-log): one JSON object per line, written whole under a lock.
class AccessLog {
public:
  explicit AccessLog(const std::string &path) {
    if (path.empty())
      return;
    file_ = path == "-" ? stderr : std::fopen(path.c_str(), "a");
    if (!file_)
      error_ = "--access-log: cannot open '" + path + "': " + std::strerror(errno);
  }
  ~AccessLog() {
    if (file_ && file_ != stderr)
      std::fclose(file_);
  }
  const std::string &error() const { return error_; }
  bool enabled() const { return file_ != nullptr; }
  void write(const HttpAccessRecord &r) {
    char when[32];
    std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &utc);
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.6f", r.seconds);
    std::string line = std::string("{\"time\": \"") + when + "\", \"peer\": " +
                       quoteJson(r.peer) + ", \"method\": " + quoteJson(validUtf8(r.method)) +
                       ", \"path\": " + quoteJson(validUtf8(r.path.substr(0, 256))) +
                       ", \"status\": " + std::to_string(r.status) +
                       ", \"bytes_in\": " + std::to_string(r.bytesIn) +
                       ", \"bytes_out\": " + std::to_string(r.bytesOut) +
                       ", \"seconds\": " + seconds + "}\n";
    std::lock_guard<std::mutex> lock(mutex_);
    std::fputs(line.c_str(), file_);
    std::fflush(file_);
  }

private:
  std::FILE *file_ = nullptr;
  std::string error_;
  std::mutex mutex_;
};

std::string apiKeyOf(const Options &o) {
  if (!o.apiKey.empty())
    return o.apiKey;
  const char *env = std::getenv("XF_API_KEY");
  return env ? env : "";
}

class Server {
public:
  Server(const Options &o, const Manifest &m, Session &session, const LoadedTokenizer &tok,
         std::optional<ChatSetup> chat, std::string noChat)
      : o_(o), m_(m), tok_(tok.tokenizer.get()), chat_(std::move(chat)), noChat_(std::move(noChat)),
        places_(o.batchSize > 0 ? o.batchSize : kDefaultBatchChunk),
        scheduler_(session, serveConfig(o)),
        access_(apiKeyOf(o), isLoopbackHost(o.host), o.allowedOrigins), log_(o.accessLog),
        http_(httpOptions(), [this](const HttpRequest &head) { return onHead(head); },
              [this](HttpExchange &exchange) { onRequest(exchange); }) {
    limits_.vocab = m.vocab;
    limits_.maxRequestTokens = o.maxRequestTokens > 0 ? o.maxRequestTokens
                                                      : kDefaultMaxRequestTokens;
    limits_.tokenizer = tok_;
    limits_.bos = tok.bos;
    if (m.outputIsLogits) {
      limits_.maxTokens = scheduler_.positionLimit();
      if (o.maxContext)
        limits_.maxTokensName = "--max-context's";
      limits_.kvBlockBytes = scheduler_.kvBlockBytes();
      limits_.kvMemoryBytes = int64_t(o.kvMemory);
      defaults_.maxTokens = o.maxNewTokens > 0 ? o.maxNewTokens : 16;
      defaults_.sampling = o.sampling;
      defaults_.seed = o.samplingSeed;
      if (o.eos)
        eos_ = int32_t(*o.eos);
      else if (!o.noEos && tok_)
        if (std::optional<int32_t> end = tok_->endOfText(); end && *end < m.vocab)
          eos_ = *end;
      if (chat_) // a reply ends at the end-of-turn token, as --chat's
        chatEos_ = o.eos ? std::optional<int32_t>(int32_t(*o.eos))
                   : o.noEos ? std::nullopt
                             : std::optional<int32_t>(chat_->endOfTurn);
    } else {
      limits_.maxTokens = m.maxPositions > 0 ? m.maxPositions : kMaxTokensWithoutLimit;
    }
    created_ = int64_t(std::time(nullptr));
  }

  int run();

private:
  static ServeConfig serveConfig(const Options &o) {
    ServeConfig c;
    c.places = o.batchSize > 0 ? o.batchSize : kDefaultBatchChunk;
    c.maxContext = o.maxContext;
    c.stepTokens = o.stepTokens > 0 ? o.stepTokens : kDefaultStepTokens;
    c.kvMemoryBytes = int64_t(o.kvMemory);
    c.pool = o.pool;
    c.normalize = o.normalize;
    c.maxQueued = kMaxScheduledRequests;
    return c;
  }
  HttpServerOptions httpOptions() {
    HttpServerOptions h;
    h.limits.maxBody = kMaxServeBodyBytes;
    if (o_.requestTimeout > 0)
      h.requestTimeout = std::chrono::seconds(o_.requestTimeout);
    // One worker per client decoding at once, and some to spare for the rest.
    h.workers = size_t(std::min<int64_t>(places_, 1024)) + 16;
    h.maxConnections = kMaxConnections;
    h.maxQueued = kMaxQueuedRequests;
    h.accessLog = [this](const HttpAccessRecord &r) {
      metrics_.request(r.status, r.seconds);
      if (log_.enabled())
        log_.write(r);
    };
    return h;
  }
  // The loop thread's part: access checks, cheap endpoints, refusals (HttpServer.h).
  std::optional<HttpResponse> onHead(const HttpRequest &head);
  std::optional<HttpResponse> routeHead(const HttpRequest &head);
  HttpResponse preflight(const HttpRequest &head);
  std::string metricsText();
  // A worker's part: the POST endpoints.
  void onRequest(HttpExchange &exchange);
  // POST /v1/completions, or /v1/chat/completions with `chat`.
  void completions(HttpExchange &exchange, bool chat);
  void embeddings(HttpExchange &exchange);
  template <typename Abandoned>
  void streamCompletion(HttpExchange &exchange, const std::shared_ptr<Completion> &state,
                        const std::string &id, int64_t promptTokens, bool chat,
                        std::optional<int32_t> hidden, Abandoned abandoned);
  // `res` with Access-Control-Allow-Origin when the request's Origin is allowed.
  HttpResponse withOrigin(const HttpExchange &exchange, HttpResponse res) const;
  // A whole response, or a stream event (`event`: "first" or "next" for chat's deltas, "" for
  // a whole response); completionTokens < 0 leaves out usage.
  std::string completionJson(bool chat, const char *event, const std::string &id,
                             const std::string &text, const std::vector<int32_t> &ids,
                             const char *finish, int64_t promptTokens, int64_t completionTokens);
  void shutdownOnSignal();

  // Counts a request from its first byte handled to its last byte sent.
  struct InFlight {
    explicit InFlight(std::atomic<int> &n) : n_(n) { ++n_; }
    ~InFlight() { --n_; }
    std::atomic<int> &n_;
  };

  const Options &o_;
  const Manifest &m_;
  const Tokenizer *tok_;
  ServeLimits limits_;
  CompletionDefaults defaults_;
  std::optional<int32_t> eos_;
  std::optional<ChatSetup> chat_; // the chat template, when the tokenizer has one
  std::string noChat_;            // why not, otherwise
  std::optional<int32_t> chatEos_;
  int64_t places_;
  ServeScheduler scheduler_;
  ServeAccess access_;
  ServeMetrics metrics_;
  AccessLog log_;
  HttpServer http_;
  std::atomic<bool> draining_{false}, finished_{false};
  std::atomic<int> inFlight_{0};
  std::atomic<int64_t> nextId_{0};
  int64_t created_ = 0;
};

std::optional<HttpResponse> Server::onHead(const HttpRequest &head) {
  if (std::optional<AccessRefusal> no = access_.checkPeer(head))
    return errorResponse(no->status, no->message);
  std::optional<HttpResponse> res = routeHead(head);
  if (res) // a browser allowed to ask may read the answer
    if (std::string origin = access_.allowedOrigin(head); !origin.empty()) {
      res->headers.emplace_back("Access-Control-Allow-Origin", origin);
      res->headers.emplace_back("Vary", "Origin");
    }
  return res;
}

bool isPostEndpoint(const std::string &path) {
  return path == "/v1/completions" || path == "/v1/chat/completions" || path == "/v1/embeddings";
}

std::optional<HttpResponse> Server::routeHead(const HttpRequest &head) {
  const std::string &path = head.path;
  bool get = head.method == "GET" || head.method == "HEAD";
  if (head.method == "OPTIONS")
    return preflight(head);
  if (path == "/health" || path == "/ready") {
    if (!get)
      return errorResponse(405, "use GET");
    ServeScheduler::Load l = scheduler_.load();
    if (path == "/ready" && draining_)
      return errorResponse(503, "the server is shutting down");
    if (path == "/ready")
      return jsonResponse("{\"status\": \"ready\"}\n");
    auto n = [](int64_t v) { return std::to_string(v); };
    return jsonResponse(
        "{\"status\": \"" + std::string(draining_ ? "stopping" : "ok") +
        "\", \"running\": " + n(int64_t(l.running)) + ", \"waiting\": " +
        n(int64_t(l.waiting)) + ", \"tokens\": " + n(l.decode.tokens) + ", \"steps\": " +
        n(l.decode.steps) + ", \"max_step_rows\": " + n(l.decode.maxStepRows) +
        ", \"cancelled\": " + n(l.decode.cancelled + l.embeddingsCancelled) +
        ", \"kv_block_bytes\": " + n(l.kv.blockBytes) + ", \"kv_blocks_in_use\": " +
        n(l.kv.blocksInUse) + ", \"kv_blocks_reserved\": " + n(l.kv.blocksReserved) +
        ", \"kv_blocks_reserved_peak\": " + n(l.kv.peakBlocksReserved) +
        ", \"max_running\": " + n(l.decode.maxActive) + ", \"kv_blocks_budget\": " +
        n(l.kv.budgetBlocks) + ", \"embedding_calls\": " + n(l.embeddingCalls) +
        ", \"embedded_inputs\": " + n(l.embeddedInputs) +
        ", \"max_embedding_call_tokens\": " + n(l.maxEmbeddingCallTokens) + "}\n");
  }
  bool known = path == "/metrics" || path == "/v1/models" || isPostEndpoint(path);
  if (!known)
    return errorResponse(404, "no such endpoint");
  if (std::optional<AccessRefusal> no = access_.checkKey(head)) {
    HttpResponse res = errorResponse(no->status, no->message);
    res.headers.emplace_back("WWW-Authenticate", "Bearer");
    return res;
  }
  if (!isPostEndpoint(path)) {
    if (!get) {
      HttpResponse res = errorResponse(405, "use GET");
      res.headers.emplace_back("Allow", "GET");
      return res;
    }
    if (path == "/metrics") {
      HttpResponse res = jsonResponse(metricsText());
      res.contentType = "text/plain; version=0.0.4";
      return res;
    }
    return jsonResponse("{\"object\": \"list\", \"data\": [{\"id\": " + quoteJson(m_.model) +
                        ", \"object\": \"model\", \"created\": " + std::to_string(created_) +
                        ", \"owned_by\": \"xf\"}]}\n");
  }
  if (head.method != "POST") {
    HttpResponse res = errorResponse(405, "use POST");
    res.headers.emplace_back("Allow", "POST");
    return res;
  }
  if (std::optional<AccessRefusal> no = ServeAccess::checkJson(head))
    return errorResponse(no->status, no->message);
  bool embeddings = path == "/v1/embeddings";
  if (embeddings && m_.outputIsLogits)
    return errorResponse(404, "model '" + m_.model + "' outputs logits: it serves "
                              "/v1/completions, not embeddings");
  if (!embeddings && !m_.outputIsLogits)
    return errorResponse(404, "model '" + m_.model + "' outputs hidden states: it serves "
                              "/v1/embeddings, not completions");
  if (path == "/v1/chat/completions" && !chat_)
    return errorResponse(404, noChat_);
  if (draining_)
    return errorResponse(503, "the server is shutting down");
  return std::nullopt; // read the body; a worker serves it
}

// CORS preflight: allowed origins may POST JSON with a key.
HttpResponse Server::preflight(const HttpRequest &head) {
  if (access_.allowedOrigin(head).empty())
    return errorResponse(403, "cross-origin requests need an allowed Origin");
  HttpResponse res;
  res.status = 204;
  res.headers = {{"Access-Control-Allow-Methods", "GET, POST"},
                 {"Access-Control-Allow-Headers", "Content-Type, Authorization"},
                 {"Access-Control-Max-Age", "600"}};
  return res;
}

std::string Server::metricsText() {
  ServeScheduler::Load l = scheduler_.load();
  return metrics_.render({
      {"xf_requests_running", "Sequences decoding now.", double(l.running)},
      {"xf_requests_waiting", "Requests waiting for a place in the model's batch.",
       double(l.waiting)},
      {"xf_http_queued", "Complete requests waiting for a worker.", double(http_.queued())},
      {"xf_http_connections", "Connections open.", double(http_.connections())},
      {"xf_requests_in_flight", "Requests being served.", double(inFlight_.load())},
      {"xf_kv_block_bytes", "Bytes of one KV cache block.", double(l.kv.blockBytes)},
      {"xf_kv_blocks_in_use", "KV cache blocks holding positions now.", double(l.kv.blocksInUse)},
      {"xf_kv_blocks_reserved", "KV cache blocks reserved by running sequences.",
       double(l.kv.blocksReserved)},
      {"xf_kv_blocks_budget", "KV cache blocks --kv-memory allows (0: no budget).",
       double(l.kv.budgetBlocks)},
  });
}

void Server::onRequest(HttpExchange &exchange) {
  const std::string &path = exchange.request().path;
  if (path == "/v1/embeddings")
    embeddings(exchange);
  else
    completions(exchange, path == "/v1/chat/completions");
}

std::string Server::completionJson(bool chat, const char *event, const std::string &id,
                                   const std::string &text, const std::vector<int32_t> &ids,
                                   const char *finish, int64_t promptTokens,
                                   int64_t completionTokens) {
  bool chunk = *event != 0;
  std::string out = "{\"id\": \"" + id + "\", \"object\": \"" +
                    (chat ? chunk ? "chat.completion.chunk" : "chat.completion" : "text_completion") +
                    "\", \"created\": " + std::to_string(int64_t(std::time(nullptr))) +
                    ", \"model\": " + quoteJson(m_.model) + ", \"choices\": [{\"index\": 0, ";
  std::string content = quoteJson(validUtf8(text));
  if (!chat)
    out += "\"text\": " + content + ", \"token_ids\": " + idList(ids);
  else if (!chunk)
    out += "\"message\": {\"role\": \"assistant\", \"content\": " + content + "}";
  else if (finish)
    out += "\"delta\": {}";
  else
    out += std::string("\"delta\": {") +
           (std::strcmp(event, "first") == 0 ? "\"role\": \"assistant\", " : "") +
           "\"content\": " + content + "}";
  out += std::string(", \"logprobs\": null, \"finish_reason\": ") +
         (finish ? "\"" + std::string(finish) + "\"" : std::string("null")) + "}]";
  if (completionTokens >= 0)
    out += ", \"usage\": {\"prompt_tokens\": " + std::to_string(promptTokens) +
           ", \"completion_tokens\": " + std::to_string(completionTokens) +
           ", \"total_tokens\": " + std::to_string(promptTokens + completionTokens) + "}";
  return out + "}";
}

HttpResponse Server::withOrigin(const HttpExchange &exchange, HttpResponse res) const {
  if (std::string origin = access_.allowedOrigin(exchange.request()); !origin.empty()) {
    res.headers.emplace_back("Access-Control-Allow-Origin", origin);
    res.headers.emplace_back("Vary", "Origin");
  }
  return res;
}

// Waits until `done()` (under `lock`), looking every kClientCheck whether the client is still
// there; false once it is gone.
template <typename Done>
bool waitForClient(std::unique_lock<std::mutex> &lock, std::condition_variable &changed,
                   HttpExchange &exchange, Done done) {
  while (!changed.wait_for(lock, kClientCheck, done))
    if (exchange.clientGone())
      return false;
  return true;
}

void Server::completions(HttpExchange &exchange, bool chat) {
  InFlight inFlight(inFlight_);
  if (draining_)
    return exchange.respond(withOrigin(exchange, errorResponse(503, "the server is shutting down")));
  const std::string &body = exchange.request().body;
  CompletionRequest request;
  if (std::optional<RequestError> e =
          chat ? parseChatRequest(body, limits_, defaults_, chat_->chatTemplate, request)
               : parseCompletionRequest(body, limits_, defaults_, request))
    return exchange.respond(withOrigin(exchange, errorResponse(e->status, e->message, e->param)));
  // A reply's end-of-turn token is not part of its text (as --chat prints it).
  std::optional<int32_t> hidden;
  if (chat && chatEos_ && *chatEos_ == chat_->endOfTurn)
    hidden = chat_->endOfTurn;

  auto state = std::make_shared<Completion>();
  BatchRequest batch;
  batch.prompt = request.prompt;
  batch.options.maxNewTokens = request.maxTokens;
  batch.options.sampling = request.sampling;
  batch.options.eos = chat ? chatEos_ : eos_;
  batch.seed = request.seed;
  batch.onToken = [state, this](int32_t id) {
    metrics_.generatedTokens(1);
    std::lock_guard<std::mutex> lock(state->mutex);
    state->ids.push_back(id);
    state->changed.notify_all();
  };
  batch.onDone = [state](const GenerateResult &r) {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->done = true;
    state->finish = r.stopReason == "eos" ? "stop" : "length";
    state->changed.notify_all();
  };
  batch.onError = [state](const Status &s) {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->done = true;
    state->error = s.message();
    state->changed.notify_all();
  };
  batch.cancelled = [state] { return state->cancelled.load(); };
  if (!scheduler_.submit(std::move(batch)))
    return exchange.respond(withOrigin(exchange, errorResponse(503, "the server is busy; try again later")));
  metrics_.promptTokens(int64_t(request.prompt.size()));
  std::string id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(nextId_++);
  int64_t promptTokens = int64_t(request.prompt.size());
  // The client hung up: its sequence leaves the batch at the next step.
  auto abandoned = [&] {
    state->cancelled = true;
    metrics_.cancelled();
    exchange.abandon();
  };

  if (!request.stream) {
    std::unique_lock<std::mutex> lock(state->mutex);
    if (!waitForClient(lock, state->changed, exchange, [&] { return state->done; }))
      return abandoned();
    if (!state->error.empty())
      return exchange.respond(withOrigin(exchange, errorResponse(500, state->error)));
    std::string text;
    if (tok_) {
      TextStream stream(tok_, [&](const char *b, size_t n) { text.append(b, n); });
      for (int32_t t : state->ids)
        if (t != hidden)
          stream.add(t);
      stream.finish();
    }
    return exchange.respond(withOrigin(
        exchange, jsonResponse(completionJson(chat, "", id, text, state->ids,
                                              state->finish.c_str(), promptTokens,
                                              int64_t(state->ids.size())) +
                               "\n")));
  }
  streamCompletion(exchange, state, id, promptTokens, chat, hidden, abandoned);
}

// Server-sent events: one event per new token, a last one with finish_reason and usage, then
// "data: [DONE]". A failed write, or a client seen gone while waiting, drops the sequence.
template <typename Abandoned>
void Server::streamCompletion(HttpExchange &exchange, const std::shared_ptr<Completion> &state,
                              const std::string &id, int64_t promptTokens, bool chat,
                              std::optional<int32_t> hidden, Abandoned abandoned) {
  std::string pending; // text decoded but not yet sent
  std::unique_ptr<TextStream> text;
  if (tok_)
    text = std::make_unique<TextStream>(
        tok_, [&pending](const char *b, size_t n) { pending.append(b, n); });
  HttpResponse head;
  head.contentType = "text/event-stream";
  head.headers.emplace_back("Cache-Control", "no-cache");
  if (!exchange.startStream(withOrigin(exchange, head)))
    return abandoned();
  auto send = [&](const std::string &event) {
    return exchange.writeChunk("data: " + event + "\n\n");
  };
  size_t sent = 0;
  int events = 0; // token events sent
  for (;;) {
    std::vector<int32_t> fresh;
    bool done;
    std::string error, finish;
    {
      std::unique_lock<std::mutex> lock(state->mutex);
      if (!waitForClient(lock, state->changed, exchange,
                         [&] { return state->done || state->ids.size() > sent; }))
        return abandoned();
      fresh.assign(state->ids.begin() + long(sent), state->ids.end());
      sent = state->ids.size();
      done = state->done;
      error = state->error;
      finish = state->finish;
    }
    for (int32_t t : fresh) {
      if (t == hidden) // the end-of-turn token: no event of its own
        continue;
      if (text)
        text->add(t);
      std::string piece = std::move(pending);
      pending.clear();
      const char *event = events++ == 0 ? "first" : "next";
      if (!send(completionJson(chat, event, id, piece, {t}, nullptr, promptTokens, -1)))
        return abandoned();
    }
    if (!done)
      continue;
    if (!error.empty()) {
      send(errorJson(error, "server_error"));
    } else {
      if (text)
        text->finish();
      std::string rest = std::move(pending);
      // The last event carries no new token; its usage counts them all.
      if (chat && !rest.empty() && // a chat's last event has an empty delta
          !send(completionJson(chat, events++ == 0 ? "first" : "next", id, rest, {}, nullptr,
                               promptTokens, -1)))
        return;
      if (!send(completionJson(chat, "last", id, chat ? "" : rest, {}, finish.c_str(),
                               promptTokens, int64_t(sent))))
        return;
    }
    if (send("[DONE]"))
      exchange.endStream();
    return;
  }
}

void Server::embeddings(HttpExchange &exchange) {
  InFlight inFlight(inFlight_);
  if (draining_)
    return exchange.respond(withOrigin(exchange, errorResponse(503, "the server is shutting down")));
  EmbeddingRequest request;
  if (std::optional<RequestError> e =
          parseEmbeddingRequest(exchange.request().body, limits_, request))
    return exchange.respond(withOrigin(exchange, errorResponse(e->status, e->message, e->param)));
  struct Result {
    std::mutex mutex;
    std::condition_variable ready;
    bool done = false;
    Status status;
    std::vector<float> vectors;
  };
  auto result = std::make_shared<Result>();
  EmbeddingJob job;
  size_t n = request.inputs.size();
  job.inputs = std::move(request.inputs);
  auto gone = std::make_shared<std::atomic<bool>>(false);
  job.cancelled = [gone] { return gone->load(); };
  job.done = [result](const Status &s, std::vector<float> v) {
    std::lock_guard<std::mutex> lock(result->mutex);
    result->done = true;
    result->status = s;
    result->vectors = std::move(v);
    result->ready.notify_all();
  };
  if (!scheduler_.submit(std::move(job)))
    return exchange.respond(withOrigin(exchange, errorResponse(503, "the server is busy; try again later")));
  metrics_.embeddedInputs(int64_t(n));
  std::unique_lock<std::mutex> lock(result->mutex);
  if (!waitForClient(lock, result->ready, exchange, [&] { return result->done; })) {
    *gone = true; // the scheduler drops the job before its next packed pass
    metrics_.cancelled();
    return exchange.abandon();
  }
  if (!result->status)
    return exchange.respond(withOrigin(exchange, errorResponse(500, result->status.message())));
  std::string out = "{\"object\": \"list\", \"data\": [";
  for (size_t i = 0; i < n; ++i) {
    out += (i ? ", " : "") + std::string("{\"object\": \"embedding\", \"index\": ") +
           std::to_string(i) + ", \"embedding\": [";
    for (int64_t k = 0; k < m_.dOut; ++k) {
      if (k)
        out += ",";
      appendJsonFloat(out, result->vectors[i * size_t(m_.dOut) + size_t(k)]);
    }
    out += "]}";
  }
  out += "], \"model\": " + quoteJson(m_.model) + ", \"usage\": {\"prompt_tokens\": " +
         std::to_string(request.tokens) + ", \"total_tokens\": " +
         std::to_string(request.tokens) + "}}\n";
  exchange.respond(withOrigin(exchange, jsonResponse(std::move(out))));
}

// SIGINT/SIGTERM (blocked in every thread, taken here): stop taking requests, let the running
// ones finish (at most kDrainSeconds; a second signal cuts that short: the unfinished ones end
// with a 500 error, or an error event when streamed), then stop listening.
void Server::shutdownOnSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  timespec tick{0, 100 * 1000 * 1000};
  while (!finished_) {
    int sig = sigtimedwait(&set, nullptr, &tick);
    if (sig != SIGINT && sig != SIGTERM)
      continue;
    draining_ = true;
    std::fprintf(stderr, "%s: shutting down (signal %d): finishing %d request(s)\n",
                 m_.model.c_str(), sig, inFlight_.load());
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kDrainSeconds);
    while (inFlight_ > 0 && std::chrono::steady_clock::now() < deadline)
      if (int again = sigtimedwait(&set, nullptr, &tick); again == SIGINT || again == SIGTERM)
        break;
    if (inFlight_ > 0) {
      std::fprintf(stderr, "%s: ending %d unfinished request(s)\n", m_.model.c_str(),
                   inFlight_.load());
      scheduler_.abandon("the server is shutting down");
    }
    http_.stop();
    // Stopping closes every connection and joins every thread; should anything still hold
    // on (a kernel call that runs for minutes), the process ends regardless.
    auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(kStopSeconds);
    while (!finished_ && std::chrono::steady_clock::now() < limit)
      if (int again = sigtimedwait(&set, nullptr, &tick); again == SIGINT || again == SIGTERM)
        break;
    if (!finished_) {
      std::fprintf(stderr, "%s: not stopped within %d s of the signal's drain; exiting\n",
                   m_.model.c_str(), kStopSeconds);
      std::fflush(stderr);
      _exit(1);
    }
    return;
  }
}

int Server::run() {
  if (!log_.error().empty()) {
    std::fprintf(stderr, "error: %s\n", printableMessage(log_.error()).c_str());
    return 1;
  }
  int port = 0;
  if (std::optional<std::string> e = http_.bind(o_.host, o_.port, port)) {
    std::fprintf(stderr, "error: --serve: cannot listen on %s:%d (%s)\n",
                 printableMessage(o_.host).c_str(), o_.port, printableMessage(*e).c_str());
    return 1;
  }
  std::string endpoints = !m_.outputIsLogits ? "POST /v1/embeddings"
                          : chat_ ? "POST /v1/completions and /v1/chat/completions (" +
                                        std::string(chatFormatName(chat_->chatTemplate.format)) +
                                        ")"
                                  : "POST /v1/completions";
  std::fprintf(stderr, "%s: serving %s on http://%s:%d (up to %lld sequences together)\n",
               m_.model.c_str(), endpoints.c_str(), o_.host.c_str(), port,
               (long long)(o_.batchSize > 0 ? o_.batchSize : kDefaultBatchChunk));
  std::fflush(stderr);
  std::thread signals([this] { shutdownOnSignal(); });
  bool ok = http_.run();
  finished_ = true;
  signals.join();
  scheduler_.stop();
  ServeScheduler::Load l = scheduler_.load();
  if (m_.outputIsLogits)
    std::fprintf(stderr,
                 "%s: stopped; %lld tokens generated in %lld steps, up to %lld sequences "
                 "together; decode %.1f tokens/s\n",
                 m_.model.c_str(), (long long)l.decode.tokens, (long long)l.decode.steps,
                 (long long)l.decode.maxActive,
                 l.decode.decodeMs > 0 ? 1e3 * double(l.decode.decodeTokens) / l.decode.decodeMs
                                       : 0.0);
  else
    std::fprintf(stderr, "%s: stopped; %lld inputs embedded in %lld packed calls\n",
                 m_.model.c_str(), (long long)l.embeddedInputs, (long long)l.embeddingCalls);
  return ok ? 0 : 1;
}

} // namespace

int runServer(const Options &o, const Manifest &m, const ModelAbi &abi, WeightSet &weights,
              const LoadedTokenizer &tokenizer) {
  if (m.encoderDecoder) {
    std::fprintf(stderr, "error: --serve: model '%s' is an encoder-decoder\n", m.model.c_str());
    return 1;
  }
  // Signals are taken by one thread (Server::shutdownOnSignal); every thread started from here
  // on inherits the mask. A write to a closed connection fails instead of killing the process.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  Expected<Session> session = Session::create(m, abi, weights);
  if (!session) {
    std::fprintf(stderr, "error: %s\n", printableMessage(session.message()).c_str());
    return 1;
  }
  session->releaseUnreadParameters(weights);
  if (m.outputIsLogits && !session->canPackCached()) {
    std::fprintf(stderr, "error: --serve: decoder '%s' has no xf_forward_cached_packed (rebuild "
                 "it with this xfc)\n", m.model.c_str());
    return 1;
  }
  // Chat completions need a chat template: --chat-template, else the tokenizer's own.
  std::optional<ChatSetup> chat;
  std::string noChat = "model '" + m.model + "' has no chat template: /v1/chat/completions needs a "
                       "tokenizer with tokenizer.chat_template, or --chat-template";
  if (m.outputIsLogits && tokenizer.tokenizer &&
      (!o.chatTemplate.empty() || tokenizer.chatTemplate)) {
    Expected<ChatSetup> setup = chatSetup(o, tokenizer, m);
    if (!setup && !o.chatTemplate.empty()) {
      std::fprintf(stderr, "error: %s\n", printableMessage(setup.message()).c_str());
      return 1;
    }
    if (setup)
      chat = setup.take();
    else
      noChat = setup.message();
  }
  Server server(o, m, *session, tokenizer, std::move(chat), std::move(noChat));
  return server.run();
}

} // namespace xfrt

// libxfrt_serve.so's entry point (Server.h): the only symbol the library exports.
extern "C" __attribute__((visibility("default"))) int
xfrt_serve_library_run(const char *identity, const xfrt::Options *options,
                       const xfrt::Manifest *manifest, const xfrt::ModelAbi *abi,
                       xfrt::WeightSet *weights, const xfrt::LoadedTokenizer *tokenizer,
                       const xfrt::DeviceLinks *links) {
  if (identity != xfrt::serveLibraryIdentity()) {
    std::fprintf(stderr, "error: --serve: libxfrt_serve.so was built from other runtime sources "
                         "than this executable (rebuild the executable with the xfc of that "
                         "build, or point XF_SERVE_LIBRARY at the matching library)\n");
    return 1;
  }
  // A CUDA build's kernels, device memory, graphs and Halide errors are the executable's.
  if (manifest->cuda && links)
    xfrt::useDeviceLinks(*links);
  return xfrt::runServer(*options, *manifest, *abi, *weights, *tokenizer);
}
