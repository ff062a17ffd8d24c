/// The name of a monitored activity (Apple's `DeviceActivityName`): 1 to 128 characters, no
/// control characters.
public struct DeviceActivityName: ValidatedString {
    public let rawValue: String

    public init(_ rawValue: String) throws(ScreenTimeCoreError) {
        guard isNameText(rawValue) else {
            throw ScreenTimeCoreError(
                .invalidActivityName,
                "'\(rawValue.prefix(80))' is not an activity name (1 to 128 characters, no control characters)"
            )
        }
        self.rawValue = rawValue
    }
}

/// 1 to 128 characters, none of them control characters.
func isNameText(_ text: String) -> Bool {
    (1...128).contains(text.count)
        && text.unicodeScalars.allSatisfy { !$0.properties.generalCategory.isControlOrFormat || $0 == "\u{200D}" }
}

extension Unicode.GeneralCategory {
    fileprivate var isControlOrFormat: Bool { self == .control || self == .format }
}
