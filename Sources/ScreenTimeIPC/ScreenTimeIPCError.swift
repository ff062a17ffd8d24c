public import ScreenTimeCore

/// The one error type of the control protocol: what an agent replies when a request fails.
///
/// `code` is a stable string (the CLI maps it to an exit status, guardian apps switch on it); the
/// set is open so that an older client can still read a newer agent's codes. Codes of
/// ScreenTimeCore errors travel unchanged; FamilyControls errors carry Apple's names.
public struct ScreenTimeIPCError: Error, Hashable, Sendable, Codable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public init(from decoder: any Decoder) throws {
            rawValue = try decoder.singleValueContainer().decode(String.self)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }

        // The protocol's own.
        public static let malformedRequest = Code("malformedRequest")
        public static let requestTooLarge = Code("requestTooLarge")
        public static let unsupportedVersion = Code("unsupportedVersion")
        public static let unknownRequest = Code("unknownRequest")
        public static let agentUnreachable = Code("agentUnreachable")
        public static let malformedReply = Code("malformedReply")
        // Who may do what.
        public static let notAllowed = Code("notAllowed")
        public static let authenticationFailed = Code("authenticationFailed")
        /// Too many wrong passwords: wait, or a guardian must lift a lockout.
        public static let tooManyAttempts = Code("tooManyAttempts")
        public static let notAuthorized = Code("notAuthorized")
        // What a request names.
        public static let unknownUser = Code("unknownUser")
        public static let unknownApplication = Code("unknownApplication")
        public static let unknownCategory = Code("unknownCategory")
        // Apple's FamilyControlsError.
        public static let invalidAccountType = Code("invalidAccountType")
        public static let authorizationConflict = Code("authorizationConflict")
        public static let authorizationCanceled = Code("authorizationCanceled")
        public static let restricted = Code("restricted")
        public static let unavailable = Code("unavailable")
        /// The agent turned the connection away for now (too many open); try again.
        public static let busy = Code("busy")
        /// Too many asks for more time for now (a child's asks are limited); try again later.
        public static let tooManyRequests = Code("tooManyRequests")
        public static let invalidArgument = Code("invalidArgument")
        // The agent's own trouble (a bug or a broken disk), never the caller's.
        public static let internalError = Code("internalError")

        /// Whether the error says the caller may not do this (as opposed to: what it asked was wrong).
        public var isRefusal: Bool {
            [.notAllowed, .authenticationFailed, .tooManyAttempts, .restricted, .authorizationCanceled].contains(self)
        }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// A core error, its code kept.
    public init(_ error: ScreenTimeCoreError) {
        self.init(Code(error.code.rawValue), error.message)
    }

    public var description: String { "\(code): \(message)" }
}
