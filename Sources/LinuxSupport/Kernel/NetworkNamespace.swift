import CLinuxShim
import Glibc

/// Runs `body` on the calling thread inside the network namespace at `path` (`/run/netns/NAME`,
/// or a process's `/proc/PID/ns/net`): sockets made meanwhile belong to that namespace. The
/// thread's own namespace is entered again after, whatever `body` does. Needs CAP_SYS_ADMIN.
public func inNetworkNamespace<T>(_ path: String, _ body: () throws -> T) throws -> T {
    let own = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)
    guard own >= 0 else { throw SystemError.call("open(/proc/thread-self/ns/net)", errno) }
    defer { close(own) }
    let target = open(path, O_RDONLY | O_CLOEXEC)
    guard target >= 0 else { throw SystemError.call("open(\(path))", errno) }
    defer { close(target) }
    guard screentime_enter_network_namespace(target) == 0 else {
        throw SystemError.call("setns(\(path))", errno)
    }
    defer { _ = screentime_enter_network_namespace(own) }
    return try body()
}
