// See relay.h for why the X server's bytes are framed before libxcb reads them.
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/// Where the server's stream is: in the setup answer, or in packets after it.
struct framing {
    int in_setup;
    /// The header read so far (8 bytes of a setup answer, 32 of a packet).
    uint8_t header[32];
    size_t have;
    /// Bytes of the current setup answer or packet still to pass on after its header.
    uint64_t rest;
    /// A refused setup's answer, kept to tell why (bounded by its 16-bit length: 256 KB).
    uint8_t *refusal;
    size_t refusal_have, refusal_length;
};

static void set_problem(cxcb_relay *relay, const char *text) {
    pthread_mutex_lock(&relay->lock);
    if (relay->problem[0] == 0) snprintf(relay->problem, sizeof relay->problem, "%s", text);
    pthread_mutex_unlock(&relay->lock);
}

/// A refused setup's reason, as printable ASCII only (it is the server's text, bound for a log).
static void refused(cxcb_relay *relay, const uint8_t *answer, size_t length) {
    char reason[120];
    size_t start = 8, count = 0;
    size_t said = answer[0] == 0 ? answer[1] : length - 8;
    for (size_t i = start; i < length && i < start + said && count + 1 < sizeof reason; i++)
        reason[count++] = answer[i] >= 0x20 && answer[i] < 0x7f ? (char)answer[i] : '?';
    while (count > 0 && (reason[count - 1] == ' ' || reason[count - 1] == '?')) count--;
    reason[count] = 0;
    char text[192];
    snprintf(text, sizeof text, "the server refused the connection%s%s%s",
             count ? " (it said \"" : "", reason, count ? "\")" : "");
    set_problem(relay, text);
}

/// Looks at `length` bytes from the server; returns how many of them may be passed on (all of
/// them, none while a refusal is read, what came before the stream went out of bounds) and sets
/// `*end` when the connection is to end after them.
static long frame_bytes(cxcb_relay *relay, struct framing *f, const uint8_t *bytes, size_t length, int *end) {
    size_t used = 0;
    while (used < length) {
        if (f->rest > 0) {
            size_t take = length - used < f->rest ? length - used : (size_t)f->rest;
            if (f->refusal) {
                memcpy(f->refusal + f->refusal_have, bytes + used, take);
                f->refusal_have += take;
            }
            f->rest -= take;
            used += take;
            if (f->refusal && f->rest == 0) {
                refused(relay, f->refusal, f->refusal_length);
                *end = 1;
                return 0;
            }
            continue;
        }
        size_t need = f->in_setup ? 8 : 32;
        size_t take = need - f->have < length - used ? need - f->have : length - used;
        memcpy(f->header + f->have, bytes + used, take);
        f->have += take;
        used += take;
        if (f->have < need) continue;
        f->have = 0;
        if (f->in_setup) {
            // status, reason length, major and minor version, then the rest's length in words.
            uint16_t words;
            memcpy(&words, f->header + 6, 2);
            f->rest = (uint64_t)words * 4;
            f->in_setup = 0;
            if (f->header[0] != 1) {
                f->refusal_length = 8 + (size_t)f->rest;
                f->refusal = malloc(f->refusal_length);
                if (!f->refusal) {
                    set_problem(relay, "the server refused the connection");
                    *end = 1;
                    return 0;
                }
                memcpy(f->refusal, f->header, 8);
                f->refusal_have = 8;
                if (f->rest == 0) {
                    refused(relay, f->refusal, f->refusal_length);
                    *end = 1;
                    return 0;
                }
                // Nothing of a refusal is passed on: libxcb would write its reason to stderr.
            }
            continue;
        }
        uint8_t type = f->header[0] & 0x7f;
        if (f->header[0] == 1 || type == 35) {
            // A reply, or a generic event: 32 bytes and as many 4-byte words again as it says.
            uint32_t words;
            memcpy(&words, f->header + 4, 4);
            uint64_t size = 32 + (uint64_t)words * 4;
            if (size > CXCB_RELAY_PACKET_LIMIT) {
                char text[160];
                snprintf(text, sizeof text, "the server sent a %s of %llu bytes (more than %u)",
                         f->header[0] == 1 ? "reply" : "generic event", (unsigned long long)size,
                         CXCB_RELAY_PACKET_LIMIT);
                set_problem(relay, text);
                *end = 1;
                return (long)(used >= 32 ? used - 32 : 0);
            }
            f->rest = size - 32;
        }
        if (f->header[0] != 1) {
            long unread = atomic_fetch_add(&relay->unread, 1) + 1;
            if (unread > CXCB_RELAY_UNREAD_LIMIT) {
                char text[160];
                snprintf(text, sizeof text, "the server sent more than %d events the agent had not read yet",
                         CXCB_RELAY_UNREAD_LIMIT);
                set_problem(relay, text);
                *end = 1;
                return (long)(used >= 32 ? used - 32 : 0);
            }
        }
    }
    return f->refusal ? 0 : (long)length;
}

static int send_all(int fd, const uint8_t *bytes, size_t length) {
    while (length > 0) {
        ssize_t sent = send(fd, bytes, length, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) continue;
        if (sent <= 0) return -1;
        bytes += sent;
        length -= (size_t)sent;
    }
    return 0;
}

static void *relay_main(void *argument) {
    cxcb_relay *relay = argument;
    atomic_store(&relay->tid, (int)syscall(SYS_gettid));
    struct framing framing = {.in_setup = 1};
    enum { size = 65536 };
    uint8_t *buffer = malloc(size);
    while (buffer) {
        struct pollfd fds[2] = {{.fd = relay->server, .events = POLLIN}, {.fd = relay->inner, .events = POLLIN}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (fds[0].revents) {
            ssize_t got = recv(relay->server, buffer, size, MSG_DONTWAIT);
            if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (got <= 0) break;
            int end = 0;
            long pass = frame_bytes(relay, &framing, buffer, (size_t)got, &end);
            if (pass > 0 && send_all(relay->inner, buffer, (size_t)pass) < 0) break;
            if (end) break;
        }
        if (fds[1].revents) {
            ssize_t got = recv(relay->inner, buffer, size, MSG_DONTWAIT);
            if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (got <= 0) break;
            if (send_all(relay->server, buffer, (size_t)got) < 0) break;
        }
    }
    free(buffer);
    free(framing.refusal);
    // libxcb sees the end of the stream; the descriptors are closed by cxcb_relay_stop.
    shutdown(relay->inner, SHUT_RDWR);
    shutdown(relay->server, SHUT_RDWR);
    return NULL;
}

cxcb_relay *cxcb_relay_start(int server, int *outer, char *error, size_t error_length) {
    cxcb_relay *relay = calloc(1, sizeof *relay);
    if (!relay) {
        snprintf(error, error_length, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&relay->lock, NULL);
    relay->server = fcntl(server, F_DUPFD_CLOEXEC, 0);
    int pair[2];
    if (relay->server < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        snprintf(error, error_length, "cannot set up the connection: %s", strerror(errno));
        if (relay->server >= 0) close(relay->server);
        free(relay);
        return NULL;
    }
    relay->inner = pair[0];
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setstacksize(&attributes, 64 * 1024);
    int failed = pthread_create(&relay->thread, &attributes, relay_main, relay);
    pthread_attr_destroy(&attributes);
    if (failed) {
        snprintf(error, error_length, "cannot start a thread: %s", strerror(failed));
        close(pair[0]);
        close(pair[1]);
        close(relay->server);
        free(relay);
        return NULL;
    }
    relay->started = 1;
    *outer = pair[1];
    return relay;
}

void cxcb_relay_problem(cxcb_relay *relay, char *out, size_t length) {
    pthread_mutex_lock(&relay->lock);
    snprintf(out, length, "%s", relay->problem);
    pthread_mutex_unlock(&relay->lock);
}

void cxcb_relay_interrupt(cxcb_relay *relay) { shutdown(relay->server, SHUT_RDWR); }

void cxcb_relay_stop(cxcb_relay *relay) {
    if (!relay) return;
    shutdown(relay->server, SHUT_RDWR);
    shutdown(relay->inner, SHUT_RDWR);
    if (relay->started) pthread_join(relay->thread, NULL);
    close(relay->server);
    close(relay->inner);
    pthread_mutex_destroy(&relay->lock);
    free(relay);
}
