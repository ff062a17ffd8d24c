import Foundation
import Glibc
import ScreenTimeClient
import ScreenTimeIPC

// The PAM hook: run by pam_exec(8) in the account and session stacks (see
// packaging/pam-configs/screentime), as root (`seteuid`). It tells the agent of each login and
// asks whether it may go on; what it prints goes to the person logging in (`stdout`).
//
//   account        refused (exit 1, with the reason) for a child in downtime or out of screen
//                  time with --no-login; allowed for everyone else
//   open_session   the same answer, and the agent lists the session and counts a text session
//   close_session  always allowed
//
// It asks the agent only about the authorized users the agent last listed
// (`<stateDirectory>/login-children`, root's): anyone else's login goes on at once. When the agent
// does not answer within `timeout` seconds, it fails closed for the children listed and open for
// everyone else: a broken agent never locks out a guardian or root.
//
//   screentime-pam [--config FILE] [--socket PATH] [--state-dir DIR] [--timeout SECONDS]

let environment = ProcessInfo.processInfo.environment
let phaseName = environment["PAM_TYPE"] ?? ""
let user = environment["PAM_USER"] ?? ""

/// The options given in the PAM stack.
let options: [String: String] = {
    var options: [String: String] = [:]
    var arguments = CommandLine.arguments.dropFirst()
    while let name = arguments.popFirst() {
        guard ["--config", "--socket", "--state-dir", "--timeout"].contains(name), let value = arguments.popFirst()
        else {
            FileHandle.standardError.write(Data("screentime-pam: unknown argument '\(name)'\n".utf8))
            // A mistyped stack must not lock anyone out; the agent's own check still holds.
            exit(0)
        }
        options[name] = value
    }
    return options
}()

let phase: LoginRequest.Phase
switch phaseName {
case "account": phase = .account
case "open_session": phase = .open
case "close_session": phase = .close
default: exit(0)  // auth, password: nothing to say
}
// root is never refused, whatever the agent says or does.
if user.isEmpty || user == "root" { exit(0) }

/// The agent's configuration keys the hook needs, from its file (every key optional).
func configured(_ key: String, options: [String: String]) -> String? {
    let path = options["--config"] ?? "/etc/screentime/screentimed.json"
    guard let data = FileManager.default.contents(atPath: path),
        let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    else { return nil }
    return object[key] as? String
}

let socket = options["--socket"] ?? configured("socket", options: options) ?? ScreenTimeClient.defaultSocket
let stateDirectory = options["--state-dir"] ?? configured("stateDirectory", options: options) ?? "/var/lib/screentime"

/// The authorized users the agent last listed (`uid name child|individual`), root's alone; nil
/// when it cannot be read (no agent ever ran, or the hook is not root).
let listed: [(uid: String, name: String, member: String)]? = {
    guard let text = try? String(contentsOfFile: stateDirectory + "/login-children", encoding: .utf8) else {
        return nil
    }
    return text.split(separator: "\n").compactMap { line in
        let fields = line.split(separator: " ").map(String.init)
        guard fields.count >= 2, !line.hasPrefix("#") else { return nil }
        return (fields[0], fields[1], fields.count > 2 ? fields[2] : "child")
    }
}()
let uid = getpwnam(user).map { String($0.pointee.pw_uid) }
let entry = listed?.first { $0.name == user || $0.uid == uid }
// Not authorized: nothing to ask or tell, and no one waits on the agent (a guardian, a sibling).
if listed != nil, entry == nil { exit(0) }

var client = ScreenTimeClient(socket: socket)
client.timeout = Int32(options["--timeout"] ?? "") ?? 5
let request = LoginRequest(
    phase: phase, user: user, service: environment["PAM_SERVICE"] ?? "", tty: environment["PAM_TTY"] ?? "",
    remoteHost: environment["PAM_RHOST"])

do {
    let reply = try client.send(request)
    if reply.allowed { exit(0) }
    print(reply.message ?? "screentime: \(user) may not log in now.")
    exit(1)
} catch {
    // The agent does not answer: closed for its children, open for everyone else.
    guard phase != .close, entry?.member == "child" else { exit(0) }
    // Said to the person logging in; what went wrong is the agent's log's to tell (or its absence).
    print("Screen Time is not answering, so \(user) cannot log in now. Ask a guardian to look at it.")
    _ = error
    exit(1)
}
