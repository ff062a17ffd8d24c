// A hostile child's X client: opens a window, gives its connection to a program it starts (a
// fork keeps the descriptor), then becomes an allowed program itself. The server names this
// process as the window's; the window is drawn through a connection the other program holds.
// Usage: DISPLAY=:N handoff CLASS PROGRAM [ARGUMENTS...] -- ALLOWED [ARGUMENTS...]
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xcb/xcb.h>

int main(int argc, char **argv) {
    int split = 0;
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) split = i;
    if (argc < 5 || split < 3 || split + 1 >= argc) return 2;
    xcb_connection_t *connection = xcb_connect(NULL, NULL);
    if (xcb_connection_has_error(connection)) return 2;
    xcb_screen_t *screen = xcb_setup_roots_iterator(xcb_get_setup(connection)).data;
    xcb_window_t window = xcb_generate_id(connection);
    xcb_create_window(connection, XCB_COPY_FROM_PARENT, window, screen->root, 0, 0, 300, 200, 0,
                      XCB_WINDOW_CLASS_INPUT_OUTPUT, screen->root_visual, 0, NULL);
    // WM_CLASS: instance and class, each ended by a NUL.
    char class[256];
    int length = snprintf(class, sizeof class, "%s%c%s", argv[1], 0, argv[1]) + 1;
    xcb_change_property(connection, XCB_PROP_MODE_REPLACE, window, XCB_ATOM_WM_CLASS, XCB_ATOM_STRING, 8,
                        (uint32_t)length, class);
    xcb_map_window(connection, window);
    xcb_flush(connection);
    free(xcb_get_input_focus_reply(connection, xcb_get_input_focus(connection), NULL));
    int fd = xcb_get_file_descriptor(connection);
    fcntl(fd, F_SETFD, 0);
    argv[split] = NULL;
    if (fork() == 0) {
        execv(argv[2], argv + 2);
        _exit(127);
    }
    sleep(1);
    execv(argv[split + 1], argv + split + 1);
    return 127;
}
