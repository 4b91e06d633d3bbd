//===- Server.cpp - --serve: the model behind an HTTP API -----------------===//
//
// cpp-httplib's connection threads parse requests (ServeRequests.h) and wait; the one
// ServeScheduler thread runs the model and hands results back through a shared
// Completion / pending-embeddings state per request.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Server.h"

#include "xfrt/BatchFile.h"
#include "xfrt/Chat.h"
#include "xfrt/Json.h"
#include "xfrt/PackedBatch.h"
#include "xfrt/ServeRequests.h"
#include "xfrt/ServeScheduler.h"
#include "xfrt/TextStream.h"

#include <httplib.h>

#include <arpa/inet.h>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <memory>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

namespace xfrt {
namespace {

// Requests waiting for a place, beyond which the server answers 503.
constexpr size_t kMaxQueuedRequests = 1024;
// After SIGINT/SIGTERM, how long running requests may take to finish.
constexpr int kDrainSeconds = 60;

std::string errorJson(const std::string &message, const char *type,
                      const std::string &param = "") {
  return "{\"error\": {\"message\": " + quoteJson(validUtf8(message)) + ", \"type\": \"" + type +
         "\", \"param\": " + (param.empty() ? "null" : quoteJson(param)) + ", \"code\": null}}";
}

void sendError(httplib::Response &res, int status, const std::string &message,
               const std::string &param = "") {
  res.status = status;
  const char *type = status == 503 ? "server_busy"
                     : status >= 500 ? "server_error"
                     : status == 404 ? "not_found_error"
                                     : "invalid_request_error";
  res.set_content(errorJson(message, type, param) + "\n", "application/json");
}

std::string idList(const std::vector<int32_t> &ids, size_t from = 0) {
  std::string out = "[";
  for (size_t i = from; i < ids.size(); ++i)
    out += (i > from ? "," : "") + std::to_string(ids[i]);
  return out + "]";
}

// The socket of the connection `req` came on: cpp-httplib 0.11 does not hand it to a handler,
// so it is found among the process's descriptors by the request's two addresses (the
// connection's thread holds it open until the handler returns). -1 when not found.
int connectionSocket(const httplib::Request &req) {
  DIR *dir = ::opendir("/proc/self/fd");
  if (!dir)
    return -1;
  auto matches = [](const sockaddr_storage &a, const std::string &addr, int port) {
    char text[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
      auto *in = reinterpret_cast<const sockaddr_in *>(&a);
      ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
      return ntohs(in->sin_port) == port && addr == text;
    }
    if (a.ss_family == AF_INET6) {
      auto *in = reinterpret_cast<const sockaddr_in6 *>(&a);
      ::inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof text);
      return ntohs(in->sin6_port) == port && addr == text;
    }
    return false;
  };
  int found = -1;
  while (dirent *e = ::readdir(dir)) {
    char *end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (*e->d_name == '.' || *end || fd == ::dirfd(dir))
      continue;
    sockaddr_storage peer{}, self{};
    socklen_t n = sizeof peer, m = sizeof self;
    if (::getpeername(int(fd), reinterpret_cast<sockaddr *>(&peer), &n) != 0 ||
        !matches(peer, req.remote_addr, req.remote_port))
      continue;
    if (req.local_port >= 0 &&
        (::getsockname(int(fd), reinterpret_cast<sockaddr *>(&self), &m) != 0 ||
         !matches(self, req.local_addr, req.local_port)))
      continue;
    found = int(fd);
    break;
  }
  ::closedir(dir);
  return found;
}

// Whether the client has closed (or shut down its side of) the connection `fd`.
bool clientHungUp(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  return fd >= 0 && ::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

// How often a connection thread waiting for a whole reply looks for its client's hang-up.
constexpr std::chrono::milliseconds kHangUpPoll{20};

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

class Server {
public:
  Server(const Options &o, const Manifest &m, Session &session, const LoadedTokenizer &tok,
         std::optional<ChatSetup> chat, std::string noChat)
      : o_(o), m_(m), tok_(tok.tokenizer.get()), chat_(std::move(chat)), noChat_(std::move(noChat)),
        scheduler_(session, serveConfig(o)) {
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
    routes();
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
    c.maxQueued = kMaxQueuedRequests;
    return c;
  }
  void routes();
  // POST /v1/completions, or /v1/chat/completions with `chat`.
  void completions(const httplib::Request &req, httplib::Response &res, bool chat);
  void embeddings(const httplib::Request &req, httplib::Response &res);
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
  ServeScheduler scheduler_;
  httplib::Server http_;
  std::atomic<bool> draining_{false}, finished_{false};
  std::atomic<int> inFlight_{0};
  std::atomic<int64_t> nextId_{0};
  int64_t created_ = 0;
};

void Server::routes() {
  http_.set_payload_max_length(kMaxServeBodyBytes);
  http_.set_read_timeout(30);
  http_.set_write_timeout(30);
  http_.set_keep_alive_max_count(1000);
  // One connection thread per client decoding at once, and some to spare for the rest.
  size_t threads = size_t(std::min<int64_t>(o_.batchSize > 0 ? o_.batchSize : kDefaultBatchChunk,
                                            1024)) + 16;
  http_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // Statuses cpp-httplib sets itself (400 unparsable request, 404, 413) get a JSON body too.
  http_.set_error_handler([](const httplib::Request &, httplib::Response &res) {
    if (!res.body.empty())
      return;
    std::string what = res.status == 404   ? "no such endpoint"
                       : res.status == 413 ? "the request body is larger than " +
                                                 std::to_string(kMaxServeBodyBytes) + " bytes"
                       : res.status == 414 ? "the request line is too long"
                                           : "bad request";
    sendError(res, res.status, what);
  });
  http_.set_exception_handler(
      [](const httplib::Request &, httplib::Response &res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception &e) {
          what += std::string(": ") + e.what();
        } catch (...) {
        }
        sendError(res, 500, what);
      });
  http_.Get("/health", [this](const httplib::Request &, httplib::Response &res) {
    ServeScheduler::Load l = scheduler_.load();
    auto n = [](int64_t v) { return std::to_string(v); };
    res.set_content(
        "{\"status\": \"" + std::string(draining_ ? "stopping" : "ok") +
            "\", \"running\": " + n(int64_t(l.running)) + ", \"waiting\": " +
            n(int64_t(l.waiting)) + ", \"tokens\": " + n(l.decode.tokens) + ", \"steps\": " +
            n(l.decode.steps) + ", \"max_step_rows\": " + n(l.decode.maxStepRows) +
            ", \"cancelled\": " + n(l.decode.cancelled + l.embeddingsCancelled) +
            ", \"kv_block_bytes\": " + n(l.kv.blockBytes) + ", \"kv_blocks_in_use\": " +
            n(l.kv.blocksInUse) + ", \"kv_blocks_reserved\": " + n(l.kv.blocksReserved) +
            ", \"kv_blocks_reserved_peak\": " + n(l.kv.peakBlocksReserved) +
            ", \"max_running\": " + n(l.decode.maxActive) +
            ", \"kv_blocks_budget\": " + n(l.kv.budgetBlocks) + ", \"embedding_calls\": " +
            n(l.embeddingCalls) + ", \"embedded_inputs\": " + n(l.embeddedInputs) +
            ", \"max_embedding_call_tokens\": " + n(l.maxEmbeddingCallTokens) + "}\n",
        "application/json");
  });
  http_.Get("/v1/models", [this](const httplib::Request &, httplib::Response &res) {
    res.set_content("{\"object\": \"list\", \"data\": [{\"id\": " + quoteJson(m_.model) +
                        ", \"object\": \"model\", \"created\": " + std::to_string(created_) +
                        ", \"owned_by\": \"xf\"}]}\n",
                    "application/json");
  });
  for (const char *path : {"/v1/completions", "/v1/chat/completions", "/v1/embeddings"})
    http_.Get(path, [](const httplib::Request &, httplib::Response &res) {
      res.set_header("Allow", "POST");
      sendError(res, 405, "use POST");
    });
  http_.Post("/v1/completions", [this](const httplib::Request &req, httplib::Response &res) {
    completions(req, res, false);
  });
  http_.Post("/v1/chat/completions",
             [this](const httplib::Request &req, httplib::Response &res) {
               completions(req, res, true);
             });
  http_.Post("/v1/embeddings", [this](const httplib::Request &req, httplib::Response &res) {
    embeddings(req, res);
  });
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

void Server::completions(const httplib::Request &req, httplib::Response &res, bool chat) {
  if (!m_.outputIsLogits)
    return sendError(res, 404, "model '" + m_.model + "' outputs hidden states: it serves "
                               "/v1/embeddings, not completions");
  if (chat && !chat_)
    return sendError(res, 404, noChat_);
  if (draining_)
    return sendError(res, 503, "the server is shutting down");
  CompletionRequest request;
  if (std::optional<RequestError> e =
          chat ? parseChatRequest(req.body, limits_, defaults_, chat_->chatTemplate, request)
               : parseCompletionRequest(req.body, limits_, defaults_, request))
    return sendError(res, e->status, e->message, e->param);
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
  batch.onToken = [state](int32_t id) {
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
  auto inFlight = std::make_shared<InFlight>(inFlight_);
  if (!scheduler_.submit(std::move(batch)))
    return sendError(res, 503, "the server is busy: " + std::to_string(kMaxQueuedRequests) +
                               " requests are waiting; try again later");
  std::string id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(nextId_++);
  int64_t promptTokens = int64_t(request.prompt.size());

  if (!request.stream) {
    // A client that hangs up cancels its sequence (the scheduler drops it at its next step).
    int socket = connectionSocket(req);
    std::unique_lock<std::mutex> lock(state->mutex);
    while (!state->changed.wait_for(lock, kHangUpPoll, [&] { return state->done; }))
      if (!state->cancelled && clientHungUp(socket))
        state->cancelled = true;
    if (!state->error.empty())
      return sendError(res, 500, state->error);
    std::string text;
    if (tok_) {
      TextStream stream(tok_, [&](const char *b, size_t n) { text.append(b, n); });
      for (int32_t t : state->ids)
        if (t != hidden)
          stream.add(t);
      stream.finish();
    }
    res.set_content(completionJson(chat, "", id, text, state->ids, state->finish.c_str(),
                                   promptTokens, int64_t(state->ids.size())) + "\n",
                    "application/json");
    return;
  }

  // Server-sent events: one event per new token, a last one with finish_reason and usage,
  // then "data: [DONE]". A failed write means the client went away: its sequence is dropped.
  struct Stream {
    size_t sent = 0;
    int events = 0;   // token events sent
    std::string pending; // text decoded but not yet sent
    std::unique_ptr<TextStream> text;
  };
  auto stream = std::make_shared<Stream>();
  if (tok_)
    stream->text = std::make_unique<TextStream>(
        tok_, [s = stream.get()](const char *b, size_t n) { s->pending.append(b, n); });
  res.set_header("Cache-Control", "no-cache");
  int socket = connectionSocket(req); // the provider runs on this connection's thread
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, state, stream, id, promptTokens, chat, hidden, socket](size_t,
                                                                    httplib::DataSink &sink) {
        std::vector<int32_t> fresh;
        bool done;
        std::string error, finish;
        {
          std::unique_lock<std::mutex> lock(state->mutex);
          // Between tokens (a long prefill) a hang-up is seen by polling, not by a write.
          while (!state->changed.wait_for(lock, kHangUpPoll, [&] {
            return state->done || state->ids.size() > stream->sent;
          }))
            if (clientHungUp(socket)) {
              state->cancelled = true;
              return false;
            }
          fresh.assign(state->ids.begin() + long(stream->sent), state->ids.end());
          stream->sent = state->ids.size();
          done = state->done;
          error = state->error;
          finish = state->finish;
        }
        auto send = [&](const std::string &event) {
          std::string line = "data: " + event + "\n\n";
          if (!sink.write(line.data(), line.size())) {
            state->cancelled = true;
            return false;
          }
          return true;
        };
        for (int32_t t : fresh) {
          if (t == hidden) // the end-of-turn token: no event of its own
            continue;
          if (stream->text)
            stream->text->add(t);
          std::string piece = std::move(stream->pending);
          stream->pending.clear();
          const char *event = stream->events++ == 0 ? "first" : "next";
          if (!send(completionJson(chat, event, id, piece, {t}, nullptr, promptTokens, -1)))
            return false;
        }
        if (!done)
          return true;
        if (!error.empty()) {
          send(errorJson(error, "server_error"));
        } else {
          if (stream->text)
            stream->text->finish();
          std::string rest = std::move(stream->pending);
          std::vector<int32_t> all;
          {
            std::lock_guard<std::mutex> lock(state->mutex);
            all = state->ids;
          }
          // The last event carries no new token; its usage counts them all.
          if (chat && !rest.empty() && // a chat's last event has an empty delta
              !send(completionJson(chat, stream->events++ == 0 ? "first" : "next", id, rest, {},
                                   nullptr, promptTokens, -1)))
            return false;
          std::string last = completionJson(chat, "last", id, chat ? "" : rest, {},
                                            finish.c_str(), promptTokens, int64_t(all.size()));
          if (!send(last))
            return false;
        }
        if (!send("[DONE]"))
          return false;
        sink.done();
        return true;
      },
      [state, inFlight](bool) {
        // Called once the response ends, however it ends: a sequence still running belongs to
        // a client that is gone.
        std::lock_guard<std::mutex> lock(state->mutex);
        if (!state->done)
          state->cancelled = true;
      });
}

void Server::embeddings(const httplib::Request &req, httplib::Response &res) {
  if (m_.outputIsLogits)
    return sendError(res, 404, "model '" + m_.model + "' outputs logits: it serves "
                               "/v1/completions, not embeddings");
  if (draining_)
    return sendError(res, 503, "the server is shutting down");
  InFlight inFlight(inFlight_);
  EmbeddingRequest request;
  if (std::optional<RequestError> e = parseEmbeddingRequest(req.body, limits_, request))
    return sendError(res, e->status, e->message, e->param);
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
    return sendError(res, 503, "the server is busy: " + std::to_string(kMaxQueuedRequests) +
                               " requests are waiting; try again later");
  int socket = connectionSocket(req);
  std::unique_lock<std::mutex> lock(result->mutex);
  while (!result->ready.wait_for(lock, kHangUpPoll, [&] { return result->done; }))
    if (!*gone && clientHungUp(socket))
      *gone = true;
  if (!result->status)
    return sendError(res, 500, result->status.message());
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
  res.set_content(out, "application/json");
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
    return;
  }
}

int Server::run() {
  int port = o_.port;
  if (port == 0) {
    port = http_.bind_to_any_port(o_.host);
    if (port < 0)
      port = 0;
  } else if (!http_.bind_to_port(o_.host, port)) {
    port = 0;
  }
  if (port == 0) {
    std::fprintf(stderr, "error: --serve: cannot listen on %s:%d (in use, or not an address of "
                 "this machine)\n", o_.host.c_str(), o_.port);
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
  bool ok = http_.listen_after_bind();
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
    std::fprintf(stderr, "error: %s\n", session.message().c_str());
    return 1;
  }
  session->releaseUnreadParameters(weights);
  if (m.cuda) { // packed batches read host arrays (docs/gpu.md)
    std::fprintf(stderr, "error: --serve does not run models built with --target cuda yet\n");
    return 1;
  }
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
      std::fprintf(stderr, "error: %s\n", setup.message().c_str());
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
                       xfrt::WeightSet *weights, const xfrt::LoadedTokenizer *tokenizer) {
  if (identity != xfrt::serveLibraryIdentity()) {
    std::fprintf(stderr, "error: --serve: libxfrt_serve.so was built from other runtime sources "
                         "than this executable (rebuild the executable with the xfc of that "
                         "build, or point XF_SERVE_LIBRARY at the matching library)\n");
    return 1;
  }
  return xfrt::runServer(*options, *manifest, *abi, *weights, *tokenizer);
}
