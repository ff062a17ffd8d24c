// A hostile child's X client: closes another client's connection to the display (any client may
// ask the server to, with KillClient). Finds the client whose pid is argv[1] through X-Resource.
// Usage: DISPLAY=:N xkillclient PID   (exit 0: killed, 1: no such client, 2: no display)
#include <stdio.h>
#include <stdlib.h>
#include <xcb/res.h>
#include <xcb/xcb.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    uint32_t wanted = (uint32_t)strtoul(argv[1], NULL, 10);
    xcb_connection_t *connection = xcb_connect(NULL, NULL);
    if (xcb_connection_has_error(connection)) return 2;
    xcb_res_query_clients_reply_t *clients =
        xcb_res_query_clients_reply(connection, xcb_res_query_clients(connection), NULL);
    if (!clients) return 2;
    int killed = 0;
    for (xcb_res_client_iterator_t it = xcb_res_query_clients_clients_iterator(clients); it.rem > 0;
         xcb_res_client_next(&it)) {
        uint32_t base = it.data->resource_base;
        xcb_res_client_id_spec_t spec = {.client = base, .mask = XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID};
        xcb_res_query_client_ids_reply_t *ids =
            xcb_res_query_client_ids_reply(connection, xcb_res_query_client_ids(connection, 1, &spec), NULL);
        if (!ids) continue;
        xcb_res_client_id_value_iterator_t values = xcb_res_query_client_ids_ids_iterator(ids);
        if (values.rem > 0 && xcb_res_client_id_value_value_length(values.data) >= 1 &&
            xcb_res_client_id_value_value(values.data)[0] == wanted) {
            xcb_kill_client(connection, base);
            killed = 1;
        }
        free(ids);
    }
    free(clients);
    free(xcb_get_input_focus_reply(connection, xcb_get_input_focus(connection), NULL));
    xcb_disconnect(connection);
    return killed ? 0 : 1;
}
