import FoundationEssentials
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC

/// Grants that add up and can be ended, and a guardian's lock on a child's sessions.
///
/// A grant of a length (`15m`, an hour, the rest of the day, until a time) ends at
/// `GrantLength.end`: on top of whichever is later of what the child still has of the limits on
/// the same thing and a grant already running on it. A guardian's lock (`lock`) is a login lock
/// of its own reason: the sessions are held and logins refused as downtime with `--no-login` does,
/// no grant of screen time lifts it (a lock ends the ones running), and `unlock` or its end lifts it.
extension PolicyService {
    /// When a grant of `length` on `request`'s thing for its user, made at `now`, ends.
    /// Reads the scheduler and the database; called with no lock of the policy held.
    func grantEnd(
        _ length: GrantLength, uid: UInt32, kind: StateDatabase.TimeRequest.Kind, token: String, excluding id: Int64?,
        now: Date
    ) throws -> Date {
        // Until a time of day: the next time the clock shows it, at most 12 hours on (a time
        // just passed would be tomorrow's, a whole day: a slip more than a wish).
        if case .until(let hour, let minute) = length {
            let span = length.end(at: now, calendar: ActivityScheduler.systemCalendar()).timeIntervalSince(now)
            guard span <= 720 * 60 else {
                throw ScreenTimeIPCError(
                    .invalidArgument,
                    "\(twoDigits(hour)):\(twoDigits(minute)) is \(DurationText.format(span)) away; a grant lasts at most "
                        + "12 hours (say --for rest-of-day, or a time ahead)")
            }
        }
        let current = try database.grants(uid: uid, at: now)
            .filter { $0.kind == kind && $0.token == token && $0.id != id }
            .compactMap(\.until).max()
        let remaining = self.scheduler.flatMap { scheduler in
            scheduler.remaining(uid: uid, at: now) { builtIn, event in
                switch (kind, builtIn) {
                case (.screenTime, .screenTime): true
                case (.application, .limit):
                    (try? ApplicationToken(base64: token)).map { event.applications.contains($0) } ?? false
                case (.webDomain, .limit):
                    (try? WebDomainToken(base64: token)).map { event.webDomains.contains($0) } ?? false
                default: false
                }
            }
        }
        return length.end(
            at: now, remaining: remaining ?? 0, current: current, calendar: ActivityScheduler.systemCalendar())
    }

    /// The length a request for minutes asks, checked.
    static func checkedLength(minutes: Int?, length: GrantLength?, asked: Int) throws -> GrantLength {
        if let length {
            if case .minutes(let minutes) = length, !(1...720).contains(minutes) {
                throw ScreenTimeIPCError(.invalidArgument, "grant 1 to 720 minutes, not \(minutes)")
            }
            if case .until(let hour, let minute) = length, !(0...23).contains(hour) || !(0...59).contains(minute) {
                throw ScreenTimeIPCError(.invalidArgument, "a grant's end is a time of day, 00:00 to 23:59")
            }
            return length
        }
        let minutes = minutes ?? asked
        guard (1...720).contains(minutes) else {
            throw ScreenTimeIPCError(.invalidArgument, "grant 1 to 720 minutes, not \(minutes)")
        }
        return .minutes(minutes)
    }

    /// Whole minutes from `now` to `until`, as a grant's record keeps them.
    static func minutes(from now: Date, to until: Date) -> Int {
        max(1, Int((until.timeIntervalSince(now) / 60).rounded(.up)))
    }

    /// A guardian ends a grant now: what it lifted is in force again before the reply.
    func endGrant(_ request: EndGrantRequest, _ context: RequestContext) throws -> TimeRequestReport {
        let caller = try caller(context)
        guard caller.isGuardian else { throw ScreenTimeIPCError(.notAllowed, "only a guardian ends a grant") }
        let now = Date()
        let ended = try edits.changes.withLock { _ -> StateDatabase.TimeRequest in
            guard var record = try database.timeRequest(id: request.id) else {
                throw ScreenTimeIPCError(
                    .invalidArgument, "there is no grant \(request.id) ('screentime requests' lists them)")
            }
            guard record.state == .granted, let until = record.until, until > now else {
                throw ScreenTimeIPCError(
                    .invalidArgument,
                    "\(request.id) is not a grant running now (it is \(Self.report(record, user: "", names: false, now: now).state.rawValue))"
                )
            }
            record.state = .ended
            record.until = now
            try database.decide(
                id: request.id, state: .ended, minutes: record.minutes, until: now,
                by: (record.decidedBy ?? "?") + ", ended by \(caller.account.name)", at: record.decidedAt ?? now)
            publisher.publish()
            return record
        }
        let name = (try? users.user(uid: ended.uid).name) ?? "uid \(ended.uid)"
        logger.notice(
            "grant ended",
            metadata: [
                "user": "\(name)", "what": "\(ended.name)", "id": "\(request.id)",
                "by": "\(caller.account.name)",
            ])
        let report = Self.report(ended, user: name, names: true, now: now)
        shieldEvents.tell(request: report)
        return report
    }

    /// A guardian locks a child's sessions now (or lifts the lock).
    func lock(_ request: LockRequest, _ context: RequestContext) throws -> LockReply {
        let caller = try caller(context)
        guard caller.isGuardian else { throw ScreenTimeIPCError(.notAllowed, "only a guardian locks a session") }
        let account = try target(request.user, caller: caller)
        guard let authorization = try database.authorization(uid: account.uid), authorization.status == .approved,
            authorization.member == .child
        else {
            throw ScreenTimeIPCError(.notAuthorized, "\(account.name) is not a child authorized here")
        }
        let now = Date()
        if request.unlock {
            let lifted = try edits.changes.withLock { _ in
                let had = try database.clearLoginLock(uid: account.uid, reason: .guardian)
                if had { publisher.publish() }
                return had
            }
            logger.notice(
                lifted ? "guardian's lock lifted" : "no guardian's lock to lift",
                metadata: ["user": "\(account.name)", "by": "\(caller.account.name)"])
            return LockReply(user: summary(account), until: nil, untilUnlocked: false, lifted: lifted)
        }
        let length = try request.length.map { try Self.checkedLength(minutes: nil, length: $0, asked: 0) }
        let calendar = ActivityScheduler.systemCalendar()
        // Until unlocked: a date no clock reaches; the status says "until unlocked".
        let until = length.map { $0.end(at: now, calendar: calendar) } ?? Self.untilUnlocked
        try edits.changes.withLock { _ in
            // A lock ends the screen time a guardian granted: it would lift it at once.
            for grant in try database.grants(uid: account.uid, at: now) where grant.kind == .screenTime {
                try database.decide(
                    id: grant.id ?? 0, state: .ended, minutes: grant.minutes, until: now,
                    by: (grant.decidedBy ?? "?") + ", ended by a lock", at: grant.decidedAt ?? now)
            }
            try database.setLoginLock(
                StateDatabase.LoginLock(uid: account.uid, reason: .guardian, until: until, since: now))
            publisher.publish()
        }
        let forever = until >= Self.untilUnlocked
        logger.notice(
            "sessions locked by a guardian",
            metadata: [
                "user": "\(account.name)", "until": "\(forever ? "unlocked" : "\(until)")",
                "by": "\(caller.account.name)",
            ])
        let message = LoginText.lockMessage(
            LoginLock(reason: StateDatabase.LoginLock.Reason.guardian.rawValue, until: until), user: nil, now: now)
        shieldEvents.tell(
            .notice(uid: account.uid, title: "Locked by your guardian", subtitle: message, icon: "system-lock-screen"))
        loginSessions?.warn(uid: account.uid, message)
        return LockReply(user: summary(account), until: forever ? nil : until, untilUnlocked: forever, lifted: false)
    }

    /// The end of a lock that holds until a guardian lifts it: the same "no end" (3000-01-01) a
    /// grant made always keeps.
    static let untilUnlocked = DecideRequest.alwaysUntil
}

// Always allowed.
extension PolicyService {
    /// At most this many apps, and as many domains, always allowed (Apple's tokens per set).
    static let alwaysAllowedLimit = StoreSettings.maximumTokens

    func alwaysAllowed(_ request: AlwaysAllowedRequest, _ context: RequestContext) throws -> AlwaysAllowedReply {
        let caller = try caller(context)
        let changing = !request.applications.isEmpty || !request.webDomains.isEmpty || !(request.services ?? []).isEmpty
        let account: UserAccount
        if changing {
            account = try storeOwner(StoreTarget(user: request.user), caller: caller)
        } else {
            account = try target(request.user, caller: caller)
            guard caller.isGuardian || account.uid == caller.account.uid else {
                throw ScreenTimeIPCError(.notAllowed, "you may read only your own always-allowed list")
            }
        }
        guard !request.remove || changing else {
            throw ScreenTimeIPCError(.invalidArgument, "give what to take off the list: --app, --domain or --service")
        }
        if changing {
            var resolver = Resolver(service: self, account: account)
            var items: [StateDatabase.AllowedItem] = []
            for text in request.applications {
                let (token, name) = try resolver.application(text)
                items.append(.init(kind: .application, token: token.base64, name: name.displayName))
            }
            for text in request.webDomains {
                let (token, name) = try resolver.webDomain(text)
                items.append(.init(kind: .webDomain, token: token.base64, name: name.displayName))
            }
            // A service: each of its apps and domains, named as the service's.
            for text in request.services ?? [] {
                let (_, definition) = try resolver.serviceDefinition(text)
                for application in definition.applications {
                    items.append(
                        .init(
                            kind: .application, token: minter.token(for: application).base64,
                            name: "\(definition.name) (\(application.canonical))"))
                }
                for given in definition.domains {
                    let domain = suffixes.webDomain(for: given)
                    items.append(.init(kind: .webDomain, token: minter.token(for: domain).base64, name: domain.unicode))
                }
            }
            try edits.changes.withLock { _ in
                let current = try database.alwaysAllowedItems(uid: account.uid)
                if !request.remove {
                    for kind in [StateDatabase.AllowedItem.Kind.application, .webDomain] {
                        let tokens = Set((current + items).filter { $0.kind == kind }.map(\.token))
                        guard tokens.count <= Self.alwaysAllowedLimit else {
                            throw ScreenTimeIPCError(
                                .invalidArgument,
                                "at most \(Self.alwaysAllowedLimit) \(kind == .application ? "apps" : "domains") are always allowed"
                            )
                        }
                    }
                }
                try database.changeAlwaysAllowed(
                    uid: account.uid, add: request.remove ? [] : items, remove: request.remove ? items : [])
                for item in items {
                    try database.rememberName(
                        token: item.token, kind: item.kind == .application ? .app : .domain, name: item.name)
                }
                publisher.publish()
            }
            logger.notice(
                request.remove ? "no longer always allowed" : "always allowed",
                metadata: [
                    "user": "\(account.name)", "what": "\(items.map(\.name).joined(separator: ", "))",
                    "by": "\(caller.account.name)",
                ])
        }
        let items = try database.alwaysAllowedItems(uid: account.uid)
        func listed(_ kind: StateDatabase.AllowedItem.Kind) -> [AlwaysAllowedReply.Item] {
            items.filter { $0.kind == kind }.map { AlwaysAllowedReply.Item(name: $0.name, token: $0.token) }
        }
        return AlwaysAllowedReply(
            user: summary(account), applications: listed(.application), webDomains: listed(.webDomain))
    }
}

// What a lock does.
extension PolicyService {
    func lockout(_ request: LockoutRequest, _ context: RequestContext) throws -> LockoutReply {
        let caller = try caller(context)
        guard caller.isGuardian else {
            throw ScreenTimeIPCError(.notAllowed, "only a guardian chooses what a lock does")
        }
        let account = try target(request.user, caller: caller)
        guard let authorization = try database.authorization(uid: account.uid), authorization.status == .approved,
            authorization.member == .child
        else {
            throw ScreenTimeIPCError(.notAuthorized, "\(account.name) is not a child authorized here")
        }
        if let warnings = request.warnings {
            guard warnings.count <= 8, warnings.allSatisfy({ $0.isFinite && $0 >= 60 && $0 <= 4 * 3_600 }) else {
                throw ScreenTimeIPCError(
                    .invalidArgument, "give at most 8 warnings, each from 1 minute to 4 hours before (30m,10m,5m,1m)")
            }
        }
        if request.action != nil || request.warnings != nil {
            let warnings = request.warnings.map { Array(Set($0)).sorted(by: >) }
            try edits.changes.withLock { _ in
                try database.setLockout(uid: account.uid, request.action, warnings: warnings)
                publisher.publish()
            }
            // Not under the policy's lock: the scheduler's step takes it while it reacts.
            if let warnings { try rewarn(account, warnings: warnings) }
            logger.notice(
                "lockout set",
                metadata: [
                    "user": "\(account.name)", "action": "\(request.action?.rawValue ?? "-")",
                    "warnings":
                        "\(request.warnings.map { $0.map { DurationText.format($0) }.joined(separator: ",") } ?? "-")",
                    "by": "\(caller.account.name)",
                ])
        }
        return LockoutReply(
            user: summary(account), action: try database.lockout(uid: account.uid),
            warnings: try Self.warnings(database.warnings(uid: account.uid)))
    }

    /// The warnings before the agent's own limits, downtime and screen time: Timekpr's 30, 10,
    /// 5 and 1 minutes unless a guardian chose others.
    static let defaultWarnings: [TimeInterval] = [1_800, 600, 300, 60]

    static func warnings(_ chosen: [TimeInterval]?) -> [TimeInterval] {
        (chosen ?? defaultWarnings).sorted(by: >)
    }

    /// The child's built-in monitors warn on the new schedule from now on (what was told stays told).
    private func rewarn(_ account: UserAccount, warnings: [TimeInterval]) throws {
        guard let scheduler else { return }
        try scheduler.change {
            for entry in scheduler.entries(uid: account.uid) where entry.monitor.builtIn != nil {
                var monitor = entry.monitor
                monitor.activity.warnings = warnings
                try database.updateMonitorDefinition(monitor)
            }
        }
    }
}
