/* The little JSON the PAM hook reads and writes: the agent's configuration file (a top-level
 * string value) and the agent's reply to a login (`{"version":1,"result":{"allowed":...,
 * "message":...}}`). A strict reader of RFC 8259's grammar, nested at most 64 deep; anything else
 * is not understood (and the hook then fails closed for a child). */
#ifndef SCREENTIME_PAM_JSON_H
#define SCREENTIME_PAM_JSON_H
#include <stdbool.h>
#include <stddef.h>

/* A growing string; `failed` once memory ran out (the text is then incomplete). */
struct json_buffer {
    char *text;
    size_t length, capacity;
    bool failed;
};
void json_buffer_append(struct json_buffer *buffer, const char *text);
void json_buffer_append_bytes(struct json_buffer *buffer, const char *bytes, size_t count);

/* The string value of `key` in the JSON object `text` (a new string), or NULL when `text` is not
 * an object, has no such key, or its value is not a string. */
char *json_object_string(const char *text, const char *key);

/* The agent's answer to a login, when the reply is one this hook understands. */
struct login_answer {
    bool understood;
    bool allowed;
    char *message; /* NULL when none */
};
struct login_answer json_login_answer(const char *reply);
#endif
