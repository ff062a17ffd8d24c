import CLinuxShim

/// The C heap the agent's allocations come from (glibc's malloc), kept small for a daemon that
/// sits idle most of the day.
public enum Heap {
    /// At most `count` malloc arenas. By default glibc gives each thread that allocates while
    /// another holds the lock an arena of its own, up to eight per core, and keeps what each
    /// arena once held: with a thread per control connection, an idle agent carried about 1 MB
    /// of arenas it no longer used. Allocation stays mostly lock-free through glibc's
    /// per-thread caches. Call before the first thread starts.
    public static func limitArenas(to count: Int32) {
        screentime_limit_malloc_arenas(count)
    }

    /// Gives the free pages of every arena back to the kernel (`malloc_trim`), not only those at
    /// the top of the heap, which is all `free` returns by itself.
    public static func returnFreePages() {
        screentime_malloc_trim()
    }
}
