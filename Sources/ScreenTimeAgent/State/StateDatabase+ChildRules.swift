import FoundationEssentials
import ScreenTimeCore
import ScreenTimeIPC
import ScreenTimeSQLite

extension StateDatabase {
    /// One app or web domain a guardian always allows a child.
    struct AllowedItem: Hashable, Sendable {
        enum Kind: String, Sendable { case application, webDomain }
        var kind: Kind
        var token: String
        var name: String
    }

    /// A child's always-allowed apps and domains, by kind then name.
    func alwaysAllowedItems(uid: UInt32) throws -> [AllowedItem] {
        try queue.read { db in
            try Row.fetchAll(
                db, sql: "SELECT kind, token, name FROM alwaysAllowed WHERE uid = ? ORDER BY kind, name",
                arguments: [Int64(uid)]
            ).compactMap { row in
                AllowedItem.Kind(rawValue: row["kind"]).map {
                    AllowedItem(kind: $0, token: row["token"], name: row["name"])
                }
            }
        }
    }

    /// The list as the policy takes it.
    func alwaysAllowed(uid: UInt32) throws -> AlwaysAllowed {
        var allowed = AlwaysAllowed()
        for item in try alwaysAllowedItems(uid: uid) {
            switch item.kind {
            case .application: (try? ApplicationToken(base64: item.token)).map { _ = allowed.applications.insert($0) }
            case .webDomain: (try? WebDomainToken(base64: item.token)).map { _ = allowed.webDomains.insert($0) }
            }
        }
        return allowed
    }

    /// Adds or removes items, in one transaction.
    func changeAlwaysAllowed(uid: UInt32, add: [AllowedItem], remove: [AllowedItem]) throws {
        try queue.write { db in
            for item in add {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO alwaysAllowed (uid, kind, token, name) VALUES (?, ?, ?, ?)",
                    arguments: [Int64(uid), item.kind.rawValue, item.token, item.name])
            }
            for item in remove {
                try db.execute(
                    sql: "DELETE FROM alwaysAllowed WHERE uid = ? AND kind = ? AND token = ?",
                    arguments: [Int64(uid), item.kind.rawValue, item.token])
            }
        }
    }

    /// What a lock does to a user's sessions (`hold` unless a guardian chose otherwise).
    func lockout(uid: UInt32) throws -> LockoutAction {
        try queue.read { db in
            try String.fetchOne(db, sql: "SELECT action FROM lockout WHERE uid = ?", arguments: [Int64(uid)])
                .flatMap(LockoutAction.init(rawValue:)) ?? .hold
        }
    }

    /// The warnings a guardian chose for a user (seconds before), nil: the default.
    func warnings(uid: UInt32) throws -> [TimeInterval]? {
        try queue.read { db in
            try String.fetchOne(db, sql: "SELECT warnings FROM lockout WHERE uid = ?", arguments: [Int64(uid)])
                .map { $0.split(separator: ",").compactMap { TimeInterval($0) } }
        }
    }

    /// Sets the action, the warnings, or both (nil leaves one as it is).
    func setLockout(uid: UInt32, _ action: LockoutAction?, warnings: [TimeInterval]? = nil) throws {
        try queue.write { db in
            try db.execute(
                sql: "INSERT OR IGNORE INTO lockout (uid, action) VALUES (?, 'hold')", arguments: [Int64(uid)])
            if let action {
                try db.execute(
                    sql: "UPDATE lockout SET action = ? WHERE uid = ?", arguments: [action.rawValue, Int64(uid)])
            }
            if let warnings {
                let text = warnings.map { String(Int($0)) }.joined(separator: ",")
                try db.execute(sql: "UPDATE lockout SET warnings = ? WHERE uid = ?", arguments: [text, Int64(uid)])
            }
        }
    }
}
