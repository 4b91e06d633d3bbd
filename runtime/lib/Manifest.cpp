//===- Manifest.cpp - The model description a generated object exports ----===//
#include "xfrt/Manifest.h"

#include "xfrt/AlignedBuffer.h"
#include "xfrt/Json.h"
#include "xfrt/Safetensors.h"

#include <algorithm>
#include <set>
#include <utility>

namespace xfrt {

std::string Manifest::kindName() const {
  if (encoderDecoder)
    return "encoder-decoder";
  return outputIsLogits ? "decoder" : "encoder";
}

namespace {

Status fail(const std::string &what) { return makeError("manifest: " + what); }

Status getInt(const JsonValue &obj, const char *key, bool required, int64_t &out) {
  const JsonValue *v = obj.find(key);
  if (!v) {
    if (required)
      return fail(std::string("missing '") + key + "'");
    return Status::success();
  }
  if (!v->isNumber() || !v->isInteger || v->integer < 0)
    return fail(std::string("'") + key + "' is " + describeJson(*v) +
                ", not a non-negative integer");
  out = v->integer;
  return Status::success();
}

Status parseParameter(const JsonValue &p, size_t index, ParameterSpec &out) {
  std::string where = "parameters[" + std::to_string(index) + "]";
  if (!p.isObject())
    return fail(where + " is not an object");
  const JsonValue *name = p.find("name");
  if (!name || !name->isString() || name->string.empty())
    return fail(where + " has no 'name' string");
  out.name = name->string;
  where = "parameter '" + out.name + "'";
  const JsonValue *shape = p.find("shape");
  if (!shape || !shape->isArray() || shape->items.size() > 16)
    return fail(where + " has no 'shape' list");
  for (const JsonValue &d : shape->items) {
    if (!d.isNumber() || !d.isInteger || d.integer < 0)
      return fail(where + ": shape " + describeJson(*shape) + " is not non-negative integers");
    out.shape.push_back(d.integer);
    if (!checkedMul(out.numel, d.integer, out.numel) || out.numel > (int64_t(1) << 40))
      return fail(where + ": shape " + formatShape(out.shape) + " is too large");
  }
  if (const JsonValue *init = p.find("init")) {
    if (init->isString() && init->string == "normal")
      out.init = InitKind::Normal;
    else if (init->isString() && init->string == "ones")
      out.init = InitKind::Ones;
    else if (init->isString() && init->string == "zeros")
      out.init = InitKind::Zeros;
    else
      return fail(where + ": unknown init " + describeJson(*init) + " (normal, ones, zeros)");
  }
  if (const JsonValue *reads = p.find("forward_reads")) {
    if (reads->isString() && reads->string == "all")
      out.forwardReads = ForwardReads::All;
    else if (reads->isString() && reads->string == "rows")
      out.forwardReads = ForwardReads::Rows;
    else if (reads->isString() && reads->string == "none")
      out.forwardReads = ForwardReads::None;
    else
      return fail(where + ": unknown forward_reads " + describeJson(*reads) + " (all, rows, none)");
  }
  if (const JsonValue *dtype = p.find("dtype")) {
    if (dtype->isString() && (dtype->string == "f32" || dtype->string == "bf16"))
      out.bf16 = dtype->string == "bf16";
    else if (dtype->isString() &&
             (dtype->string == "q8_0" || dtype->string == "q4_0" || dtype->string == "q4_1")) {
      out.blocks = true;
      out.blockType = dtype->string == "q8_0"   ? GgmlType::Q8_0
                      : dtype->string == "q4_0" ? GgmlType::Q4_0
                                                : GgmlType::Q4_1;
      if (out.shape.size() != 2 || out.shape[1] % 32 != 0)
        return fail(where + ": a " + dtype->string + " parameter needs a shape [rows, 32·n]");
    } else
      return fail(where + ": unknown dtype " + describeJson(*dtype) +
                  " (f32, bf16, q8_0, q4_0, q4_1)");
  }
  return Status::success();
}

// Derived buffer i's "parts": parameters, each f32 and in at most one buffer's parts, whose
// bytes add up to the buffer's.
Status parseDerivedParts(const JsonValue &parts, size_t i, Manifest &m) {
  std::string where = "derived[" + std::to_string(i) + "]";
  if (!parts.isArray())
    return fail(where + ": 'parts' is not a list");
  m.derivedParts.resize(m.derivedBytes.size());
  std::vector<int64_t> &out = m.derivedParts[i];
  int64_t bytes = 0;
  for (const JsonValue &part : parts.items) {
    if (!part.isNumber() || !part.isInteger || part.integer < 0 ||
        uint64_t(part.integer) >= m.parameters.size())
      return fail(where + ": part " + describeJson(part) + " is not a parameter index");
    const ParameterSpec &p = m.parameters[size_t(part.integer)];
    if (p.bf16 || p.blocks)
      return fail(where + ": part '" + p.name + "' is not float32");
    for (const std::vector<int64_t> &other : m.derivedParts)
      if (std::find(other.begin(), other.end(), part.integer) != other.end())
        return fail(where + ": parameter '" + p.name + "' is a part twice");
    out.push_back(part.integer);
    bytes += p.numel * 4; // each at most 2^40 elements
  }
  if (bytes != m.derivedBytes[i])
    return fail(where + ": its parts are " + std::to_string(bytes) + " bytes, not " +
                std::to_string(m.derivedBytes[i]));
  return Status::success();
}

// "derived": each derived buffer's bytes, forward_reads and parts.
Status parseDerived(const JsonValue &derived, Manifest &m) {
  if (!derived.isArray())
    return fail("'derived' is not a list");
  for (size_t i = 0; i < derived.items.size(); ++i) {
    int64_t bytes = 0;
    if (!derived.items[i].isObject())
      return fail("derived[" + std::to_string(i) + "] is not an object");
    if (Status s = getInt(derived.items[i], "bytes", true, bytes); !s)
      return s;
    bool prepareOnly = false;
    if (const JsonValue *reads = derived.items[i].find("forward_reads")) {
      if (!reads->isString() || (reads->string != "all" && reads->string != "none"))
        return fail("derived[" + std::to_string(i) + "]: unknown forward_reads " +
                    describeJson(*reads) + " (all, none)");
      prepareOnly = reads->string == "none";
    }
    m.derivedBytes.push_back(bytes);
    m.derivedPrepareOnly.push_back(prepareOnly);
    if (const JsonValue *parts = derived.items[i].find("parts"))
      if (Status s = parseDerivedParts(*parts, i, m); !s)
        return s;
  }
  return Status::success();
}

// One entry of "kernels" (a profiling site): what --profile reads it with.
Status parseKernel(const JsonValue &k, KernelSpec &spec) {
  if (const JsonValue *n = k.find("name"); n && n->isString())
    spec.name = n->string;
  if (const JsonValue *n = k.find("kind"); n && n->isString())
    spec.kind = n->string;
  if (const JsonValue *n = k.find("op"); n && n->isString())
    spec.op = n->string;
  if (const JsonValue *n = k.find("loc"); n && n->isString())
    spec.loc = n->string;
  for (auto [key, field] : {std::pair{"bytes_per_call", &spec.bytesPerCall},
                            {"bytes_per_row", &spec.bytesPerRow},
                            {"bytes_per_context_row", &spec.bytesPerContextRow}})
    if (const JsonValue *f = k.find(key); f && f->isInteger && f->integer >= 0)
      *field = f->integer;
  if (const JsonValue *f = k.find("flops_per_row"); f && f->isNumber())
    spec.flopsPerRow = f->isInteger ? f->integer : int64_t(0);
  if (const JsonValue *f = k.find("flops_per_row_per_context_row"); f && f->isNumber())
    spec.flopsPerRowPerContextRow = f->isInteger ? f->integer : int64_t(0);
  if (const JsonValue *n = k.find("context"); n && n->isString())
    spec.contextFromSource = n->string == "source";
  if (const JsonValue *n = k.find("tuned"); n && n->isBool())
    spec.tuned = n->boolean;
  if (const JsonValue *n = k.find("products")) {
    if (!n->isString() || (n->string != "fp32" && n->string != "bf16" && n->string != "int8"))
      return fail("kernel '" + spec.name + "': 'products' is not \"fp32\", \"bf16\" or \"int8\"");
    spec.products = n->string;
  }
  if (const JsonValue *n = k.find("amx")) {
    if (!n->isBool() || (n->boolean && spec.products == "fp32"))
      return fail("kernel '" + spec.name +
                  "': 'amx' is not a boolean, or true on fp32 products (AMX runs bf16 and "
                  "int8 products only)");
    spec.amx = n->boolean;
  }
  return Status::success();
}

} // namespace

Expected<Manifest> parseManifest(std::string_view text) {
  JsonLimits limits;
  limits.maxBytes = size_t(64) << 20;
  Expected<JsonValue> json = parseJson(text, limits);
  if (!json)
    return fail(json.message());
  const JsonValue &root = *json;
  if (!root.isObject())
    return fail("not a JSON object");

  Manifest m;
  const JsonValue *model = root.find("model");
  if (!model || !model->isString())
    return fail("missing 'model' string");
  m.model = model->string;

  if (const JsonValue *output = root.find("output")) {
    if (output->isString() && output->string == "logits")
      m.outputIsLogits = true;
    else if (output->isString() && output->string == "hidden")
      m.outputIsLogits = false;
    else
      return fail("'output' is " + describeJson(*output) + ", not \"logits\" or \"hidden\"");
  }
  if (const JsonValue *ed = root.find("encoder_decoder")) {
    if (!ed->isBool())
      return fail("'encoder_decoder' is not a boolean");
    m.encoderDecoder = ed->boolean;
  }
  if (Status s = getInt(root, "vocab", true, m.vocab); !s)
    return s;
  if (Status s = getInt(root, "max_positions", false, m.maxPositions); !s)
    return s;
  if (Status s = getInt(root, "d_out", true, m.dOut); !s)
    return s;
  if (const JsonValue *cached = root.find("cached")) {
    if (!cached->isBool())
      return fail("'cached' is not a boolean");
    m.cached = cached->boolean;
  }
  if (const JsonValue *device = root.find("device")) {
    if (!device->isString() || device->string != "cuda")
      return fail("'device' is not \"cuda\"");
    m.cuda = true;
  }
  if (const JsonValue *packed = root.find("packed")) {
    if (!packed->isBool())
      return fail("'packed' is not a boolean");
    m.packed = packed->boolean;
  }
  if (Status s = getInt(root, "cache_positions", false, m.cachePositions); !s)
    return s;
  if (m.cachePositions > (int64_t(1) << 32))
    return fail("'cache_positions' is too large");
  if (const JsonValue *type = root.find("cache_type")) {
    if (!type->isString() || (type->string != "f16" && type->string != "f32"))
      return fail("'cache_type' is not \"f16\" or \"f32\"");
    m.cacheHalf = type->string == "f16";
  }
  if (m.cachePositions == 0)
    m.cached = false; // nothing to cache into: generation re-runs xf_forward
  if (m.vocab <= 0 || m.vocab > (int64_t(1) << 31) - 1)
    return fail("'vocab' " + std::to_string(m.vocab) + " is not in [1, 2^31)");
  if (m.dOut <= 0 || m.dOut > (int64_t(1) << 32))
    return fail("'d_out' " + std::to_string(m.dOut) + " is not in [1, 2^32]");
  if (m.maxPositions > (int64_t(1) << 32))
    return fail("'max_positions' is too large");

  if (const JsonValue *hp = root.find("hyperparameters")) {
    if (!hp->isObject())
      return fail("'hyperparameters' is not an object");
    for (size_t i = 0; i < hp->keys.size(); ++i)
      m.hyperparameters.emplace_back(hp->keys[i], describeJson(hp->items[i]));
  }

  const JsonValue *params = root.find("parameters");
  if (!params || !params->isArray())
    return fail("missing 'parameters' list");
  std::set<std::string> seen;
  for (size_t i = 0; i < params->items.size(); ++i) {
    ParameterSpec spec;
    if (Status s = parseParameter(params->items[i], i, spec); !s)
      return s;
    if (!seen.insert(spec.name).second)
      return fail("parameter '" + spec.name + "' appears twice");
    m.parameters.push_back(std::move(spec));
  }

  if (const JsonValue *derived = root.find("derived"))
    if (Status s = parseDerived(*derived, m); !s)
      return s;
  if (const JsonValue *kernels = root.find("kernels")) {
    if (!kernels->isArray())
      return fail("'kernels' is not a list");
    for (const JsonValue &k : kernels->items) {
      KernelSpec spec;
      if (Status s = parseKernel(k, spec); !s)
        return s;
      m.kernels.push_back(std::move(spec));
    }
  }
  return m;
}

namespace {

// Pretty-printed JSON: each value on its own line, indented two spaces per level, empty
// containers as [] and {}. Callers write object keys in sorted order.
class JsonWriter {
public:
  std::string text;

  void key(std::string_view k) {
    item();
    text += quoteJson(k);
    text += ": ";
  }
  // Before each element of an array.
  void item() {
    if (open_.empty())
      return;
    if (open_.back())
      text += ',';
    open_.back() = true;
    newline();
  }
  void begin(char bracket) {
    text += bracket;
    open_.push_back(false);
  }
  void end(char bracket) {
    bool any = open_.back();
    open_.pop_back();
    if (any)
      newline();
    text += bracket;
  }
  void raw(std::string_view value) { text += value; }
  void number(int64_t v) { text += std::to_string(v); }
  void boolean(bool v) { text += v ? "true" : "false"; }
  void string(std::string_view s) { text += quoteJson(s); }

private:
  void newline() {
    text += '\n';
    text.append(2 * open_.size(), ' ');
  }
  std::vector<bool> open_; // per open container: has it an element yet
};

const char *dtypeName(const ParameterSpec &p) {
  if (p.blocks)
    return p.blockType == GgmlType::Q8_0 ? "q8_0" : p.blockType == GgmlType::Q4_0 ? "q4_0" : "q4_1";
  return p.bf16 ? "bf16" : "f32";
}

const char *forwardReadsName(ForwardReads reads) {
  switch (reads) {
  case ForwardReads::All:
    return "all";
  case ForwardReads::Rows:
    return "rows";
  case ForwardReads::None:
    return "none";
  }
  return "all";
}

const char *initName(InitKind init) {
  switch (init) {
  case InitKind::Normal:
    return "normal";
  case InitKind::Ones:
    return "ones";
  case InitKind::Zeros:
    return "zeros";
  }
  return "normal";
}

} // namespace

std::string renderManifest(const Manifest &m) {
  JsonWriter w;
  w.begin('{');
  w.key("cache_positions"), w.number(m.cachePositions);
  if (m.cacheHalf) // float32 caches keep the layout they had before
    w.key("cache_type"), w.string("f16");
  w.key("cached"), w.boolean(m.cached);
  w.key("d_out"), w.number(m.dOut);
  w.key("derived"), w.begin('[');
  for (size_t i = 0; i < m.derivedBytes.size(); ++i) {
    w.item(), w.begin('{');
    w.key("bytes"), w.number(m.derivedBytes[i]);
    if (i < m.derivedPrepareOnly.size() && m.derivedPrepareOnly[i])
      w.key("forward_reads"), w.string("none");
    if (i < m.derivedParts.size() && !m.derivedParts[i].empty()) {
      w.key("parts"), w.begin('[');
      for (int64_t part : m.derivedParts[i])
        w.item(), w.number(part);
      w.end(']');
    }
    w.end('}');
  }
  w.end(']');
  if (m.cuda)
    w.key("device"), w.string("cuda");
  w.key("encoder_decoder"), w.boolean(m.encoderDecoder);
  std::vector<std::pair<std::string, std::string>> hyperparameters = m.hyperparameters;
  std::sort(hyperparameters.begin(), hyperparameters.end());
  w.key("hyperparameters"), w.begin('{');
  for (const auto &[name, value] : hyperparameters)
    w.key(name), w.raw(value);
  w.end('}');
  w.key("kernels"), w.begin('[');
  for (const KernelSpec &k : m.kernels) {
    w.item(), w.begin('{');
    if (k.amx) // absent: no AMX path (manifests without it read the same)
      w.key("amx"), w.boolean(true);
    w.key("bytes_per_call"), w.number(k.bytesPerCall);
    w.key("bytes_per_context_row"), w.number(k.bytesPerContextRow);
    w.key("bytes_per_row"), w.number(k.bytesPerRow);
    w.key("context"), w.string(k.contextFromSource ? "source" : "target");
    w.key("flops_per_row"), w.number(k.flopsPerRow);
    w.key("flops_per_row_per_context_row"), w.number(k.flopsPerRowPerContextRow);
    w.key("kind"), w.string(k.kind);
    w.key("loc"), w.string(k.loc);
    w.key("name"), w.string(k.name);
    w.key("op"), w.string(k.op);
    if (k.products != "fp32") // fp32 is the default: manifests without it read the same
      w.key("products"), w.string(k.products);
    w.key("tuned"), w.boolean(k.tuned);
    w.end('}');
  }
  w.end(']');
  w.key("max_positions"), w.number(m.maxPositions);
  w.key("model"), w.string(m.model);
  w.key("output"), w.string(m.outputName());
  w.key("packed"), w.boolean(m.packed);
  w.key("parameters"), w.begin('[');
  for (const ParameterSpec &p : m.parameters) {
    w.item(), w.begin('{');
    w.key("dtype"), w.string(dtypeName(p));
    w.key("forward_reads"), w.string(forwardReadsName(p.forwardReads));
    w.key("init"), w.string(initName(p.init));
    w.key("name"), w.string(p.name);
    w.key("shape"), w.begin('[');
    for (int64_t d : p.shape)
      w.item(), w.number(d);
    w.end(']');
    w.end('}');
  }
  w.end(']');
  w.key("vocab"), w.number(m.vocab);
  w.end('}');
  return w.text;
}

} // namespace xfrt
