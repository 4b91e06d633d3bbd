//===- ServeMetrics.cpp - --serve's counters in Prometheus' text format ---===//
#include "xfrt/ServeMetrics.h"

#include <cstdio>
#include <tuple>

namespace xfrt {
namespace {

std::string number(double v) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.17g", v);
  return text;
}

void counter(std::string &out, const char *name, const char *help, int64_t value) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name +
         " " + std::to_string(value) + "\n";
}

} // namespace

void ServeMetrics::request(int status, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++byStatus_[status];
  size_t b = 0;
  while (b < kBuckets.size() && seconds > kBuckets[b])
    ++b;
  ++latency_[b];
  latencySum_ += seconds;
  ++latencyCount_;
}

std::string ServeMetrics::render(
    const std::vector<std::tuple<std::string, std::string, double>> &gauges) {
  std::string out = "# HELP xf_http_requests_total Requests answered, by status.\n"
                    "# TYPE xf_http_requests_total counter\n";
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto &[status, n] : byStatus_)
    out += "xf_http_requests_total{status=\"" + std::to_string(status) + "\"} " +
           std::to_string(n) + "\n";
  out += "# HELP xf_http_request_duration_seconds From a request's first byte to its response's "
         "last.\n# TYPE xf_http_request_duration_seconds histogram\n";
  uint64_t cumulative = 0;
  for (size_t b = 0; b <= kBuckets.size(); ++b) {
    cumulative += latency_[b];
    out += "xf_http_request_duration_seconds_bucket{le=\"" +
           (b < kBuckets.size() ? number(kBuckets[b]) : std::string("+Inf")) + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  out += "xf_http_request_duration_seconds_sum " + number(latencySum_) +
         "\nxf_http_request_duration_seconds_count " + std::to_string(latencyCount_) + "\n";
  counter(out, "xf_prompt_tokens_total", "Prompt tokens of accepted completions.", promptTokens_);
  counter(out, "xf_generated_tokens_total", "Tokens generated for completions.",
          generatedTokens_);
  counter(out, "xf_embedded_inputs_total", "Inputs embedded.", embeddedInputs_);
  counter(out, "xf_cancelled_requests_total",
          "Requests whose client went away before their answer.", cancelled_);
  for (const auto &[name, help, value] : gauges)
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " gauge\n" + name + " " +
           number(value) + "\n";
  return out;
}

} // namespace xfrt
