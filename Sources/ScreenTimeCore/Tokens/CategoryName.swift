/// The name of an app or web category, in the canonical form its token is minted from.
///
/// App categories are the freedesktop `Categories=` values of desktop entries (`Game`,
/// `Education`, `X-GNOME-Utilities`); web categories are the names of the domain lists under
/// `etc/screentime/categories/` (`adult`, `gambling`). Both compare without case, so the canonical
/// form is lower-case.
public struct CategoryName: ValidatedString {
    /// The canonical (lower-case) name.
    public let name: String

    public var rawValue: String { name }

    public init(_ name: String) throws(ScreenTimeCoreError) {
        let trimmed = name.trimmingWhitespace().lowercased()
        let valid =
            (1...64).contains(trimmed.utf8.count)
            && trimmed.utf8.allSatisfy {
                ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x5F || $0 == 0x2E
            }
        guard valid else {
            throw ScreenTimeCoreError(
                .invalidCategory,
                "'\(name.prefix(80))' is not a category name (1 to 64 letters, digits and - _ ., like Game or gambling)"
            )
        }
        self.name = trimmed
    }
}
