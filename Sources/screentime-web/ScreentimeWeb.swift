import ArgumentParser
import FoundationEssentials
import Glibc
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOSSL
import ScreenTimeClient
import ScreenTimeWeb
import ServiceLifecycle

/// `screentime-web`: the guardian's dashboard, over HTTPS on the home network. It runs as its own
/// account with no capability, reaches the agent only through the control socket, and has no
/// authority of its own: each request it forwards carries the session of the guardian signed in.
@main
struct ScreentimeWeb: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "screentime-web",
        abstract: "The guardian's dashboard: usage, asks, locks, from a phone on the home network.",
        discussion: """
            It listens on the addresses given (--listen, repeated), else on this PC's home-network \
            addresses and loopback, never a public address unless named. Its certificate is its \
            own, made at the first start in --state-dir; its SHA-256 fingerprint is printed and \
            written to status.json there.
            """)

    @Option(name: .customLong("listen"), help: "An address to listen on (repeatable).")
    var addresses: [String] = []

    @Option(help: "The port.")
    var port: Int = 8443

    @Option(help: "The agent's control socket.")
    var socket: String = ScreenTimeClient.defaultSocket

    @Option(name: .customLong("state-dir"), help: "Where the key, certificate and status.json are kept.")
    var stateDirectory: String = "/var/lib/screentime-web"

    @Option(name: .customLong("max-connections"), help: "Connections open at once, per address listened on.")
    var maxConnections: Int = 128

    @Option(name: .customLong("max-per-device"), help: "Connections one device may have open at once.")
    var maxPerDevice: Int = 16

    func validate() throws {
        guard (1...65_535).contains(port) else { throw ValidationError("--port is 1 to 65535, not \(port)") }
        guard (1...100_000).contains(maxConnections), (1...maxConnections).contains(maxPerDevice) else {
            throw ValidationError("--max-connections is 1 to 100000, --max-per-device 1 to --max-connections")
        }
        for address in addresses where DashboardIdentity.ipBytes(address) == nil {
            throw ValidationError("--listen takes an IP address, not '\(address.prefix(60))'")
        }
    }

    func run() async throws {
        var logger = Logger(label: "screentime-web")
        logger.logLevel = .notice
        let listening = addresses.isEmpty ? HomeAddresses.find() : addresses
        let host = ProcessInfo.processInfo.hostName
        let identity: DashboardIdentity
        do {
            identity = try DashboardIdentity.load(directory: stateDirectory, host: host, addresses: listening)
        } catch {
            throw ValidationError("cannot make or read the certificate in \(stateDirectory): \(error)")
        }
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: identity.certificate, format: .der))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(identity.privateKey.utf8), format: .pem)))
        tls.minimumTLSVersion = .tlsv12
        let dashboard = Dashboard(
            agent: SocketAgentConnection(socket: socket),
            bindingKey: try DashboardIdentity.sessionKey(directory: stateDirectory))
        // One device holds at most a few connections, each with deadlines for its request.
        let limits = ClientLimits(perClient: maxPerDevice, burst: max(32, 2 * maxPerDevice))
        var services: [any Service] = []
        for address in listening {
            services.append(
                Application(
                    router: dashboard.router(),
                    server: try .tls(
                        .http1(
                            configuration: .init(
                                additionalChannelHandlers: [limits.handler()], idleTimeout: .seconds(30))),
                        tlsConfiguration: tls),
                    configuration: ApplicationConfiguration(
                        address: .hostname(address, port: port), serverName: "screentime",
                        availableConnectionsDelegate: MaximumAvailableConnections(maxConnections)),
                    logger: logger))
        }
        let urls = listening.map { $0.contains(":") ? "https://[\($0)]:\(port)/" : "https://\($0):\(port)/" }
        try writeStatus(urls: urls, fingerprint: identity.fingerprint)
        // Written at once (print's output waits in a buffer while the server runs).
        print(
            "screentime-web: listening on \(urls.joined(separator: " "))\n"
                + "screentime-web: certificate fingerprint (SHA-256) \(identity.fingerprint)")
        fflush(nil)
        let group = ServiceGroup(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        try await group.run()
    }

    /// Where the dashboard is and how to know its certificate, for `screentime web status`.
    private func writeStatus(urls: [String], fingerprint: String) throws {
        struct Status: Encodable {
            let fingerprint: String
            let pid: Int32
            let urls: [String]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(Status(fingerprint: fingerprint, pid: getpid(), urls: urls))
        let path = stateDirectory + "/status.json"
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        // Readable by guardians (`screentime web status`), whatever the umask.
        chmod(path, 0o644)
    }
}
