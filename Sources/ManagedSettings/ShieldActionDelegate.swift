import Foundation
public import ScreenTimeCore

/// A button of the shield the child pressed (Apple's `ShieldAction`).
public enum ShieldAction: String, Sendable, Hashable {
    case primaryButtonPressed
    case secondaryButtonPressed
}

/// What the shield does after a button (Apple's `ShieldActionResponse`).
public enum ShieldActionResponse: String, Sendable, Hashable {
    /// Nothing more: the window closes if it was the primary button.
    case none
    /// The shielded app is closed (its processes end) and the shield with it.
    case close
    /// The shield stays, drawn again.
    case `defer`
}

/// Answers the shield's buttons (Apple's `ShieldActionDelegate`): subclass it and run the
/// subclass as an action extension with `ShieldActionExtension.main(_:)`.
open class ShieldActionDelegate {
    public init() {}

    /// A button pressed on an application's shield. The default: `.none`.
    open func handle(
        action: ShieldAction, for application: ApplicationToken,
        completionHandler: @escaping (ShieldActionResponse) -> Void
    ) {
        completionHandler(.none)
    }

    /// A button pressed on a web domain's notice. The default: `.none`.
    open func handle(
        action: ShieldAction, for webDomain: WebDomainToken, completionHandler: @escaping (ShieldActionResponse) -> Void
    ) {
        completionHandler(.none)
    }

    /// A button pressed on a shield that covers a whole category. The default: `.none`.
    open func handle(
        action: ShieldAction, for category: ActivityCategoryToken,
        completionHandler: @escaping (ShieldActionResponse) -> Void
    ) {
        completionHandler(.none)
    }
}

/// The entry point of an action extension: `ShieldActionExtension.main(MyDelegate())` in the
/// extension's `main.swift`. It reads the press the agent sends on standard input, asks the
/// delegate, prints its response, and exits (within the agent's 2 s).
public enum ShieldActionExtension {
    public static func main(_ delegate: ShieldActionDelegate) -> Never {
        let input = FileHandle.standardInput.readDataToEndOfFile()
        guard let press = try? JSONDecoder().decode(Press.self, from: input),
            let action = ShieldAction(rawValue: press.action)
        else {
            FileHandle.standardError.write(Data("ShieldActionExtension: the agent's input could not be read\n".utf8))
            exit(65)
        }
        let answered = DispatchSemaphore(value: 0)
        let response = LockedResponse()
        let done: (ShieldActionResponse) -> Void = { value in
            response.set(value)
            answered.signal()
        }
        if let token = press.application.flatMap({ try? ApplicationToken(base64: $0.token) }) {
            delegate.handle(action: action, for: token, completionHandler: done)
        } else if let token = press.webDomain.flatMap({ try? WebDomainToken(base64: $0.token) }) {
            delegate.handle(action: action, for: token, completionHandler: done)
        } else {
            exit(65)
        }
        answered.wait()
        print(response.get().rawValue)
        exit(0)
    }

    struct Press: Decodable {
        struct Item: Decodable { var token: String }
        var action: String
        var application: Item?
        var webDomain: Item?
    }

    final class LockedResponse: @unchecked Sendable {
        private let lock = NSLock()
        private var value = ShieldActionResponse.none
        func set(_ new: ShieldActionResponse) { lock.withLock { value = new } }
        func get() -> ShieldActionResponse { lock.withLock { value } }
    }
}
