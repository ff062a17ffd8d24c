/// The one error type of ScreenTimeCore.
///
/// `code` is stable: it travels as a string over the control socket and the CLI turns it into an exit
/// status, so cases are only ever added, never renamed. `message` says what was wrong in words a
/// guardian or a developer can act on. Where Apple has a name for the condition
/// (`DeviceActivityCenter.MonitoringError`, for instance) the code carries that name.
public struct ScreenTimeCoreError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable, Codable, CaseIterable {
        case invalidToken
        case invalidSecret
        case invalidApplicationIdentity
        case invalidDomain
        case invalidCategory
        case invalidPublicSuffixList
        case invalidStoreName
        case invalidClient
        case tooManyTokens
        case tooManyExceptions
        case tooManyStores
        case invalidActivityName
        case invalidEventName
        case intervalTooShort
        case intervalTooLong
        case invalidDateComponents
        case excessiveActivities
        case invalidThreshold
        case invalidUsageSpan
        case invalidDNSMessage
        case invalidDuration
        case invalidWeekday
        case invalidService
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
