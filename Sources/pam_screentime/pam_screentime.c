/* pam_screentime: the PAM module that tells the screentime agent of each login and asks whether
 * it may go on. In the common account and session stacks (packaging/pam-configs/screentime,
 * enabled by pam-auth-update):
 *
 *   account        refused (PAM_PERM_DENIED, with the reason said to the person logging in) for a
 *                  child in downtime or out of screen time with --no-login; allowed for everyone
 *                  else
 *   open_session   the same answer (PAM_SESSION_ERR), and the agent lists the session and counts a
 *                  text session
 *   close_session  always allowed
 *
 * It asks the agent only about the authorized users the agent last listed
 * (`<stateDirectory>/login-children`, root's): anyone else's login goes on at once, having cost
 * the read of one small file. When the agent does not answer within `timeout` seconds, it fails
 * closed for the children listed and open for everyone else: a broken agent never locks out a
 * guardian or root. The agent believes only root's word (the connection's credentials): a PAM
 * application a child runs itself tells it nothing.
 *
 *   account  required  pam_screentime.so [config=FILE] [socket=PATH] [state_dir=DIR] [timeout=SECONDS]
 *
 * A module, in C, because it runs in every login of every user: a program run by pam_exec cost
 * 3.8 ms a call before it even started (pam_exec closes every descriptor up to 65,535), three calls
 * a login; `make bench` measures what the module adds. It speaks the control socket's protocol
 * itself (ScreenTimeIPC: a 4-byte big-endian length, then JSON, one request per connection):
 * `{"version":1,"kind":"login","body":{...}}` out, `{"version":1,"result":{"allowed":...,
 * "message":...}}` back; LoginIntegrationTests hold the two to the same answers. It keeps no
 * state, starts no thread, changes no signal disposition, and frees what it takes. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pwd.h>
#include <security/pam_ext.h>
#include <security/pam_modules.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "json.h"

enum { maximum_message = 1 << 20 };

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

/* The line of the agent's list (`uid name child|individual`) that names the user: whether the
 * list could be read at all, whether a line names the user, and that line's member kind. */
struct listing {
    bool read;
    bool listed;
    char member[16];
};

static struct listing find_listed(const char *directory, const char *user, const char *uid) {
    struct listing result = {false, false, ""};
    char path[4096];
    if (snprintf(path, sizeof path, "%s/login-children", directory) >= (int)sizeof path) return result;
    char *text = read_file(path, 4 << 20);
    if (text == NULL) return result;
    result.read = true;
    char *lines = NULL;
    for (char *line = strtok_r(text, "\n", &lines); line != NULL; line = strtok_r(NULL, "\n", &lines)) {
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

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Writes or reads exactly `count` bytes before `deadline` (CLOCK_MONOTONIC milliseconds). */
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
    size_t path_length = strlen(socket_path);
    if (path_length == 0 || path_length >= sizeof address.sun_path) return NULL;
    memcpy(address.sun_path, socket_path, path_length);
    /* A full queue of waiting connections (EAGAIN: anyone may fill it, a sibling too), or an agent
     * restarting (no socket, or no one listening yet), is tried again until the deadline: a child
     * the agent allows is never refused because someone else made it busy. */
    int fd = -1;
    for (;;) {
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) return NULL;
        if (connect(fd, (struct sockaddr *)&address, sizeof address) == 0) break;
        int error = errno;
        close(fd);
        if ((error != EAGAIN && error != ECONNREFUSED && error != ENOENT) || deadline - now_ms() <= 20) return NULL;
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    char *reply = NULL;
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

static const char *item(pam_handle_t *handle, int type) {
    const void *value = NULL;
    if (pam_get_item(handle, type, &value) != PAM_SUCCESS || value == NULL) return NULL;
    return value;
}

/* One phase of a login: "account", "open" or "close". */
static int decide(pam_handle_t *handle, int flags, int argc, const char **argv, const char *phase) {
    const char *config_path = "/etc/screentime/screentimed.json";
    const char *socket_option = NULL, *state_option = NULL;
    int timeout = 5;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "config=", 7) == 0) config_path = argv[i] + 7;
        else if (strncmp(argv[i], "socket=", 7) == 0) socket_option = argv[i] + 7;
        else if (strncmp(argv[i], "state_dir=", 10) == 0) state_option = argv[i] + 10;
        else if (strncmp(argv[i], "timeout=", 8) == 0) timeout = atoi(argv[i] + 8);
        /* A mistyped stack must not lock anyone out; the agent's own check still holds. */
        else pam_syslog(handle, LOG_WARNING, "unknown argument '%s' (ignored)", argv[i]);
    }
    if (timeout <= 0) timeout = 5;
    const char *user = item(handle, PAM_USER);
    /* root is never refused, whatever the agent says or does. */
    if (user == NULL || user[0] == '\0' || strcmp(user, "root") == 0) return PAM_SUCCESS;

    /* The agent's configuration keys the module needs, from its file (every key optional). */
    char *configuration = read_file(config_path, 1 << 20);
    char *configured_socket = configuration == NULL ? NULL : json_object_string(configuration, "socket");
    char *configured_state = configuration == NULL ? NULL : json_object_string(configuration, "stateDirectory");
    free(configuration);
    const char *socket_path = socket_option != NULL       ? socket_option
                              : configured_socket != NULL ? configured_socket
                                                          : "/run/screentime/screentimed.sock";
    const char *state_directory = state_option != NULL       ? state_option
                                  : configured_state != NULL ? configured_state
                                                             : "/var/lib/screentime";

    char uid[24] = "";
    struct passwd entry, *found = NULL;
    char buffer[16384];
    if (getpwnam_r(user, &entry, buffer, sizeof buffer, &found) == 0 && found != NULL)
        snprintf(uid, sizeof uid, "%u", (unsigned)found->pw_uid);
    struct listing listing = find_listed(state_directory, user, uid[0] != '\0' ? uid : NULL);
    bool child = listing.listed && strcmp(listing.member, "child") == 0;
    int refused = strcmp(phase, "account") == 0 ? PAM_PERM_DENIED : PAM_SESSION_ERR;
    int result = PAM_SUCCESS;
    char *reply = NULL;
    struct login_answer answer = {false, false, NULL};
    struct json_buffer request = {0};
    /* Not authorized: nothing to ask or tell, and no one waits on the agent (a guardian, a sibling). */
    if (listing.read && !listing.listed) goto done;

    json_buffer_append(&request, "{\"version\":1,\"kind\":\"login\",\"body\":{\"phase\":");
    append_string(&request, phase);
    json_buffer_append(&request, ",\"user\":");
    append_string(&request, user);
    json_buffer_append(&request, ",\"service\":");
    append_string(&request, item(handle, PAM_SERVICE) != NULL ? item(handle, PAM_SERVICE) : "");
    json_buffer_append(&request, ",\"tty\":");
    append_string(&request, item(handle, PAM_TTY) != NULL ? item(handle, PAM_TTY) : "");
    if (item(handle, PAM_RHOST) != NULL) {
        json_buffer_append(&request, ",\"remoteHost\":");
        append_string(&request, item(handle, PAM_RHOST));
    }
    json_buffer_append(&request, "}}");
    if (!request.failed) reply = ask_agent(socket_path, request.text, timeout);
    if (reply != NULL) answer = json_login_answer(reply);
    if (answer.understood) {
        if (!answer.allowed) {
            result = refused;
            if (!(flags & PAM_SILENT)) {
                if (answer.message != NULL) pam_error(handle, "%s", answer.message);
                else pam_error(handle, "screentime: %s may not log in now.", user);
            }
        }
    } else if (strcmp(phase, "close") != 0 && child) {
        /* The agent does not answer (or answers what this module does not understand): closed for
         * its children, open for everyone else. Said to the person logging in; what went wrong is
         * the agent's log's to tell. */
        result = refused;
        pam_syslog(handle, LOG_ERR, "the screentime agent at %s did not answer; %s's login is refused", socket_path,
                   user);
        if (!(flags & PAM_SILENT))
            pam_error(handle, "Screen Time is not answering, so %s cannot log in now. Ask a guardian to look at it.",
                      user);
    }
done:
    free(answer.message);
    free(reply);
    free(request.text);
    free(configured_socket);
    free(configured_state);
    return result;
}

PAM_EXTERN int pam_sm_acct_mgmt(pam_handle_t *handle, int flags, int argc, const char **argv) {
    return decide(handle, flags, argc, argv, "account");
}

PAM_EXTERN int pam_sm_open_session(pam_handle_t *handle, int flags, int argc, const char **argv) {
    return decide(handle, flags, argc, argv, "open");
}

PAM_EXTERN int pam_sm_close_session(pam_handle_t *handle, int flags, int argc, const char **argv) {
    return decide(handle, flags, argc, argv, "close");
}
