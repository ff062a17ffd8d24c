import Foundation
import Glibc
import LinuxSupport
import ScreenTimeTestThreads
import Testing

/// The launcher, the real `screentimed --launcher 3`, started by this test as the agent starts it:
/// what it starts gets exactly the uid, groups, environment, network namespace and limits asked,
/// and nothing else gets through.
@Suite(.threadsOfTheirOwn, .enabled(if: isRoot, "needs root: the launcher changes uids and makes network namespaces"))
struct LauncherIntegrationTests {
    private func startLauncher() throws -> LauncherClient {
        let nobody = getpwnam("nobody")!.pointee.pw_uid
        return try LauncherClient.start(
            executable: AgentWorld.binaries + "/screentimed",
            arguments: ["--launcher", "3", "--extension-uid", "\(nobody)"],
            extensionUID: nobody)
    }

    /// Ends a launcher this test started and reaps it (within 10 s, or the test fails).
    private func stop(_ launcher: inout LauncherClient?) {
        guard let client = launcher else { return }
        launcher = nil
        client.shutDown()
        var status: Int32 = 0
        for _ in 0..<1000 {
            if waitpid(client.pid, &status, WNOHANG) == client.pid { return }
            usleep(10_000)
        }
        Issue.record("the launcher did not end when its socket closed")
        kill(client.pid, SIGKILL)
        waitpid(client.pid, &status, 0)
    }

    @Test func aProgramGetsExactlyTheIdentityEnvironmentNetworkAndLimitsAsked() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        var launcher: LauncherClient? = try startLauncher()
        defer { stop(&launcher) }
        let account = try #require(getpwnam(world.child)?.pointee)
        let directory = try world.childDirectory()
        let output = directory + "/launched.txt"
        // /proc/$$/environ is the environment the shell was started with, before it adds its own.
        let script = """
            exec > \(output) 2>&1
            echo uid $(id -u); echo gid $(id -g); echo groups $(id -G); echo pwd $(pwd)
            tr '\\0' '\\n' < /proc/$$/environ | sed 's/^/env /'
            echo net $(readlink /proc/self/ns/net); echo interfaces $(tail -n +3 /proc/net/dev | wc -l)
            grep -E '^(CapEff|CapPrm|CapInh|CapAmb|NoNewPrivs):' /proc/self/status
            grep -E '^Max (cpu time|address space|processes|open files)' /proc/self/limits
            echo stdin $(readlink /proc/self/fd/0)
            """
        let request = LaunchRequest(
            kind: .session, program: "/bin/bash", arguments: ["-c", script],
            environment: ["PATH": "/usr/bin:/bin", "SCREENTIME_CHECK": "a value with spaces"], directory: directory,
            uid: account.pw_uid, gid: account.pw_gid, groups: [account.pw_gid, 4242], network: .none,
            limits: .init(cpuSeconds: 7, memoryBytes: 512 << 20, processes: 50, openFiles: 77, wallSeconds: 30))
        let pid = try #require(launcher).launch(request)
        #expect(pid > 0)
        #expect(try #require(launcher).waitForExit(of: pid, timeout: .seconds(20)) == 0)

        let lines = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").map(String.init)
        func value(_ key: String) -> String? {
            lines.first { $0.hasPrefix(key + " ") }.map { String($0.dropFirst(key.count + 1)) }
        }
        #expect(value("uid") == "\(account.pw_uid)")
        #expect(value("gid") == "\(account.pw_gid)")
        #expect(Set(value("groups")?.split(separator: " ").map(String.init) ?? []) == ["\(account.pw_gid)", "4242"])
        #expect(value("pwd") == directory)
        #expect(
            Set(lines.filter { $0.hasPrefix("env ") }) == [
                "env PATH=/usr/bin:/bin", "env SCREENTIME_CHECK=a value with spaces",
            ])
        let ours = try #require(Files.readLink("/proc/self/ns/net"))
        #expect(value("net")?.hasPrefix("net:[") == true && value("net") != ours, "a network namespace of its own")
        #expect(value("interfaces") == "1", "only loopback")
        for set in ["CapEff", "CapPrm", "CapInh", "CapAmb"] {
            #expect(lines.contains("\(set):\t0000000000000000"), "\(set)")
        }
        #expect(lines.contains("NoNewPrivs:\t1"))
        #expect(lines.contains { $0.hasPrefix("Max cpu time") && $0.contains(" 7 ") })
        #expect(lines.contains { $0.hasPrefix("Max address space") && $0.contains(" \(512 << 20) ") })
        #expect(lines.contains { $0.hasPrefix("Max processes") && $0.contains(" 50 ") })
        #expect(lines.contains { $0.hasPrefix("Max open files") && $0.contains(" 77 ") })
        #expect(value("stdin") == "/dev/null")

        // With the network inherited, it is the machine's.
        var shared = request
        shared.network = .inherit
        shared.arguments = ["-c", "readlink /proc/self/ns/net > \(output)"]
        let second = try #require(launcher).launch(shared)
        #expect(try #require(launcher).waitForExit(of: second, timeout: .seconds(20)) == 0)
        #expect(
            try String(contentsOfFile: output, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) == ours)
    }

    @Test func anExtensionHasItsLoopbackUpAndNoRouteOut() throws {
        var launcher: LauncherClient? = try startLauncher()
        defer { stop(&launcher) }
        let client = try #require(launcher)
        let nobody = try #require(getpwnam("nobody")?.pointee)
        var template = Array("/tmp/screentime-launcher-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) }
        }
        let directory = try #require(made)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        chmod(directory, 0o777)
        let output = directory + "/network.txt"
        // Its output is handed over (an extension's /tmp is its own): a file opened here.
        let outputFile = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        #expect(outputFile >= 0)
        defer { close(outputFile) }
        // `ip` asks the namespace itself (netlink); /sys/class/net would show the launcher's.
        let script = """
            exec 2>&1
            /usr/sbin/ip -o link show | sed 's/^/link /'
            /usr/sbin/ip route show table all | sed 's/^/route /'
            /usr/sbin/ip -6 route show table all | sed 's/^/route /'
            /usr/sbin/ip route get 192.0.2.1 >/dev/null 2>&1 && echo out4 reachable || echo out4 unreachable
            /usr/sbin/ip -6 route get 2001:db8::1 >/dev/null 2>&1 && echo out6 reachable || echo out6 unreachable
            python3 -c 'import socket
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            s.sendto(b"itself", s.getsockname())
            print("loopback", s.recv(16).decode())'
            """
        let request = LaunchRequest(
            kind: .extension, program: "/bin/bash", arguments: ["-c", script],
            environment: ["PATH": "/usr/bin:/bin"], uid: nobody.pw_uid, gid: nobody.pw_gid,
            limits: .init(memoryBytes: 256 << 20, wallSeconds: 20), descriptors: [1])
        let pid = try client.launch(request, files: [outputFile])
        #expect(try client.waitForExit(of: pid, timeout: .seconds(20)) == 0)
        let lines = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").map(String.init)
        let links = lines.filter { $0.hasPrefix("link ") }
        #expect(links.count == 1, "only loopback: \(links)")
        #expect(links.first?.contains(": lo: <LOOPBACK,UP,LOWER_UP>") == true, "\(links)")
        let routes = lines.filter { $0.hasPrefix("route ") }
        #expect(!routes.isEmpty && routes.allSatisfy { $0.contains(" dev lo ") }, "\(routes)")
        #expect(lines.contains("out4 unreachable") && lines.contains("out6 unreachable"), "\(lines)")
        #expect(lines.contains("loopback itself"), "\(lines)")
    }

    @Test func anExtensionGetsItsDescriptorsSeesOnlyItselfAndTakesNothingWithIt() throws {
        var launcher: LauncherClient? = try startLauncher()
        defer { stop(&launcher) }
        let client = try #require(launcher)
        let nobody = try #require(getpwnam("nobody")?.pointee)
        var input: [Int32] = [-1, -1]
        var output: [Int32] = [-1, -1]
        var channel: [Int32] = [-1, -1]
        #expect(pipe(&input) == 0 && pipe(&output) == 0)
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &channel) == 0)
        defer { for fd in input + output + channel where fd >= 0 { close(fd) } }
        let marker = "screentime-left-behind-\(getpid())"
        // It reads what it was given, says who it is where it can look, leaves a program running
        // and a file in /tmp, and ends.
        let script = """
            read line; echo "stdin $line"
            echo "pid $$"
            echo "processes $(ls -d /proc/[0-9]* | wc -l)"
            echo "fd3 $(readlink /proc/self/fd/3 | cut -d: -f1)"
            echo hello >&3
            echo left > /tmp/\(marker)
            for place in /var/tmp /dev/shm /run/lock; do [ -w $place ] && echo left > $place/\(marker); done
            echo "ipc $(ipcmk -M 4096 2>/dev/null | grep -c id)"
            echo "fds $(ls /proc/self/fd | tr '\\n' ' ')"
            (exec -a \(marker) sleep 300) &
            echo "started $!"
            """
        let request = LaunchRequest(
            kind: .extension, program: "/bin/bash", arguments: ["-c", script],
            environment: ["PATH": "/usr/bin:/bin"], uid: nobody.pw_uid, gid: nobody.pw_gid,
            limits: .init(memoryBytes: 256 << 20, wallSeconds: 20), descriptors: [0, 1, 3])
        let pid = try client.launch(request, files: [input[0], output[1], channel[1]])
        close(input[0])
        close(output[1])
        close(channel[1])
        (input[0], output[1], channel[1]) = (-1, -1, -1)
        _ = "a line\n".withCString { write(input[1], $0, strlen($0)) }
        #expect(try client.waitForExit(of: pid, timeout: .seconds(20)) == 0)
        var said = [UInt8](repeating: 0, count: 4096)
        let count = read(output[0], &said, said.count)
        let lines = String(decoding: said.prefix(max(0, count)), as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.contains("stdin a line"), "\(lines)")
        #expect(lines.contains("pid 1"), "the first process of a pid namespace of its own: \(lines)")
        let seen = lines.first { $0.hasPrefix("processes ") }.flatMap { Int($0.dropFirst(10)) } ?? 99
        #expect(seen <= 4, "its /proc shows its own processes only: \(lines)")
        #expect(lines.contains("fd3 socket"), "\(lines)")
        var greeting = [UInt8](repeating: 0, count: 16)
        #expect(read(channel[0], &greeting, greeting.count) == 6)
        // Nothing it started outlives it, and its /tmp was its own.
        var running: [String] = []
        for _ in 0..<100 {
            running =
                (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.filter { entry in
                    Int32(entry) != nil
                        && ((try? String(contentsOfFile: "/proc/\(entry)/cmdline", encoding: .utf8))?.hasPrefix(marker)
                            ?? false)
                } ?? []
            if running.isEmpty { break }
            usleep(20_000)
        }
        #expect(running.isEmpty, "left running: \(running)")
        for place in ["/tmp", "/var/tmp", "/dev/shm", "/run/lock"] {
            #expect(!FileManager.default.fileExists(atPath: "\(place)/\(marker)"), "left in \(place)")
        }
        // Its System V shared memory was its own namespace's (none of it here).
        #expect(lines.contains("ipc 1"), "\(lines)")
        // Only the extension's account's count: other tests' programs (a child's X clients) make
        // segments of their own meanwhile.
        let segments = try run("/usr/bin/ipcs", ["-m"])
        let extensionOwners: Set<String> = [String(cString: nobody.pw_name), "\(nobody.pw_uid)"]
        let its = segments.stdout.split(separator: "\n").filter { row in
            let columns = row.split(separator: " ", omittingEmptySubsequences: true)
            return columns.count >= 5 && extensionOwners.contains(String(columns[2])) && columns[4] == "4096"
        }
        #expect(its.isEmpty, "a segment it made is on the machine: \(segments.stdout)")
        // Only what it was given: 0, 1, 2, 3 (and the listing's own).
        let fds = lines.first { $0.hasPrefix("fds ") }?.dropFirst(4).split(separator: " ").compactMap { Int($0) } ?? []
        #expect(fds.filter { $0 > 3 }.count <= 1, "descriptors it inherited: \(fds)")
        // A request naming more descriptors than it sends is refused.
        #expect(throws: SystemError.self) { _ = try client.launch(request, files: [input[1]]) }
        var bad = request
        bad.descriptors = [0, 0, 12]
        #expect(throws: SystemError.self) { _ = try client.launch(bad, files: [input[1], input[1], input[1]]) }
    }

    /// A descriptor the agent inherited and left open (as a test harness's, which tells it when
    /// the agent ended) is not the launcher's: kept open there, by a program the launcher held
    /// between its fork and its exec, it once hid the agent's end from the harness for good.
    @Test func theLauncherInheritsNoneOfTheAgentsDescriptors() throws {
        let path = "/tmp/screentime-inherited-\(getpid())"
        let fd = open(path, O_RDWR | O_CREAT, 0o600)  // no O_CLOEXEC: inherited by what it runs
        try #require(fd > 2)
        defer {
            close(fd)
            unlink(path)
        }
        var launcher: LauncherClient? = try startLauncher()
        defer { stop(&launcher) }
        let client = try #require(launcher)
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(client.pid)/fd")
        let targets = descriptors.compactMap { Files.readLink("/proc/\(client.pid)/fd/\($0)") }
        #expect(!descriptors.isEmpty)
        #expect(!targets.contains(path), "the launcher has \(targets)")
    }

    @Test func whenTheLauncherIsKilledWhatItStartedDiesWithIt() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        var launcher: LauncherClient? = try startLauncher()
        defer { stop(&launcher) }
        let client = try #require(launcher)
        let nobody = try #require(getpwnam("nobody")?.pointee)
        let account = try #require(getpwnam(world.child)?.pointee)
        let marker = "screentime-orphan-\(getpid())"
        let asExtension = LaunchRequest(
            kind: .extension, program: "/bin/bash", arguments: ["-c", "exec -a \(marker)-ext sleep 300"],
            environment: ["PATH": "/usr/bin:/bin"], uid: nobody.pw_uid, gid: nobody.pw_gid,
            limits: .init(memoryBytes: 256 << 20, wallSeconds: 600))
        let asSession = LaunchRequest(
            kind: .session, program: "/bin/bash", arguments: ["-c", "exec -a \(marker)-session sleep 300"],
            environment: ["PATH": "/usr/bin:/bin"], uid: account.pw_uid, gid: account.pw_gid, network: .inherit)
        _ = try client.launch(asExtension)
        _ = try client.launch(asSession)
        func alive(_ suffix: String) -> Bool { (try? run("/usr/bin/pgrep", ["-f", marker + suffix]))?.status == 0 }
        var started = false
        for _ in 0..<100 where !started {
            started = alive("-ext") && alive("-session")
            if !started { usleep(20_000) }
        }
        #expect(started)
        // Killed outright, as it is when the agent is: what it started goes with it.
        kill(client.pid, SIGKILL)
        var gone = false
        for _ in 0..<250 where !gone {
            gone = !alive("-ext") && !alive("-session")
            if !gone { usleep(20_000) }
        }
        #expect(gone, "outlived the launcher: extension \(alive("-ext")), session \(alive("-session"))")
    }

    @Test func itRefusesAnythingElseAndKeepsServing() throws {
        var launcher: LauncherClient? = try startLauncher()
        defer { stop(&launcher) }
        let client = try #require(launcher)
        let nobody = try #require(getpwnam("nobody")?.pointee)
        let fine = LaunchRequest(
            kind: .extension, program: "/bin/true", uid: nobody.pw_uid, gid: nobody.pw_gid,
            limits: .init(memoryBytes: 256 << 20, wallSeconds: 10))

        // Requests the agent's side already refuses, and the launcher refuses again when sent raw.
        var asRoot = fine
        asRoot.uid = 0
        var rootGroup = fine
        rootGroup.groups = [0]
        var relative = fine
        relative.program = "true"
        var badName = fine
        badName.environment = ["A=B": "c"]
        var noTime = fine
        noTime.limits.wallSeconds = 0
        // The two kinds, and only as what each is for.
        var extensionAsSomeoneElse = fine
        extensionAsSomeoneElse.uid = 1000
        var extensionOnTheNet = fine
        extensionOnTheNet.network = .inherit
        var extensionUnlimited = fine
        extensionUnlimited.limits = .init()
        var sessionAsASystemAccount = fine
        sessionAsASystemAccount.kind = .session
        sessionAsASystemAccount.uid = 2
        for (request, reason) in [
            (asRoot, "extension account"), (rootGroup, "nothing as root"), (relative, "absolute path"),
            (badName, "not an environment variable name"), (noTime, "wallSeconds is from 1"),
            (extensionAsSomeoneElse, "extension account"), (extensionOnTheNet, "without network"),
            (extensionUnlimited, "wall-time and a memory limit"), (sessionAsASystemAccount, "a person's account"),
        ] {
            #expect(throws: SystemError.self) { _ = try client.launch(request) }
            let raw = try JSONEncoder().encode(["launch": request])
            let answer = try client.sendRaw(Array(raw))
            #expect(answer.pid == nil)
            #expect(answer.refused?.contains(reason) == true, "\(answer.refused ?? "no refusal")")
        }
        // Messages that are not a launch request at all.
        let others: [[UInt8]] = [
            Array("not json".utf8), Array("{}".utf8), Array(#"{"started": 5}"#.utf8),
            Array(#"{"kill": {"pid": 1}}"#.utf8),
            Array(#"{"launch": {"program": "/bin/true"}}"#.utf8),
            Array(#"{"launch": 1, "extra": 2}"#.utf8),
            [UInt8](repeating: UInt8(ascii: "x"), count: 100_000),
        ]
        for bytes in others {
            let answer = try client.sendRaw(bytes)
            #expect(answer.pid == nil && answer.refused?.isEmpty == false)
        }
        // A program that does not exist: which step failed, and why.
        var missing = fine
        missing.program = "/nonexistent/program"
        #expect {
            _ = try client.launch(missing)
        } throws: { error in
            (error as? SystemError)?.message.contains("exec /nonexistent/program: No such file or directory") == true
        }
        // And it still serves.
        let pid = try client.launch(fine)
        #expect(try client.waitForExit(of: pid, timeout: .seconds(10)) == 0)
    }

    /// The dashboard: only with a dashboard account the launcher was told, only as that account,
    /// with no other group, on the machine's network; refused raw too.
    @Test func theDashboardRunsAsItsAccountOnlyAndNotWithoutOne() throws {
        let daemon = try #require(getpwnam("daemon")?.pointee)
        let fine = LaunchRequest(
            kind: .dashboard, program: "/usr/bin/id", arguments: ["-u"], uid: daemon.pw_uid, gid: daemon.pw_gid,
            network: .inherit, descriptors: [1])
        // A launcher told of no dashboard account starts none.
        var withoutAccount: LauncherClient? = try startLauncher()
        defer { stop(&withoutAccount) }
        let unknowing = try #require(withoutAccount)
        let refused = try unknowing.sendRaw(Array(try JSONEncoder().encode(["launch": fine])))
        #expect(refused.pid == nil && refused.refused?.contains("no dashboard account") == true, "\(refused)")

        let nobody = getpwnam("nobody")!.pointee.pw_uid
        var launcher: LauncherClient? = try LauncherClient.start(
            executable: AgentWorld.binaries + "/screentimed",
            arguments: ["--launcher", "3", "--extension-uid", "\(nobody)", "--dashboard-uid", "\(daemon.pw_uid)"],
            extensionUID: nobody, dashboardUID: daemon.pw_uid)
        defer { stop(&launcher) }
        let client = try #require(launcher)
        var asSomeoneElse = fine
        asSomeoneElse.uid = nobody
        var withGroups = fine
        withGroups.groups = [daemon.pw_gid]
        var offTheNet = fine
        offTheNet.network = .none
        var sessionAsTheDashboard = fine
        sessionAsTheDashboard.kind = .session
        for (request, reason) in [
            (asSomeoneElse, "its own account"), (withGroups, "no other group"), (offTheNet, "machine's network"),
            (sessionAsTheDashboard, "a person's account"),
        ] {
            #expect(throws: SystemError.self) { _ = try client.launch(request) }
            let answer = try client.sendRaw(Array(try JSONEncoder().encode(["launch": request])))
            #expect(answer.pid == nil && answer.refused?.contains(reason) == true, "\(answer.refused ?? "none")")
        }
        // As asked: its account, its output where it was sent.
        var pipe: [Int32] = [-1, -1]
        #expect(Glibc.pipe(&pipe) == 0)
        let pid = try client.launch(fine, files: [pipe[1]])
        close(pipe[1])
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = read(pipe[0], &bytes, 64)
        close(pipe[0])
        #expect(try client.waitForExit(of: pid, timeout: .seconds(10)) == 0)
        #expect(String(decoding: bytes.prefix(max(0, count)), as: UTF8.self) == "\(daemon.pw_uid)\n")
    }

    @Test func aProgramPastItsTimeIsKilledAndNothingOutlivesTheLauncher() throws {
        var launcher: LauncherClient? = try startLauncher()
        defer { stop(&launcher) }
        let client = try #require(launcher)
        let nobody = try #require(getpwnam("nobody")?.pointee)

        // The launcher keeps only what it needs.
        let masks = Capabilities.masks(status: "/proc/\(client.pid)/status")
        #expect(masks["CapEff"] == Capabilities.mask(Launcher.capabilities))
        #expect(masks["CapBnd"] == Capabilities.mask(Launcher.capabilities))
        #expect(try String(contentsOfFile: "/proc/\(client.pid)/status", encoding: .utf8).contains("NoNewPrivs:\t1"))

        let timed = LaunchRequest(
            kind: .extension, program: "/bin/sleep", arguments: ["60"], uid: nobody.pw_uid, gid: nobody.pw_gid,
            limits: .init(memoryBytes: 256 << 20, wallSeconds: 1))
        let started = ContinuousClock.now
        let pid = try client.launch(timed)
        #expect(try client.waitForExit(of: pid, timeout: .seconds(10)) == 128 + SIGKILL)
        #expect(ContinuousClock.now - started < .seconds(5))

        // A program still running when the agent's end closes dies with the launcher.
        var untimed = timed
        untimed.limits.wallSeconds = 3600
        let orphan = try client.launch(untimed)
        #expect(kill(orphan, 0) == 0)
        stop(&launcher)
        // Dead is gone or a zombie: reparented to pid 1, it waits there to be reaped, which this
        // machine's init did only seconds later (the failure of fresh runs 22 and 25).
        func dead() -> Bool {
            guard let stat = try? String(contentsOfFile: "/proc/\(orphan)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return true }
            return stat[stat.index(close, offsetBy: 2)...].first == "Z"
        }
        var gone = false
        for _ in 0..<200 where !gone {
            gone = dead()
            if !gone { usleep(10_000) }
        }
        #expect(gone, "the launcher's program died with it")
    }

    @Test func aGuardianChecksTheAgentsLauncherAndAChildMayNot() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let check = try world.cli(as: world.guardian, "launcher-check")
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stdout.contains("/bin/true ran as nobody"), "\(check.stdout)")  // the world's extensionUser
        #expect(check.stdout.contains("exit status 0"))
        try world.authorizeChildAndShieldCounter()
        let refused = try world.cli(as: world.child, "launcher-check")
        #expect(refused.status == 77, "\(refused.stderr)")
        // The agent's launcher: its child, with only the launcher's capabilities.
        let agent = try #require(world.agentPID)
        let children = try String(contentsOfFile: "/proc/\(agent)/task/\(agent)/children", encoding: .utf8)
            .split(separator: " ").compactMap { Int32($0) }
        let launchers = children.filter {
            (try? String(contentsOfFile: "/proc/\($0)/cmdline", encoding: .utf8))?.contains("--launcher") == true
        }
        #expect(launchers.count == 1)
        // The guardian's status shows it; the child's does not.
        let shown = try #require(try world.status(of: world.child).launcher)
        #expect(shown.pid == launchers.first && shown.extensionAccount == "nobody" && shown.problem == nil)
        let own = try world.cli(as: world.child, "status", "--json")
        #expect(own.status == 0 && !own.stdout.contains("\"launcher\""))
        let text = try world.cli(as: world.guardian, "status", "--user", world.child)
        #expect(text.stdout.contains("Launcher: running (pid \(launchers.first ?? 0)); extensions run as nobody"))
        if let launcher = launchers.first {
            #expect(
                Capabilities.masks(status: "/proc/\(launcher)/status")["CapEff"]
                    == Capabilities.mask(Launcher.capabilities))
        }
    }

    /// A session program (the shield window, the KWin relay) through the launcher: a line told
    /// goes to it and its answer comes back; once closed, a line told goes nowhere: not to the
    /// program, and not to whatever the machine gave the closed descriptor's number next.
    @Test func aSessionProgramIsToldLinesAndNothingAfterItIsClosed() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        var launcher: LauncherClient? = try startLauncher()
        defer { stop(&launcher) }
        let account = try #require(getpwnam(world.child)?.pointee)
        var request = LaunchRequest(
            kind: .session, program: "/bin/sh", arguments: ["-c", "while read line; do echo \"heard $line\"; done"],
            environment: ["PATH": "/usr/bin:/bin"], directory: "/", uid: account.pw_uid, gid: account.pw_gid,
            groups: [account.pw_gid], network: .inherit,
            limits: .init(memoryBytes: 256 << 20, openFiles: 1024, wallSeconds: 30))
        request.descriptors = [0, 1, 2]
        let program = try SessionProgram.start(request, through: try #require(launcher)) { _ in }
        #expect(program.tell(Array("one".utf8)))
        #expect(program.readLine(timeout: .seconds(10)) == .line(Array("heard one".utf8)))

        program.close()
        // The descriptors closed are the lowest free numbers now: a new pipe takes them.
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer { for fd in ends { close(fd) } }
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        #expect(!program.tell(Array("two".utf8)), "a line was told after close")
        var byte: UInt8 = 0
        #expect(read(ends[0], &byte, 1) < 0, "the closed program's line went into another descriptor")
        #expect(program.readLine(timeout: .seconds(1)) == .ended)
        // Its input closed, it ends by itself.
        #expect(try #require(launcher).waitForExit(of: program.pid, timeout: .seconds(10)) == 0)
    }
}
