// The agent's reading of logind (org.freedesktop.login1 on the system bus): the sessions of the
// machine, and the changes of their Active, IdleHint and LockedHint as signals, with no polling.
// Through libsystemd's sd-bus (Debian's libsystemd-dev), in C because reading a D-Bus message
// with sd-bus takes variadic calls Swift cannot make; LinuxSupport's LogindWatch sees only this
// small interface.
#ifndef CLOGIND_H
#define CLOGIND_H

#include <stddef.h>
#include <stdint.h>

typedef struct clogind clogind;

/// One session as logind tells it (strings cut to their buffers, always terminated).
typedef struct {
    char id[64];
    uint32_t uid;
    uint32_t leader;
    /// x11, wayland, tty, mir or unspecified.
    char type[16];
    /// user, greeter, lock-screen, background, ...
    char session_class[24];
    /// The X11 display (":0"), for x11 sessions.
    char display[64];
    char tty[64];
    int active;
    int idle;
    /// IdleSinceHintMonotonic: CLOCK_MONOTONIC microseconds when it became idle (0: unknown).
    uint64_t idle_since_monotonic;
    int locked;
    int remote;
    /// The session ended (only `id` is set).
    int removed;
} clogind_session;

typedef void (*clogind_callback)(const clogind_session *session, void *context);

/// Connects to the bus at `address` (a D-Bus address, "unix:path=/run/dbus/system_bus_socket"),
/// subscribes to logind's session signals, and tells every existing session through `each`.
/// NULL on failure, with the reason in `error`.
clogind *clogind_open(const char *address, clogind_callback each, void *context, char *error,
                      size_t error_length);

/// Waits until the bus has something or `stop_fd` is readable, then handles every message that
/// came, telling each session that appeared, changed or ended through `each`. Returns 1 when
/// `stop_fd` was readable, 0 after messages were handled, -1 when the connection failed (the
/// reason in `error`).
int clogind_wait(clogind *bus, int stop_fd, clogind_callback each, void *context, char *error,
                 size_t error_length);

void clogind_close(clogind *bus);

/// Asks logind at `address` to lock the screens of every session of `uid` (each session's
/// org.freedesktop.login1.Session.Lock, which has the desktop show its lock screen), on a
/// connection of its own made for the call, each call waiting at most 2 s. Returns how many
/// sessions were asked, or -1 (the reason in `error`) when logind could not be reached or listed.
int clogind_lock_user(const char *address, uint32_t uid, char *error, size_t error_length);

#endif
