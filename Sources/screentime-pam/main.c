/* The PAM hook: run by pam_exec(8) in the account and session stacks (see
 * packaging/pam-configs/screentime), as root (`seteuid`). It tells the agent of each login and asks
 * whether it may go on; what it prints goes to the person logging in (stdout).
 *
 *   account        refused (exit 1, with the reason) for a child in downtime or out of screen time
 *                  with --no-login; allowed for everyone else
 *   open_session   the same answer, and the agent lists the session and counts a text session
 *   close_session  always allowed
 *
 * It asks the agent only about the authorized users the agent last listed
 * (`<stateDirectory>/login-children`, root's): anyone else's login goes on at once, having cost
 * one small program's start. When the agent does not answer within `--timeout` seconds, it fails
 * closed for the children listed and open for everyone else: a broken agent never locks out a
 * guardian or root.
 *
 *   screentime-pam [--config FILE] [--socket PATH] [--state-dir DIR] [--timeout SECONDS]
 *
 * Written in C, with no Swift runtime, because it starts three times in every login of every user
 * (`make bench` measures what it adds). It speaks the control socket's protocol itself
 * (ScreenTimeIPC: a 4-byte big-endian length, then JSON, one request per connection):
 * `{"version":1,"kind":"login","body":{...}}` out, `{"version":1,"result":{"allowed":...,
 * "message":...}}` back; LoginIntegrationTests hold the two to the same answers. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "json.h"

enum { protocol_version = 1, maximum_message = 1 << 20 };

/* Reads a whole small file (at most `limit` bytes) into a new string; NULL when it cannot. */
static char *read_file(const char *path, size_t limit) {
    FILE *file = fopen(path, "re");
    if (file == NULL) return NULL;
    char *text = malloc(limit + 1);
    size_t length = text == NULL ? 0 : fread(text, 1, limit, file);
    bool whole = text != NULL && !ferror(file) && feof(file);
    fclose(file);
    if (!whole) {
        free(text);
        return NULL;
    }
    text[length] = '\0';
    return text;
}

/* The authorized users the agent last listed (`uid name child|individual` per line): whether
 * the file could be read, and the member kind of the user's line (NULL when none names it). */
struct listing {
    bool read;
    char member[16];
    bool listed;
};

static struct listing find_listed(const char *directory, const char *user, const char *uid) {
    struct listing result = {false, "", false};
    char path[4096];
    if (snprintf(path, sizeof path, "%s/login-children", directory) >= (int)sizeof path) return result;
    char *text = read_file(path, 4 << 20);
    if (text == NULL) return result;
    result.read = true;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') continue;
        char *fields = NULL;
        char *first = strtok_r(line, " ", &fields);
        char *name = first == NULL ? NULL : strtok_r(NULL, " ", &fields);
        if (name == NULL) continue;
        char *member = strtok_r(NULL, " ", &fields);
        if (strcmp(name, user) == 0 || (uid != NULL && strcmp(first, uid) == 0)) {
            result.listed = true;
            snprintf(result.member, sizeof result.member, "%s", member == NULL ? "child" : member);
            break;
        }
    }
    free(text);
    return result;
}

/* Appends `text` to `out` as a JSON string. */
static void append_string(struct json_buffer *out, const char *text) {
    json_buffer_append(out, "\"");
    for (const unsigned char *c = (const unsigned char *)text; *c != '\0'; c++) {
        char escaped[8];
        if (*c == '"' || *c == '\\') {
            snprintf(escaped, sizeof escaped, "\\%c", *c);
        } else if (*c < 0x20) {
            snprintf(escaped, sizeof escaped, "\\u%04x", *c);
        } else {
            escaped[0] = (char)*c;
            escaped[1] = '\0';
        }
        json_buffer_append(out, escaped);
    }
    json_buffer_append(out, "\"");
}

/* Writes or reads exactly `count` bytes before `deadline` (CLOCK_MONOTONIC milliseconds). */
static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static bool transfer(int fd, unsigned char *bytes, size_t count, bool out, long long deadline) {
    size_t done = 0;
    while (done < count) {
        long long left = deadline - now_ms();
        if (left <= 0) return false;
        struct pollfd waiting = {fd, out ? POLLOUT : POLLIN, 0};
        int ready = poll(&waiting, 1, (int)(left > 60000 ? 60000 : left));
        if (ready < 0 && errno != EINTR) return false;
        if (ready <= 0) continue;
        ssize_t moved = out ? send(fd, bytes + done, count - done, MSG_NOSIGNAL) : read(fd, bytes + done, count - done);
        if (moved < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (moved <= 0) return false;
        done += (size_t)moved;
    }
    return true;
}

/* Sends one request and reads its reply's payload (a new string), or NULL when the agent cannot
 * be reached or does not answer in time. */
static char *ask_agent(const char *socket_path, const char *request, int timeout) {
    long long deadline = now_ms() + (long long)timeout * 1000;
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(socket_path) == 0 || strlen(socket_path) >= sizeof address.sun_path) return NULL;
    memcpy(address.sun_path, socket_path, strlen(socket_path));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return NULL;
    char *reply = NULL;
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        if (errno != EINPROGRESS && errno != EAGAIN) goto done;
        struct pollfd waiting = {fd, POLLOUT, 0};
        long long left = deadline - now_ms();
        int error = 0;
        socklen_t length = sizeof error;
        if (left <= 0 || poll(&waiting, 1, (int)left) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 ||
            error != 0)
            goto done;
    }
    size_t size = strlen(request);
    unsigned char header[4] = {(unsigned char)(size >> 24), (unsigned char)(size >> 16), (unsigned char)(size >> 8),
                               (unsigned char)size};
    /* An agent that turns the connection away (busy) replies and closes before reading: its reply
     * is still there to be read, so a failed send goes on to the read. */
    if (transfer(fd, header, 4, true, deadline)) transfer(fd, (unsigned char *)request, size, true, deadline);
    if (!transfer(fd, header, 4, false, deadline)) goto done;
    size_t length = (size_t)header[0] << 24 | (size_t)header[1] << 16 | (size_t)header[2] << 8 | header[3];
    if (length == 0 || length > maximum_message) goto done;
    reply = malloc(length + 1);
    if (reply == NULL) goto done;
    if (!transfer(fd, (unsigned char *)reply, length, false, deadline)) {
        free(reply);
        reply = NULL;
        goto done;
    }
    reply[length] = '\0';
done:
    close(fd);
    return reply;
}

int main(int argc, char **argv) {
    const char *option_names[] = {"--config", "--socket", "--state-dir", "--timeout"};
    const char *options[4] = {NULL, NULL, NULL, NULL};
    for (int i = 1; i < argc; i++) {
        int which = -1;
        for (int k = 0; k < 4; k++)
            if (strcmp(argv[i], option_names[k]) == 0) which = k;
        if (which < 0 || i + 1 >= argc) {
            /* A mistyped stack must not lock anyone out; the agent's own check still holds. */
            fprintf(stderr, "screentime-pam: unknown argument '%s'\n", argv[i]);
            return 0;
        }
        options[which] = argv[++i];
    }
    const char *phase_name = getenv("PAM_TYPE");
    const char *user = getenv("PAM_USER");
    const char *phase;
    if (phase_name == NULL) return 0;
    if (strcmp(phase_name, "account") == 0) phase = "account";
    else if (strcmp(phase_name, "open_session") == 0) phase = "open";
    else if (strcmp(phase_name, "close_session") == 0) phase = "close";
    else return 0; /* auth, password: nothing to say */
    /* root is never refused, whatever the agent says or does. */
    if (user == NULL || user[0] == '\0' || strcmp(user, "root") == 0) return 0;

    /* The agent's configuration keys the hook needs, from its file (every key optional). */
    char *configuration = read_file(options[0] != NULL ? options[0] : "/etc/screentime/screentimed.json", 1 << 20);
    char *configured_socket = configuration == NULL ? NULL : json_object_string(configuration, "socket");
    char *configured_state = configuration == NULL ? NULL : json_object_string(configuration, "stateDirectory");
    const char *socket_path = options[1] != NULL             ? options[1]
                              : configured_socket != NULL ? configured_socket
                                                          : "/run/screentime/screentimed.sock";
    const char *state_directory = options[2] != NULL            ? options[2]
                                  : configured_state != NULL ? configured_state
                                                             : "/var/lib/screentime";
    int timeout = options[3] != NULL ? atoi(options[3]) : 5;
    if (timeout <= 0) timeout = 5;

    char uid[24];
    struct passwd *entry = getpwnam(user);
    if (entry != NULL) snprintf(uid, sizeof uid, "%u", (unsigned)entry->pw_uid);
    struct listing listing = find_listed(state_directory, user, entry != NULL ? uid : NULL);
    /* Not authorized: nothing to ask or tell, and no one waits on the agent (a guardian, a sibling). */
    if (listing.read && !listing.listed) return 0;

    struct json_buffer request = {0};
    json_buffer_append(&request, "{\"version\":1,\"kind\":\"login\",\"body\":{\"phase\":");
    append_string(&request, phase);
    json_buffer_append(&request, ",\"user\":");
    append_string(&request, user);
    json_buffer_append(&request, ",\"service\":");
    append_string(&request, getenv("PAM_SERVICE") != NULL ? getenv("PAM_SERVICE") : "");
    json_buffer_append(&request, ",\"tty\":");
    append_string(&request, getenv("PAM_TTY") != NULL ? getenv("PAM_TTY") : "");
    if (getenv("PAM_RHOST") != NULL) {
        json_buffer_append(&request, ",\"remoteHost\":");
        append_string(&request, getenv("PAM_RHOST"));
    }
    json_buffer_append(&request, "}}");
    if (request.failed) return strcmp(listing.member, "child") == 0 && strcmp(phase, "close") != 0 ? 1 : 0;

    char *reply = ask_agent(socket_path, request.text, timeout);
    struct login_answer answer = reply == NULL ? (struct login_answer){false, false, NULL} : json_login_answer(reply);
    if (answer.understood) {
        if (answer.allowed) return 0;
        if (answer.message != NULL) printf("%s\n", answer.message);
        else printf("screentime: %s may not log in now.\n", user);
        return 1;
    }
    /* The agent does not answer (or answers an error): closed for its children, open for everyone
     * else. Said to the person logging in; what went wrong is the agent's log's to tell. */
    if (strcmp(phase, "close") == 0 || strcmp(listing.member, "child") != 0) return 0;
    printf("Screen Time is not answering, so %s cannot log in now. Ask a guardian to look at it.\n", user);
    return 1;
}
