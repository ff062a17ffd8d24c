// The Homework app's shield configuration extension: how its shields look.
import ManagedSettings
import ManagedSettingsUI

final class HomeworkShield: ShieldConfigurationDataSource {
    override func configuration(shielding application: Application) -> ShieldConfiguration {
        ShieldConfiguration(
            backgroundColor: ShieldColor(hex: "#204a87"), icon: ShieldImage(systemName: "accessories-text-editor"),
            title: .init(text: "Homework first", color: .white),
            subtitle: .init(
                text: "\(application.localizedDisplayName ?? "This app") waits until homework is done.",
                color: ShieldColor(hex: "#dddddd")),
            primaryButtonLabel: .init(text: "OK", color: .white), primaryButtonBackgroundColor: .systemGreen,
            secondaryButtonLabel: .init(text: "Ask for more time", color: .white))
    }
}

ShieldConfigurationExtension.main(HomeworkShield())
