// See include/CXCB.h for why this is C.
#include "CXCB.h"
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xcb/res.h>
#include <xcb/sync.h>
#include <xcb/xcb.h>
#include <xcb/xinput.h>

struct cxcb_session {
    xcb_connection_t *connection;
    cxcb_relay *relay;
    xcb_window_t root;
    xcb_atom_t active_window;
    xcb_atom_t net_supported;
    uint8_t sync_first_event;
    uint8_t sync_first_error;
    xcb_sync_counter_t idle_counter;
    xcb_sync_alarm_t alarm;
    int64_t idle_ms;
    int idle;
    /// The bits of a resource ID that a client chooses (the server's, the same for every client):
    /// the rest names the client.
    uint32_t resource_mask;
    /// A window of the agent's that is never shown: asking to grab the keyboard for it tells
    /// whether another client holds the keyboard, and never takes it (see `cxcb_keyboard_grab`).
    xcb_window_t probe;
    /// Where the keyboard went when another client last grabbed it, as the server's focus
    /// events told (a watched window it went into, or inside); `grab_elsewhere`: it went
    /// somewhere no watched window names (the root window, or a window not watched yet).
    xcb_window_t grab_window;
    int grab_elsewhere;
    /// XInput 2's major opcode, once its raw button presses (and motion) are selected (0: not read).
    uint8_t xi_opcode;
};

/// Asks XInput 2 for the raw button presses (and wheel turns) of every master device, and their
/// raw motion when `motion`.
static void select_raw(cxcb_session *session, int motion) {
    struct {
        xcb_input_event_mask_t head;
        uint32_t mask;
    } raw = {{.deviceid = XCB_INPUT_DEVICE_ALL_MASTER, .mask_len = 1},
             XCB_INPUT_XI_EVENT_MASK_RAW_BUTTON_PRESS | (motion ? XCB_INPUT_XI_EVENT_MASK_RAW_MOTION : 0)};
    xcb_input_xi_select_events(session->connection, session->root, 1, &raw.head);
}

int cxcb_watch_motion(cxcb_session *session, int on) {
    if (session->xi_opcode == 0) return 0;
    select_raw(session, on);
    xcb_flush(session->connection);
    return xcb_connection_has_error(session->connection) ? -1 : 1;
}

static xcb_atom_t intern(xcb_connection_t *connection, const char *name) {
    xcb_intern_atom_reply_t *reply =
        xcb_intern_atom_reply(connection, xcb_intern_atom(connection, 0, (uint16_t)strlen(name), name), NULL);
    if (!reply) return XCB_ATOM_NONE;
    xcb_atom_t atom = reply->atom;
    free(reply);
    return atom;
}

static xcb_get_property_reply_t *property(cxcb_session *session, xcb_window_t window, xcb_atom_t atom,
                                          xcb_atom_t type, uint32_t words);

/// What the agent asks to hear of a window it watches (a top-level one, or one inside the active
/// window): windows mapped and moved in under it, and the keyboard moving into or out of it.
/// Any client may move the keyboard to a window of its own (SetInputFocus) without the window
/// manager, and nothing of the root window's tells that: each top-level window tells it itself.
#define WATCHED_WINDOW_EVENTS (XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY | XCB_EVENT_MASK_FOCUS_CHANGE)

/// The top-level windows watched at the start, at most (later ones are watched as they map).
#define WATCHED_AT_START 65536

static void watch_window(cxcb_session *session, xcb_window_t window) {
    uint32_t events = WATCHED_WINDOW_EVENTS;
    xcb_change_window_attributes(session->connection, window, XCB_CW_EVENT_MASK, &events);
}

/// The agent's never-shown window, for asking whether another client holds the keyboard.
static void make_probe(cxcb_session *session) {
    session->probe = xcb_generate_id(session->connection);
    xcb_create_window(session->connection, 0, session->probe, session->root, -10, -10, 1, 1, 0,
                      XCB_WINDOW_CLASS_INPUT_ONLY, XCB_COPY_FROM_PARENT, 0, NULL);
}

static int64_t from_sync(xcb_sync_int64_t value) { return ((int64_t)value.hi << 32) | (int64_t)value.lo; }

static xcb_sync_int64_t to_sync(int64_t value) {
    xcb_sync_int64_t result = {.hi = (int32_t)(value >> 32), .lo = (uint32_t)(value & 0xffffffff)};
    return result;
}

/// The root window of screen `screen`, found with every length the server gave checked against
/// the setup's own size (libxcb's iterators trust them): 0, -1 when the setup is out of bounds,
/// -2 when there is no such screen.
static int screen_root(const xcb_setup_t *setup, int screen, xcb_window_t *root) {
    const uint8_t *base = (const uint8_t *)setup;
    size_t total = 8 + (size_t)setup->length * 4;
    size_t offset = sizeof(xcb_setup_t) + (((size_t)setup->vendor_len + 3) & ~(size_t)3) +
                    sizeof(xcb_format_t) * (size_t)setup->pixmap_formats_len;
    for (int i = 0; i < setup->roots_len; i++) {
        if (offset + sizeof(xcb_screen_t) > total) return -1;
        const xcb_screen_t *found = (const xcb_screen_t *)(base + offset);
        size_t next = offset + sizeof(xcb_screen_t);
        for (int d = 0; d < found->allowed_depths_len; d++) {
            if (next + sizeof(xcb_depth_t) > total) return -1;
            const xcb_depth_t *depth = (const xcb_depth_t *)(base + next);
            next += sizeof(xcb_depth_t) + sizeof(xcb_visualtype_t) * (size_t)depth->visuals_len;
        }
        if (next > total) return -1;
        if (i == screen) {
            *root = found->root;
            return 0;
        }
        offset = next;
    }
    return -2;
}

/// How many bytes a property's value has, checked against the reply's size (the server's
/// `value_len` is its own claim); -1 when it does not fit.
static int value_bytes(const xcb_get_property_reply_t *reply) {
    if (reply->format != 8 && reply->format != 16 && reply->format != 32) return reply->value_len == 0 ? 0 : -1;
    uint64_t bytes = (uint64_t)reply->value_len * (reply->format / 8);
    return bytes <= (uint64_t)reply->length * 4 ? (int)bytes : -1;
}

cxcb_session *cxcb_open(int fd, const uint8_t *cookie, size_t cookie_length, int screen, char *error,
                        size_t error_length) {
    static char cookie_name[] = "MIT-MAGIC-COOKIE-1";
    xcb_auth_info_t auth = {0};
    if (cookie && cookie_length > 0) {
        auth.namelen = (int)strlen(cookie_name);
        auth.name = cookie_name;
        auth.datalen = (int)cookie_length;
        auth.data = (char *)cookie;
    }
    int outer = -1;
    cxcb_relay *relay = cxcb_relay_start(fd, &outer, error, error_length);
    if (!relay) return NULL;
    xcb_connection_t *connection = xcb_connect_to_fd(outer, cookie ? &auth : NULL);
    int failure = xcb_connection_has_error(connection);
    if (failure) {
        char problem[192];
        cxcb_relay_problem(relay, problem, sizeof problem);
        snprintf(error, error_length, "%s",
                 problem[0]                           ? problem
                 : failure == XCB_CONN_CLOSED_PARSE_ERR ? "the server's setup could not be parsed"
                 : failure == XCB_CONN_ERROR            ? "the server refused the connection or closed it"
                                                        : "the connection failed");
        xcb_disconnect(connection);
        cxcb_relay_stop(relay);
        return NULL;
    }
    xcb_window_t root = XCB_NONE;
    int found = screen_root(xcb_get_setup(connection), screen, &root);
    if (found != 0) {
        if (found == -2)
            snprintf(error, error_length, "the display has no screen %d", screen);
        else
            snprintf(error, error_length, "the server's setup is out of bounds");
        xcb_disconnect(connection);
        cxcb_relay_stop(relay);
        return NULL;
    }
    cxcb_session *session = calloc(1, sizeof *session);
    if (!session) {
        snprintf(error, error_length, "out of memory");
        xcb_disconnect(connection);
        cxcb_relay_stop(relay);
        return NULL;
    }
    session->connection = connection;
    session->relay = relay;
    session->root = root;
    session->resource_mask = xcb_get_setup(connection)->resource_id_mask;
    session->active_window = intern(connection, "_NET_ACTIVE_WINDOW");
    session->net_supported = intern(connection, "_NET_SUPPORTED");
    if (xcb_connection_has_error(connection)) {
        char problem[192];
        cxcb_relay_problem(relay, problem, sizeof problem);
        snprintf(error, error_length, "%s", problem[0] ? problem : "the connection failed while setting up");
        cxcb_close(session);
        return NULL;
    }
    return session;
}

int cxcb_screens(cxcb_session *session) {
    xcb_window_t root;
    int count = 0;
    while (count < 16 && screen_root(xcb_get_setup(session->connection), count, &root) == 0) count++;
    return count;
}

int cxcb_fd(const cxcb_session *session) { return xcb_get_file_descriptor(session->connection); }

int cxcb_relay_thread(cxcb_session *session) { return atomic_load(&session->relay->tid); }

static void set_alarm(cxcb_session *session, int create, int64_t value, uint32_t test) {
    uint32_t mask = XCB_SYNC_CA_VALUE_TYPE | XCB_SYNC_CA_VALUE | XCB_SYNC_CA_TEST_TYPE | XCB_SYNC_CA_DELTA;
    if (create) {
        xcb_sync_create_alarm_value_list_t values = {
            .counter = session->idle_counter,
            .valueType = XCB_SYNC_VALUETYPE_ABSOLUTE,
            .value = to_sync(value),
            .testType = test,
            .delta = to_sync(0),
            .events = 1,
        };
        xcb_sync_create_alarm_aux(session->connection, session->alarm,
                                  mask | XCB_SYNC_CA_COUNTER | XCB_SYNC_CA_EVENTS, &values);
    } else {
        // Every attribute again, the counter and events too: any client may change another's
        // alarm (point it at a counter of its own, turn its events off); each setting undoes that.
        xcb_sync_change_alarm_value_list_t values = {
            .counter = session->idle_counter,
            .valueType = XCB_SYNC_VALUETYPE_ABSOLUTE,
            .value = to_sync(value),
            .testType = test,
            .delta = to_sync(0),
            .events = 1,
        };
        xcb_sync_change_alarm_aux(session->connection, session->alarm,
                                  mask | XCB_SYNC_CA_COUNTER | XCB_SYNC_CA_EVENTS, &values);
    }
    xcb_flush(session->connection);
}

static xcb_sync_counter_t find_idle_counter(xcb_connection_t *connection) {
    xcb_sync_list_system_counters_reply_t *reply =
        xcb_sync_list_system_counters_reply(connection, xcb_sync_list_system_counters(connection), NULL);
    if (!reply) return XCB_NONE;
    xcb_sync_counter_t found = XCB_NONE;
    // Each counter: its id, resolution (8 bytes), name length and name, padded to 4 bytes; walked
    // within the reply's own size (libxcb's iterator trusts the counts).
    const uint8_t *bytes = (const uint8_t *)(reply + 1);
    size_t total = (size_t)reply->length * 4, offset = 0;
    for (uint32_t i = 0; i < reply->counters_len && offset + 14 <= total; i++) {
        uint32_t counter;
        uint16_t name_length;
        memcpy(&counter, bytes + offset, 4);
        memcpy(&name_length, bytes + offset + 12, 2);
        if (offset + 14 + name_length > total) break;
        if (name_length == 8 && memcmp(bytes + offset + 14, "IDLETIME", 8) == 0) {
            found = counter;
            break;
        }
        offset += (14 + (size_t)name_length + 3) & ~(size_t)3;
    }
    free(reply);
    return found;
}

int cxcb_watch(cxcb_session *session, uint32_t idle_ms) {
    xcb_connection_t *connection = session->connection;
    // Substructure: top-level windows mapped and unmapped, for when focus cannot be read, and to
    // watch each for the keyboard; focus: the keyboard given to the root window or PointerRoot.
    uint32_t events =
        XCB_EVENT_MASK_PROPERTY_CHANGE | XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY | XCB_EVENT_MASK_FOCUS_CHANGE;
    xcb_change_window_attributes(connection, session->root, XCB_CW_EVENT_MASK, &events);
    make_probe(session);
    // The top-level windows already there (asked after the root's events: one mapped between the
    // two is told by its MapNotify).
    xcb_query_tree_reply_t *tree = xcb_query_tree_reply(connection, xcb_query_tree(connection, session->root), NULL);
    if (tree) {
        int children = (uint32_t)tree->children_len <= tree->length ? tree->children_len : 0;
        const xcb_window_t *list = (const xcb_window_t *)(tree + 1);
        for (int i = 0; i < children && i < WATCHED_AT_START; i++) watch_window(session, list[i]);
        free(tree);
    }
    if (idle_ms > 0) {
        const xcb_query_extension_reply_t *sync = xcb_get_extension_data(connection, &xcb_sync_id);
        if (sync && sync->present) {
            xcb_sync_initialize_reply_t *version =
                xcb_sync_initialize_reply(connection, xcb_sync_initialize(connection, 3, 1), NULL);
            if (version) {
                free(version);
                session->sync_first_event = sync->first_event;
                session->sync_first_error = sync->first_error;
                session->idle_counter = find_idle_counter(connection);
                if (session->idle_counter != XCB_NONE) {
                    session->idle_ms = idle_ms;
                    session->alarm = xcb_generate_id(connection);
                    // Fires once the counter reaches the timeout (at once if it already has).
                    set_alarm(session, 1, idle_ms, XCB_SYNC_TESTTYPE_POSITIVE_COMPARISON);
                }
            }
        }
    }
    // Every button pressed or wheel turned, whichever client it goes to (raw events: XInput 2
    // tells them to any client that asks, none can be sent by a client; from 2.1 on, also while
    // a client grabs the pointer, as games do): the window under the pointer is then in use,
    // focused or not.
    const xcb_query_extension_reply_t *xi = xcb_get_extension_data(connection, &xcb_input_id);
    if (xi && xi->present) {
        xcb_input_xi_query_version_reply_t *version =
            xcb_input_xi_query_version_reply(connection, xcb_input_xi_query_version(connection, 2, 2), NULL);
        if (version && version->major_version >= 2) {
            session->xi_opcode = xi->major_opcode;
            // Motion is heard only once someone watches (cxcb_watch_motion): a connection that
            // only asks things would be sent every move of the mouse and read none of them.
            select_raw(session, 0);
        }
        free(version);
    }
    int supported = cxcb_reads_focus(session);
    xcb_flush(connection);
    return xcb_connection_has_error(connection) ? -1 : supported;
}

int cxcb_reads_focus(cxcb_session *session) {
    // Whether the window manager keeps _NET_ACTIVE_WINDOW: it lists it in _NET_SUPPORTED.
    int supported = 0;
    xcb_get_property_reply_t *reply = property(session, session->root, session->net_supported, XCB_ATOM_ATOM, 4096);
    if (reply) {
        int bytes = reply->format == 32 ? value_bytes(reply) : -1;
        int count = bytes > 0 ? bytes / 4 : 0;
        const xcb_atom_t *atoms = xcb_get_property_value(reply);
        for (int i = 0; i < count; i++)
            if (atoms[i] == session->active_window) supported = 1;
        free(reply);
    }
    return supported;
}

int cxcb_has_idle_alarm(const cxcb_session *session) { return session->idle_counter != XCB_NONE; }

/// What the idle counter says now, against what was known: the change, and the alarm set again
/// for the next one.
static int check_idle(cxcb_session *session, int create) {
    int64_t value = cxcb_idle_time(session);
    if (value < 0) return 0;
    int seen = 0;
    if (!session->idle && value >= session->idle_ms) {
        session->idle = 1;
        seen = CXCB_BECAME_IDLE;
    } else if (session->idle && value < session->idle_ms) {
        session->idle = 0;
        seen = CXCB_BECAME_ACTIVE;
    }
    // Idle: back when the counter drops below where it is (any input resets it to 0). Active:
    // once it reaches the timeout.
    if (session->idle)
        set_alarm(session, create, value - 1 > 0 ? value - 1 : 0, XCB_SYNC_TESTTYPE_NEGATIVE_COMPARISON);
    else
        set_alarm(session, create, session->idle_ms, XCB_SYNC_TESTTYPE_POSITIVE_COMPARISON);
    return seen;
}

int cxcb_check_idle(cxcb_session *session) {
    if (session->idle_counter == XCB_NONE) return 0;
    return check_idle(session, 0);
}

int cxcb_is_idle(const cxcb_session *session) { return session->idle; }

/// Takes the events libxcb holds (and, unless `queued_only`, those waiting on the socket).
static int drain(cxcb_session *session, int queued_only) {
    int seen = 0, check_alarm = 0, create_alarm = 0;
    xcb_generic_event_t *event;
    while ((event = queued_only ? xcb_poll_for_queued_event(session->connection)
                                : xcb_poll_for_event(session->connection))) {
        uint8_t type = event->response_type & 0x7f;
        if (type == XCB_PROPERTY_NOTIFY) {
            xcb_property_notify_event_t *property = (xcb_property_notify_event_t *)event;
            if (property->window == session->root && property->atom == session->active_window)
                seen |= CXCB_ACTIVE_WINDOW_CHANGED;
            if (property->window == session->root && property->atom == session->net_supported)
                seen |= CXCB_SUPPORT_CHANGED;
        } else if (type == XCB_MAP_NOTIFY || type == XCB_UNMAP_NOTIFY || type == XCB_DESTROY_NOTIFY ||
                   type == XCB_REPARENT_NOTIFY) {
            seen |= CXCB_WINDOWS_CHANGED;
            // A window mapped at the top (or moved there) is watched for the keyboard from now:
            // the request goes before the look this event brings, so a keyboard moved to it
            // before the request is seen by that look, and one moved after is told.
            if (type == XCB_MAP_NOTIFY && ((xcb_map_notify_event_t *)event)->event == session->root)
                watch_window(session, ((xcb_map_notify_event_t *)event)->window);
            if (type == XCB_REPARENT_NOTIFY && ((xcb_reparent_notify_event_t *)event)->parent == session->root)
                watch_window(session, ((xcb_reparent_notify_event_t *)event)->window);
        } else if (type == XCB_FOCUS_IN || type == XCB_FOCUS_OUT) {
            // The keyboard moved (by the window manager or by any client): what has it is looked at.
            seen |= CXCB_ACTIVE_WINDOW_CHANGED;
            // A grab moves the keyboard as focus events of the server's own (one a client sends
            // is not believed): out of the focused window, into the grabbing one. Those into a
            // watched window (or out of one, to a window inside it) name where it went, the last
            // one told the nearest; with none, it went where nothing watched is. Those about the
            // window under the pointer (a grab for the root window tells it) name nothing: the
            // keys go to the grabbing client, whoever's window is under the pointer.
            xcb_focus_in_event_t *focus = (xcb_focus_in_event_t *)event;
            int about_pointer = focus->detail == XCB_NOTIFY_DETAIL_POINTER ||
                                focus->detail == XCB_NOTIFY_DETAIL_POINTER_ROOT ||
                                focus->detail == XCB_NOTIFY_DETAIL_NONE;
            int told = !(event->response_type & 0x80);
            if (told && !about_pointer && focus->mode == XCB_NOTIFY_MODE_GRAB) {
                int into = type == XCB_FOCUS_IN || focus->detail == XCB_NOTIFY_DETAIL_INFERIOR;
                if (into && focus->event != session->root) {
                    session->grab_window = focus->event;
                    session->grab_elsewhere = 0;
                } else {
                    session->grab_window = XCB_NONE;
                    session->grab_elsewhere = 1;
                }
            } else if (told && focus->mode == XCB_NOTIFY_MODE_UNGRAB) {
                session->grab_window = XCB_NONE;
                session->grab_elsewhere = 0;
            }
        } else if (type == XCB_GE_GENERIC && session->xi_opcode != 0) {
            xcb_ge_generic_event_t *generic = (xcb_ge_generic_event_t *)event;
            if (generic->extension == session->xi_opcode && generic->event_type == XCB_INPUT_RAW_BUTTON_PRESS)
                seen |= CXCB_POINTER_USED;
            if (generic->extension == session->xi_opcode && generic->event_type == XCB_INPUT_RAW_MOTION)
                seen |= CXCB_POINTER_MOVED;
        } else if (session->idle_counter != XCB_NONE && type == session->sync_first_event + XCB_SYNC_ALARM_NOTIFY) {
            // The alarm says only that something changed: what the counter itself says now is
            // believed (a client of the child's may have pointed the alarm elsewhere); one sent
            // by a client (SendEvent) is not even looked at.
            xcb_sync_alarm_notify_event_t *alarm = (xcb_sync_alarm_notify_event_t *)event;
            if (!(event->response_type & 0x80) && alarm->alarm == session->alarm) check_alarm = 1;
        } else if (event->response_type == 0 && session->idle_counter != XCB_NONE &&
                   ((xcb_generic_error_t *)event)->error_code == session->sync_first_error + XCB_SYNC_ALARM &&
                   ((xcb_generic_error_t *)event)->resource_id == session->alarm) {
            // The alarm is gone (a client destroyed it): a new one.
            session->alarm = xcb_generate_id(session->connection);
            create_alarm = 1;
        }
        free(event);
    }
    // Everything received so far is read: the relay may pass on as many again (not after taking
    // only the queue: the socket may still hold some).
    if (!queued_only) atomic_store(&session->relay->unread, 0);
    if (create_alarm || check_alarm) seen |= check_idle(session, create_alarm);
    if (xcb_connection_has_error(session->connection)) seen |= CXCB_CONNECTION_ERROR;
    return seen;
}

int cxcb_drain(cxcb_session *session) { return drain(session, 0); }

int cxcb_drain_queued(cxcb_session *session) { return drain(session, 1); }

static xcb_get_property_reply_t *property(cxcb_session *session, xcb_window_t window, xcb_atom_t atom,
                                          xcb_atom_t type, uint32_t words) {
    if (atom == XCB_ATOM_NONE) return NULL;
    return xcb_get_property_reply(session->connection,
                                  xcb_get_property(session->connection, 0, window, atom, type, 0, words), NULL);
}

uint32_t cxcb_active_window(cxcb_session *session) {
    xcb_get_property_reply_t *reply = property(session, session->root, session->active_window, XCB_ATOM_WINDOW, 1);
    uint32_t window = 0;
    if (reply) {
        if (reply->type == XCB_ATOM_WINDOW && reply->format == 32 && value_bytes(reply) >= 4)
            memcpy(&window, xcb_get_property_value(reply), 4);
        free(reply);
    }
    return window;
}

/// The pids in an X-Resource client-ids reply (each value: the spec (client, mask), a length in
/// bytes, the value; walked within the reply's own size), at most `capacity`; 0 names none.
static size_t reply_pids(const xcb_res_query_client_ids_reply_t *reply, int32_t *pids, size_t capacity) {
    size_t count = 0;
    const uint8_t *bytes = (const uint8_t *)(reply + 1);
    size_t total = (size_t)reply->length * 4, offset = 0;
    for (uint32_t i = 0; i < reply->num_ids && offset + 12 <= total && count < capacity; i++) {
        uint32_t mask, length;
        memcpy(&mask, bytes + offset + 4, 4);
        memcpy(&length, bytes + offset + 8, 4);
        if (length % 4 != 0 || length > total - offset - 12) break;
        if ((mask & XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID) && length >= 4) {
            uint32_t value;
            memcpy(&value, bytes + offset + 12, 4);
            if (value > 0) pids[count++] = (int32_t)value;
        }
        offset += 12 + length;
    }
    return count;
}

int32_t cxcb_window_pid(cxcb_session *session, uint32_t window) {
    const xcb_query_extension_reply_t *res = xcb_get_extension_data(session->connection, &xcb_res_id);
    if (!res || !res->present) return -1;
    xcb_res_client_id_spec_t spec = {.client = window, .mask = XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID};
    xcb_res_query_client_ids_reply_t *reply = xcb_res_query_client_ids_reply(
        session->connection, xcb_res_query_client_ids(session->connection, 1, &spec), NULL);
    if (!reply) return -1;
    int32_t pid = -1;
    reply_pids(reply, &pid, 1);
    free(reply);
    return pid;
}

int64_t cxcb_idle_time(cxcb_session *session) {
    if (session->idle_counter == XCB_NONE) return -1;
    xcb_sync_query_counter_reply_t *reply = xcb_sync_query_counter_reply(
        session->connection, xcb_sync_query_counter(session->connection, session->idle_counter), NULL);
    if (!reply) return -1;
    int64_t value = from_sync(reply->counter_value);
    free(reply);
    return value;
}

void cxcb_round_trip(cxcb_session *session) {
    free(xcb_get_input_focus_reply(session->connection, xcb_get_input_focus(session->connection), NULL));
}

int cxcb_has_error(const cxcb_session *session) { return xcb_connection_has_error(session->connection) != 0; }

void cxcb_close(cxcb_session *session) {
    if (!session) return;
    xcb_disconnect(session->connection);
    cxcb_relay_stop(session->relay);
    free(session);
}

void cxcb_problem(cxcb_session *session, char *out, size_t length) {
    cxcb_relay_problem(session->relay, out, length);
}

uint32_t cxcb_input_focus(cxcb_session *session) {
    xcb_get_input_focus_reply_t *reply =
        xcb_get_input_focus_reply(session->connection, xcb_get_input_focus(session->connection), NULL);
    if (!reply) return 0;
    uint32_t focus = reply->focus;
    free(reply);
    if (focus == XCB_NONE) return 0;
    if (focus != XCB_INPUT_FOCUS_POINTER_ROOT && focus != session->root) return focus;
    // PointerRoot or the root window (any client may set either): the keys go to the window under
    // the pointer.
    return cxcb_window_under_pointer(session);
}

/// The window shown at (x, y) of `parent` among its children (the topmost viewable one, drawn,
/// whose rectangle holds the point, of the 64 at the top), with the point in its own terms.
static xcb_window_t shown_child(cxcb_session *session, xcb_window_t parent, int *x, int *y) {
    xcb_connection_t *connection = session->connection;
    xcb_query_tree_reply_t *tree = xcb_query_tree_reply(connection, xcb_query_tree(connection, parent), NULL);
    if (!tree) return XCB_NONE;
    int count = (uint32_t)tree->children_len <= tree->length ? tree->children_len : 0;
    const xcb_window_t *children = (const xcb_window_t *)(tree + 1);
    enum { looked = 64 };
    int first = count > looked ? count - looked : 0;
    xcb_get_window_attributes_cookie_t attributes[looked];
    xcb_get_geometry_cookie_t geometry[looked];
    // Asked all at once, answered in one round trip.
    for (int i = first; i < count; i++) {
        attributes[i - first] = xcb_get_window_attributes(connection, children[i]);
        geometry[i - first] = xcb_get_geometry(connection, children[i]);
    }
    xcb_window_t found = XCB_NONE;
    for (int i = count - 1; i >= first; i--) {
        xcb_get_window_attributes_reply_t *a = xcb_get_window_attributes_reply(connection, attributes[i - first], NULL);
        xcb_get_geometry_reply_t *g = xcb_get_geometry_reply(connection, geometry[i - first], NULL);
        if (found == XCB_NONE && a && g && a->map_state == XCB_MAP_STATE_VIEWABLE &&
            a->_class == XCB_WINDOW_CLASS_INPUT_OUTPUT) {
            int left = g->x, top = g->y, border = g->border_width;
            int width = g->width + 2 * border, height = g->height + 2 * border;
            if (*x >= left && *x < left + width && *y >= top && *y < top + height) {
                found = children[i];
                *x -= left + border;
                *y -= top + border;
            }
        }
        free(a);
        free(g);
    }
    free(tree);
    return found;
}

uint32_t cxcb_window_shown_under_pointer(cxcb_session *session) {
    xcb_query_pointer_reply_t *pointer =
        xcb_query_pointer_reply(session->connection, xcb_query_pointer(session->connection, session->root), NULL);
    if (!pointer) return 0;
    int same = pointer->same_screen, x = pointer->root_x, y = pointer->root_y;
    free(pointer);
    if (!same) return 0;
    xcb_window_t under = session->root;
    for (int depth = 0; depth < 8; depth++) {
        xcb_window_t child = shown_child(session, under, &x, &y);
        if (child == XCB_NONE) break;
        under = child;
    }
    return under == session->root ? 0 : under;
}

int32_t cxcb_frame_owner_pid(cxcb_session *session, uint32_t window) {
    // Up to the window's top-level ancestor (a child of the root window); a window manager that
    // reparents draws its frame there. Not a property any client may write: the tree itself.
    xcb_window_t top = window;
    for (int depth = 0; depth < 16; depth++) {
        xcb_query_tree_reply_t *tree =
            xcb_query_tree_reply(session->connection, xcb_query_tree(session->connection, top), NULL);
        if (!tree) return -1;
        xcb_window_t parent = tree->parent;
        free(tree);
        if (parent == XCB_NONE) return -1;
        if (parent == session->root) break;
        top = parent;
    }
    if (top == window) return -1;
    int32_t frame = cxcb_window_pid(session, top), own = cxcb_window_pid(session, window);
    return frame > 0 && frame != own ? frame : -1;
}

uint32_t cxcb_window_under_pointer(cxcb_session *session) {
    // The deepest one (a window manager's frame holds the client's window).
    xcb_window_t under = session->root;
    for (int depth = 0; depth < 16; depth++) {
        xcb_query_pointer_reply_t *pointer =
            xcb_query_pointer_reply(session->connection, xcb_query_pointer(session->connection, under), NULL);
        if (!pointer) break;
        xcb_window_t child = pointer->same_screen ? pointer->child : XCB_NONE;
        free(pointer);
        if (child == XCB_NONE) break;
        under = child;
    }
    return under == session->root ? 0 : under;
}

int cxcb_keyboard_grab(cxcb_session *session, uint32_t *window) {
    *window = XCB_NONE;
    // The server answers AlreadyGrabbed when another client holds the keyboard, before it looks
    // at the window: for a window never shown, NotViewable otherwise, and nothing is grabbed.
    xcb_grab_keyboard_reply_t *reply = xcb_grab_keyboard_reply(
        session->connection,
        xcb_grab_keyboard(session->connection, 0, session->probe, XCB_CURRENT_TIME, XCB_GRAB_MODE_ASYNC,
                          XCB_GRAB_MODE_ASYNC),
        NULL);
    if (!reply) {
        // The probe is gone (any client may destroy another's window): a new one, and meanwhile
        // the keyboard may be anyone's.
        make_probe(session);
        return 2;
    }
    uint8_t status = reply->status;
    free(reply);
    if (status == XCB_GRAB_STATUS_SUCCESS) {
        // A client of the child's showed the probe: nobody else held the keyboard, and the agent
        // gives it back at once, with a probe nobody has shown.
        xcb_ungrab_keyboard(session->connection, XCB_CURRENT_TIME);
        xcb_destroy_window(session->connection, session->probe);
        make_probe(session);
        xcb_flush(session->connection);
    }
    if (status != XCB_GRAB_STATUS_ALREADY_GRABBED && status != XCB_GRAB_STATUS_FROZEN) {
        session->grab_window = XCB_NONE;
        session->grab_elsewhere = 0;
        return 0;
    }
    if (session->grab_elsewhere) return 2;
    *window = session->grab_window;
    return 1;
}

int cxcb_is_viewable(cxcb_session *session, uint32_t window) {
    if (window == 0 || window == session->root) return 0;
    xcb_get_window_attributes_reply_t *reply = xcb_get_window_attributes_reply(
        session->connection, xcb_get_window_attributes(session->connection, window), NULL);
    if (!reply) return 0;
    int viewable = reply->length >= 3 && reply->map_state == XCB_MAP_STATE_VIEWABLE;
    free(reply);
    return viewable;
}

static size_t viewable_children(cxcb_session *session, xcb_window_t parent, uint32_t *windows, size_t count,
                                size_t capacity, int depth) {
    xcb_query_tree_reply_t *tree =
        xcb_query_tree_reply(session->connection, xcb_query_tree(session->connection, parent), NULL);
    if (!tree) return count;
    // The server's count, checked against the reply's size.
    int children = (uint32_t)tree->children_len <= tree->length ? tree->children_len : 0;
    const xcb_window_t *list = (const xcb_window_t *)(tree + 1);
    for (int i = 0; i < children && count < capacity; i++) {
        if (!cxcb_is_viewable(session, list[i])) continue;
        // A window manager's frame holds the client's window one level down: the client's
        // counts, not the frame (the window manager's).
        size_t before = count;
        if (depth == 0) count = viewable_children(session, list[i], windows, count, capacity, 1);
        if (count == before) windows[count++] = list[i];
    }
    free(tree);
    return count;
}

/// The viewable windows under `parent` made by other clients than `parent`'s own (a window
/// reparented into it), not looking inside those; at most `budget` windows looked at in all.
/// `*cut` is set when something was left unlooked at (the budget, the depth or `capacity` ran
/// out): a child can fill a window with decoys.
static size_t foreign_descendants(cxcb_session *session, xcb_window_t parent, uint32_t base, uint32_t *windows,
                                  size_t count, size_t capacity, int depth, int *budget, int *cut) {
    if (depth > 8 || *budget <= 0) {
        *cut = 1;
        return count;
    }
    // A window moved in or mapped here later is to be seen as it happens: its structure's events
    // (and the keyboard's, as every watched window's).
    watch_window(session, parent);
    xcb_query_tree_reply_t *tree =
        xcb_query_tree_reply(session->connection, xcb_query_tree(session->connection, parent), NULL);
    if (!tree) return count;
    int children = (uint32_t)tree->children_len <= tree->length ? tree->children_len : 0;
    const xcb_window_t *list = (const xcb_window_t *)(tree + 1);
    int i = 0;
    for (; i < children && count < capacity && *budget > 0; i++) {
        (*budget)--;
        if (!cxcb_is_viewable(session, list[i])) continue;
        if ((list[i] & ~session->resource_mask) != base) {
            windows[count++] = list[i];
        } else {
            count = foreign_descendants(session, list[i], base, windows, count, capacity, depth + 1, budget, cut);
        }
    }
    if (i < children) *cut = 1;
    free(tree);
    return count;
}

size_t cxcb_foreign_windows_inside(cxcb_session *session, uint32_t window, uint32_t *windows, size_t capacity,
                                   int *complete) {
    *complete = 1;
    if (window == 0 || window == session->root) return 0;
    int budget = 256, cut = 0;
    size_t count =
        foreign_descendants(session, window, window & ~session->resource_mask, windows, 0, capacity, 0, &budget, &cut);
    *complete = !cut;
    return count;
}

size_t cxcb_client_pids(cxcb_session *session, int32_t *pids, size_t capacity) {
    const xcb_query_extension_reply_t *res = xcb_get_extension_data(session->connection, &xcb_res_id);
    if (!res || !res->present || capacity == 0) return 0;
    xcb_res_query_clients_reply_t *clients =
        xcb_res_query_clients_reply(session->connection, xcb_res_query_clients(session->connection), NULL);
    if (!clients) return 0;
    // Each client: its resource base and mask (8 bytes), counted within the reply's size.
    size_t listed = (size_t)clients->length * 4 / 8;
    size_t wanted = clients->num_clients < listed ? clients->num_clients : listed;
    if (wanted > capacity) wanted = capacity;
    xcb_res_client_id_spec_t *specs = calloc(wanted ? wanted : 1, sizeof *specs);
    if (!specs) {
        free(clients);
        return 0;
    }
    const uint8_t *entries = (const uint8_t *)(clients + 1);
    size_t asked = 0;
    for (size_t i = 0; i < wanted; i++) {
        uint32_t base;
        memcpy(&base, entries + i * 8, 4);
        // Client 0 is the server itself: no app.
        if (base == 0) continue;
        specs[asked].client = base;
        specs[asked].mask = XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID;
        asked++;
    }
    free(clients);
    wanted = asked;
    // One request for them all; each value: the spec, a length in bytes, the pid.
    xcb_res_query_client_ids_reply_t *reply = xcb_res_query_client_ids_reply(
        session->connection, xcb_res_query_client_ids(session->connection, (uint32_t)wanted, specs), NULL);
    free(specs);
    if (!reply) return 0;
    size_t count = reply_pids(reply, pids, capacity);
    free(reply);
    return count;
}

size_t cxcb_mapped_windows(cxcb_session *session, uint32_t *windows, size_t capacity) {
    return viewable_children(session, session->root, windows, 0, capacity, 0);
}

void cxcb_request_activation(cxcb_session *session, uint32_t window) {
    // EWMH: a client message to the root window, as a pager or taskbar sends it.
    xcb_client_message_event_t message = {0};
    message.response_type = XCB_CLIENT_MESSAGE;
    message.format = 32;
    message.window = window;
    message.type = session->active_window;
    message.data.data32[0] = 2;  // from a pager: the window manager obeys at once
    message.data.data32[1] = XCB_CURRENT_TIME;
    xcb_send_event(session->connection, 0, session->root,
                   XCB_EVENT_MASK_SUBSTRUCTURE_REDIRECT | XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY, (const char *)&message);
    xcb_flush(session->connection);
}
