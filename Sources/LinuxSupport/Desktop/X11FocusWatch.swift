import CLinuxShim
import CXCB
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

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
    let session: OpaquePointer

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

}
