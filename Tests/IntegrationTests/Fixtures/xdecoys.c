// A hostile child's decoys: COUNT unmapped input-only windows made inside WINDOW (another
// client's: any client may make children in any window), kept until the program is killed, so
// that whatever looks at what shows inside WINDOW has hundreds of nothing to look at first.
// Usage: DISPLAY=:N xdecoys WINDOW COUNT   (runs until killed; 2: no display)
#include <stdlib.h>
#include <unistd.h>
#include <xcb/xcb.h>

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    xcb_window_t parent = (xcb_window_t)strtoul(argv[1], NULL, 0);
    int count = atoi(argv[2]);
    xcb_connection_t *connection = xcb_connect(NULL, NULL);
    if (xcb_connection_has_error(connection)) return 2;
    for (int i = 0; i < count; i++) {
        xcb_window_t window = xcb_generate_id(connection);
        xcb_create_window(connection, 0, window, parent, 0, 0, 1, 1, 0, XCB_WINDOW_CLASS_INPUT_ONLY,
                          XCB_COPY_FROM_PARENT, 0, NULL);
    }
    free(xcb_get_input_focus_reply(connection, xcb_get_input_focus(connection), NULL));
    for (;;) pause();
}
