import LinuxSupport
import ScreenTimeIPC

/// One request, one reply over the control socket.
struct ControlClient {
    let path: String

    func send<T: Decodable>(_ request: Request, expecting type: T.Type) throws(ScreenTimeIPCError) -> T {
        let bytes: [UInt8]
        do {
            bytes = try RequestCoding.encode(request)
        } catch {
            throw ScreenTimeIPCError(.invalidArgument, "the request cannot be encoded: \(error)")
        }
        let reply: [UInt8]
        do {
            let socket = try UnixSocket.connect(to: path)
            try socket.setTimeout(seconds: 60)
            try socket.write(Framing.frame(bytes))
            guard let header = try socket.read(exactly: 4) else {
                throw ScreenTimeIPCError(.agentUnreachable, "the agent at \(path) closed the connection")
            }
            let length = try Framing.payloadLength(header: header)
            guard let payload = try socket.read(exactly: length) else {
                throw ScreenTimeIPCError(.agentUnreachable, "the agent at \(path) closed the connection")
            }
            reply = payload
        } catch let error as SystemError {
            throw ScreenTimeIPCError(
                .agentUnreachable,
                "cannot reach the agent at \(path) (\(error.message)); is screentimed running? (sudo make install starts it)"
            )
        } catch let error as ScreenTimeIPCError {
            throw error
        } catch {
            throw ScreenTimeIPCError(.agentUnreachable, "\(error)")
        }
        return try ReplyCoding.decode(T.self, from: reply)
    }
}
