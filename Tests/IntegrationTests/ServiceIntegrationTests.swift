import Foundation
import LinuxSupport
import ScreenTimeTestThreads
import Testing

/// A service of the catalogue shielded for a real child: its domain refused at the name, its app
/// held at exec, both lifted together; the catalogue listed, and an unknown service or a bad file
/// said clearly.
@Suite(
    .threadsOfTheirOwn,
    .enabled(if: isRoot, "needs root: network namespaces, iptables, NFQUEUE, dnsmasq, users, freezing")
)
struct ServiceIntegrationTests {
    /// The status dig gives for a name asked by the child (NOERROR, NXDOMAIN…).
    func lookup(_ world: AgentWorld, _ name: String) throws -> String {
        let result = try world.inNetwork(as: world.child, "/usr/bin/dig", ["+tries=1", "+time=3", "@127.0.0.1", name])
        let line = result.stdout.split(separator: "\n").first { $0.contains("status:") } ?? ""
        return line.split(separator: ",").first { $0.contains("status:") }?.split(separator: " ").last.map(String.init)
            ?? "no answer: \(result.stdout)\(result.stderr)"
    }

    func guardian(_ world: AgentWorld, _ arguments: String...) throws -> CommandResult {
        try world.cli(as: world.guardian, arguments: arguments)
    }

    @Test func aShieldedServiceHoldsItsDomainAndItsAppAndIsLiftedAsOne() throws {
        // In a network namespace of its own the agent has no cgroup freezer: it holds by SIGSTOP.
        let world = try AgentWorld(network: true, freezer: "signal")
        defer { world.tearDown() }
        #expect(try guardian(world, "authorize", "--child", world.child).status == 0)

        let listed = try guardian(world, "services", "--verbose")
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.contains("tubesite  Tube Site (video, 1 domain, 1 app)"), "\(listed.stdout)")
        #expect(listed.stdout.contains("domains: other.test") && listed.stdout.contains("apps: org.example.Counter"))

        let unknown = try guardian(world, "shield", "--user", world.child, "--service", "tubesit")
        #expect(unknown.status != 0)
        #expect(
            unknown.stderr.contains("there is no service 'tubesit'; did you mean tubesite?"), "\(unknown.stderr)")
        #expect(try lookup(world, "other.test") == "NOERROR")

        let shield = try guardian(world, "shield", "--user", world.child, "--service", "Tube Site")
        #expect(shield.status == 0, "\(shield.stderr)")
        #expect(shield.stdout.contains("Tube Site (service.tubesite)"), "\(shield.stdout)")
        for name in ["other.test", "www.other.test"] { #expect(try lookup(world, name) == "NXDOMAIN", "\(name)") }
        #expect(try lookup(world, "allowed.test") == "NOERROR")

        let file = try world.childDirectory() + "/count"
        let pid = try world.launch(as: world.child, world.counter, [file])
        #expect(eventually(10) { world.isHeld(pid, running: world.counter) }, "the service's app ran")

        // The child sees a token, not the service's name.
        let own = try world.cli(as: world.child, "status")
        #expect(!own.stdout.contains("Tube Site") && !own.stdout.contains("tubesite"), "\(own.stdout)")
        let childList = try world.cli(as: world.child, "services", "--json")
        #expect(childList.status == 0 && !childList.stdout.contains("\"token\""), "\(childList.stdout)")

        let lifted = try guardian(world, "unshield", "--user", world.child, "--service", "tubesite")
        #expect(lifted.status == 0, "\(lifted.stderr)")
        #expect(eventually(10) { world.isRunningOn(pid, counting: file) }, "the app stayed held")
        #expect(try lookup(world, "other.test") == "NOERROR")
    }

    /// Only the catalogue puts an app in a service: a program of the child's own, under an entry of
    /// hers that names the service in its categories, is not the service's app and runs on.
    @Test func aChildsOwnEntryCannotPutItsProgramInAService() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let home = try world.makeHome(for: world.child)
        let program = home + "/mine"
        // A program of hers (sleep, made hers by a byte more: not the system's by its contents).
        let made = try world.command(
            as: world.child, "/bin/sh",
            [
                "-c",
                """
                cp /bin/sleep \(program) && printf x >> \(program) && chmod 755 \(program) && \
                printf '[Desktop Entry]\nType=Application\nName=Mine\nExec=\(program) 600\nCategories=service.tubesite;Game;\n' \
                  > \(home)/.local/share/applications/mine.desktop
                """,
            ])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(try guardian(world, "authorize", "--child", world.child).status == 0)
        #expect(try guardian(world, "shield", "--user", world.child, "--service", "tubesite").status == 0)
        let mine = try world.launch(as: world.child, program, ["600"])
        let counter = try world.launch(as: world.child, world.counter, [home + "/count"])
        // The service's own app is held; hers, named into the service by her entry, is not.
        #expect(eventually(10) { world.isHeld(counter, running: world.counter) })
        Thread.sleep(forTimeInterval: 0.5)
        #expect(!world.isFrozen(mine) && world.processState(mine) != "T", "her own program was held")
    }

    @Test func aBadServiceFileIsSaidAndTheRestOfTheCatalogueStillWorks() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try "name = Broken\ncolour = red\n".write(
            toFile: world.directory + "/services/broken.service", atomically: true, encoding: .utf8)
        let listed = try guardian(world, "services")
        #expect(listed.status == 0)
        #expect(listed.stdout.contains("tubesite") && !listed.stdout.contains("Broken"))
        #expect(
            listed.stderr.contains(
                "a service file was not read: broken.service, line 2: unknown key 'colour' (the keys are name, category, domains, apps)"
            ), "\(listed.stderr)")
        #expect(try guardian(world, "authorize", "--child", world.child).status == 0)
        let broken = try guardian(world, "shield", "--user", world.child, "--service", "broken")
        #expect(broken.status != 0 && broken.stderr.contains("there is no service 'broken'"), "\(broken.stderr)")
        #expect(try world.status(of: world.child).stores.isEmpty, "a refused shield changed a store")
    }
}
