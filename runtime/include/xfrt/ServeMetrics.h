//===- ServeMetrics.h - --serve's counters in Prometheus' text format -*- C++ -*-===//
//
// GET /metrics (docs/serving.md): requests by status, tokens in and out, a latency histogram
// of every answered request, and the gauges the server samples when asked (running, waiting,
// queued, connections). Counting is thread-safe and cheap: the access log's hook feeds it.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_SERVEMETRICS_H
#define XFRT_SERVEMETRICS_H

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace xfrt {

class ServeMetrics {
public:
  // One answered request: its status and seconds from first byte to last byte written.
  void request(int status, double seconds);
  void promptTokens(int64_t n) { promptTokens_ += n; }
  void generatedTokens(int64_t n) { generatedTokens_ += n; }
  void embeddedInputs(int64_t n) { embeddedInputs_ += n; }
  void cancelled() { ++cancelled_; }
  // The exposition: the counters, then `gauges` (name, help, value) sampled by the caller.
  std::string render(const std::vector<std::tuple<std::string, std::string, double>> &gauges);

  // Upper bounds (seconds) of the latency histogram's buckets, +Inf beyond.
  static constexpr std::array<double, 12> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                      0.5,   1,    2.5,   5,    10,  30};

private:
  std::mutex mutex_;
  std::map<int, uint64_t> byStatus_;
  std::array<uint64_t, kBuckets.size() + 1> latency_{};
  double latencySum_ = 0;
  uint64_t latencyCount_ = 0;
  std::atomic<int64_t> promptTokens_{0}, generatedTokens_{0}, embeddedInputs_{0}, cancelled_{0};
};

} // namespace xfrt

#endif // XFRT_SERVEMETRICS_H
