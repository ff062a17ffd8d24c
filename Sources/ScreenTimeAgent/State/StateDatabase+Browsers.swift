import FoundationEssentials
import ScreenTimeIPC
import ScreenTimeSQLite

extension StateDatabase {
    /// The browsers' settings as a guardian last set them (what the browsers may do while a child
    /// is authorized); the defaults when no one did, or the row cannot be read.
    func browserSettings() throws -> (settings: BrowserSettings, changedBy: String?, changedAt: Date?) {
        try queue.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM browserSettings WHERE id = 1"),
                let settings = try? JSONDecoder().decode(
                    BrowserSettings.self, from: Data((row["settings"] as String).utf8))
            else { return (BrowserSettings(), nil, nil) }
            return (settings, row["changedBy"], row["changedAt"])
        }
    }

    func saveBrowserSettings(_ settings: BrowserSettings, by name: String, at date: Date) throws {
        let text = String(decoding: try JSONEncoder().encode(settings), as: UTF8.self)
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO browserSettings (id, settings, changedBy, changedAt)
                    VALUES (1, ?, ?, ?)
                    """,
                arguments: [text, name, date])
        }
    }
}
