//===- CudaGraphs.cpp - decode steps replayed as CUDA graphs --------------===//
//
// How a step becomes one launch (CudaGraphs.h has the outline). What changes from step to step
// — the cache length, the positions, a grid that grows with the cache — is never baked into
// the graph: the host code runs every step as it is, and each launch it makes is set on the
// graph's node of the same place (same kernel, its parameters and grid as they are now) before
// the one graph launch. So no bucket of cache lengths is needed; a step whose kernels differ
// from the graph's (another specialization) is captured again, nothing having run.
//
//===----------------------------------------------------------------------===//
#include "xfrt/CudaGraphs.h"

#include "xfrt/DeviceLinks.h"

#include "xfrt/HalideErrors.h"


#include <cstdio>
#include <map>
#include <tuple>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

extern "C" {
using HalideCudaGetStream = int (*)(void *, void *, void **);
__attribute__((weak)) HalideCudaGetStream halide_set_cuda_get_stream(HalideCudaGetStream);
}

namespace xfrt {
namespace {

// CUDA_KERNEL_NODE_PARAMS as cuGraphExecKernelNodeSetParams (the first version) takes it.
struct KernelNodeParams {
  void *function;
  unsigned gridX, gridY, gridZ, blockX, blockY, blockZ, shared;
  void **params, **extra;
};

constexpr int kCaptureModeGlobal = 0;   // CU_STREAM_CAPTURE_MODE_GLOBAL
constexpr int kCaptureStatusActive = 1; // CU_STREAM_CAPTURE_STATUS_ACTIVE

// The driver's stream, capture and graph functions (present since CUDA 11.4).
struct GraphDriver {
  int (*streamCreate)(void **, unsigned) = nullptr;
  int (*beginCapture)(void *, int) = nullptr;
  int (*endCapture)(void *, void **) = nullptr;
  int (*captureInfo)(void *, int *, unsigned long long *, void **, void *const **,
                     size_t *) = nullptr;
  int (*instantiate)(void **, void *, unsigned long long) = nullptr;
  int (*setParams)(void *, void *, const KernelNodeParams *) = nullptr;
  int (*launch)(void *, void *) = nullptr;
  int (*destroyGraph)(void *) = nullptr;
  int (*destroyExec)(void *) = nullptr;

  bool lookUp() {
    auto get = [](auto &fn, const char *name) { return lookUpDriverFunction(fn, name); };
    return get(streamCreate, "cuStreamCreate") & get(beginCapture, "cuStreamBeginCapture_v2") &
           get(endCapture, "cuStreamEndCapture") & get(captureInfo, "cuStreamGetCaptureInfo_v2") &
           get(instantiate, "cuGraphInstantiateWithFlags") &
           get(setParams, "cuGraphExecKernelNodeSetParams") & get(launch, "cuGraphLaunch") &
           get(destroyGraph, "cuGraphDestroy") & get(destroyExec, "cuGraphExecDestroy");
  }
};

// A captured step: its graph, the executable graph, and per launch in order its node and kernel.
struct Graph {
  void *graph = nullptr, *exec = nullptr;
  std::vector<void *> nodes, functions;
};

// Per entry point, token count, sequence count and source tokens.
struct Step {
  int directCalls = 0;
  bool off = false; // capture failed: kernels launched one by one from now on
  uint64_t lastUse = 0;
  Graph graph;
};

// Executable graphs kept at most. Decode steps are a few keys (one per batch size), but a
// forward is keyed by its length, and a session fed prompts of ever new lengths would
// otherwise keep a graph for each it saw twice: past this, the least recently used graph is
// destroyed (its key is captured again on its next call).
constexpr size_t kMaxKeptGraphs = 128;

using StepKey = std::tuple<std::string, int64_t, int64_t, int64_t>;

enum class Mode { Direct, Capture, Patch };

struct State {
  bool on = true, verbose = false, haveDriver = false;
  GraphDriver driver;
  void *stream = nullptr; // the runtime's own, for Halide's kernels and copies
  bool streamFailed = false;
  Mode mode = Mode::Direct;
  Graph *graph = nullptr; // being captured or patched
  size_t cursor = 0;      // Patch: the next node
  std::string trouble;    // why this capture or patch did not hold
  std::map<StepKey, Step> steps;
  uint64_t clock = 0;     // calls so far: each step's lastUse
  size_t keptGraphs = 0;  // steps holding an executable graph
} state;

// Halide's kernels, copies and synchronisations all go to this stream (created in Halide's
// context, which is current when Halide asks). A blocking stream, so that anything on the
// legacy stream still waits for it. Where it cannot be made, the legacy stream as before.
int runtimeStream(void *, void *, void **stream) {
  if (!state.stream && !state.streamFailed && state.driver.streamCreate(&state.stream, 0) != 0)
    state.stream = nullptr, state.streamFailed = true;
  *stream = state.stream;
  return 0;
}

void destroy(Graph &g) {
  if (g.exec)
    state.driver.destroyExec(g.exec);
  if (g.graph)
    state.driver.destroyGraph(g.graph);
  g = Graph();
}

// A step's graph destroyed, and the count of graphs kept with it.
void dropGraph(Step &s) {
  if (s.graph.exec)
    --state.keptGraphs;
  destroy(s.graph);
}

// Room for a new graph: at kMaxKeptGraphs, the least recently used graph goes (before the
// new one is instantiated, so never more are alive; the capturing step holds none by then).
void makeRoomForGraph() {
  while (state.keptGraphs >= kMaxKeptGraphs) {
    Step *oldest = nullptr;
    for (auto &[key, step] : state.steps)
      if (step.graph.exec && (!oldest || step.lastUse < oldest->lastUse))
        oldest = &step;
    if (!oldest)
      return;
    dropGraph(*oldest);
  }
}

void turnOff(Step &s, const std::string &entry, int64_t tokens, int64_t sequences,
             const std::string &why) {
  s.off = true;
  dropGraph(s);
  if (!state.verbose)
    return;
  std::string of = sequences > 1 ? ", " + std::to_string(sequences) + " sequences" : "";
  std::fprintf(stderr,
               "note: CUDA graphs off for %s (%lld token%s%s): %s; kernels launched one "
               "by one\n",
               entry.c_str(), (long long)tokens, tokens == 1 ? "" : "s", of.c_str(), why.c_str());
}

std::string failed(const char *what, int rc) {
  return std::string(what) + " failed with error " + std::to_string(rc);
}

// Runs the call under capture into a new graph, then launches it. Returns the call's code, or
// nullopt where capturing failed (nothing ran: the caller runs the call as it is).
std::optional<int32_t> captureAndLaunch(Step &s, const std::function<int32_t()> &call) {
  Graph fresh;
  int rc = -1;
  inHalideContext([&](void *stream) {
    rc = stream == state.stream ? state.driver.beginCapture(stream, kCaptureModeGlobal) : -1;
    return rc == 0;
  });
  if (rc != 0) {
    state.trouble = failed("cuStreamBeginCapture", rc);
    return std::nullopt;
  }
  state.mode = Mode::Capture, state.graph = &fresh, state.trouble.clear();
  int32_t code = call();
  state.mode = Mode::Direct, state.graph = nullptr;
  int ended = -1;
  inHalideContext([&](void *stream) {
    ended = state.driver.endCapture(stream, &fresh.graph);
    return ended == 0;
  });
  if (code != 0 || ended != 0 || !state.trouble.empty()) {
    if (state.trouble.empty())
      state.trouble = code != 0 ? "the step failed under capture (" + takeHalideError() + ")"
                                : failed("cuStreamEndCapture", ended);
    takeHalideError(); // launches refused under capture: the call runs again
    destroy(fresh);
    return std::nullopt;
  }
  dropGraph(s); // its kernels differ from this step's
  makeRoomForGraph();
  if (int r = state.driver.instantiate(&fresh.exec, fresh.graph, 0); r != 0) {
    state.trouble = failed("cuGraphInstantiateWithFlags", r);
    destroy(fresh);
    return std::nullopt;
  }
  s.graph = std::move(fresh);
  ++state.keptGraphs;
  int launched = -1;
  inHalideContext([&](void *stream) {
    launched = state.driver.launch(s.graph.exec, stream);
    return launched == 0;
  });
  if (launched != 0) {
    state.trouble = failed("cuGraphLaunch", launched);
    dropGraph(s);
    return std::nullopt;
  }
  countGraphLaunch(s.graph.nodes.size());
  return 0;
}

// Runs the call with its launches set on the graph's nodes, then launches the graph. nullopt
// where the launches differ from the graph's (nothing ran).
std::optional<int32_t> patchAndLaunch(Step &s, const std::function<int32_t()> &call) {
  state.mode = Mode::Patch, state.graph = &s.graph, state.cursor = 0, state.trouble.clear();
  int32_t code = call();
  state.mode = Mode::Direct, state.graph = nullptr;
  if (code != 0)
    return code;
  if (!state.trouble.empty() || state.cursor != s.graph.nodes.size())
    return std::nullopt;
  int launched = -1;
  inHalideContext([&](void *stream) {
    launched = state.driver.launch(s.graph.exec, stream);
    return launched == 0;
  });
  if (launched != 0) {
    halideErrorHandler(nullptr, failed("cuGraphLaunch", launched).c_str());
    return -1;
  }
  countGraphLaunch(s.graph.nodes.size());
  return 0;
}

} // namespace

void setCudaGraphs(bool on, bool verbose) {
  state.on = on, state.verbose = verbose;
  if (on && !state.haveDriver && !state.stream) {
    state.haveDriver = state.driver.lookUp() && halide_set_cuda_get_stream;
    if (state.haveDriver)
      halide_set_cuda_get_stream(&runtimeStream);
    else if (verbose)
      std::fprintf(stderr,
                   "note: CUDA graphs off: the driver %s lacks stream capture or "
                   "graphs (CUDA 11.4 or newer has them); kernels launched one by one\n",
                   driverLibraryName());
  }
}

int32_t runDeviceStep(const char *entry, int64_t tokens, const std::function<int32_t()> &call,
                      int64_t sequences, int64_t sourceTokens) {
  // The server library's copy: the launches go through the executable's copy's graphs.
  if (deviceLinked() && deviceLinks().runDeviceStep)
    return deviceLinks().runDeviceStep(entry, tokens, call, sequences, sourceTokens);
  if (!state.on || !state.haveDriver)
    return call();
  Step &s = state.steps[{entry, tokens, sequences, sourceTokens}];
  s.lastUse = ++state.clock;
  if (s.off)
    return call();
  if (s.directCalls == 0) { // warm-up: Halide loads each kernel's module on its first call
    s.directCalls += 1;
    return call();
  }
  if (!state.stream) {
    turnOff(s, entry, tokens, sequences, "no stream of the runtime's own (cuStreamCreate failed)");
    return call();
  }
  if (s.graph.exec)
    if (std::optional<int32_t> code = patchAndLaunch(s, call))
      return *code;
  // No graph yet, or this step's kernels differ from it: (re)captured.
  if (std::optional<int32_t> code = captureAndLaunch(s, call))
    return *code;
  turnOff(s, entry, tokens, sequences, state.trouble);
  return call();
}

std::optional<int> graphTakesLaunch(const KernelLaunch &k) {
  switch (state.mode) {
  case Mode::Direct:
    return std::nullopt;
  case Mode::Capture: {
    int rc = driverLaunchKernel(k);
    if (rc != 0) {
      if (state.trouble.empty())
        state.trouble = failed("cuLaunchKernel under capture", rc);
      return rc;
    }
    // The node just added: the capture's one dependency for what comes next.
    int status = 0;
    void *const *last = nullptr;
    size_t count = 0;
    rc = state.driver.captureInfo(k.stream, &status, nullptr, nullptr, &last, &count);
    if (rc != 0 || status != kCaptureStatusActive || count != 1 || !last) {
      if (state.trouble.empty())
        state.trouble = "cuStreamGetCaptureInfo_v2 did not give the captured kernel's node";
      return 0;
    }
    state.graph->nodes.push_back(last[0]);
    state.graph->functions.push_back(k.function);
    return 0;
  }
  case Mode::Patch: {
    Graph &g = *state.graph;
    size_t i = state.cursor++;
    if (!state.trouble.empty())
      return 0;
    if (i >= g.nodes.size() || g.functions[i] != k.function) {
      state.trouble = "the step's kernels differ from the graph's";
      return 0;
    }
    KernelNodeParams p{k.function, k.grid[0],  k.grid[1], k.grid[2], k.block[0],
                       k.block[1], k.block[2], k.shared,  k.params,  k.extra};
    if (int rc = state.driver.setParams(g.exec, g.nodes[i], &p); rc != 0)
      state.trouble = failed("cuGraphExecKernelNodeSetParams", rc);
    return 0;
  }
  }
  return std::nullopt;
}

bool graphHoldsLaunches() { return state.mode != Mode::Direct; }

} // namespace xfrt
