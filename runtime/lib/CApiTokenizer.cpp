//===- CApiTokenizer.cpp - xf/xf.h: tokenizers and the thread's error ----===//
//
// The runtime's tokenizers (Tokenizer.h) behind the public C API, loaded as the executables'
// --tokenizer loads them (Inputs.cpp), and xf_last_error.
//
//===----------------------------------------------------------------------===//
#include "xf/xf.h"

#include "CApiErrors.h"

#include "xfrt/Cli.h"
#include "xfrt/Inputs.h"
#include "xfrt/Tokenizer.h"

#include <cstring>
#include <memory>

using xfrt::capi::caughtExceptionOnThread;
using xfrt::capi::fail;

struct xf_tokenizer {
  std::unique_ptr<xfrt::Tokenizer> tokenizer;
  std::optional<int32_t> bos; // LoadedTokenizer::bos
};

namespace {
thread_local std::string lastError;
} // namespace

xf_status xfrt::capi::fail(xf_status code, std::string message) {
  lastError = std::move(message);
  return code;
}

xf_status xfrt::capi::caughtException(std::string &message) {
  try {
    throw;
  } catch (const std::bad_alloc &) {
    message = "out of memory";
  } catch (const std::exception &e) {
    message = std::string("unexpected error: ") + e.what();
  } catch (...) {
    message = "unexpected error";
  }
  return XF_ERROR_RUNTIME;
}

xf_status xfrt::capi::caughtExceptionOnThread() { return caughtException(lastError); }

extern "C" {

const char *xf_last_error(void) { return lastError.c_str(); }

xf_status xf_tokenizer_load(const char *path, xf_tokenizer **out) try {
  if (!out)
    return fail(XF_ERROR_INVALID_ARGUMENT, "xf_tokenizer_load: null output pointer");
  *out = nullptr;
  if (!path || !*path)
    return fail(XF_ERROR_INVALID_ARGUMENT, "xf_tokenizer_load: no path");
  xfrt::Options options;
  options.tokenizer = path;
  xfrt::Expected<xfrt::LoadedTokenizer> loaded = xfrt::loadTokenizer(options);
  if (!loaded)
    return fail(XF_ERROR_LOAD, loaded.message());
  if (!loaded->tokenizer)
    return fail(XF_ERROR_LOAD, std::string(path) + ": no tokenizer there");
  *out = new xf_tokenizer{std::move(loaded->tokenizer), loaded->bos};
  return XF_OK;
} catch (...) {
  return caughtExceptionOnThread();
}

void xf_tokenizer_destroy(xf_tokenizer *tokenizer) { delete tokenizer; }

xf_status xf_tokenizer_encode(const xf_tokenizer *t, const char *text, int64_t textBytes,
                              int32_t *ids, int64_t capacity, int64_t *count) try {
  if (!t || !count || (!text && textBytes) || textBytes < 0 || capacity < 0 || (!ids && capacity))
    return fail(XF_ERROR_INVALID_ARGUMENT, "xf_tokenizer_encode: a null or negative argument");
  xfrt::Expected<std::vector<int32_t>> encoded =
      t->tokenizer->encode(std::string_view(text ? text : "", size_t(textBytes)));
  if (!encoded)
    return fail(XF_ERROR_INVALID_ARGUMENT, encoded.message());
  *count = int64_t(encoded->size());
  if (*count > capacity)
    return fail(XF_ERROR_BUFFER_TOO_SMALL, "xf_tokenizer_encode: " + std::to_string(*count) +
                                               " ids do not fit in " + std::to_string(capacity));
  std::copy(encoded->begin(), encoded->end(), ids);
  return XF_OK;
} catch (...) {
  return caughtExceptionOnThread();
}

xf_status xf_tokenizer_decode(const xf_tokenizer *t, const int32_t *ids, int64_t n, char *text,
                              int64_t capacity, int64_t *bytes) try {
  if (!t || !bytes || (!ids && n) || n < 0 || capacity < 0 || (!text && capacity))
    return fail(XF_ERROR_INVALID_ARGUMENT, "xf_tokenizer_decode: a null or negative argument");
  xfrt::Expected<std::string> decoded = t->tokenizer->decode(std::vector<int32_t>(ids, ids + n));
  if (!decoded)
    return fail(XF_ERROR_INVALID_ARGUMENT, decoded.message());
  *bytes = int64_t(decoded->size());
  if (*bytes > capacity)
    return fail(XF_ERROR_BUFFER_TOO_SMALL, "xf_tokenizer_decode: " + std::to_string(*bytes) +
                                               " bytes do not fit in " + std::to_string(capacity));
  std::memcpy(text, decoded->data(), decoded->size());
  return XF_OK;
} catch (...) {
  return caughtExceptionOnThread();
}

int64_t xf_tokenizer_vocab_size(const xf_tokenizer *t) { return t ? t->tokenizer->vocabSize() : 0; }

int32_t xf_tokenizer_bos(const xf_tokenizer *t) { return t && t->bos ? *t->bos : -1; }

int32_t xf_tokenizer_end_of_text(const xf_tokenizer *t) {
  if (!t)
    return -1;
  std::optional<int32_t> end = t->tokenizer->endOfText();
  return end ? *end : -1;
}

} // extern "C"
