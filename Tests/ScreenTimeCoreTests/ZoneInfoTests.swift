import Foundation
import Glibc
import ScreenTimeCore
import Testing

/// The zone files read without ICU, held against glibc reading the same files (`localtime` under
/// `TZ=:path`): every zone of the system's tzdata, from 1901 to 2100, and each change of offset
/// this reader finds from 1970 to 2060 to the second.
@Suite struct ZoneInfoTests {
    struct OracleFailed: Error { let status: Int32 }

    /// Every zone file under the system's directory, by name (not `posix/` and `right/`, copies and
    /// leap-second variants, which glibc reads otherwise).
    static func zoneNames() -> [String] {
        var names: [String] = []
        func walk(_ relative: String) {
            guard let directory = opendir(ZoneInfo.directory + "/" + relative) else { return }
            defer { closedir(directory) }
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
                }
                guard !name.hasPrefix("."), !["posix", "right", "posixrules"].contains(name) || !relative.isEmpty else {
                    continue
                }
                let path = relative.isEmpty ? name : relative + "/" + name
                var status = stat()
                guard stat(ZoneInfo.directory + "/" + path, &status) == 0 else { continue }
                if status.st_mode & S_IFMT == S_IFDIR {
                    walk(path)
                } else if let first = try? firstBytes(ZoneInfo.directory + "/" + path), first == Array("TZif".utf8) {
                    names.append(path)
                }
            }
        }
        walk("")
        return names.sorted()
    }

    static func firstBytes(_ path: String) throws -> [UInt8] {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { return [] }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 4)
        return read(descriptor, &bytes, 4) == 4 ? bytes : []
    }

    /// What glibc says at each instant under each zone file (offset, daylight time, abbreviation),
    /// from Python's `time.localtime` in a process of its own: `TZ` is set there, not in this
    /// process, whose other tests run meanwhile.
    static func glibc(_ asked: [(path: String, instants: [Int64])]) throws -> [[(Int32, Bool, String)]] {
        let script = """
            import os, sys, time
            for line in sys.stdin:
                path, *instants = line.split()
                os.environ["TZ"] = ":" + path
                time.tzset()
                print(" ".join("%d,%d,%s" % (t.tm_gmtoff, t.tm_isdst, t.tm_zone) for t in map(time.localtime, map(int, instants))))
            """
        let input = asked.map { ([$0.path] + $0.instants.map(String.init)).joined(separator: " ") }.joined(
            separator: "\n")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script]
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("zoneinfo-\(getpid())-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try (input + "\n").write(to: directory.appendingPathComponent("in"), atomically: true, encoding: .utf8)
        FileManager.default.createFile(atPath: directory.appendingPathComponent("out").path, contents: nil)
        process.standardInput = try FileHandle(forReadingFrom: directory.appendingPathComponent("in"))
        process.standardOutput = try FileHandle(forWritingTo: directory.appendingPathComponent("out"))
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw OracleFailed(status: process.terminationStatus) }
        let output = try String(contentsOf: directory.appendingPathComponent("out"), encoding: .utf8)
        return output.split(separator: "\n", omittingEmptySubsequences: false).prefix(asked.count).map { line in
            line.split(separator: " ").map { answer in
                let parts = answer.split(separator: ",", maxSplits: 2, omittingEmptySubsequences: false)
                return (Int32(parts[0]) ?? .min, parts[1] == "1", parts.count > 2 ? String(parts[2]) : "")
            }
        }
    }

    @Test func everyZoneAgreesWithGlibcReadingTheSameFile() throws {
        let names = Self.zoneNames()
        #expect(names.count > 300, "only \(names.count) zones under \(ZoneInfo.directory)")
        #expect(names.contains("Europe/Paris") && names.contains("America/Sao_Paulo"))
        var asked: [(path: String, instants: [Int64])] = []
        var zones: [ZoneInfo] = []
        var changes = 0
        for name in names {
            let zone = try ZoneInfo(identifier: name)
            // 1901-12-14 to 2100, every 120 days and a few hours.
            var instants = Array(stride(from: Int64(-2_147_483_000), to: 4_102_444_800, by: 120 * 86_400 + 13_337))
            // Each change this reader finds, 1970 to 2060: the second before and the second of it.
            // (Looked for 4 days at a time: a change undone within 4 days would go unchecked here.)
            var before = zone.offset(at: 0)
            for day in stride(from: Int64(0), to: 33_000, by: 4) {
                let next = zone.offset(at: (day + 4) * 86_400)
                if next != before {
                    var low = day * 86_400
                    var high = (day + 4) * 86_400
                    while high - low > 1 {
                        let middle = (low + high) / 2
                        if zone.offset(at: middle) == before { low = middle } else { high = middle }
                    }
                    instants += [high - 1, high]
                    changes += 1
                }
                before = next
            }
            asked.append((ZoneInfo.directory + "/" + name, instants))
            zones.append(zone)
        }
        let answers = try Self.glibc(asked)
        #expect(answers.count == asked.count)
        var compared = 0
        var disagreements: [String] = []
        for ((zone, question), expected) in zip(zip(zones, asked), answers) {
            #expect(expected.count == question.instants.count, "\(zone.identifier)")
            for (instant, glibc) in zip(question.instants, expected) {
                compared += 1
                let read = (
                    zone.offset(at: instant), zone.isDaylightSavingTime(at: instant), zone.abbreviation(at: instant)
                )
                if glibc != read, disagreements.count < 20 {
                    disagreements.append("\(zone.identifier) at \(instant): glibc \(glibc), read \(read)")
                }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
        #expect(changes > 10_000, "only \(changes) changes of offset found")
        print("zones: \(names.count), instants compared with glibc: \(compared), changes of offset: \(changes)")
    }

    @Test func aSpringGapHasNoInstantAndAnAutumnHourHasTwo() throws {
        let paris = try ZoneInfo(identifier: "Europe/Paris")
        // 2026-03-29 02:30 does not happen in Paris; 2026-10-25 02:30 happens twice.
        let gap = CivilDate.days(year: 2026, month: 3, day: 29) * 86_400 + 9_000
        #expect(paris.instants(atWallClock: gap).isEmpty)
        let twice = CivilDate.days(year: 2026, month: 10, day: 25) * 86_400 + 9_000
        #expect(paris.instants(atWallClock: twice) == [twice - 7_200, twice - 3_600])
        let noon = CivilDate.days(year: 2026, month: 7, day: 1) * 86_400 + 43_200
        #expect(paris.instants(atWallClock: noon) == [noon - 7_200])
        #expect(paris.wallClock(at: noon - 7_200) == noon)
    }

    @Test func posixRulesAsTheFooterWritesThem() throws {
        let europe = try ZoneInfo(rule: "CET-1CEST,M3.5.0,M10.5.0/3")
        let winter = CivilDate.days(year: 2030, month: 1, day: 15) * 86_400
        let summer = CivilDate.days(year: 2030, month: 7, day: 15) * 86_400
        #expect(europe.offset(at: winter) == 3_600 && europe.offset(at: summer) == 7_200)
        #expect(europe.abbreviation(at: summer) == "CEST" && europe.isDaylightSavingTime(at: summer))
        // The last Sunday of March 2030 is the 31st: at 01:00 UTC (02:00 standard time).
        let change = CivilDate.days(year: 2030, month: 3, day: 31) * 86_400 + 3_600
        #expect(europe.offset(at: change - 1) == 3_600 && europe.offset(at: change) == 7_200)
        let quoted = try ZoneInfo(rule: "<-03>3")
        #expect(quoted.offset(at: summer) == -10_800 && quoted.abbreviation(at: summer) == "-03")
        // Daylight time all year (tzcode's way of writing it).
        let always = try ZoneInfo(rule: "EST5EDT,0/0,J365/25")
        for day: Int64 in [0, 100, 364, 365, 20_000] {
            #expect(always.isDaylightSavingTime(at: day * 86_400 + 3_600), "day \(day)")
        }
        // The southern hemisphere: daylight time across the new year.
        let chile = try ZoneInfo(rule: "<-04>4<-03>,M9.1.6/24,M4.1.6/24")
        #expect(chile.offset(at: winter) == -10_800 && chile.offset(at: summer) == -14_400)
        for bad in [
            "", "CE", "CET", "CET-1CEST,M13.1.0,M10.5.0", "CET-1CEST,M3.5.0", "CET-1CEST,M3.5.0,M10.5.0/200", "<C>1",
        ] {
            #expect(throws: ZoneInfoError.self, "\(bad.debugDescription)") { _ = try ZoneInfo(rule: bad) }
        }
    }

    @Test func aNameOutsideTheDirectoryOrAFileThatIsNoZoneIsAClearError() throws {
        for name in ["../../etc/shadow", "/etc/passwd", "Europe/../../etc", "", "Europe/Par is", "Europe//Paris"] {
            let error = #expect(throws: ZoneInfoError.self) { try ZoneInfo(identifier: name) }
            #expect(
                error?.description.contains("not a time zone name") == true, "\(name): \(String(describing: error))")
        }
        #expect(throws: ZoneInfoError.self) { try ZoneInfo(identifier: "Nowhere/City") }
        // UTC by name even where the directory has none of its files; no other zone.
        #expect(ZoneInfo.named("UTC", directory: "/nonexistent")?.offset(at: 0) == 0)
        #expect(ZoneInfo.named("Europe/Paris", directory: "/nonexistent") == nil)
        #expect(ZoneInfo.named("Europe/Paris")?.identifier == "Europe/Paris")
        #expect(throws: ZoneInfoError.self) { try ZoneInfo(tzif: Array("TZ".utf8), identifier: "short") }
        #expect(throws: ZoneInfoError.self) {
            try ZoneInfo(tzif: Array("not a zone file at all, no".utf8), identifier: "x")
        }
        // A real file cut anywhere is an error, never a crash or a zone.
        let paris = Array(try Data(contentsOf: URL(fileURLWithPath: ZoneInfo.directory + "/Europe/Paris")))
        for length in stride(from: 0, to: paris.count - 1, by: 7) {
            #expect(throws: ZoneInfoError.self, "cut at \(length)") {
                try ZoneInfo(tzif: Array(paris[..<length]), identifier: "cut")
            }
        }
        #expect(try ZoneInfo(tzif: paris, identifier: "Europe/Paris") == ZoneInfo(identifier: "Europe/Paris"))
    }

    @Test func theMachinesZoneFromTZOrEtcLocaltime() throws {
        #expect(ZoneInfo.current(environment: ["TZ": "Asia/Tokyo"]).offset(at: 0) == 32_400)
        #expect(ZoneInfo.current(environment: ["TZ": ":Asia/Tokyo"]).identifier == "Asia/Tokyo")
        #expect(ZoneInfo.current(environment: ["TZ": "<+0530>-5:30"]).offset(at: 0) == 19_800)
        #expect(!ZoneInfo.current(environment: ["TZ": "<+0530>-5:30"]).isNamed)
        let byPath = ZoneInfo.current(environment: ["TZ": ":/usr/share/zoneinfo/Asia/Tokyo"])
        #expect(byPath.identifier == "Asia/Tokyo" && byPath.isNamed)
        // Not a zone file: a device, and a FIFO no one writes (read without waiting for a writer).
        #expect(ZoneInfo.current(environment: ["TZ": "/dev/zero"]) == ZoneInfo.current(environment: [:]))
        let fifo = FileManager.default.temporaryDirectory.appendingPathComponent("zone-fifo-\(getpid())-\(UUID())").path
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        #expect(ZoneInfo.current(environment: ["TZ": fifo]) == ZoneInfo.current(environment: [:]))
        #expect(throws: ZoneInfoError.self) { try ZoneInfo(path: fifo) }
        let local = ZoneInfo.current(environment: [:])
        let glibc = try Self.glibc([("/etc/localtime", [1_780_000_000, 1_800_000_000])])
        #expect(glibc.first?.map(\.0) == [local.offset(at: 1_780_000_000), local.offset(at: 1_800_000_000)])
    }

    @Test func civilDatesRoundTripAndWeekdays() {
        for days in stride(from: Int64(-800_000), through: 800_000, by: 997) {
            let date = CivilDate.date(days: days)
            #expect(CivilDate.days(year: date.year, month: date.month, day: date.day) == days)
        }
        #expect(CivilDate.date(days: 0) == (1970, 1, 1))
        #expect(CivilDate.weekday(days: 0) == 4)  // a Thursday
        #expect(CivilDate.weekday(days: CivilDate.days(year: 2026, month: 11, day: 29)) == 0)  // a Sunday
        #expect(CivilDate.weekday(days: -1) == 3)
        #expect(CivilDate.date(days: CivilDate.days(year: 2000, month: 2, day: 29)) == (2000, 2, 29))
    }
}
