import CLinuxShim
import CXCB
import Foundation
import Glibc
import Synchronization

/// A local X11 display as `DISPLAY` names it (`:0`, `:1.0`, `unix:2`); a display over TCP
/// (`host:0`) is not one the agent reads.
public struct X11Display: Hashable, Sendable, CustomStringConvertible {
    public let number: Int
    public let screen: Int
    /// Reached over TCP on loopback (`localhost:N`, `127.0.0.1:N`, this machine's name): port
    /// 6000 + N, where a server started with `-listen tcp` answers, whatever answers at its
    /// Unix socket (another server may).
    public let overTCP: Bool

    public init(number: Int, screen: Int, overTCP: Bool = false) {
        self.number = number
        self.screen = screen
        self.overTCP = overTCP
    }

    public init?(_ value: String) {
        var text = Substring(value)
        if text.hasPrefix("unix:") { text = text.dropFirst(4) }
        var overTCP = false
        // `HOST:N`: a display over TCP, read when the host is this machine (any other is not
        // the child's screen here).
        if text.first != ":", let colon = text.lastIndex(of: ":") {
            guard Self.isThisMachine(text[..<colon]) else { return nil }
            text = text[colon...]
            overTCP = true
        }
        guard text.first == ":" else { return nil }
        let parts = text.dropFirst().split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let first = parts.first, (1...6).contains(first.count), first.allSatisfy(\.isASCII),
            let number = Int(first), number >= 0
        else { return nil }
        var screen = 0
        if parts.count == 2 {
            guard (1...3).contains(parts[1].count), let value = Int(parts[1]), value >= 0 else { return nil }
            screen = value
        }
        self.number = number
        self.screen = screen
        self.overTCP = overTCP
    }

    /// A host name that is this machine: loopback's names and addresses, and its own name.
    static func isThisMachine(_ host: Substring) -> Bool {
        let name = host.lowercased()
        if ["localhost", "localhost.localdomain", "ip6-localhost", "::1", "[::1]"].contains(name) { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 4, parts.first == "127", parts.allSatisfy({ UInt8($0) != nil }) { return true }
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return false }
        let own = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return !own.isEmpty && name == own.lowercased()
    }

    /// The server's socket.
    public var socketPath: String { "/tmp/.X11-unix/X\(number)" }

    /// The Unix addresses its server's connections are accepted at (path and abstract name);
    /// none over TCP.
    public var unixAddresses: Set<String> { overTCP ? [] : [socketPath, "@" + socketPath] }

    /// Where its server is reached, as said in messages.
    public var address: String { overTCP ? "localhost port \(6000 + number)" : socketPath }

    /// The same display, another screen.
    public func screen(_ other: Int) -> X11Display { X11Display(number: number, screen: other, overTCP: overTCP) }

    public var description: String {
        (overTCP ? "localhost" : "") + (screen == 0 ? ":\(number)" : ":\(number).\(screen)")
    }
}

/// Reading an Xauthority file's bytes (the child's file: read as `UntrustedFile`, parsed here
/// with every length checked).
public enum XAuthority {
    /// Every MIT-MAGIC-COOKIE-1 that may be display `number`'s, in the order to try them: the
    /// entries for that number (whatever host they name: a decoy for another host placed first
    /// only costs a refused try), then those for any display.
    public static func cookies(in bytes: [UInt8], display number: Int) -> [[UInt8]] {
        var offset = 0
        func field() -> ArraySlice<UInt8>? {
            guard offset + 2 <= bytes.count else { return nil }
            let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
            guard offset + 2 + length <= bytes.count else { return nil }
            defer { offset += 2 + length }
            return bytes[(offset + 2)..<(offset + 2 + length)]
        }
        let wanted = Array(String(number).utf8)
        var exact: [[UInt8]] = []
        var any: [[UInt8]] = []
        while offset + 2 <= bytes.count, exact.count + any.count < 16 {
            offset += 2  // the address family
            guard field() != nil, let display = field(), let name = field(), let data = field() else { break }
            guard Array(name) == Array("MIT-MAGIC-COOKIE-1".utf8), data.count == 16 else { continue }
            let cookie = Array(data)
            if Array(display) == wanted, !exact.contains(cookie) { exact.append(cookie) }
            if display.isEmpty, !any.contains(cookie) { any.append(cookie) }
        }
        return exact + any.filter { !exact.contains($0) }
    }

}

/// The agent's own view of an X11 session: which window is in front (`_NET_ACTIVE_WINDOW`, as
/// events), whose process it is (the server's X-Resource answer, not the client's claim), and
/// whether the session is idle (SYNC's IDLETIME with an alarm). Nothing polls: the thread that
/// runs `run` sleeps in `poll` until the server or `stop` says something.
///
/// The server is the child's to shape (a program of the child's can listen on a display
/// socket): connecting gives up after a deadline; what the server sends passes through a relay
/// that frames it and ends the connection at anything out of bounds (a reply over 4 MB, 100,000
/// events not yet read, a refusal libxcb would write to stderr); every count in a reply is checked
/// against its size; and a watch belongs to its own thread, so a server that stops answering holds
/// up only itself. The idle alarm is a hint: the IDLETIME counter itself is asked whenever it
/// fires, and every 10 s while idle (any client may tamper with another's alarm).
public final class X11FocusWatch {
    /// A window in front.
    public struct Window: Hashable, Sendable {
        public var id: UInt32
        /// The pid the server knows for the window's client (X-Resource); nil when it cannot tell.
        public var pid: Int32?
    }

    public enum Change: Hashable, Sendable {
        /// The windows in front now: the active one, and the one with the keyboard when that is
        /// another process's (any client may write `_NET_ACTIVE_WINDOW`; the keyboard's window is
        /// the server's own state), with the windows other clients show inside the active one
        /// (every client, when there are more inside than are looked at), and the window of
        /// another client holding the keyboard (every client, when its window is not known). When no window is
        /// active, or the window manager does not tell (`conservative`): every mapped window and
        /// every client of the display (a window of id 0: a client named by its pid alone).
        /// Empty: none.
        case front([Window], conservative: Bool)
        /// No input for the idle timeout; `idleFor` is how long there was none.
        case idle(idleFor: Duration)
        /// Input again after idle.
        case active
        /// A window manager started or went: whether focus (and idle) can be read now.
        case support(readsFocus: Bool, readsIdle: Bool)
        /// The server answered a request late (`heldAfter` or more: it served another client
        /// alone meanwhile, as a grab makes it, however short the grab): told once answered, with
        /// when the wait began and ended.
        case answeredLate(from: ContinuousClock.Instant, to: ContinuousClock.Instant)
    }

    public let display: X11Display
    /// Who runs the server (the socket's peer).
    public let server: PeerCredentials
    /// Whether the window manager keeps `_NET_ACTIVE_WINDOW` (else focus cannot be read); it
    /// may start after the watch did (`Change.support` tells).
    public private(set) var readsFocus: Bool
    /// Whether idle can be told (the server has SYNC's IDLETIME).
    public let readsIdle: Bool
    /// How many screens the display has (the watch reads `display.screen`'s alone).
    public let screens: Int
    private let session: OpaquePointer

    /// Who serves a display's socket, asked of the kernel (the socket's peer), before anything is
    /// sent to it.
    public static func server(
        of display: X11Display, timeout: Duration = .seconds(5)
    ) throws(SystemError)
        -> PeerCredentials
    {
        let fd = try connect(display, timeout: timeout)
        defer { close(fd) }
        return try peerCredentials(fd, path: display.address)
    }

    /// A connection to `display`'s server: its Unix socket (or abstract name), or over TCP.
    static func connect(_ display: X11Display, timeout: Duration) throws(SystemError) -> Int32 {
        display.overTCP
            ? try StreamConnection.loopbackTCP(port: 6000 + display.number, timeout: timeout)
            : try StreamConnection.unix(display.socketPath, timeout: timeout)
    }

    /// Connects to `display` with `cookie` (nil: none), waiting at most `setupTimeout` for the
    /// server to answer, and asks for focus changes and an idle alarm after `idleTimeout`. When
    /// `expecting` is given, the server must be that process (not one that took the socket's
    /// place since it was looked at).
    public init(
        display: X11Display, cookie: [UInt8]?, idleTimeout: Duration, setupTimeout: Duration = .seconds(5),
        expecting: PeerCredentials? = nil
    ) throws(SystemError) {
        self.display = display
        // libxcb owns (and closes) a copy; the watchdogs shut the socket through this one, which
        // stays open until both of them are done.
        let fd = try Self.connect(display, timeout: setupTimeout)
        defer { close(fd) }
        server = try Self.peerCredentials(fd, path: display.address)
        if let expecting, expecting.pid != server.pid || expecting.uid != server.uid {
            throw SystemError(.command, "X11 display \(display): another process serves it now")
        }
        // A server that never answers the setup: the watchdog shuts the socket, and the setup fails.
        let finished = Mutex(false)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(setupTimeout.milliseconds))) {
            finished.withLock { done in if !done { shutdown(fd, Int32(SHUT_RDWR)) } }
        }
        var message = [CChar](repeating: 0, count: 200)
        let opened: OpaquePointer? =
            if let cookie {
                cookie.withUnsafeBufferPointer { bytes in
                    cxcb_open(fd, bytes.baseAddress, bytes.count, Int32(display.screen), &message, message.count)
                }
            } else {
                cxcb_open(fd, nil, 0, Int32(display.screen), &message, message.count)
            }
        finished.withLock { $0 = true }
        guard let opened else {
            throw SystemError(
                .command, "X11 display \(display): \(Self.string(message)) (at \(display.address))")
        }
        session = opened
        let idleMilliseconds = UInt32(clamping: idleTimeout.milliseconds)
        // The watchdog again: a server that answers the setup and then nothing more.
        let watched = Mutex(false)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(setupTimeout.milliseconds))) {
            watched.withLock { done in if !done { shutdown(fd, Int32(SHUT_RDWR)) } }
        }
        let supported = cxcb_watch(opened, idleMilliseconds)
        watched.withLock { $0 = true }
        guard supported >= 0 else {
            var problem = [CChar](repeating: 0, count: 200)
            cxcb_problem(opened, &problem, problem.count)
            cxcb_close(opened)
            let why = Self.string(problem)
            throw SystemError(
                .command, "X11 display \(display): " + (why.isEmpty ? "the connection failed while setting up" : why))
        }
        readsFocus = supported == 1
        readsIdle = cxcb_has_idle_alarm(opened) != 0
        screens = Int(cxcb_screens(opened))
    }

    deinit { cxcb_close(session) }

    /// Makes a `run` waiting on the server give up (from any thread): a server that stopped
    /// answering a request holds its watch until then.
    public func interrupt() { shutdown(cxcb_fd(session), Int32(SHUT_RDWR)) }

    /// The window `_NET_ACTIVE_WINDOW` names now (0: none), read on request: what a poller reads.
    public func activeWindow() -> UInt32 { cxcb_active_window(session) }

    /// Asks the window manager to make a window active, as a taskbar does.
    public func requestActivation(_ window: UInt32) { cxcb_request_activation(session, window) }

    /// Reports what is in front, then each change, until `stop` is raised (returns) or the
    /// connection fails (throws). A `_NET_ACTIVE_WINDOW` of 0 (set by some window managers for a
    /// moment between two windows) is acted on only when it lasts `settle`.
    ///
    /// A server that does not answer a request within `stallAfter` (a client of the display
    /// grabbed it: it then answers that client alone, while the child plays in its window) is
    /// told to `stalled`, from another thread, while the request waits, with a way to ask whether
    /// it answered since (then the report of what is in front that follows an answer came
    /// already, and stands); what is in front is reported again once it answers. So that a grab
    /// made while nothing is asked is found too, the server is asked something at least every
    /// `heartbeat` (idle or not).
    ///
    /// A request answered `heldAfter` or more after it was made is told as `answeredLate` (a client's
    /// grab shorter than `stallAfter`, made again and again, is seen so); for `suspicion` after
    /// that, the server is asked something every `closely`, so that grabs that go on are each
    /// waited through. For `probing` after any answer that came `heldAfter` late (excused as a
    /// busy machine or not), a wait is looked at from `heldAfter` into it, else from `stallAfter`.
    public func run(
        stop: StopSignal, settle: Duration = .milliseconds(200), stallAfter: Duration = .seconds(1),
        heartbeat: Duration = .seconds(10), heldAfter: Duration = .milliseconds(100),
        suspicion: Duration = .seconds(60), closely: Duration = .milliseconds(50), probing: Duration = .seconds(600),
        stalled: @escaping @Sendable (_ answered: @escaping @Sendable () -> Bool) -> Void = { _ in },
        _ report: (Change) -> Void
    ) throws(SystemError) {
        // The server's main thread, the relay's and this one: a wait for an answer that they
        // spent ready to run and kept from a processor (a busy machine) is no grab.
        let scheduler = RunQueueWait(threads: [
            (server.pid, server.pid, true), (getpid(), cxcb_relay_thread(session), false),
            (getpid(), screentime_thread_id(), false),
        ])
        let waiting = StallWatch(after: stallAfter, probe: heldAfter, scheduler: scheduler, tell: stalled)
        var answeredAt = ContinuousClock.now
        // The requests answered late since the last report of it (from the first's start to
        // the last's answer), and until when the server is asked closely.
        var held: (from: ContinuousClock.Instant, to: ContinuousClock.Instant)?
        var suspectUntil: ContinuousClock.Instant?
        // Until when a wait is looked at from `heldAfter` into it (else from `stallAfter`): for
        // `probing` after any late answer, excused or not, so that a child slowing her server
        // only while she grabs it loses the excuse from her second grab on (one grab under a
        // second in ten minutes can pass), and quick answers cost no look (a timer's wakeup)
        // while nothing was late.
        var probeUntil: ContinuousClock.Instant?
        // Every request with a reply goes through here: the watchdog tells `stalled` when one
        // has not been answered in time. (Taking events may ask the idle counter, or not: it
        // is watched, and is no answer.)
        // `timed`: whether a long wait counts as answered late (taking events may ask the idle
        // counter, as an alarm a client of hers can make fire at will brings, and that request
        // waits through a grab as any other).
        func asking<T>(answers: Bool = true, timed: Bool = true, _ body: () -> T) -> T {
            let began = ContinuousClock.now
            let before = waiting.begin(closely: probeUntil.map { began < $0 } == true)
            defer {
                let probe = waiting.end()
                let now = ContinuousClock.now
                if answers { answeredAt = now }
                if timed, now - began >= heldAfter { probeUntil = now + probing }
                // A late answer's wait for a processor is no grab, unless the server was slowed on
                // purpose (at the end, or at a look while it lasted) or a processor sat idle.
                if timed, now - began >= heldAfter,
                    now - began
                        - (probe.excuses(idleNow: scheduler.idleTime())
                            ? RunQueueWait.waited(from: before, to: scheduler.sample(states: false, settings: true))
                            : .zero) >= heldAfter
                {
                    held = (held?.from ?? began, now)
                    suspectUntil = now + suspicion
                }
            }
            return body()
        }
        func tellHeld() {
            guard let late = held else { return }
            held = nil
            report(.answeredLate(from: late.from, to: late.to))
        }
        var shown: (pids: [Int32?], conservative: Bool)?
        func show(_ front: (windows: [Window], conservative: Bool)) {
            let now = (front.windows.map(\.pid), front.conservative)
            // After a stall, whoever was told of it counted something else meanwhile, and
            // took the session to be in use: both are told again.
            let afterStall = waiting.takeStall()
            if afterStall { shown = nil }
            if shown.map({ $0.pids != now.0 || $0.conservative != now.1 }) ?? true {
                shown = now
                report(.front(front.windows, conservative: front.conservative))
            }
            if afterStall, cxcb_is_idle(session) != 0 {
                report(.idle(idleFor: .milliseconds(max(0, asking { cxcb_idle_time(session) }))))
            }
        }
        var noneSince: ContinuousClock.Instant?
        // Changes come as fast as a child's client writes the property: what is in front is
        // asked at once for a switch (the few changes a window manager makes for one), then at
        // most once every `spacing` (a bucket of `burst` looks), the changes between folded
        // into one.
        let spacing = Duration.milliseconds(20)
        let burst = 4.0
        var credit = burst
        var creditAt = ContinuousClock.now
        func refill() {
            let now = ContinuousClock.now
            credit = min(burst, credit + (now - creditAt) / spacing)
            creditAt = now
        }
        var owed = false
        var idleCheckedAt = ContinuousClock.now
        // Until when the window under the pointer counts (a button or wheel used lately).
        var clickedUntil: ContinuousClock.Instant?
        // The pointer's motion is heard once a second at most: the first move stops the hearing
        // until `motionBackAt`. A move heard within `motionTogether` of the last one heard
        // (moving on, in bursts or not; not passing by), or the pointer still over the window it
        // moved over when the hearing comes back, makes the window under the pointer count
        // until `movedUntil`. What is in front is looked at again only when that starts, or the
        // pointer is over another window than at the last look for it (a look asks some twenty
        // things; a mouse moving on over the same game asks none of them).
        var motionBackAt: ContinuousClock.Instant?
        var lastMoved: ContinuousClock.Instant?
        var movedUntil: ContinuousClock.Instant?
        // The window under the pointer at the last move heard, and at the last look for motion.
        var movedFrom: UInt32 = 0
        var lookedUnder: UInt32 = 0
        func moving(over window: UInt32, at now: ContinuousClock.Instant) {
            if movedUntil.map({ now < $0 }) != true || window != lookedUnder {
                lookedUnder = window
                owed = true
            }
            movedUntil = now + Self.motionHold
        }
        var hearsMotion = asking(answers: false, { cxcb_watch_motion(session, 1) }) > 0
        func look(settled: Bool) -> (windows: [Window], conservative: Bool)? {
            let now = ContinuousClock.now
            let pointer = clickedUntil.map { now < $0 } == true || movedUntil.map { now < $0 } == true
            return asking { inFront(settled: settled, pointer: pointer) }
        }
        if let front = look(settled: false) { show(front) } else { noneSince = .now }
        while !stop.isRaised {
            tellHeld()
            let beat = suspectUntil.map { ContinuousClock.now < $0 } == true ? closely : heartbeat
            var timeout: Int32 = -1
            if let since = noneSince {
                let left = since + settle - .now
                timeout = Int32(max(0, left.milliseconds))
            }
            if owed {
                refill()
                let left = credit >= 1 ? 0 : Int32(max(1, (spacing * (1 - credit)).milliseconds))
                timeout = timeout < 0 ? left : min(timeout, left)
            }
            if cxcb_is_idle(session) != 0 {
                let left = Int32(max(0, (idleCheckedAt + Self.idleRecheck - .now).milliseconds))
                timeout = timeout < 0 ? left : min(timeout, left)
            }
            for until in [clickedUntil, movedUntil, motionBackAt].compactMap({ $0 }) {
                let left = Int32(max(0, (until - .now).milliseconds))
                timeout = timeout < 0 ? left : min(timeout, left)
            }
            let beatLeft = Int32(max(0, (answeredAt + beat - .now).milliseconds))
            timeout = timeout < 0 ? beatLeft : min(timeout, beatLeft)
            // What the server told while the last look asked it something: libxcb read it with
            // the replies and holds it, and the socket will not tell `poll` again.
            let queued = asking(answers: false, timed: false) { cxcb_drain_queued(session) }
            if queued != 0 { timeout = 0 }
            var pollers = [
                pollfd(fd: cxcb_fd(session), events: Int16(POLLIN), revents: 0),
                pollfd(fd: stop.fd, events: Int16(POLLIN), revents: 0),
            ]
            _ = try systemCall("poll(X11 \(display))") { poll(&pollers, 2, timeout) }
            if stop.isRaised { return }
            var seen = queued | asking(answers: false, timed: true) { cxcb_drain(session) }
            if seen & Int32(CXCB_CONNECTION_ERROR) != 0 || cxcb_has_error(session) != 0 {
                var problem = [CChar](repeating: 0, count: 200)
                cxcb_problem(session, &problem, problem.count)
                let why = Self.string(problem)
                throw SystemError(
                    .command, "X11 display \(display): " + (why.isEmpty ? "the server closed the connection" : why))
            }
            if seen & Int32(CXCB_BECAME_IDLE | CXCB_BECAME_ACTIVE) != 0 {
                idleCheckedAt = .now
            } else if cxcb_is_idle(session) != 0, ContinuousClock.now - idleCheckedAt >= Self.idleRecheck {
                idleCheckedAt = .now
                seen |= asking { cxcb_check_idle(session) }
            }
            if ContinuousClock.now - answeredAt >= beat { asking { cxcb_round_trip(session) } }
            if seen & Int32(CXCB_BECAME_IDLE) != 0 {
                let idle = asking { cxcb_idle_time(session) }
                report(.idle(idleFor: .milliseconds(max(0, idle))))
            }
            if seen & Int32(CXCB_BECAME_ACTIVE) != 0 { report(.active) }
            if seen & Int32(CXCB_SUPPORT_CHANGED) != 0 {
                let now = asking { cxcb_reads_focus(session) } != 0
                if now != readsFocus {
                    readsFocus = now
                    report(.support(readsFocus: now, readsIdle: readsIdle))
                }
            }
            if seen & Int32(CXCB_POINTER_USED) != 0 {
                clickedUntil = .now + pointerHold
            } else if let until = clickedUntil, ContinuousClock.now >= until {
                // The pointer left unused: what is under it no longer counts.
                clickedUntil = nil
                owed = true
            }
            if seen & Int32(CXCB_POINTER_MOVED) != 0, hearsMotion {
                let now = ContinuousClock.now
                if asking(answers: false, { cxcb_watch_motion(session, 0) }) > 0 {
                    hearsMotion = false
                    motionBackAt = now + Self.motionSample
                }
                movedFrom = asking { cxcb_window_under_pointer(session) }
                if let last = lastMoved, now - last <= Self.motionTogether { moving(over: movedFrom, at: now) }
                lastMoved = now
            } else if let back = motionBackAt, ContinuousClock.now >= back {
                motionBackAt = nil
                hearsMotion = asking(answers: false, { cxcb_watch_motion(session, 1) }) > 0
                // Still over the window it was moving over a second ago: moved there, not passing
                // by (a burst of play is over before the hearing is back).
                if movedFrom != 0, asking({ cxcb_window_under_pointer(session) }) == movedFrom {
                    moving(over: movedFrom, at: .now)
                }
                movedFrom = 0
            }
            if let until = movedUntil, ContinuousClock.now >= until {
                // The pointer stopped: what is under it no longer counts.
                movedUntil = nil
                owed = true
            }
            let changes = Int32(
                CXCB_ACTIVE_WINDOW_CHANGED | CXCB_SUPPORT_CHANGED | CXCB_WINDOWS_CHANGED | CXCB_POINTER_USED)
            if seen & changes != 0 || waiting.hasStall { owed = true }
            if owed {
                refill()
                if credit < 1 { continue }
            }
            if owed {
                owed = false
                credit -= 1
                if let front = look(settled: false) {
                    noneSince = nil
                    show(front)
                } else if noneSince == nil {
                    noneSince = .now
                }
            } else if let since = noneSince, ContinuousClock.now - since >= settle {
                noneSince = nil
                if let front = look(settled: true) { show(front) }
            }
        }
    }

    /// How often the idle counter itself is asked while idle.
    static let idleRecheck = Duration.seconds(10)

    /// How long the window under the pointer counts after a button or wheel was used there.
    static let pointerHold = Duration.seconds(10)

    /// How often the pointer's motion is heard at most, and how long the window under a moving
    /// pointer counts after the last move heard.
    static let motionSample = Duration.seconds(1)
    static let motionHold = Duration.milliseconds(2500)
    /// Two moves heard this close are play (a burst of a second and a pause of 1.7 s, over and
    /// over, as an attack played, hears a move every 2.7 s); farther apart, passing by.
    static let motionTogether = Duration.seconds(4)
    private var pointerHold: Duration { Self.pointerHold }

    /// What is in front now; nil when no window is active and that has not lasted (`settled`).
    /// `pointer`: a button or wheel was used lately, or the pointer kept moving, and the window
    /// under the pointer is in use too (one that never takes the keyboard, shown beside the
    /// active one, is played with the mouse).
    private func inFront(settled: Bool, pointer: Bool) -> (windows: [Window], conservative: Bool)? {
        if readsFocus {
            let active = cxcb_active_window(session)
            if active != 0, cxcb_is_viewable(session, active) != 0 {
                var windows = [window(active)]
                if pointer {
                    // The window the clicks go to, and the one shown there (a window above it
                    // that lets them through, its input shape empty, shows what she plays); not
                    // the window manager's frames (a click on a title bar).
                    let manager = cxcb_frame_owner_pid(session, active)
                    for under in [cxcb_window_under_pointer(session), cxcb_window_shown_under_pointer(session)]
                    where under != 0 {
                        let found = window(under)
                        if found.pid == nil || found.pid != manager { add(found, to: &windows) }
                    }
                }
                let keyboard = cxcb_input_focus(session)
                if keyboard != 0, keyboard != active, cxcb_is_viewable(session, keyboard) != 0 {
                    add(window(keyboard), to: &windows)
                }
                // Another client's window shown inside the active one (reparented into it: a game
                // inside an allowed app's window) is in front too; more inside it than the agent
                // looks at (a window a child filled with decoys): every client of the display.
                var everyClient = !addShown(inside: active, to: &windows)
                // Another client holding the keyboard (a grab: the focus stays, the keys go to
                // it) is in front too, with what shows inside its window; every client, when
                // where the keys go is not known.
                var grabbing: UInt32 = 0
                switch cxcb_keyboard_grab(session, &grabbing) {
                case 1 where grabbing != 0:
                    add(window(grabbing), to: &windows)
                    if !addShown(inside: grabbing, to: &windows) { everyClient = true }
                case 2: everyClient = true
                default: break
                }
                if everyClient { addClients(to: &windows) }
                return (windows, false)
            }
            if !settled { return nil }
        }
        var ids = [UInt32](repeating: 0, count: 512)
        let count = cxcb_mapped_windows(session, &ids, ids.count)
        var windows: [Window] = []
        for id in ids.prefix(count) {
            // One whose client's pid the server cannot tell counts too (once), as unidentified.
            let found = window(id)
            if !windows.contains(where: { $0.pid == found.pid }) { windows.append(found) }
        }
        // And every client of the display: a window shown inside another's (or past the 512
        // looked at) is a client's too.
        addClients(to: &windows)
        return (windows, true)
    }

    /// `window`, unless a window of its process is there already.
    private func add(_ window: Window, to windows: inout [Window]) {
        if !windows.contains(where: { $0.pid == window.pid }) { windows.append(window) }
    }

    /// The windows other clients show inside `window`; false when more is inside than is looked at.
    private func addShown(inside window: UInt32, to windows: inout [Window]) -> Bool {
        var inside = [UInt32](repeating: 0, count: 16)
        var complete: Int32 = 1
        let count = cxcb_foreign_windows_inside(session, window, &inside, inside.count, &complete)
        for id in inside.prefix(count) { add(self.window(id), to: &windows) }
        return complete != 0
    }

    /// Every client of the display the server can name the pid of (not the server itself), once,
    /// besides `windows`.
    private func addClients(to windows: inout [Window]) {
        var pids = [Int32](repeating: 0, count: 512)
        let count = cxcb_client_pids(session, &pids, pids.count)
        for pid in pids.prefix(count) where pid != server.pid && !windows.contains(where: { $0.pid == pid }) {
            windows.append(Window(id: 0, pid: pid))
        }
    }

    /// A window and its client's pid, as the server knows it: one round trip, on every look at
    /// what is in front (what the client claims of itself is not asked).
    private func window(_ id: UInt32) -> Window {
        let pid = cxcb_window_pid(session, id)
        return Window(id: id, pid: pid > 0 ? pid : nil)
    }

    private static func string(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Who is at the other end of a connected socket, as the kernel saw them (`SO_PEERCRED`).
    static func peerCredentials(_ fd: Int32, path: String) throws(SystemError) -> PeerCredentials {
        // Over TCP the kernel keeps no credentials: the process holding the server's end of the
        // connection, in the kernel's table of connections, and its owner.
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        if named == 0, Int32(address.ss_family) == AF_INET || Int32(address.ss_family) == AF_INET6 {
            var peer = sockaddr_storage()
            var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let found = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &peerLength) }
            }
            // Both families' ports are the same two bytes after the family.
            let port = withUnsafeBytes(of: peer) { Int(UInt16($0[2]) << 8 | UInt16($0[3])) }
            guard found == 0,
                let server = TCPPeers.listener(port: port, ipv6: Int32(address.ss_family) == AF_INET6)
            else {
                throw SystemError(.command, "\(path): no process of this machine listens there")
            }
            return PeerCredentials(pid: server.pid, uid: server.uid, gid: 0)
        }
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
        guard screentime_peer_credentials(fd, &pid, &uid, &gid) == 0 else {
            throw SystemError.call("getsockopt(\(path), SO_PEERCRED)", errno)
        }
        return PeerCredentials(pid: pid, uid: uid, gid: gid)
    }
}

/// Whether a request of a watch has waited too long for the server: one watchdog at a time
/// (its timer is set again for a request that began after it was set, and replaced only by a
/// nearer one), so that a flood of events costs no timer each.
private final class StallWatch: Sendable {
    private struct State {
        var waitingSince: ContinuousClock.Instant?
        /// What the scheduler told when the wait began (read at `sampledAt`).
        var before: [RunQueueWait.Thread] = []
        var sampledAt: ContinuousClock.Instant?
        /// What the looks at the server during this wait saw.
        var probe = RunQueueWait.Probe()
        /// Whether this wait is looked at from `probeAfter` into it (else from `limit`).
        var closely = false
        /// When the watchdog's timer fires (nil: none is set). A timer that finds another
        /// deadline here was replaced by a nearer one, and does nothing.
        var deadline: ContinuousClock.Instant?
        /// The watchdog fired since the last report.
        var stalled = false
    }
    private let state = Mutex(State())
    private let limit: Duration
    private let probeAfter: Duration
    private let scheduler: RunQueueWait
    private let told: @Sendable (_ answered: @escaping @Sendable () -> Bool) -> Void

    /// `probe`: a wait watched closely that lasts this long is looked at, and again as often while
    /// it lasts: the server's settings (a child slowing her server only while she grabs it, and
    /// setting it back before letting go, is seen in the middle), and the processors' idle time.
    /// Any other wait is looked at once it lasts `limit`.
    init(
        after limit: Duration, probe: Duration, scheduler: RunQueueWait,
        tell: @escaping @Sendable (_ answered: @escaping @Sendable () -> Bool) -> Void
    ) {
        self.limit = limit
        probeAfter = probe
        self.scheduler = scheduler
        told = tell
    }

    /// A request is made (`closely`: watched from `probeAfter` into it): what the scheduler tells
    /// of the threads now is returned.
    /// A reading younger than `reuse` stands for the next request's start (a look asks a dozen
    /// things in a row: three files read for each would double what a switch costs); it can
    /// explain at most that much more of a wait than was spent in it, per thread.
    func begin(closely: Bool, reuse: Duration = .milliseconds(5)) -> [RunQueueWait.Thread] {
        let now = ContinuousClock.now
        let recent = state.withLock { state in state.sampledAt.map { now - $0 < reuse } == true ? state.before : nil }
        let before = recent ?? scheduler.sample(states: false)
        let wanted = now + (closely ? probeAfter : limit)
        let arm = state.withLock { state -> Bool in
            state.waitingSince = .now
            if recent == nil { state.sampledAt = now }
            state.before = before
            state.probe = RunQueueWait.Probe()
            state.closely = closely
            if let set = state.deadline, set <= wanted { return false }
            state.deadline = wanted
            return true
        }
        if arm { set(at: wanted) }
        return before
    }

    /// The request is answered: what was seen of its wait.
    func end() -> RunQueueWait.Probe {
        state.withLock { state in
            state.waitingSince = nil
            return state.probe
        }
    }

    private func set(at deadline: ContinuousClock.Instant) {
        let delay = max(deadline - ContinuousClock.now, .milliseconds(1))
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(delay.milliseconds))) {
            [self] in
            enum Next { case idle, again(ContinuousClock.Instant), stall }
            guard state.withLock({ $0.deadline == deadline }) else { return }
            let now = scheduler.sample(settings: true)
            let idle = scheduler.idleTime()
            let next = state.withLock { state -> Next in
                guard state.deadline == deadline else { return .idle }
                guard let since = state.waitingSince else {
                    state.deadline = nil
                    return .idle
                }
                let at = ContinuousClock.now
                let elapsed = at - since
                if elapsed >= probeAfter {
                    if now.contains(where: \.slowed) { state.probe.slowed = true }
                    if state.probe.idleFrom == nil, let idle { state.probe.idleFrom = (at, idle) }
                }
                // What the threads spent ready to run and kept from a processor does not count;
                // nor does a wait while one of them is kept from it still (the kernel counts that
                // wait once it runs): the machine is busy, the server grabbed by no one. Unless
                // the server was slowed on purpose, or a processor sat idle meanwhile.
                let excused = state.probe.excuses(idleNow: idle, at: at)
                let waited = elapsed - (excused ? RunQueueWait.waited(from: state.before, to: now) : .zero)
                // Looked at again while it lasts: when watched closely, at `probeAfter` into it,
                // then every `probeAfter`; else once it has waited `limit`.
                if waited < limit {
                    let probeIn = !state.closely ? limit : elapsed < probeAfter ? probeAfter - elapsed : probeAfter
                    let next = at + max(min(limit - waited, probeIn), .milliseconds(20))
                    state.deadline = next
                    return .again(next)
                }
                if excused, RunQueueWait.starving(from: state.before, to: now, over: elapsed) {
                    let next = at + .milliseconds(100)
                    state.deadline = next
                    return .again(next)
                }
                // Told once per request that waits; the next request's wait is watched anew.
                state.deadline = nil
                state.waitingSince = nil
                state.stalled = true
                return .stall
            }
            switch next {
            case .idle: break
            case .again(let next): set(at: next)
            case .stall: told { [self] in !hasStall }
            }
        }
    }

    var hasStall: Bool { state.withLock { $0.stalled } }

    func takeStall() -> Bool {
        state.withLock { state in
            defer { state.stalled = false }
            return state.stalled
        }
    }
}

extension Duration {
    /// Whole milliseconds (rounded down).
    var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
