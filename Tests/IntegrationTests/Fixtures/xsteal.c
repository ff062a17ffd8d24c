// A hostile child's game: a window the window manager never manages (override-redirect), shown
// over everything, that takes the keyboard itself (SetInputFocus) a moment after it is mapped,
// so that nothing the window manager keeps (`_NET_ACTIVE_WINDOW`) changes. With `pointer-root`,
// it gives the keyboard to PointerRoot instead: the keys go to the window under the pointer, its
// own, which covers the screen. With `grab`, it leaves the focus where it is and grabs the keyboard
// for its window (the keys go to it, as xterm's "secure keyboard" does); with `grab-root`, it grabs
// it for the root window (its own client still gets every key).
// With `grab-server`, it grabs the server (which then serves it alone) and takes the keyboard
// under that grab; with `grab-server-quiet`, it only grabs the server, asking nothing more; with
// `grab-server-bursts`, it grabs the server 850 ms of every 950, takes the keyboard inside each
// grab and gives it back where it was before letting go (every answer the agent gets names the
// window it left), as a hostile child's game did. With `no-focus`, it is instead a window the
// window manager manages, kept above the others (`_NET_WM_STATE_ABOVE`), at the right of the
// screen, that never takes the keyboard (WM_HINTS input false): played with the mouse beside
// the active window; `no-focus-grab` besides grabs the pointer for it (as games do: every click
// goes to it). With `see-through`, it is a window over everything whose input shape is empty: the
// clicks go through to the window below, while it is what shows.
// Usage: DISPLAY=:N xsteal SECONDS [pointer-root | grab | grab-root | grab-server |
// grab-server-quiet | grab-server-bursts | grab-server-bursts-busy | grab-server-bursts-busy-pin PID CPU | no-focus | no-focus-grab | see-through]   (exit 0 when done, 2: no display, 3: the keyboard could not be grabbed)
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xcb/shape.h>
#include <xcb/xcb.h>

static void pause_ms(long ms) {
    struct timespec wait = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&wait, NULL);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    int seconds = atoi(argv[1]);
    int pointer_root = argc > 2 && strcmp(argv[2], "pointer-root") == 0;
    int grab = argc > 2 && strcmp(argv[2], "grab") == 0;
    int grab_root = argc > 2 && strcmp(argv[2], "grab-root") == 0;
    int grab_server = argc > 2 && strncmp(argv[2], "grab-server", 11) == 0;
    xcb_connection_t *connection = xcb_connect(NULL, NULL);
    if (xcb_connection_has_error(connection)) return 2;
    xcb_screen_t *screen = xcb_setup_roots_iterator(xcb_get_setup(connection)).data;
    xcb_window_t window = xcb_generate_id(connection);
    if (argc > 2 && strncmp(argv[2], "no-focus", 8) == 0) {
        uint32_t background[] = {screen->white_pixel, XCB_EVENT_MASK_BUTTON_PRESS};
        xcb_create_window(connection, XCB_COPY_FROM_PARENT, window, screen->root, screen->width_in_pixels / 2, 0,
                          screen->width_in_pixels / 2, screen->height_in_pixels / 2, 0, XCB_WINDOW_CLASS_INPUT_OUTPUT,
                          screen->root_visual, XCB_CW_BACK_PIXEL | XCB_CW_EVENT_MASK, background);
        // WM_HINTS: flags InputHint, input false (the "No Input" model: never given the keyboard).
        uint32_t hints[9] = {1, 0};
        xcb_change_property(connection, XCB_PROP_MODE_REPLACE, window, XCB_ATOM_WM_HINTS, XCB_ATOM_WM_HINTS, 32, 9,
                            hints);
        xcb_change_property(connection, XCB_PROP_MODE_REPLACE, window, XCB_ATOM_WM_CLASS, XCB_ATOM_STRING, 8, 14,
                            "xsteal\0XSteal\0");
        xcb_intern_atom_reply_t *state =
            xcb_intern_atom_reply(connection, xcb_intern_atom(connection, 0, 13, "_NET_WM_STATE"), NULL);
        xcb_intern_atom_reply_t *above =
            xcb_intern_atom_reply(connection, xcb_intern_atom(connection, 0, 19, "_NET_WM_STATE_ABOVE"), NULL);
        if (state && above)
            xcb_change_property(connection, XCB_PROP_MODE_REPLACE, window, state->atom, XCB_ATOM_ATOM, 32, 1,
                                &above->atom);
        free(state);
        free(above);
        xcb_map_window(connection, window);
        xcb_flush(connection);
        if (strcmp(argv[2], "no-focus-grab") == 0) {
            // Once it shows (grabbing for a window not viewable fails).
            int grabbed = 0;
            for (int tries = 0; tries < 100 && !grabbed; tries++) {
                pause_ms(50);
                xcb_grab_pointer_reply_t *reply = xcb_grab_pointer_reply(
                    connection,
                    xcb_grab_pointer(connection, 0, window, XCB_EVENT_MASK_BUTTON_PRESS, XCB_GRAB_MODE_ASYNC,
                                     XCB_GRAB_MODE_ASYNC, XCB_NONE, XCB_NONE, XCB_CURRENT_TIME),
                    NULL);
                grabbed = reply && reply->status == XCB_GRAB_STATUS_SUCCESS;
                free(reply);
            }
            if (!grabbed) return 3;
        }
        pause_ms(1000L * seconds);
        xcb_disconnect(connection);
        return 0;
    }
    if (argc > 2 && strcmp(argv[2], "see-through") == 0) {
        uint32_t values[] = {screen->black_pixel, 1};
        xcb_create_window(connection, XCB_COPY_FROM_PARENT, window, screen->root, 0, 0, screen->width_in_pixels,
                          screen->height_in_pixels, 0, XCB_WINDOW_CLASS_INPUT_OUTPUT, screen->root_visual,
                          XCB_CW_BACK_PIXEL | XCB_CW_OVERRIDE_REDIRECT, values);
        // No rectangle takes input: every click goes to what is below.
        xcb_shape_rectangles(connection, XCB_SHAPE_SO_SET, XCB_SHAPE_SK_INPUT, XCB_CLIP_ORDERING_UNSORTED, window, 0, 0,
                             0, NULL);
        xcb_map_window(connection, window);
        xcb_flush(connection);
        pause_ms(1000L * seconds);
        xcb_disconnect(connection);
        return 0;
    }
    uint32_t values[] = {screen->black_pixel, 1};
    xcb_create_window(connection, XCB_COPY_FROM_PARENT, window, screen->root, 0, 0, screen->width_in_pixels,
                      screen->height_in_pixels, 0, XCB_WINDOW_CLASS_INPUT_OUTPUT, screen->root_visual,
                      XCB_CW_BACK_PIXEL | XCB_CW_OVERRIDE_REDIRECT, values);
    xcb_map_window(connection, window);
    xcb_flush(connection);
    // Whatever the agent looks at when the window appears, it looks before the keyboard moves.
    pause_ms(500);
    if (argc > 2 && strncmp(argv[2], "grab-server-bursts", 18) == 0) {
        // `grab-server-bursts-busy`: inside each grab the server is kept drawing for it (a batch
        // of rectangles always queued), so that it never sleeps while the agent waits: with the
        // server slowed by its owner, the whole wait looks like a busy machine's.
        int busy = strncmp(argv[2], "grab-server-bursts-busy", 23) == 0;
        // `grab-server-bursts-busy-pin PID CPU`: besides, inside each grab her server (PID) is
        // pinned to CPU, where her busy loops run, and let go on every processor before the
        // grab ends: slowed only while the agent waits, as it was when the wait began and ends.
        pid_t server = argc > 4 && strcmp(argv[2], "grab-server-bursts-busy-pin") == 0 ? atoi(argv[3]) : 0;
        int processor = argc > 4 ? atoi(argv[4]) : 0;
        cpu_set_t everywhere, there;
        CPU_ZERO(&there);
        CPU_SET(processor, &there);
        if (server > 0 && sched_getaffinity(server, sizeof everywhere, &everywhere) != 0) return 4;
        xcb_gcontext_t pen = xcb_generate_id(connection);
        uint32_t white[] = {screen->white_pixel};
        xcb_create_gc(connection, pen, window, XCB_GC_FOREGROUND, white);
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        do {
            xcb_get_input_focus_reply_t *was =
                xcb_get_input_focus_reply(connection, xcb_get_input_focus(connection), NULL);
            xcb_window_t back = was ? was->focus : XCB_INPUT_FOCUS_POINTER_ROOT;
            free(was);
            xcb_grab_server(connection);
            xcb_set_input_focus(connection, XCB_INPUT_FOCUS_POINTER_ROOT, window, XCB_CURRENT_TIME);
            free(xcb_get_input_focus_reply(connection, xcb_get_input_focus(connection), NULL));
            if (server > 0 && sched_setaffinity(server, sizeof there, &there) != 0) return 4;
            if (busy) {
                struct timespec began, at;
                clock_gettime(CLOCK_MONOTONIC, &began);
                xcb_get_input_focus_cookie_t queued = xcb_get_input_focus(connection);
                long spent = 0;
                for (int round = 0; spent < 850; round++) {
                    for (int i = 0; i < 200; i++) {
                        xcb_rectangle_t square = {(int16_t)((round * 37 + i * 13) % 700), (int16_t)((i * 29) % 500),
                                                  40, 40};
                        xcb_poly_fill_rectangle(connection, window, pen, 1, &square);
                    }
                    // The next batch is sent before the last is answered: one always waits.
                    xcb_get_input_focus_cookie_t next = xcb_get_input_focus(connection);
                    xcb_flush(connection);
                    free(xcb_get_input_focus_reply(connection, queued, NULL));
                    queued = next;
                    clock_gettime(CLOCK_MONOTONIC, &at);
                    spent = (at.tv_sec - began.tv_sec) * 1000 + (at.tv_nsec - began.tv_nsec) / 1000000;
                }
                free(xcb_get_input_focus_reply(connection, queued, NULL));
            } else {
                pause_ms(850);
            }
            if (server > 0 && sched_setaffinity(server, sizeof everywhere, &everywhere) != 0) return 4;
            xcb_set_input_focus(connection, XCB_INPUT_FOCUS_POINTER_ROOT, back, XCB_CURRENT_TIME);
            xcb_ungrab_server(connection);
            free(xcb_get_input_focus_reply(connection, xcb_get_input_focus(connection), NULL));
            pause_ms(100);
            clock_gettime(CLOCK_MONOTONIC, &now);
        } while (now.tv_sec - start.tv_sec < seconds);
        xcb_disconnect(connection);
        return 0;
    }
    if (grab_server) {
        xcb_grab_server(connection);
        if (strcmp(argv[2], "grab-server") == 0)
            xcb_set_input_focus(connection, XCB_INPUT_FOCUS_POINTER_ROOT, window, XCB_CURRENT_TIME);
        free(xcb_get_input_focus_reply(connection, xcb_get_input_focus(connection), NULL));
    } else if (grab || grab_root) {
        xcb_grab_keyboard_reply_t *grabbed = xcb_grab_keyboard_reply(
            connection,
            xcb_grab_keyboard(connection, 1, grab_root ? screen->root : window, XCB_CURRENT_TIME, XCB_GRAB_MODE_ASYNC,
                              XCB_GRAB_MODE_ASYNC),
            NULL);
        if (!grabbed || grabbed->status != XCB_GRAB_STATUS_SUCCESS) return 3;
        free(grabbed);
    } else {
        xcb_set_input_focus(connection, XCB_INPUT_FOCUS_POINTER_ROOT,
                            pointer_root ? XCB_INPUT_FOCUS_POINTER_ROOT : window, XCB_CURRENT_TIME);
        free(xcb_get_input_focus_reply(connection, xcb_get_input_focus(connection), NULL));
    }
    pause_ms(1000L * seconds);
    xcb_disconnect(connection);
    return 0;
}
