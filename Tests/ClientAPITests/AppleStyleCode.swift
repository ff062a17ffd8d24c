// Written as a developer writes it for Apple's frameworks (the seeds' code, WWDC 2021 and 2022):
// it must build unchanged against these modules. The tests below run parts of it against an
// agent in this process.
import DeviceActivity
import FamilyControls
import Foundation
import ManagedSettings
import ManagedSettingsUI

extension DeviceActivityName {
    static let daily = Self("daily")
}

extension DeviceActivityEvent.Name {
    static let encouraged = Self("encouraged")
}

extension ManagedSettingsStore.Name {
    static let school = Self("school")
}

final class MyModel: @unchecked Sendable {
    var selectionToDiscourage = FamilyActivitySelection()
    var selectionToEncourage = FamilyActivitySelection()
    let store = ManagedSettingsStore(named: .school)

    func setShieldRestrictions() {
        let applications = selectionToDiscourage
        store.shield.applications = applications.applicationTokens.isEmpty ? nil : applications.applicationTokens
        store.shield.applicationCategories =
            applications.categoryTokens.isEmpty
            ? nil : ShieldSettings.ActivityCategoryPolicy.specific(applications.categoryTokens)
        store.shield.webDomains = applications.webDomainTokens.isEmpty ? nil : applications.webDomainTokens
    }

    func initiateMonitoring() throws {
        let schedule = DeviceActivitySchedule(
            intervalStart: DateComponents(hour: 0, minute: 0), intervalEnd: DateComponents(hour: 23, minute: 59),
            repeats: true, warningTime: nil)
        let events: [DeviceActivityEvent.Name: DeviceActivityEvent] = [
            .encouraged: DeviceActivityEvent(
                applications: selectionToEncourage.applicationTokens, threshold: DateComponents(minute: 30))
        ]
        let center = DeviceActivityCenter()
        try center.startMonitoring(.daily, during: schedule, events: events)
    }
}

final class MyMonitor: DeviceActivityMonitor {
    let store = ManagedSettingsStore()

    override func intervalDidStart(for activity: DeviceActivityName) {
        super.intervalDidStart(for: activity)
        let model = MyModel()
        store.shield.applications = model.selectionToDiscourage.applicationTokens
    }

    override func intervalDidEnd(for activity: DeviceActivityName) {
        super.intervalDidEnd(for: activity)
        store.shield.applications = nil
    }

    override func eventDidReachThreshold(_ event: DeviceActivityEvent.Name, activity: DeviceActivityName) {
        super.eventDidReachThreshold(event, activity: activity)
        store.clearAllSettings()
    }
}

final class MyShieldConfiguration: ShieldConfigurationDataSource {
    override func configuration(shielding application: Application) -> ShieldConfiguration {
        ShieldConfiguration(
            backgroundColor: .white,
            title: ShieldConfiguration.Label(text: "Homework first", color: .black),
            subtitle: ShieldConfiguration.Label(
                text: "\(application.localizedDisplayName ?? "This app")", color: .black),
            primaryButtonLabel: ShieldConfiguration.Label(text: "OK", color: .white),
            primaryButtonBackgroundColor: .systemBlue)
    }

    override func configuration(shielding webDomain: WebDomain) -> ShieldConfiguration {
        ShieldConfiguration(title: ShieldConfiguration.Label(text: "Not now", color: .black))
    }
}

final class MyShieldAction: ShieldActionDelegate {
    override func handle(
        action: ShieldAction, for application: ApplicationToken,
        completionHandler: @escaping (ShieldActionResponse) -> Void
    ) {
        switch action {
        case .primaryButtonPressed: completionHandler(.close)
        case .secondaryButtonPressed: completionHandler(.defer)
        }
    }
}

func requestAuthorizationAsApple() async {
    do {
        try await AuthorizationCenter.shared.requestAuthorization(for: .individual)
    } catch {
        print("Failed to enroll with error: \(error)")
    }
}

// The shapes of Apple's types that code catches, compares and names.
func startMonitoringAsApple(_ center: DeviceActivityCenter, schedule: DeviceActivitySchedule) -> String {
    do {
        try center.startMonitoring(.daily, during: schedule)
        return "started"
    } catch DeviceActivityCenter.MonitoringError.excessiveActivities {
        return "too many"
    } catch let error as DeviceActivityCenter.MonitoringError where error == .intervalTooShort {
        return "too short"
    } catch {
        return "other"
    }
}

func authorizeAsApple(_ center: AuthorizationCenter) async -> String {
    do {
        try await center.requestAuthorization(for: .child)
        return "approved"
    } catch let error as FamilyControlsError {
        if error == .restricted { return "restricted" }
        switch error {
        case .authorizationCanceled, .authorizationConflict, .invalidAccountType, .invalidArgument, .networkError,
            .unavailable, .authenticationMethodUnavailable, .restricted:
            return "\(error)"
        }
    } catch {
        return "other"
    }
}

func shieldEveryCategoryExcept(_ store: ManagedSettingsStore, _ allowed: Set<ApplicationToken>) {
    let policy: ShieldSettings.ActivityCategoryPolicy<Application> = .all(except: allowed)
    store.shield.applicationCategories = policy
    let web: ShieldSettings.ActivityCategoryPolicy<WebDomain> = .none
    store.shield.webDomainCategories = web
    store.application.blockedApplications = [Application(bundleIdentifier: "com.valvesoftware.Steam")]
    store.webContent.blockedByFilter = .auto([WebDomain(domain: "example.com")], except: [])
}
