// CGTK — GTK 4 (Debian's libgtk-4-dev), for the shield window alone (screentime-shield). GTK's
// casts and g_signal_connect are macros Swift cannot call: these inline functions stand in.
#ifndef CGTK_SHIM_H
#define CGTK_SHIM_H

#include <gtk/gtk.h>
#include <glib-unix.h>

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

#endif
