// CGTK — GTK 4 (Debian's libgtk-4-dev), for the shield window alone (screentime-shield). GTK's
// casts and g_signal_connect are macros Swift cannot call: these inline functions stand in.
#ifndef CGTK_SHIM_H
#define CGTK_SHIM_H

#include <gtk/gtk.h>
#include <glib-unix.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>

static inline gulong screentime_gtk_connect(gpointer instance, const char *signal, GCallback handler, gpointer data) {
    return g_signal_connect_data(instance, signal, handler, data, NULL, (GConnectFlags)0);
}
static inline GtkWindow *screentime_gtk_window(GtkWidget *widget) { return GTK_WINDOW(widget); }
static inline GtkBox *screentime_gtk_box(GtkWidget *widget) { return GTK_BOX(widget); }
static inline GtkLabel *screentime_gtk_label(GtkWidget *widget) { return GTK_LABEL(widget); }
static inline GtkButton *screentime_gtk_button(GtkWidget *widget) { return GTK_BUTTON(widget); }
static inline GtkImage *screentime_gtk_image(GtkWidget *widget) { return GTK_IMAGE(widget); }
static inline GtkEditable *screentime_gtk_editable(GtkWidget *widget) { return GTK_EDITABLE(widget); }
static inline GtkScrolledWindow *screentime_gtk_scrolled(GtkWidget *widget) { return GTK_SCROLLED_WINDOW(widget); }
static inline GtkEntry *screentime_gtk_entry(GtkWidget *widget) { return GTK_ENTRY(widget); }
static inline GtkCheckButton *screentime_gtk_check(GtkWidget *widget) { return GTK_CHECK_BUTTON(widget); }
static inline GApplication *screentime_gtk_gapplication(GtkApplication *application) { return G_APPLICATION(application); }
static inline GtkStyleProvider *screentime_gtk_style_provider(GtkCssProvider *provider) { return GTK_STYLE_PROVIDER(provider); }
/// A key (with modifiers) that runs `action` wherever the focus is in `window` (looked at before
/// the focused widget: Escape cancels even in a search entry).
static inline void screentime_gtk_add_shortcut(GtkWidget *window, guint key, GdkModifierType modifiers,
                                               GtkShortcutFunc action, gpointer data) {
    GtkEventController *controller = gtk_shortcut_controller_new();
    gtk_event_controller_set_propagation_phase(controller, GTK_PHASE_CAPTURE);
    gtk_shortcut_controller_add_shortcut(GTK_SHORTCUT_CONTROLLER(controller),
                                         gtk_shortcut_new(gtk_keyval_trigger_new(key, modifiers),
                                                          gtk_callback_action_new(action, data, NULL)));
    gtk_widget_add_controller(window, controller);
}
/// The desktop's preference for a dark look (g_object_set is variadic).
static inline void screentime_gtk_prefer_dark(gboolean dark) {
    g_object_set(gtk_settings_get_default(), "gtk-application-prefer-dark-theme", dark, NULL);
}

/// The desktop's colour scheme from GSettings (org.gnome.desktop.interface color-scheme), without
/// aborting when the schema is not installed: 1 for dark, 0 otherwise.
static inline int screentime_gtk_desktop_prefers_dark(void) {
    GSettingsSchemaSource *source = g_settings_schema_source_get_default();
    if (source == NULL) return 0;
    GSettingsSchema *schema = g_settings_schema_source_lookup(source, "org.gnome.desktop.interface", TRUE);
    if (schema == NULL) return 0;
    int dark = 0;
    if (g_settings_schema_has_key(schema, "color-scheme")) {
        GSettings *settings = g_settings_new_full(schema, NULL, NULL);
        gchar *scheme = g_settings_get_string(settings, "color-scheme");
        dark = scheme != NULL && g_strcmp0(scheme, "prefer-dark") == 0;
        g_free(scheme);
        g_object_unref(settings);
    }
    g_settings_schema_unref(schema);
    return dark;
}

// MARK: the focus relay (`screentime-shield --focus-relay`)
//
// KWin's scripts can reach nothing but D-Bus: the screentime-focus script (packaging/kwin) calls
// org.screentime.Focus.Activated(pid as a string) on the session bus at each change of the
// window in front. This relay, started by the agent as the session's user, owns that name and
// writes each call as a line on `out`, with the caller's pid as the bus says it (the agent counts
// it only when that is the session's compositor): {"sender":S,"focus":{"pid":N}} or
// {"sender":S,"focus":null}. It says {"ready":true} once it owns the name, or {"error":"…"} and
// ends; it ends when its standard input closes (the agent's end) or the bus goes.

struct screentime_relay_state {
    // The unique name owning org.kde.KWin (NULL while none does).
    gchar *kwin;
    // Each caller's pid as the bus said it, asked once per unique name (names are never reused).
    GHashTable *pids;
    // When each caller other than KWin's name was last passed on (monotonic µs): once a second
    // at most, so that a flood of calls costs neither the relay a bus round trip each nor KWin's
    // own calls their turn (the agent refuses such callers anyway).
    GHashTable *passed;
};

static inline struct screentime_relay_state *screentime_relay_shared(void) {
    static struct screentime_relay_state state;
    return &state;
}

static inline void screentime_relay_kwin_appeared(GDBusConnection *bus, const gchar *name, const gchar *owner,
                                                  gpointer data) {
    (void)bus;
    (void)name;
    (void)data;
    g_free(screentime_relay_shared()->kwin);
    screentime_relay_shared()->kwin = g_strdup(owner);
}

static inline void screentime_relay_kwin_vanished(GDBusConnection *bus, const gchar *name, gpointer data) {
    (void)bus;
    (void)name;
    (void)data;
    g_free(screentime_relay_shared()->kwin);
    screentime_relay_shared()->kwin = NULL;
}

static inline void screentime_relay_say(int out, const char *line) {
    size_t length = strlen(line), done = 0;
    while (done < length) {
        ssize_t wrote = write(out, line + done, length - done);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) return;
        done += (size_t)wrote;
    }
}

static inline void screentime_relay_call(GDBusConnection *bus, const gchar *sender, const gchar *path,
                                         const gchar *interface, const gchar *method, GVariant *parameters,
                                         GDBusMethodInvocation *invocation, gpointer data) {
    (void)path;
    (void)interface;
    int out = GPOINTER_TO_INT(data);
    if (g_strcmp0(method, "Activated") != 0) {
        g_dbus_method_invocation_return_dbus_error(invocation, "org.freedesktop.DBus.Error.UnknownMethod", "no such method");
        return;
    }
    struct screentime_relay_state *state = screentime_relay_shared();
    if (sender == NULL || g_strcmp0(sender, state->kwin) != 0) {
        gint64 now = g_get_monotonic_time();
        gpointer last = g_hash_table_lookup(state->passed, sender ? sender : "");
        if (last != NULL && now - *(gint64 *)last < G_USEC_PER_SEC) {
            g_dbus_method_invocation_return_value(invocation, NULL);
            return;
        }
        // Bounded: a child opening connection after connection is forgotten in bulk.
        if (g_hash_table_size(state->passed) > 4096) g_hash_table_remove_all(state->passed);
        gint64 *stamp = g_new(gint64, 1);
        *stamp = now;
        g_hash_table_replace(state->passed, g_strdup(sender ? sender : ""), stamp);
    }
    guint32 caller = 0;
    gpointer known = sender ? g_hash_table_lookup(state->pids, sender) : NULL;
    if (known != NULL) {
        caller = GPOINTER_TO_UINT(known);
    } else if (sender != NULL) {
        GVariant *reply = g_dbus_connection_call_sync(
            bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
            "GetConnectionUnixProcessID", g_variant_new("(s)", sender), G_VARIANT_TYPE("(u)"),
            G_DBUS_CALL_FLAGS_NONE, 1000, NULL, NULL);
        if (reply != NULL) {
            g_variant_get(reply, "(u)", &caller);
            g_variant_unref(reply);
            if (g_hash_table_size(state->pids) > 4096) g_hash_table_remove_all(state->pids);
            if (caller > 0) g_hash_table_replace(state->pids, g_strdup(sender), GUINT_TO_POINTER(caller));
        }
    }
    const gchar *text = NULL;
    g_variant_get(parameters, "(&s)", &text);
    // Digits only, and a pid's size: anything else is no window.
    long pid = 0;
    int digits = 0;
    for (const gchar *c = text; c != NULL && *c != 0; c++) {
        if (*c < '0' || *c > '9' || ++digits > 9) {
            pid = 0;
            break;
        }
        pid = pid * 10 + (*c - '0');
    }
    char line[96];
    if (pid > 0) snprintf(line, sizeof line, "{\"sender\":%u,\"focus\":{\"pid\":%ld}}\n", caller, pid);
    else snprintf(line, sizeof line, "{\"sender\":%u,\"focus\":null}\n", caller);
    screentime_relay_say(out, line);
    g_dbus_method_invocation_return_value(invocation, NULL);
}

static inline gboolean screentime_relay_input(gint fd, GIOCondition condition, gpointer loop) {
    char chunk[256];
    ssize_t got = (condition & G_IO_IN) ? read(fd, chunk, sizeof chunk) : 0;
    if (got < 0 && errno == EINTR) return G_SOURCE_CONTINUE;
    if (got > 0) return G_SOURCE_CONTINUE;
    g_main_loop_quit((GMainLoop *)loop);
    return G_SOURCE_REMOVE;
}

static inline void screentime_relay_closed(GDBusConnection *bus, gboolean remote, GError *error, gpointer loop) {
    (void)bus;
    (void)remote;
    (void)error;
    g_main_loop_quit((GMainLoop *)loop);
}

/// Makes the process not the child's to trace or read (`gdb -p`, /proc/PID/mem): it runs as the
/// child, and code of hers inside it would run through a lock. prctl(2) is variadic.
static inline void screentime_undumpable(void) { prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

/// Runs the relay, writing to `out`; its exit status (0 when the agent's end closed).
static inline int screentime_focus_relay(int out) {
    // Not the child's to trace or take descriptors from (pidfd_getfd): the pipe to the agent is
    // the relay's alone.
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    GError *error = NULL;
    GDBusConnection *bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
    if (bus == NULL) {
        screentime_relay_say(out, "{\"error\":\"no session bus\"}\n");
        return 69;
    }
    g_dbus_connection_set_exit_on_close(bus, FALSE);
    GDBusNodeInfo *node = g_dbus_node_info_new_for_xml(
        "<node><interface name='org.screentime.Focus'><method name='Activated'>"
        "<arg type='s' name='pid' direction='in'/></method></interface></node>",
        NULL);
    static const GDBusInterfaceVTable vtable = {screentime_relay_call, NULL, NULL, {0}};
    if (node == NULL || g_dbus_connection_register_object(bus, "/org/screentime/Focus", node->interfaces[0], &vtable,
                                                          GINT_TO_POINTER(out), NULL, NULL) == 0) {
        screentime_relay_say(out, "{\"error\":\"cannot serve /org/screentime/Focus\"}\n");
        return 70;
    }
    // The name, or nothing (DO_NOT_QUEUE): a program of the user's that took it first keeps it,
    // and the agent counts the session the conservative way.
    guint32 owned = 0;
    GVariant *reply = g_dbus_connection_call_sync(
        bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
        g_variant_new("(su)", "org.screentime.Focus", 4u), G_VARIANT_TYPE("(u)"), G_DBUS_CALL_FLAGS_NONE, 5000, NULL,
        NULL);
    if (reply != NULL) {
        g_variant_get(reply, "(u)", &owned);
        g_variant_unref(reply);
    }
    if (owned != 1) {
        screentime_relay_say(out, "{\"error\":\"the name org.screentime.Focus is taken\"}\n");
        return 75;
    }
    screentime_relay_say(out, "{\"ready\":true}\n");
    GMainLoop *loop = g_main_loop_new(NULL, FALSE);
    g_unix_fd_add(0, (GIOCondition)(G_IO_IN | G_IO_HUP | G_IO_ERR), screentime_relay_input, loop);
    g_signal_connect_data(bus, "closed", G_CALLBACK(screentime_relay_closed), loop, NULL, (GConnectFlags)0);
    struct screentime_relay_state *state = screentime_relay_shared();
    state->pids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    state->passed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_bus_watch_name_on_connection(bus, "org.kde.KWin", G_BUS_NAME_WATCHER_FLAGS_NONE, screentime_relay_kwin_appeared,
                                   screentime_relay_kwin_vanished, NULL, NULL);
    g_main_loop_run(loop);
    return 0;
}

#endif
