import Foundation
public import ManagedSettings
import ScreenTimeClient
import ScreenTimeIPC

/// A colour for a shield (Linux's stand-in for UIKit's `UIColor`).
public struct ShieldColor: Hashable, Sendable {
    public let red: UInt8
    public let green: UInt8
    public let blue: UInt8

    public init(red: UInt8, green: UInt8, blue: UInt8) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    /// From `#rrggbb` (or `rrggbb`); nil when it is not one.
    public init?(hex: String) {
        let digits = hex.hasPrefix("#") ? String(hex.dropFirst()) : hex
        guard digits.count == 6, let value = UInt32(digits, radix: 16) else { return nil }
        self.init(red: UInt8(value >> 16 & 0xff), green: UInt8(value >> 8 & 0xff), blue: UInt8(value & 0xff))
    }

    public static let white = ShieldColor(red: 255, green: 255, blue: 255)
    public static let black = ShieldColor(red: 0, green: 0, blue: 0)
    public static let systemBlue = ShieldColor(red: 0x35, green: 0x84, blue: 0xe4)
    public static let systemGreen = ShieldColor(red: 0x4e, green: 0x9a, blue: 0x06)
    public static let systemRed = ShieldColor(red: 0xc0, green: 0x1c, blue: 0x28)

    var hex: String { String(format: "#%02x%02x%02x", red, green, blue) }
}

/// An image for a shield (Linux's stand-in for `UIImage`): an icon of the desktop's theme, or a
/// file.
public struct ShieldImage: Hashable, Sendable {
    let value: String

    /// An icon name of the theme (`applications-games`).
    public init(systemName: String) { value = systemName }
    /// An image file, by absolute path.
    public init(contentsOfFile path: String) { value = path }
}

/// How a shield looks (Apple's `ShieldConfiguration`): every part optional, a missing one the
/// default (the app's icon, "NAME is shielded", "OK", and "Ask for more time" for a child).
public struct ShieldConfiguration: Hashable, Sendable {
    /// Text and its colour (Apple's `ShieldConfiguration.Label`).
    public struct Label: Hashable, Sendable {
        public var text: String
        public var color: ShieldColor?

        public init(text: String, color: ShieldColor? = nil) {
            self.text = text
            self.color = color
        }
    }

    public var backgroundColor: ShieldColor?
    public var icon: ShieldImage?
    public var title: Label?
    public var subtitle: Label?
    public var primaryButtonLabel: Label?
    public var primaryButtonBackgroundColor: ShieldColor?
    /// No secondary label: no secondary button.
    public var secondaryButtonLabel: Label?

    public init(
        backgroundColor: ShieldColor? = nil, icon: ShieldImage? = nil, title: Label? = nil, subtitle: Label? = nil,
        primaryButtonLabel: Label? = nil, primaryButtonBackgroundColor: ShieldColor? = nil,
        secondaryButtonLabel: Label? = nil
    ) {
        self.backgroundColor = backgroundColor
        self.icon = icon
        self.title = title
        self.subtitle = subtitle
        self.primaryButtonLabel = primaryButtonLabel
        self.primaryButtonBackgroundColor = primaryButtonBackgroundColor
        self.secondaryButtonLabel = secondaryButtonLabel
    }

    /// As the agent reads it (Apple's field names).
    var data: ShieldConfigurationData {
        func label(_ label: Label?) -> ShieldConfigurationData.Label? {
            label.map { ShieldConfigurationData.Label(text: $0.text, color: $0.color?.hex) }
        }
        return ShieldConfigurationData(
            backgroundColor: backgroundColor?.hex, icon: icon?.value, title: label(title), subtitle: label(subtitle),
            primaryButtonLabel: label(primaryButtonLabel),
            primaryButtonBackgroundColor: primaryButtonBackgroundColor?.hex,
            secondaryButtonLabel: label(secondaryButtonLabel))
    }
}

/// Gives shields their look (Apple's `ShieldConfigurationDataSource`): subclass it, override the
/// cases you draw, and run the subclass with `ShieldConfigurationExtension.main(_:)`.
open class ShieldConfigurationDataSource {
    public init() {}

    /// A shielded application. The default: the default shield.
    open func configuration(shielding application: Application) -> ShieldConfiguration { ShieldConfiguration() }

    /// An application shielded because of its category.
    open func configuration(
        shielding application: Application, in category: ActivityCategory
    )
        -> ShieldConfiguration
    {
        configuration(shielding: application)
    }

    /// A shielded web domain (the notice).
    open func configuration(shielding webDomain: WebDomain) -> ShieldConfiguration { ShieldConfiguration() }

    /// A web domain shielded because of its category.
    open func configuration(shielding webDomain: WebDomain, in category: ActivityCategory) -> ShieldConfiguration {
        configuration(shielding: webDomain)
    }
}

/// The entry point of a configuration extension: `ShieldConfigurationExtension.main(MySource())`.
/// It reads what is shielded on standard input and prints its `ShieldConfiguration` as JSON
/// (within the agent's 2 s).
public enum ShieldConfigurationExtension {
    struct Input: Decodable {
        struct Item: Decodable {
            var token: String
            var name: String?
            var id: String?
            var domain: String?
        }

        var application: Item?
        var webDomain: Item?
        var category: Item?
    }

    public static func main(_ source: ShieldConfigurationDataSource) -> Never {
        let data = FileHandle.standardInput.readDataToEndOfFile()
        guard let input = try? JSONDecoder().decode(Input.self, from: data) else {
            FileHandle.standardError.write(
                Data("ShieldConfigurationExtension: the agent's input could not be read\n".utf8))
            exit(65)
        }
        let category = input.category.flatMap { item in
            (try? ActivityCategoryToken(base64: item.token)).map {
                ActivityCategory(token: $0, localizedDisplayName: item.name)
            }
        }
        var configuration = ShieldConfiguration()
        if let item = input.application, let token = try? ApplicationToken(base64: item.token) {
            let application = Application(
                token: token, bundleIdentifier: item.id.flatMap { $0.isEmpty ? nil : $0 },
                localizedDisplayName: item.name)
            configuration =
                category.map { source.configuration(shielding: application, in: $0) }
                ?? source.configuration(shielding: application)
        } else if let item = input.webDomain, let token = try? WebDomainToken(base64: item.token) {
            let domain = WebDomain(token: token, domain: item.domain ?? item.name)
            configuration =
                category.map { source.configuration(shielding: domain, in: $0) }
                ?? source.configuration(shielding: domain)
        } else {
            exit(65)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        guard let output = try? encoder.encode(configuration.data) else { exit(70) }
        FileHandle.standardOutput.write(output + Data([10]))
        exit(0)
    }
}

/// Registering a client's shield extensions for a user (Linux's counterpart of bundling them with
/// the app): root-owned programs no one else may change. This program is the client.
public enum ShieldExtensions {
    public static func register(
        user: String, configuration: String? = nil, action: String? = nil, socket: String? = nil
    ) throws {
        _ = try ScreenTimeClient(socket: socket).send(
            ShieldConfigRequest(user: user, configuration: configuration, action: action))
    }

    /// The default shield again.
    public static func reset(user: String, socket: String? = nil) throws {
        _ = try ScreenTimeClient(socket: socket).send(ShieldConfigRequest(user: user, reset: true))
    }
}
