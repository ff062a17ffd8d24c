/* `make bench`, shield half: how soon the shield window is on the child's screen after the child
 * starts a shielded program.
 *
 *   shield-latency DISPLAY TITLE COUNT COMMAND [ARGUMENTS...]
 *
 * Runs COMMAND (already set up to start the program as the child, e.g. through setpriv) COUNT
 * times, one after another; for each, the time from just before its fork to the moment the
 * window manager lists a window titled TITLE among its clients (_NET_CLIENT_LIST, watched as
 * PropertyNotify events on the root window: no polling), then closes that window (KillClient)
 * and waits until it is gone. Prints one line per run: milliseconds. Needs libxcb. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xcb/xcb.h>

static xcb_connection_t *connection;
static xcb_window_t root;
static xcb_atom_t client_list, net_wm_name, utf8_string;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static xcb_atom_t atom(const char *name) {
    xcb_intern_atom_reply_t *reply =
        xcb_intern_atom_reply(connection, xcb_intern_atom(connection, 0, (uint16_t)strlen(name), name), NULL);
    xcb_atom_t result = reply ? reply->atom : XCB_ATOM_NONE;
    free(reply);
    return result;
}

/* The client window titled `title`, or 0. */
static xcb_window_t find(const char *title) {
    xcb_get_property_reply_t *list = xcb_get_property_reply(
        connection, xcb_get_property(connection, 0, root, client_list, XCB_ATOM_WINDOW, 0, 1024), NULL);
    if (!list) return 0;
    xcb_window_t found = 0;
    int count = xcb_get_property_value_length(list) / 4;
    xcb_window_t *windows = xcb_get_property_value(list);
    for (int i = 0; i < count && !found; i++) {
        xcb_get_property_reply_t *name = xcb_get_property_reply(
            connection, xcb_get_property(connection, 0, windows[i], net_wm_name, utf8_string, 0, 256), NULL);
        if (name) {
            int length = xcb_get_property_value_length(name);
            if (length == (int)strlen(title) && memcmp(xcb_get_property_value(name), title, length) == 0)
                found = windows[i];
            free(name);
        }
    }
    free(list);
    return found;
}

/* Waits for a change of the client list, up to `ms`. */
static void wait_for_change(double ms) {
    double end = now_ms() + ms;
    while (now_ms() < end) {
        xcb_generic_event_t *event;
        while ((event = xcb_poll_for_event(connection))) {
            int type = event->response_type & 0x7f;
            int relevant = type == XCB_PROPERTY_NOTIFY &&
                           ((xcb_property_notify_event_t *)event)->atom == client_list;
            free(event);
            if (relevant) return;
        }
        struct timespec pause = {0, 500000};
        nanosleep(&pause, NULL);
    }
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: shield-latency DISPLAY TITLE COUNT COMMAND [ARGUMENTS...]\n");
        return 64;
    }
    const char *title = argv[2];
    int count = atoi(argv[3]);
    connection = xcb_connect(argv[1], NULL);
    if (xcb_connection_has_error(connection)) {
        fprintf(stderr, "cannot connect to %s\n", argv[1]);
        return 69;
    }
    root = xcb_setup_roots_iterator(xcb_get_setup(connection)).data->root;
    client_list = atom("_NET_CLIENT_LIST");
    net_wm_name = atom("_NET_WM_NAME");
    utf8_string = atom("UTF8_STRING");
    uint32_t mask = XCB_EVENT_MASK_PROPERTY_CHANGE;
    xcb_change_window_attributes(connection, root, XCB_CW_EVENT_MASK, &mask);
    xcb_flush(connection);
    for (int run = 0; run < count; run++) {
        double start = now_ms();
        pid_t pid = fork();
        if (pid == 0) {
            // Not our output: a frozen program would hold the pipe the figures go out on.
            int null = open("/dev/null", O_RDWR);
            if (null >= 0) {
                dup2(null, 1);
                dup2(null, 2);
            }
            execvp(argv[4], argv + 4);
            _exit(127);
        }
        xcb_window_t window = 0;
        while (!window && now_ms() - start < 10000) {
            window = find(title);
            if (!window) wait_for_change(50);
        }
        double took = now_ms() - start;
        if (window) printf("%.1f\n", took); else printf("timeout\n");
        fflush(stdout);
        waitpid(pid, NULL, WNOHANG);
        if (window) {
            xcb_kill_client(connection, window);
            xcb_flush(connection);
            double closing = now_ms();
            while (find(title) && now_ms() - closing < 5000) wait_for_change(50);
        }
        usleep(300000);
    }
    xcb_disconnect(connection);
    return 0;
}
