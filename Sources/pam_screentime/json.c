#include "json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void json_buffer_append_bytes(struct json_buffer *buffer, const char *bytes, size_t count) {
    if (buffer->failed) return;
    if (buffer->length + count + 1 > buffer->capacity) {
        size_t capacity = (buffer->length + count + 1) * 2;
        char *grown = realloc(buffer->text, capacity);
        if (grown == NULL) {
            buffer->failed = true;
            return;
        }
        buffer->text = grown;
        buffer->capacity = capacity;
    }
    memcpy(buffer->text + buffer->length, bytes, count);
    buffer->length += count;
    buffer->text[buffer->length] = '\0';
}

void json_buffer_append(struct json_buffer *buffer, const char *text) {
    json_buffer_append_bytes(buffer, text, strlen(text));
}

struct reader {
    const char *at;
    int depth;
};

static void skip_space(struct reader *r) {
    while (*r->at == ' ' || *r->at == '\t' || *r->at == '\n' || *r->at == '\r') r->at++;
}

static bool take(struct reader *r, char c) {
    skip_space(r);
    if (*r->at != c) return false;
    r->at++;
    return true;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool read_hex4(struct reader *r, uint32_t *value) {
    *value = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_digit(r->at[i]);
        if (digit < 0) return false;
        *value = *value << 4 | (uint32_t)digit;
    }
    r->at += 4;
    return true;
}

static void append_utf8(struct json_buffer *out, uint32_t code) {
    char bytes[4];
    size_t count;
    if (code < 0x80) {
        bytes[0] = (char)code;
        count = 1;
    } else if (code < 0x800) {
        bytes[0] = (char)(0xC0 | code >> 6);
        bytes[1] = (char)(0x80 | (code & 0x3F));
        count = 2;
    } else if (code < 0x10000) {
        bytes[0] = (char)(0xE0 | code >> 12);
        bytes[1] = (char)(0x80 | (code >> 6 & 0x3F));
        bytes[2] = (char)(0x80 | (code & 0x3F));
        count = 3;
    } else {
        bytes[0] = (char)(0xF0 | code >> 18);
        bytes[1] = (char)(0x80 | (code >> 12 & 0x3F));
        bytes[2] = (char)(0x80 | (code >> 6 & 0x3F));
        bytes[3] = (char)(0x80 | (code & 0x3F));
        count = 4;
    }
    if (out != NULL) json_buffer_append_bytes(out, bytes, count);
}

/* A string, its value appended to `out` (NULL: only read past it). */
static bool read_string(struct reader *r, struct json_buffer *out) {
    if (!take(r, '"')) return false;
    for (;;) {
        unsigned char c = (unsigned char)*r->at;
        if (c == '\0' || c < 0x20) return false;
        r->at++;
        if (c == '"') return out == NULL || !out->failed;
        if (c != '\\') {
            if (out != NULL) json_buffer_append_bytes(out, (const char *)&c, 1);
            continue;
        }
        char escape = *r->at++;
        const char *simple = NULL;
        switch (escape) {
        case '"': simple = "\""; break;
        case '\\': simple = "\\"; break;
        case '/': simple = "/"; break;
        case 'b': simple = "\b"; break;
        case 'f': simple = "\f"; break;
        case 'n': simple = "\n"; break;
        case 'r': simple = "\r"; break;
        case 't': simple = "\t"; break;
        case 'u': {
            uint32_t code;
            if (!read_hex4(r, &code)) return false;
            if (code >= 0xD800 && code <= 0xDBFF) {
                uint32_t low;
                if (r->at[0] != '\\' || r->at[1] != 'u') return false;
                r->at += 2;
                if (!read_hex4(r, &low) || low < 0xDC00 || low > 0xDFFF) return false;
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            } else if (code >= 0xDC00 && code <= 0xDFFF) {
                return false;
            }
            append_utf8(out, code);
            continue;
        }
        default: return false;
        }
        if (out != NULL) json_buffer_append(out, simple);
    }
}

static bool read_literal(struct reader *r, const char *word) {
    skip_space(r);
    size_t length = strlen(word);
    if (strncmp(r->at, word, length) != 0) return false;
    r->at += length;
    return true;
}

static bool read_number(struct reader *r, long long *value) {
    skip_space(r);
    const char *start = r->at;
    if (*r->at == '-') r->at++;
    if (*r->at < '0' || *r->at > '9') return false;
    while ((*r->at >= '0' && *r->at <= '9') || *r->at == '.' || *r->at == 'e' || *r->at == 'E' || *r->at == '+' ||
           *r->at == '-')
        r->at++;
    if (value != NULL) *value = strtoll(start, NULL, 10);
    return true;
}

static bool skip_value(struct reader *r);

/* An object, each member's key given to `member`, which reads (or skips) the value. */
static bool read_object(struct reader *r, bool (*member)(struct reader *, const char *, void *), void *context) {
    if (!take(r, '{')) return false;
    if (++r->depth > 64) return false;
    if (take(r, '}')) {
        r->depth--;
        return true;
    }
    for (;;) {
        struct json_buffer key = {0};
        bool ok = read_string(r, &key) && take(r, ':') && member(r, key.text != NULL ? key.text : "", context);
        free(key.text);
        if (!ok) return false;
        if (take(r, ',')) continue;
        if (!take(r, '}')) return false;
        r->depth--;
        return true;
    }
}

static bool skip_member(struct reader *r, const char *key, void *context) {
    (void)key;
    (void)context;
    return skip_value(r);
}

static bool skip_value(struct reader *r) {
    skip_space(r);
    switch (*r->at) {
    case '"': return read_string(r, NULL);
    case '{': return read_object(r, skip_member, NULL);
    case '[':
        r->at++;
        if (++r->depth > 64) return false;
        if (take(r, ']')) {
            r->depth--;
            return true;
        }
        for (;;) {
            if (!skip_value(r)) return false;
            if (take(r, ',')) continue;
            if (!take(r, ']')) return false;
            r->depth--;
            return true;
        }
    case 't': return read_literal(r, "true");
    case 'f': return read_literal(r, "false");
    case 'n': return read_literal(r, "null");
    default: return read_number(r, NULL);
    }
}

struct string_search {
    const char *key;
    char *found;
};

static bool string_member(struct reader *r, const char *key, void *context) {
    struct string_search *search = context;
    skip_space(r);
    if (search->found == NULL && strcmp(key, search->key) == 0 && *r->at == '"') {
        struct json_buffer value = {0};
        if (!read_string(r, &value)) {
            free(value.text);
            return false;
        }
        search->found = value.text != NULL ? value.text : strdup("");
        return true;
    }
    return skip_value(r);
}

char *json_object_string(const char *text, const char *key) {
    struct reader r = {text, 0};
    struct string_search search = {key, NULL};
    if (!read_object(&r, string_member, &search) || (skip_space(&r), *r.at != '\0')) {
        free(search.found);
        return NULL;
    }
    return search.found;
}

struct reply_reading {
    bool version_ok, result_seen, allowed_seen, allowed;
    char *message;
};

static bool result_member(struct reader *r, const char *key, void *context) {
    struct reply_reading *reading = context;
    skip_space(r);
    if (strcmp(key, "allowed") == 0) {
        reading->allowed_seen = true;
        if (read_literal(r, "true")) {
            reading->allowed = true;
            return true;
        }
        reading->allowed = false;
        return read_literal(r, "false");
    }
    if (strcmp(key, "message") == 0 && *r->at == '"') {
        struct json_buffer value = {0};
        if (!read_string(r, &value)) {
            free(value.text);
            return false;
        }
        free(reading->message);
        reading->message = value.text != NULL ? value.text : strdup("");
        return true;
    }
    return skip_value(r);
}

static bool reply_member(struct reader *r, const char *key, void *context) {
    struct reply_reading *reading = context;
    if (strcmp(key, "version") == 0) {
        long long version = 0;
        if (!read_number(r, &version)) return false;
        reading->version_ok = version == 1;
        return true;
    }
    if (strcmp(key, "result") == 0) {
        reading->result_seen = true;
        return read_object(r, result_member, reading);
    }
    return skip_value(r);
}

struct login_answer json_login_answer(const char *reply) {
    struct reader r = {reply, 0};
    struct reply_reading reading = {false, false, false, false, NULL};
    bool ok = read_object(&r, reply_member, &reading) && (skip_space(&r), *r.at == '\0');
    if (!ok || !reading.version_ok || !reading.result_seen || !reading.allowed_seen) {
        free(reading.message);
        return (struct login_answer){false, false, NULL};
    }
    return (struct login_answer){true, reading.allowed, reading.message};
}
