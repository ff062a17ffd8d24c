import Foundation
import Testing

@testable import LinuxSupport

/// The kernel's address sets, made, filled, read and removed through netlink, for real (a set of
/// this test's own name in the machine's namespace, removed after).
@Suite(.enabled(if: getuid() == 0, "needs root: CAP_NET_ADMIN for ipset"))
struct AddressSetTests {
    @Test func entriesGoInRenewAndTimeOut() throws {
        for family in [4, 6] {
            let set = try AddressSet(name: "st-test-\(getpid())-\(family)", family: family)
            defer { try? set.destroy() }
            try set.create(capacity: 1024, timeout: 60)
            // Made again: the set and its entries are kept.
            let address: [UInt8] = family == 4 ? [10, 9, 8, 7] : [0xfd, 0] + Array(repeating: 0, count: 13) + [7]
            let other: [UInt8] = family == 4 ? [10, 9, 8, 6] : [0xfd, 0] + Array(repeating: 0, count: 13) + [6]
            try set.add(address, seconds: 2)
            try set.create(capacity: 1024, timeout: 60)
            #expect(try set.contains(address))
            #expect(try !set.contains(other))
            // Renewed: the later time holds.
            try set.add(other, seconds: 1)
            try set.add(other, seconds: 30)
            Thread.sleep(forTimeInterval: 2.5)
            #expect(try !set.contains(address), "IPv\(family): its 2 s are over")
            #expect(try set.contains(other), "IPv\(family): renewed for 30 s")
            try set.flush()
            #expect(try !set.contains(other))
            // An address of the other family is refused with a clear error, and changes nothing.
            #expect(throws: SystemError.self) {
                try set.add(family == 4 ? other + other + other + other : [1, 2, 3, 4], seconds: 5)
            }
            try set.destroy()
            // Gone: reading it fails, and removing it again is no error.
            #expect(throws: SystemError.self) { _ = try set.contains(address) }
            try set.destroy()
        }
        #expect(throws: SystemError.self) { _ = try AddressSet(name: String(repeating: "x", count: 32), family: 4) }
    }
}
