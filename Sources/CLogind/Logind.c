// See include/CLogind.h. Every reply is logind's (root's), still read with every type checked:
// a property of an unexpected type is skipped, never trusted.
#include "CLogind.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>

#define LOGIND "org.freedesktop.login1"
#define SESSION_INTERFACE "org.freedesktop.login1.Session"
// A logind that stops answering holds the agent's logind thread up for this long, no more.
#define CALL_TIMEOUT_USEC (2 * 1000 * 1000)

struct clogind {
    sd_bus *bus;
    // The callback of the call under way (open or wait), for the signal handlers.
    clogind_callback each;
    void *context;
};

static void copy(char *to, size_t size, const char *from) {
    snprintf(to, size, "%s", from ? from : "");
}

static void say(char *error, size_t length, const char *what, int r) {
    if (error && length) snprintf(error, length, "%s: %s", what, strerror(r < 0 ? -r : r));
}

// Reads GetAll's a{sv} into `session`.
static int read_properties(sd_bus_message *m, clogind_session *session) {
    int r = sd_bus_message_enter_container(m, 'a', "{sv}");
    if (r < 0) return r;
    while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
        const char *name = NULL;
        r = sd_bus_message_read(m, "s", &name);
        if (r < 0) return r;
        char type = 0;
        const char *contents = NULL;
        r = sd_bus_message_peek_type(m, &type, &contents);
        if (r < 0) return r;
        if (type != 'v' || !contents) return -EBADMSG;
        if (!strcmp(contents, "s") &&
            (!strcmp(name, "Id") || !strcmp(name, "Type") || !strcmp(name, "Class") ||
             !strcmp(name, "Display") || !strcmp(name, "TTY"))) {
            const char *value = NULL;
            r = sd_bus_message_read(m, "v", "s", &value);
            if (r < 0) return r;
            if (!strcmp(name, "Id")) copy(session->id, sizeof session->id, value);
            else if (!strcmp(name, "Type")) copy(session->type, sizeof session->type, value);
            else if (!strcmp(name, "Class")) copy(session->session_class, sizeof session->session_class, value);
            else if (!strcmp(name, "Display")) copy(session->display, sizeof session->display, value);
            else copy(session->tty, sizeof session->tty, value);
        } else if (!strcmp(contents, "b") && (!strcmp(name, "Active") || !strcmp(name, "IdleHint") ||
                                               !strcmp(name, "LockedHint") || !strcmp(name, "Remote"))) {
            int value = 0;
            r = sd_bus_message_read(m, "v", "b", &value);
            if (r < 0) return r;
            if (!strcmp(name, "Active")) session->active = value;
            else if (!strcmp(name, "IdleHint")) session->idle = value;
            else if (!strcmp(name, "LockedHint")) session->locked = value;
            else session->remote = value;
        } else if (!strcmp(name, "User") && !strcmp(contents, "(uo)")) {
            const char *path = NULL;
            r = sd_bus_message_read(m, "v", "(uo)", &session->uid, &path);
            if (r < 0) return r;
        } else if (!strcmp(name, "Leader") && !strcmp(contents, "u")) {
            r = sd_bus_message_read(m, "v", "u", &session->leader);
            if (r < 0) return r;
        } else if (!strcmp(name, "IdleSinceHintMonotonic") && !strcmp(contents, "t")) {
            r = sd_bus_message_read(m, "v", "t", &session->idle_since_monotonic);
            if (r < 0) return r;
        } else {
            r = sd_bus_message_skip(m, "v");
            if (r < 0) return r;
        }
        r = sd_bus_message_exit_container(m);
        if (r < 0) return r;
    }
    if (r < 0) return r;
    return sd_bus_message_exit_container(m);
}

// Asks logind for one session's properties and tells them; a session gone meanwhile is told as
// removed.
static int tell_session(struct clogind *b, const char *path, const char *id) {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    sd_bus_message *call = NULL, *reply = NULL;
    clogind_session session;
    memset(&session, 0, sizeof session);
    copy(session.id, sizeof session.id, id);
    int r = sd_bus_message_new_method_call(b->bus, &call, LOGIND, path, "org.freedesktop.DBus.Properties",
                                           "GetAll");
    if (r >= 0) r = sd_bus_message_append(call, "s", SESSION_INTERFACE);
    if (r >= 0) r = sd_bus_call(b->bus, call, CALL_TIMEOUT_USEC, &error, &reply);
    sd_bus_message_unref(call);
    if (r < 0) {
        int gone = sd_bus_error_has_name(&error, "org.freedesktop.DBus.Error.UnknownObject") ||
                   sd_bus_error_has_name(&error, "org.freedesktop.DBus.Error.UnknownMethod");
        sd_bus_error_free(&error);
        if (gone && b->each) {
            session.removed = 1;
            b->each(&session, b->context);
        }
        return r;
    }
    r = read_properties(reply, &session);
    sd_bus_message_unref(reply);
    if (r >= 0 && b->each) {
        if (!session.id[0]) copy(session.id, sizeof session.id, id);
        b->each(&session, b->context);
    }
    return r;
}

static int on_session_new(sd_bus_message *m, void *userdata, sd_bus_error *error) {
    (void)error;
    const char *id = NULL, *path = NULL;
    if (sd_bus_message_read(m, "so", &id, &path) < 0) return 0;
    tell_session(userdata, path, id);
    return 0;
}

static int on_session_removed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
    (void)error;
    struct clogind *b = userdata;
    const char *id = NULL, *path = NULL;
    if (sd_bus_message_read(m, "so", &id, &path) < 0 || !b->each) return 0;
    clogind_session session;
    memset(&session, 0, sizeof session);
    copy(session.id, sizeof session.id, id);
    session.removed = 1;
    b->each(&session, b->context);
    return 0;
}

// Any property of a session changed: all of them are asked again (one round trip; logind
// sends these only when something changed).
static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
    (void)error;
    const char *interface = NULL;
    if (sd_bus_message_read(m, "s", &interface) < 0 || strcmp(interface, SESSION_INTERFACE)) return 0;
    const char *path = sd_bus_message_get_path(m);
    if (!path) return 0;
    const char *slash = strrchr(path, '/');
    tell_session(userdata, path, slash ? slash + 1 : path);
    return 0;
}

// Calls logind's ListSessions; 0 with the reply (the caller's to unref), or -1 with the reason.
static int list_sessions(sd_bus *bus, sd_bus_message **reply, char *error, size_t error_length) {
    sd_bus_error call_error = SD_BUS_ERROR_NULL;
    int r = sd_bus_call_method(bus, LOGIND, "/org/freedesktop/login1", "org.freedesktop.login1.Manager",
                               "ListSessions", &call_error, reply, "");
    if (r < 0 && error && error_length)
        snprintf(error, error_length, "ListSessions: %s", call_error.message ? call_error.message : strerror(-r));
    sd_bus_error_free(&call_error);
    return r < 0 ? -1 : 0;
}

clogind *clogind_open(const char *address, clogind_callback each, void *context, char *error,
                      size_t error_length) {
    struct clogind *b = calloc(1, sizeof *b);
    if (!b) {
        say(error, error_length, "calloc", ENOMEM);
        return NULL;
    }
    int r = sd_bus_new(&b->bus);
    if (r < 0) {
        say(error, error_length, "sd_bus_new", r);
        free(b);
        return NULL;
    }
    const char *step = "sd_bus_set_address";
    r = sd_bus_set_address(b->bus, address);
    if (r >= 0) {
        step = "sd_bus_set_bus_client";
        r = sd_bus_set_bus_client(b->bus, 1);
    }
    if (r >= 0) {
        step = "connecting to the system bus";
        r = sd_bus_start(b->bus);
    }
    if (r >= 0) {
        step = "subscribing to SessionNew";
        r = sd_bus_match_signal(b->bus, NULL, LOGIND, "/org/freedesktop/login1", "org.freedesktop.login1.Manager",
                                "SessionNew", on_session_new, b);
    }
    if (r >= 0) {
        step = "subscribing to SessionRemoved";
        r = sd_bus_match_signal(b->bus, NULL, LOGIND, "/org/freedesktop/login1", "org.freedesktop.login1.Manager",
                                "SessionRemoved", on_session_removed, b);
    }
    if (r >= 0) {
        step = "subscribing to sessions' PropertiesChanged";
        r = sd_bus_add_match(b->bus, NULL,
                             "type='signal',sender='" LOGIND "',interface='org.freedesktop.DBus.Properties',"
                             "member='PropertiesChanged',path_namespace='/org/freedesktop/login1/session'",
                             on_properties_changed, b);
    }
    if (r < 0) {
        say(error, error_length, step, r);
        clogind_close(b);
        return NULL;
    }
    // The sessions there already (subscribed first, so none is missed in between).
    sd_bus_message *reply = NULL;
    if (list_sessions(b->bus, &reply, error, error_length) < 0) {
        clogind_close(b);
        return NULL;
    }
    b->each = each;
    b->context = context;
    r = sd_bus_message_enter_container(reply, 'a', "(susso)");
    while (r >= 0) {
        const char *id = NULL, *name = NULL, *seat = NULL, *path = NULL;
        uint32_t uid = 0;
        r = sd_bus_message_read(reply, "(susso)", &id, &uid, &name, &seat, &path);
        if (r <= 0) break;
        tell_session(b, path, id);
    }
    sd_bus_message_unref(reply);
    b->each = NULL;
    b->context = NULL;
    return b;
}

int clogind_wait(clogind *b, int stop_fd, clogind_callback each, void *context, char *error,
                 size_t error_length) {
    b->each = each;
    b->context = context;
    int result = 0;
    for (;;) {
        int r;
        // Everything already received first: poll sees only what is still in the socket.
        while ((r = sd_bus_process(b->bus, NULL)) > 0) {
        }
        if (r < 0) {
            say(error, error_length, "reading the system bus", r);
            result = -1;
            break;
        }
        int events = sd_bus_get_events(b->bus);
        if (events < 0) {
            say(error, error_length, "the system bus", events);
            result = -1;
            break;
        }
        uint64_t until = UINT64_MAX;
        int timeout = -1;
        if (sd_bus_get_timeout(b->bus, &until) >= 0 && until != UINT64_MAX) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            uint64_t now_usec = (uint64_t)now.tv_sec * 1000000 + (uint64_t)now.tv_nsec / 1000;
            timeout = until <= now_usec ? 0 : (int)((until - now_usec + 999) / 1000);
        }
        struct pollfd fds[2] = {
            {.fd = sd_bus_get_fd(b->bus), .events = (short)events},
            {.fd = stop_fd, .events = POLLIN},
        };
        r = poll(fds, 2, timeout);
        if (r < 0 && errno != EINTR) {
            say(error, error_length, "poll(system bus)", errno);
            result = -1;
            break;
        }
        if (fds[1].revents) {
            result = 1;
            break;
        }
        while ((r = sd_bus_process(b->bus, NULL)) > 0) {
        }
        if (r < 0) {
            say(error, error_length, "reading the system bus", r);
            result = -1;
        }
        break;
    }
    b->each = NULL;
    b->context = NULL;
    return result;
}

void clogind_close(clogind *b) {
    if (!b) return;
    sd_bus_flush_close_unref(b->bus);
    free(b);
}

int clogind_lock_user(const char *address, uint32_t uid, char *error, size_t error_length) {
    sd_bus *bus = NULL;
    int r = sd_bus_new(&bus);
    if (r < 0) {
        say(error, error_length, "sd_bus_new", r);
        return -1;
    }
    const char *step = "sd_bus_set_address";
    r = sd_bus_set_address(bus, address);
    if (r >= 0) {
        step = "sd_bus_set_bus_client";
        r = sd_bus_set_bus_client(bus, 1);
    }
    if (r >= 0) {
        step = "sd_bus_set_method_call_timeout";
        r = sd_bus_set_method_call_timeout(bus, CALL_TIMEOUT_USEC);
    }
    if (r >= 0) {
        step = "connecting to the system bus";
        r = sd_bus_start(bus);
    }
    if (r < 0) {
        say(error, error_length, step, r);
        sd_bus_flush_close_unref(bus);
        return -1;
    }
    sd_bus_message *reply = NULL;
    if (list_sessions(bus, &reply, error, error_length) < 0) {
        sd_bus_flush_close_unref(bus);
        return -1;
    }
    // The paths first: the reply's strings live as long as the reply, and each Lock is a call.
    char paths[64][256];
    int found = 0;
    r = sd_bus_message_enter_container(reply, 'a', "(susso)");
    while (r >= 0 && found < 64) {
        const char *id = NULL, *name = NULL, *seat = NULL, *path = NULL;
        uint32_t owner = 0;
        r = sd_bus_message_read(reply, "(susso)", &id, &owner, &name, &seat, &path);
        if (r <= 0) break;
        if (owner == uid && path && strlen(path) < sizeof paths[0]) copy(paths[found++], sizeof paths[0], path);
    }
    sd_bus_message_unref(reply);
    int asked = 0;
    for (int i = 0; i < found; i++) {
        sd_bus_error lock_error = SD_BUS_ERROR_NULL;
        r = sd_bus_call_method(bus, LOGIND, paths[i], SESSION_INTERFACE, "Lock", &lock_error, NULL, "");
        if (r >= 0) {
            asked++;
        } else if (error && error_length) {
            snprintf(error, error_length, "Lock %s: %s", paths[i],
                     lock_error.message ? lock_error.message : strerror(-r));
        }
        sd_bus_error_free(&lock_error);
    }
    sd_bus_flush_close_unref(bus);
    return asked;
}
