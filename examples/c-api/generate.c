/* A model library from C (docs/c-api.md):
 *
 *   xfc examples/gpt2.xf --emit=lib -o build/libgpt2.so      # also writes build/xf.h
 *   cc examples/c-api/generate.c -Ibuild -Lbuild -lgpt2 -Wl,-rpath,build -o generate
 *   ./generate model.safetensors 464,2068,7586               # or --random SEED instead
 *
 * prints the ids of 8 greedy new tokens, then shows how a failed call reports itself.
 */
#include "xf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEW_TOKENS 8

/* "1,2,3" -> ids (at most `capacity`); returns their count, 0 on a malformed list. */
static int64_t parse_ids(const char *text, int32_t *ids, int64_t capacity) {
  int64_t n = 0;
  while (*text && n < capacity) {
    char *end;
    long id = strtol(text, &end, 10);
    if (end == text || (*end && *end != ','))
      return 0;
    ids[n++] = (int32_t)id;
    text = *end ? end + 1 : end;
  }
  return *text ? 0 : n;
}

int main(int argc, char **argv) {
  if (argc != 3 && !(argc == 4 && strcmp(argv[1], "--random") == 0)) {
    fprintf(stderr, "usage: %s WEIGHTS IDS | --random SEED IDS\n", argv[0]);
    return 2;
  }
  if (xf_api_version() != XF_API_VERSION) {
    fprintf(stderr, "error: the library speaks C API %d, this program %d\n", xf_api_version(),
            XF_API_VERSION);
    return 1;
  }
  xf_session *session = NULL;
  xf_status rc = argc == 4 ? xf_session_create_random(strtoull(argv[2], NULL, 10), &session)
                           : xf_session_create(argv[1], &session);
  if (rc != XF_OK) {
    fprintf(stderr, "error: %s\n", xf_last_error());
    return 1;
  }
  int32_t prompt[256];
  int64_t n = parse_ids(argv[argc - 1], prompt, 256);
  if (n == 0) {
    fprintf(stderr, "error: expected comma-separated ids, got '%s'\n", argv[argc - 1]);
    xf_session_destroy(session);
    return 2;
  }

  xf_generate_options options = xf_generate_defaults();
  options.max_new_tokens = NEW_TOKENS; /* greedy: temperature 0 */
  int32_t generated[NEW_TOKENS];
  int64_t count = 0;
  rc = xf_session_generate(session, prompt, n, NULL, 0, &options, generated, NEW_TOKENS, &count);
  if (rc != XF_OK) {
    fprintf(stderr, "error: %s\n", xf_session_error(session));
    xf_session_destroy(session);
    return 1;
  }
  for (int64_t i = 0; i < count; ++i)
    printf(i ? ",%d" : "%d", generated[i]);
  printf("\n");

  /* A bad call returns a status and leaves its message on the session. */
  int32_t bad = -1;
  float row[1];
  rc = xf_session_forward(session, &bad, 1, NULL, 0, row, 1);
  printf("bad call: status %d: %s\n", rc, xf_session_error(session));

  xf_session_destroy(session);
  return 0;
}
