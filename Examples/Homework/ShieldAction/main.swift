// The Homework app's shield action extension: OK closes the shield; "Ask for more time" is
// answered with `.defer` — the shield stays, and the ask is the guardian's to answer.
import ManagedSettings

final class HomeworkActions: ShieldActionDelegate {
    override func handle(
        action: ShieldAction, for application: ApplicationToken,
        completionHandler: @escaping (ShieldActionResponse) -> Void
    ) {
        switch action {
        case .primaryButtonPressed: completionHandler(.none)
        case .secondaryButtonPressed: completionHandler(.defer)
        }
    }
}

ShieldActionExtension.main(HomeworkActions())
