import FoundationEssentials
import ScreenTimeSQLite

extension StateDatabase {
    /// A dashboard session as stored: the secret's hash, never the secret.
    struct WebSession: Hashable, Sendable {
        var secretHash: String
        var uid: UInt32
        var device: String
        var paired: Bool
        var created: Date
        var lastUsed: Date
        var expires: Date
    }

    /// Whether a guardian has the dashboard on, and where it listens.
    struct WebService: Hashable, Sendable {
        var enabled: Bool
        var port: Int
        /// Addresses; empty: the home network's and loopback.
        var listen: [String]
        var changedBy: String
        var changedAt: Date

        static let off = WebService(
            enabled: false, port: 8443, listen: [], changedBy: "", changedAt: Date(timeIntervalSince1970: 0))
    }

    /// The dashboard's setting (off, on port 8443, when no guardian ever changed it).
    func webService() throws -> WebService {
        try queue.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM webService WHERE id = 1") else { return .off }
            let listen = (try? JSONDecoder().decode([String].self, from: Data((row["listen"] as String).utf8))) ?? []
            return WebService(
                enabled: row["enabled"], port: row["port"], listen: listen, changedBy: row["changedBy"],
                changedAt: row["changedAt"])
        }
    }

    func saveWebService(_ service: WebService) throws {
        let listen = String(decoding: try JSONEncoder().encode(service.listen), as: UTF8.self)
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO webService (id, enabled, port, listen, changedBy, changedAt)
                    VALUES (1, ?, ?, ?, ?, ?)
                    """,
                arguments: [service.enabled, service.port, listen, service.changedBy, service.changedAt])
        }
    }

    /// Sessions a guardian may have at once; the oldest-used goes when a new one passes it.
    static let maximumWebSessions = 32

    /// Stores a new session, ending the guardian's least recently used beyond the cap and every
    /// expired one of anyone's.
    func saveWebSession(_ session: WebSession, now: Date) throws {
        try queue.write { db in
            try db.execute(sql: "DELETE FROM webSession WHERE expires <= ?", arguments: [now])
            try db.execute(
                sql: """
                    INSERT INTO webSession (secretHash, uid, device, paired, created, lastUsed, expires)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    session.secretHash, Int64(session.uid), session.device, session.paired, session.created,
                    session.lastUsed, session.expires,
                ])
            try db.execute(
                sql: """
                    DELETE FROM webSession WHERE uid = ? AND secretHash NOT IN
                    (SELECT secretHash FROM webSession WHERE uid = ? ORDER BY lastUsed DESC LIMIT ?)
                    """,
                arguments: [Int64(session.uid), Int64(session.uid), Self.maximumWebSessions])
        }
    }

    /// The session whose secret hashes to `hash`, if it has not expired; its last use is noted
    /// (at most once a minute, so a busy dashboard does not write at every request).
    func useWebSession(hash: String, now: Date) throws -> WebSession? {
        // A read, and a write only when the last use is a minute old: not a write per request.
        guard
            var session = try queue.read({ db in
                try Row.fetchOne(
                    db, sql: "SELECT * FROM webSession WHERE secretHash = ? AND expires > ?", arguments: [hash, now])
            }).map(Self.webSession)
        else { return nil }
        if now.timeIntervalSince(session.lastUsed) >= 60 {
            session.lastUsed = now
            try queue.write { db in
                try db.execute(sql: "UPDATE webSession SET lastUsed = ? WHERE secretHash = ?", arguments: [now, hash])
            }
        }
        return session
    }

    /// A guardian's sessions that have not expired, the most recently used first.
    func webSessions(uid: UInt32, now: Date) throws -> [WebSession] {
        try queue.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM webSession WHERE uid = ? AND expires > ? ORDER BY lastUsed DESC",
                arguments: [Int64(uid), now]
            ).map(Self.webSession)
        }
    }

    /// Ends the sessions whose hashes are given, if they are the guardian's; how many ended.
    func endWebSessions(uid: UInt32, hashes: [String]) throws -> Int {
        try queue.write { db in
            var ended = 0
            for hash in hashes {
                try db.execute(
                    sql: "DELETE FROM webSession WHERE uid = ? AND secretHash = ?", arguments: [Int64(uid), hash])
                ended += db.changesCount
            }
            return ended
        }
    }

    /// Stores a one-time pairing code's hash (a guardian's earlier unused codes go).
    func savePairing(hash: String, uid: UInt32, expires: Date, now: Date) throws {
        try queue.write { db in
            try db.execute(sql: "DELETE FROM webPairing WHERE uid = ? OR expires <= ?", arguments: [Int64(uid), now])
            try db.execute(
                sql: "INSERT INTO webPairing (codeHash, uid, expires) VALUES (?, ?, ?)",
                arguments: [hash, Int64(uid), expires])
        }
    }

    /// Uses a pairing code up: whose it was, if it was one and had not run out.
    func takePairing(hash: String, now: Date) throws -> UInt32? {
        try queue.write { db in
            let uid = try Int64.fetchOne(
                db, sql: "SELECT uid FROM webPairing WHERE codeHash = ? AND expires > ?", arguments: [hash, now])
            try db.execute(sql: "DELETE FROM webPairing WHERE codeHash = ? OR expires <= ?", arguments: [hash, now])
            return uid.map { UInt32(truncatingIfNeeded: $0) }
        }
    }

    private static func webSession(_ row: Row) -> WebSession {
        WebSession(
            secretHash: row["secretHash"], uid: UInt32(truncatingIfNeeded: row["uid"] as Int64), device: row["device"],
            paired: row["paired"], created: row["created"], lastUsed: row["lastUsed"], expires: row["expires"])
    }
}
