// SQLite's C interface (Debian's libsqlite3-dev), for the agent's state database.
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot import: SQLite
// copies the bound text or blob before the bind call returns.
static inline sqlite3_destructor_type screentime_sqlite_transient(void) { return SQLITE_TRANSIENT; }
