// Everything the X server sends passes through a relay before libxcb reads it, because libxcb
// trusts the server's lengths: it allocates whatever size a reply's header claims and reads until
// it has it, and it writes a refused setup's reason to the process's stderr. A server the child
// runs (or fakes with a script listening on a display socket) could make the agent allocate
// gigabytes or fill its log. The relay frames the stream (the setup, then 32-byte packets and
// the replies' and generic events' tails) and ends the connection at the first thing out of
// bounds, saying why.
#ifndef CXCB_RELAY_H
#define CXCB_RELAY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/// The largest reply or generic event passed on (what the agent asks for is far smaller: a
/// window tree of a thousand windows is 4 KB).
#define CXCB_RELAY_PACKET_LIMIT (4u << 20)
/// Events and errors passed on and not yet read by the agent, at most (3 MB of them).
#define CXCB_RELAY_UNREAD_LIMIT 100000

typedef struct cxcb_relay {
    /// The server's socket (a copy the relay owns) and the relay's end of the pair whose other end
    /// libxcb speaks over.
    int server;
    int inner;
    pthread_t thread;
    int started;
    /// The relay thread's id (0 until it runs): whether it waited for a processor is read from it.
    atomic_int tid;
    /// Events passed on since the agent last drained its queue (the agent resets it).
    atomic_long unread;
    pthread_mutex_t lock;
    /// Why the relay ended the connection, if it did (empty otherwise).
    char problem[192];
} cxcb_relay;

/// Starts relaying between a copy of `server` and a new socket pair; returns the end libxcb is to
/// use in `*outer`. NULL (with `error`) when it cannot start.
cxcb_relay *cxcb_relay_start(int server, int *outer, char *error, size_t error_length);

/// Why the relay ended the connection ("" when it did not), copied into `out`.
void cxcb_relay_problem(cxcb_relay *relay, char *out, size_t length);

/// Cuts the server's side (the relay then ends).
void cxcb_relay_interrupt(cxcb_relay *relay);

/// Ends the relay (after libxcb closed its end) and frees it.
void cxcb_relay_stop(cxcb_relay *relay);

#endif
