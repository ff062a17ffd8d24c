import FoundationEssentials
import LinuxSupport

/// The agent's configuration: `/etc/screentime/screentimed.json`, every key optional; `keys`
/// lists them with their defaults and meanings (`man screentimed.json` prints them).
///
/// An unknown key is an error (a typo would otherwise be silently ignored).
public struct AgentConfiguration: Codable, Sendable, Hashable {
    public static let defaultPath = "/etc/screentime/screentimed.json"

    /// Every key, its default and what it means: the source of `screentimed.json(5)` and of
    /// `screentimed --help` (a test checks it names exactly the keys the decoder knows).
    public static let keys: [(key: String, default: String, meaning: String)] = [
        ("guardianGroup", "screentime-guardians", "members (and root) are guardians"),
        ("stateDirectory", "/var/lib/screentime", "the state database and the token secret"),
        ("socket", "/run/screentime/screentimed.sock", "the control socket"),
        ("pamService", "screentime", "the PAM stack that checks a guardian's password"),
        ("adminGroups", "[\"sudo\", \"wheel\", \"admin\"]", "members may not be authorized as children"),
        ("categoriesDirectory", "/etc/screentime/categories", "web-category lists, `NAME.list`"),
        (
            "servicesDirectory", "/etc/screentime/services",
            "the service catalogue, `ID.service`: each service's name, web domains and apps"
        ),
        ("publicSuffixList", "/usr/share/publicsuffix/public_suffix_list.dat", "Debian's list"),
        (
            "bypassList", "/etc/screentime/doh.list",
            "DNS-over-HTTPS servers: names and addresses refused to filtered users"
        ),
        (
            "dnsQueue", "53",
            "the NFQUEUE number the filtered users' DNS goes to, and the NFLOG group of their connections' acknowledgements (0–65535)"
        ),
        ("firewallChain", "screentime", "the agent's iptables/ip6tables chain (and `<chain>-filter`)"),
        ("freezerGroup", "screentime", "the agent's cgroup; shielded processes are held in `<group>/frozen`"),
        (
            "freezer", "auto",
            "how shielded processes are held: `v2` (cgroup.freeze), `v1` (the freezer controller), `signal` (SIGSTOP alone), `auto` (the first of these that works)"
        ),
        ("subordinateUIDs", "/etc/subuid", "the subordinate uids of users: a child's are the child"),
        ("subordinateGIDs", "/etc/subgid", "likewise for gids"),
        ("eventRetentionDays", "30", "how long shielded lookups and process events are kept (1–3650)"),
        (
            "acknowledgementLog", "true",
            "a passed connection's server acknowledgement reaches the agent as a copy (NFLOG) while it goes on, so each connection makes one trip through the queue, not two; `false` queues the server's packets until then (two trips)"
        ),
        (
            "dnsFastPath", "true",
            "a question the agent judged (a name allowed, answered with its addresses alone) is asked again in the kernel, without the queue, for 30 s or until the next change of a filter (each answer is still read there); `false` sends every question and answer to the queue (for comparison)"
        ),
        (
            "helloFastPath", "true",
            "a TLS hello the agent passed (her uid, the server, the name byte for byte) is let go in the kernel after, for 30 s or until the next change of a filter, its copy judged from the log and the flow passed on the server's acknowledgement of that very hello (needs `dnsFastPath` and `acknowledgementLog`); `false` sends every hello to the queue (for comparison)"
        ),
        (
            "execGate", "true",
            "ask the kernel before shielded and blocked programs run (fanotify); `false` leaves them to the process watcher alone (for comparison: they are then caught just after exec)"
        ),
        (
            "favorCgroupMoves", "true",
            "turn on the cgroup v2 file system's `favordynmods` option (until the next boot; its other options kept) so that moving a shielded program into the frozen group does not wait for the kernel's RCU grace period, at a small cost to every fork and exit; `--remove-firewall` turns it off again if the agent turned it on. `false`: the mount is left as it is"
        ),
        (
            "connectionMark", "83",
            "the byte (1–241) of the connection mark (bits 16–23) that tells the filtered users' DNS replies; the next thirteen values mark their other connections as pending, refused, passed (eight generations), watched and watched by the kernel, and TCP connections opened from outside, and the one after them (as a packet's mark) the DNS the fast path lets go untracked; bits 24–27 that a watched connection's opening was acknowledged"
        ),
        (
            "dnsRateLimit", "200",
            "DNS packets per second each filtered user may send (bursts of five times that, at most 10000), 1 to 10000; more are dropped. 0: no limit (for measuring the filter; a child's flood then reaches the agent)"
        ),
        (
            "connectionRateLimit", "2000",
            "packets of not yet judged connections per second each filtered user may send to the queue (bursts of five times that, at most 10000), 1 to 10000; more are dropped and resent by TCP. 0: no limit"
        ),
        (
            "browserPolicies", "/",
            "where the managed browser policies go while a child is authorized (`etc/firefox/policies`, `etc/chromium/policies/managed` under it); empty: none"
        ),
        (
            "idleTimeout", "300",
            "seconds without keyboard or mouse input after which a session's time stops counting (2–86400); it counts again at the next input"
        ),
        (
            "focusSocket", "/run/screentime/focus.socket",
            "where compositors' focus extensions (GNOME Shell's screentime-focus) tell the window in front; empty: not listened for"
        ),
        (
            "logindBus", "unix:path=/run/dbus/system_bus_socket",
            "the D-Bus address of the system bus where logind's sessions are read (their idle, locked and active hints stop the clock); empty: logind is not asked"
        ),
        (
            "suspendCommand", "/usr/bin/systemctl suspend",
            "what suspends the computer when a lock comes into force for a child whose lockout action is `suspend` (an absolute program and its arguments, split at spaces); empty: such a lock only holds the sessions"
        ),
        (
            "extensionUser", "screentime-ext",
            "the account extensions run as (made by `make install`; without it no extension starts)"
        ),
        (
            "webUser", "screentime-web",
            "the dashboard's account (`screentime-web`): its requests act only in a guardian's signed-in session"
        ),
        (
            "webProgram", "",
            "the dashboard's program, which the agent runs as `webUser` while a guardian has it on (`screentime web enable`); root's, written by no one else; empty: `screentime-web` in the `bin` directory beside the agent's"
        ),
        (
            "webStateDirectory", "/var/lib/screentime-web",
            "the dashboard's own directory (its key, certificate and status.json), `webUser`'s (made by `make install`)"
        ),
    ]

    /// The keys the decoder knows.
    public static var decodedKeys: [String] { CodingKeys.allCases.map(\.rawValue) }

    public var guardianGroup = "screentime-guardians"
    public var stateDirectory = "/var/lib/screentime"
    public var socket = "/run/screentime/screentimed.sock"
    public var pamService = "screentime"
    public var adminGroups = ["sudo", "wheel", "admin"]
    public var categoriesDirectory = "/etc/screentime/categories"
    public var servicesDirectory = "/etc/screentime/services"
    public var publicSuffixList = "/usr/share/publicsuffix/public_suffix_list.dat"
    public var bypassList = "/etc/screentime/doh.list"
    public var dnsQueue: UInt16 = 53
    public var firewallChain = "screentime"
    public var freezerGroup = "screentime"
    public var freezer = Freezer.auto
    public var subordinateUIDs = "/etc/subuid"
    public var subordinateGIDs = "/etc/subgid"
    public var eventRetentionDays = 30
    public var execGate = true
    public var favorCgroupMoves = true
    public var acknowledgementLog = true
    public var dnsFastPath = true
    public var helloFastPath = true
    public var connectionMark: UInt8 = 83
    public var dnsRateLimit = 200
    public var connectionRateLimit = 2000
    public var extensionUser = "screentime-ext"
    public var webUser = "screentime-web"
    public var webProgram = ""
    public var webStateDirectory = "/var/lib/screentime-web"
    public var browserPolicies = "/"
    public var idleTimeout = 300
    public var logindBus = "unix:path=/run/dbus/system_bus_socket"
    public var focusSocket = "/run/screentime/focus.socket"
    public var suspendCommand = "/usr/bin/systemctl suspend"

    /// How shielded processes are held (`freezer`).
    public enum Freezer: String, Codable, Sendable, CaseIterable {
        case auto, v2, v1, signal
    }

    public init() {}

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case guardianGroup, stateDirectory, socket, pamService, adminGroups, categoriesDirectory, publicSuffixList
        case bypassList, dnsQueue, firewallChain, freezerGroup, freezer, subordinateUIDs, subordinateGIDs
        case eventRetentionDays, connectionMark, dnsRateLimit, connectionRateLimit, execGate, extensionUser
        case acknowledgementLog, dnsFastPath, helloFastPath, favorCgroupMoves
        case browserPolicies, idleTimeout, logindBus, focusSocket, suspendCommand, webUser
        case webProgram, webStateDirectory, servicesDirectory
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let known = Set(CodingKeys.allCases.map(\.rawValue))
        let all = try decoder.container(keyedBy: AnyKey.self)
        if let unknown = all.allKeys.map(\.stringValue).first(where: { !known.contains($0) }) {
            throw AgentError.configuration(
                "unknown key '\(unknown)'; the keys are \(known.sorted().joined(separator: ", "))")
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = AgentConfiguration()
        guardianGroup = try container.decodeIfPresent(String.self, forKey: .guardianGroup) ?? defaults.guardianGroup
        stateDirectory = try container.decodeIfPresent(String.self, forKey: .stateDirectory) ?? defaults.stateDirectory
        socket = try container.decodeIfPresent(String.self, forKey: .socket) ?? defaults.socket
        pamService = try container.decodeIfPresent(String.self, forKey: .pamService) ?? defaults.pamService
        adminGroups = try container.decodeIfPresent([String].self, forKey: .adminGroups) ?? defaults.adminGroups
        categoriesDirectory =
            try container.decodeIfPresent(String.self, forKey: .categoriesDirectory) ?? defaults.categoriesDirectory
        servicesDirectory =
            try container.decodeIfPresent(String.self, forKey: .servicesDirectory) ?? defaults.servicesDirectory
        publicSuffixList =
            try container.decodeIfPresent(String.self, forKey: .publicSuffixList) ?? defaults.publicSuffixList
        bypassList = try container.decodeIfPresent(String.self, forKey: .bypassList) ?? defaults.bypassList
        if let queue = try container.decodeIfPresent(Int.self, forKey: .dnsQueue) {
            guard let number = UInt16(exactly: queue) else {
                throw AgentError.configuration("'dnsQueue' is a queue number from 0 to 65535, not \(queue)")
            }
            dnsQueue = number
        }
        firewallChain = try container.decodeIfPresent(String.self, forKey: .firewallChain) ?? defaults.firewallChain
        // iptables takes chain names of up to 28 characters; "-filter" is added to this one.
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
        guard (1...21).contains(firewallChain.count), firewallChain.allSatisfy(allowed.contains),
            firewallChain.first != "-"
        else {
            throw AgentError.configuration(
                "'firewallChain' is 1 to 21 letters, digits, - or _ (not starting with -), not '\(firewallChain.prefix(40))'"
            )
        }
        freezerGroup = try container.decodeIfPresent(String.self, forKey: .freezerGroup) ?? defaults.freezerGroup
        guard (1...64).contains(freezerGroup.count), freezerGroup.allSatisfy(allowed.contains),
            freezerGroup.first != "-", !freezerGroup.hasPrefix("cgroup.")
        else {
            throw AgentError.configuration(
                "'freezerGroup' is 1 to 64 letters, digits, - or _ (a cgroup name), not '\(freezerGroup.prefix(70))'")
        }
        if let name = try container.decodeIfPresent(String.self, forKey: .freezer) {
            guard let choice = Freezer(rawValue: name) else {
                throw AgentError.configuration(
                    "'freezer' is one of \(Freezer.allCases.map(\.rawValue).joined(separator: ", ")), not '\(name.prefix(40))'"
                )
            }
            freezer = choice
        }
        subordinateUIDs =
            try container.decodeIfPresent(String.self, forKey: .subordinateUIDs) ?? defaults.subordinateUIDs
        subordinateGIDs =
            try container.decodeIfPresent(String.self, forKey: .subordinateGIDs) ?? defaults.subordinateGIDs
        for (key, path) in [("subordinateUIDs", subordinateUIDs), ("subordinateGIDs", subordinateGIDs)]
        where !path.hasPrefix("/") {
            throw AgentError.configuration("'\(key)' is an absolute path, not '\(path.prefix(60))'")
        }
        if let days = try container.decodeIfPresent(Int.self, forKey: .eventRetentionDays) {
            guard (1...3650).contains(days) else {
                throw AgentError.configuration("'eventRetentionDays' is from 1 to 3650, not \(days)")
            }
            eventRetentionDays = days
        }
        execGate = try container.decodeIfPresent(Bool.self, forKey: .execGate) ?? defaults.execGate
        favorCgroupMoves =
            try container.decodeIfPresent(Bool.self, forKey: .favorCgroupMoves) ?? defaults.favorCgroupMoves
        acknowledgementLog =
            try container.decodeIfPresent(Bool.self, forKey: .acknowledgementLog) ?? defaults.acknowledgementLog
        dnsFastPath = try container.decodeIfPresent(Bool.self, forKey: .dnsFastPath) ?? defaults.dnsFastPath
        helloFastPath = try container.decodeIfPresent(Bool.self, forKey: .helloFastPath) ?? defaults.helloFastPath
        extensionUser = try container.decodeIfPresent(String.self, forKey: .extensionUser) ?? defaults.extensionUser
        webUser = try container.decodeIfPresent(String.self, forKey: .webUser) ?? defaults.webUser
        webProgram = try container.decodeIfPresent(String.self, forKey: .webProgram) ?? defaults.webProgram
        webStateDirectory =
            try container.decodeIfPresent(String.self, forKey: .webStateDirectory) ?? defaults.webStateDirectory
        for (key, path) in [("webProgram", webProgram), ("webStateDirectory", webStateDirectory)]
        where !(path.isEmpty && key == "webProgram") {
            guard path.hasPrefix("/"), path.utf8.count <= 1024, !path.unicodeScalars.contains(where: { $0.value < 32 })
            else { throw AgentError.configuration("'\(key)' is an absolute path, not '\(path.prefix(80))'") }
        }
        browserPolicies =
            try container.decodeIfPresent(String.self, forKey: .browserPolicies) ?? defaults.browserPolicies
        guard browserPolicies.isEmpty || browserPolicies.hasPrefix("/") else {
            throw AgentError.configuration(
                "'browserPolicies' is an absolute directory or empty, not '\(browserPolicies)'")
        }
        if let seconds = try container.decodeIfPresent(Int.self, forKey: .idleTimeout) {
            guard (2...86_400).contains(seconds) else {
                throw AgentError.configuration("'idleTimeout' is from 2 to 86400 seconds, not \(seconds)")
            }
            idleTimeout = seconds
        }
        focusSocket = try container.decodeIfPresent(String.self, forKey: .focusSocket) ?? defaults.focusSocket
        guard focusSocket.isEmpty || (focusSocket.hasPrefix("/") && focusSocket.utf8.count < 108) else {
            throw AgentError.configuration(
                "'focusSocket' is an absolute path under 108 bytes ('/run/screentime/focus.socket') or empty, not '\(focusSocket.prefix(80))'"
            )
        }
        suspendCommand =
            try container.decodeIfPresent(String.self, forKey: .suspendCommand) ?? defaults.suspendCommand
        let words = suspendCommand.split(separator: " ")
        guard
            suspendCommand.isEmpty
                || (words.first?.hasPrefix("/") == true && words.count <= 16
                    && suspendCommand.utf8.count <= 1024 && !suspendCommand.unicodeScalars.contains { $0.value < 32 })
        else {
            throw AgentError.configuration(
                "'suspendCommand' is an absolute program and its arguments ('/usr/bin/systemctl suspend') or empty, not '\(suspendCommand.prefix(80))'"
            )
        }
        logindBus = try container.decodeIfPresent(String.self, forKey: .logindBus) ?? defaults.logindBus
        guard logindBus.isEmpty || (logindBus.contains(":") && logindBus.utf8.count <= 1024) else {
            throw AgentError.configuration(
                "'logindBus' is a D-Bus address ('unix:path=/run/dbus/system_bus_socket') or empty, not '\(logindBus.prefix(80))'"
            )
        }
        if let mark = try container.decodeIfPresent(Int.self, forKey: .connectionMark) {
            guard let byte = UInt8(exactly: mark), (1...241).contains(byte) else {
                throw AgentError.configuration(
                    "'connectionMark' is from 1 to 241 (the next fourteen values mark judged connections and untracked DNS), not \(mark)"
                )
            }
            connectionMark = byte
        }
        // The kernel's limit match goes no higher than `Firewall.highestRateLimit`: above it,
        // iptables refused the whole ruleset and the filter was not in force.
        let highest = Firewall.highestRateLimit
        if let rate = try container.decodeIfPresent(Int.self, forKey: .connectionRateLimit) {
            guard (0...highest).contains(rate) else {
                throw AgentError.configuration(
                    "'connectionRateLimit' is from 1 to \(highest) packets a second (the kernel's limit goes no higher), or 0 for no limit, not \(rate)"
                )
            }
            connectionRateLimit = rate
        }
        if let rate = try container.decodeIfPresent(Int.self, forKey: .dnsRateLimit) {
            guard (0...highest).contains(rate) else {
                throw AgentError.configuration(
                    "'dnsRateLimit' is from 1 to \(highest) packets a second (the kernel's limit goes no higher), or 0 for no limit, not \(rate)"
                )
            }
            dnsRateLimit = rate
        }
    }

    /// Reads a configuration file. A missing file at the default path means the defaults; a
    /// missing file that was asked for by name is an error.
    public static func load(path: String, required: Bool) throws(AgentError) -> AgentConfiguration {
        guard FileManager.default.fileExists(atPath: path) else {
            if required { throw AgentError.configuration("\(path) does not exist") }
            return AgentConfiguration()
        }
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            return try JSONDecoder().decode(AgentConfiguration.self, from: data)
        } catch let error as AgentError {
            throw AgentError.configuration("\(path): \(error.message)")
        } catch let error as DecodingError {
            throw AgentError.configuration("\(path): \(Self.describe(error))")
        } catch {
            throw AgentError.configuration("\(path): \(error)")
        }
    }

    private static func describe(_ error: DecodingError) -> String {
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            let key = context.codingPath.map(\.stringValue).joined(separator: ".")
            if case .dataCorrupted = error, let underlying = context.underlyingError {
                if let agentError = underlying as? AgentError { return agentError.message }
                return "not valid JSON (\(underlying))"
            }
            return key.isEmpty ? context.debugDescription : "'\(key)': \(context.debugDescription)"
        case .keyNotFound(let key, _):
            return "missing '\(key.stringValue)'"
        @unknown default:
            return "\(error)"
        }
    }
}
