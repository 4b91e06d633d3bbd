//===- WorkerClient.cpp - runs xf-tune-worker in a child process ----------===//

#include "WorkerClient.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <thread>

using namespace mlir::xf::tuning;

namespace {
llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<std::string> tempFile(llvm::StringRef suffix) {
  llvm::SmallString<128> path;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("xf-tune", suffix, path))
    return fail("cannot create a temporary file: " + ec.message());
  return std::string(path);
}
} // namespace

llvm::Expected<std::vector<llvm::json::Value>>
WorkerClient::exec(llvm::ArrayRef<std::string> args, std::optional<std::string> stdinText,
                   double timeoutSeconds, int &exitCode, std::string &stderrText,
                   std::string &ended) {
  auto in = tempFile("json"), out = tempFile("jsonl"), err = tempFile("log");
  if (!in || !out || !err)
    return fail("xf-tune-worker: cannot create temporary files");
  auto cleanup = llvm::make_scope_exit([&] {
    llvm::sys::fs::remove(*in), llvm::sys::fs::remove(*out), llvm::sys::fs::remove(*err);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(*in, ec);
    if (ec)
      return fail("cannot write " + *in + ": " + ec.message());
    os << stdinText.value_or("");
  }
  std::vector<llvm::StringRef> argv{worker};
  for (const std::string &a : args)
    argv.push_back(a);
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(*in), llvm::StringRef(*out),
                                                llvm::StringRef(*err)};
  std::string message;
  bool failedToRun = false;
  // A worker that cannot start at all is retried a few times: a rebuild
  // replacing the binary mid-run (ETXTBSY, EACCES) passes in a moment, and
  // an hour of tuning should not end on it. A crash is not retried here.
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (attempt)
      std::this_thread::sleep_for(std::chrono::seconds(2 * attempt));
    message.clear(), failedToRun = false;
    exitCode = llvm::sys::ExecuteAndWait(worker, argv, std::nullopt, redirects,
                                         unsigned(std::ceil(std::max(1.0, timeoutSeconds))), 0,
                                         &message, &failedToRun);
    if (!failedToRun)
      break;
  }
  if (failedToRun)
    return fail("cannot run the tuning worker '" + worker + "': " + message);
  ended = message;
  if (auto text = llvm::MemoryBuffer::getFile(*err))
    stderrText = (*text)->getBuffer().take_back(2000).str();
  std::vector<llvm::json::Value> lines;
  auto text = llvm::MemoryBuffer::getFile(*out);
  if (!text)
    return lines;
  llvm::SmallVector<llvm::StringRef> split;
  (*text)->getBuffer().split(split, '\n', -1, false);
  for (llvm::StringRef line : split) {
    llvm::Expected<llvm::json::Value> v = llvm::json::parse(line);
    if (!v) {
      llvm::consumeError(v.takeError()); // a line cut short by a crash
      continue;
    }
    lines.push_back(std::move(*v));
  }
  return lines;
}

llvm::Expected<std::vector<CandidateResult>>
WorkerClient::run(llvm::json::Object request, const std::vector<llvm::json::Value> &candidates,
                  double timeoutSeconds) {
  request["candidates"] = llvm::json::Array(candidates);
  request["threads"] = threads;
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(request));
  int exitCode = 0;
  std::string stderrText, ended;
  auto lines = exec({"-"}, text, timeoutSeconds, exitCode, stderrText, ended);
  if (!lines)
    return lines.takeError();
  std::vector<CandidateResult> results(candidates.size());
  int64_t running = -1;
  bool done = false;
  for (const llvm::json::Value &line : *lines) {
    const llvm::json::Object *o = line.getAsObject();
    if (!o)
      continue;
    llvm::StringRef status = o->getString("status").value_or("");
    if (status == "error")
      return fail("the tuning worker rejected the request: " + o->getString("error").value_or("?"));
    if (status == "done") {
      done = true;
      continue;
    }
    std::optional<int64_t> index = o->getInteger("candidate");
    if (!index || *index < 0 || size_t(*index) >= results.size())
      continue;
    CandidateResult &r = results[*index];
    r.ran = true;
    if (status == "compiling") {
      running = *index;
    } else if (status == "ok") {
      running = -1;
      r.maxRelErr = o->getNumber("max_rel_err").value_or(0);
      r.failure = "not timed";
    } else if (status == "timed") {
      r.failure.clear();
      if (const llvm::json::Array *cases = o->getArray("cases"))
        for (const llvm::json::Value &c : *cases)
          if (const llvm::json::Object *co = c.getAsObject()) {
            CaseTime t{co->getInteger("rows").value_or(0), co->getInteger("keys").value_or(0),
                       co->getNumber("wall_min_ms").value_or(0),
                       co->getNumber("wall_median_ms").value_or(0),
                       co->getNumber("cpu_median_ms").value_or(0)};
            if (const llvm::json::Array *rounds = co->getArray("wall_ms"))
              for (const llvm::json::Value &ms : *rounds)
                t.wallMs.push_back(ms.getAsNumber().value_or(0));
            r.cases.push_back(std::move(t));
          }
    } else {
      running = -1;
      r.failure = (status + ": " + o->getString("error").value_or("")).str();
    }
  }
  if (!done) {
    // The worker died or hung: the candidate it was compiling caused it;
    // one that was compiled and checked but never timed is left unmeasured.
    // ExecuteAndWait says -2 both for its timeout and for a signal; its message tells which.
    const bool timedOut = exitCode == -2 && llvm::StringRef(ended).contains("timed out");
    std::string why = timedOut ? std::string("timeout")
                      : exitCode != -2
                          ? "crashed (exit " + std::to_string(exitCode) + ")"
                          : "crashed (" + (ended.empty() ? std::string("a signal") : ended) + ")";
    // Killed before its first line (not by the budget's timeout): nothing to blame on a
    // candidate, the worker itself does not run here.
    if (lines->empty() && !timedOut)
      return fail("the tuning worker " + why + " before its first report" +
                  (stderrText.empty() ? "" : ": " + stderrText));
    if (running >= 0)
      results[running].failure = why;
    for (CandidateResult &r : results)
      if (r.ran && r.failure == "not timed")
        r.ran = false;
  }
  return results;
}

llvm::Expected<MachineCeilings> WorkerClient::measureMachine() {
  int exitCode = 0;
  std::string stderrText, ended;
  auto lines = exec({"--machine", "--threads", std::to_string(threads)}, std::nullopt, 120,
                    exitCode, stderrText, ended);
  if (!lines)
    return lines.takeError();
  for (const llvm::json::Value &line : *lines)
    if (const llvm::json::Object *o = line.getAsObject(); o && o->getNumber("fma_gflops")) {
      MachineCeilings m;
      m.fmaGflops = *o->getNumber("fma_gflops");
      m.readGBs = o->getNumber("read_gbs").value_or(0);
      m.isa = o->getString("isa").value_or("").str();
      m.cpu = o->getString("cpu").value_or("").str();
      return m;
    }
  return fail("the tuning worker could not measure this machine (exit " + llvm::Twine(exitCode) +
              (ended.empty() ? "" : ": " + ended) + "): " + stderrText);
}
