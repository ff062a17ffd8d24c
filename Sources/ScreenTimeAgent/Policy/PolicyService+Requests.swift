import FoundationEssentials
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC

/// Asking for more time, and a guardian's answer; and each client's shield extensions.
///
/// A child asks (`screentime ask`, or the shield window's secondary button) for minutes on a
/// shielded app or web domain; a guardian grants or denies (`screentime grant ID`, `deny ID`). A
/// grant lifts every store's shield on that token for that child until it ends (the policy's
/// exemption, not a store: stores only ever add restrictions), kept in the state database so that
/// a restart keeps its end, and published again by the scheduler when it ends. Asks are limited per
/// child: at most `pendingLimit` waiting, one new every `askSpacing`, `dailyLimit` a day.
extension PolicyService {
    static let pendingLimit = 5
    static let askSpacing: TimeInterval = 10
    static let dailyLimit = 30

    /// A site as a guardian reads it in an ask: its Unicode form, with its ASCII form beside it when
    /// they differ, so that a look-alike of an innocent site (Cyrillic letters in
    /// "wikipedia.org") is told apart.
    static func askedName(of domain: DomainName) -> String {
        domain.unicode == domain.ascii ? domain.ascii : "\(domain.unicode) (\(domain.ascii))"
    }

    func ask(_ request: AskRequest, _ context: RequestContext) throws -> TimeRequestReport {
        let caller = try caller(context)
        let account = try target(request.user, caller: caller)
        guard account.uid == caller.account.uid, caller.role == .child || caller.role == .individual else {
            throw ScreenTimeIPCError(
                .notAllowed, "only a child (or an individual) asks for more time, for themself; guardians grant it")
        }
        guard (1...240).contains(request.minutes) else {
            throw ScreenTimeIPCError(.invalidArgument, "ask for 1 to 240 minutes, not \(request.minutes)")
        }
        var resolver = Resolver(service: self, account: account)
        let kind: StateDatabase.TimeRequest.Kind
        let token: String
        let name: String
        switch (request.application, request.webDomain, request.token) {
        case (let application?, nil, nil):
            let (minted, tokenName) = try resolver.application(application)
            (kind, token, name) = (.application, minted.base64, tokenName.displayName)
        case (nil, let domain?, nil):
            var (minted, tokenName) = try resolver.webDomain(domain)
            // A name under a domain shielded by name is asked for as that shield's entry (as the
            // notice names it): a grant of `sub.blocked.example` alone would lift nothing of a
            // shield on `blocked.example`, and tell the guardian it had.
            if let shielded = publisher.current.users[account.uid]?.policy.webDomainsShieldedByToken,
                shielded[minted] == nil, let asked = try? DomainName(tokenName.identity),
                let entry = asked.selfAndAncestors.dropFirst().first(where: { shielded[minter.token(for: $0)] != nil })
            {
                (minted, tokenName) = try resolver.webDomain(entry.ascii)
            }
            // A site, not all of a public suffix: a grant of `com` would let every .com name past
            // the filter, under a name a guardian may not read as that.
            guard let identity = try? DomainName(tokenName.identity), suffixes.registrableDomain(of: identity) != nil
            else {
                throw ScreenTimeIPCError(
                    .invalidArgument, "ask for a site (example.com), not all of '\(tokenName.identity.prefix(64))'")
            }
            (kind, token, name) = (.webDomain, minted.base64, Self.askedName(of: identity))
        case (nil, nil, let given?):
            guard let known = try database.tokenNames([given])[given], known.kind == .app || known.kind == .domain
            else {
                throw ScreenTimeIPCError(.invalidArgument, "that token names nothing shielded here")
            }
            let domain = known.kind == .domain ? try? DomainName(known.identity) : nil
            (kind, token, name) = (
                known.kind == .app ? .application : .webDomain, given, domain.map(Self.askedName) ?? known.displayName
            )
        default:
            throw ScreenTimeIPCError(.invalidArgument, "ask for one thing: --app or --domain")
        }
        let note = request.note.map { DesktopEntry.shown($0, limit: 200) }
        let now = Date()
        let (saved, isNew) = try edits.changes.withLock { _ -> (StateDatabase.TimeRequest, Bool) in
            let mine = try database.timeRequests(uid: account.uid, limit: 100)
            if let same = mine.first(where: { $0.state == .pending && $0.token == token }) { return (same, false) }
            if mine.filter({ $0.state == .pending }).count >= Self.pendingLimit {
                throw ScreenTimeIPCError(
                    .tooManyRequests,
                    "\(Self.pendingLimit) asks are waiting for a guardian already; wait for an answer")
            }
            if let last = mine.first, now.timeIntervalSince(last.createdAt) < Self.askSpacing {
                throw ScreenTimeIPCError(.tooManyRequests, "you asked a moment ago; try again in a few seconds")
            }
            if mine.filter({ now.timeIntervalSince($0.createdAt) < 86_400 }).count >= Self.dailyLimit {
                throw ScreenTimeIPCError(.tooManyRequests, "\(Self.dailyLimit) asks in a day is the most")
            }
            let added = try database.addTimeRequest(
                StateDatabase.TimeRequest(
                    id: nil, uid: account.uid, kind: kind, token: token, name: name, minutes: request.minutes,
                    note: note, state: .pending, createdAt: now))
            return (added, true)
        }
        // The child sees names only if it may (as in its status); guardians always.
        let mayName = Self.mayReadNames(caller, try authorizationReply(caller.account))
        // Asked again while it waits: the same ask, and the guardians are not told again.
        guard isNew else { return Self.report(saved, user: account.name, names: mayName, now: now) }
        try database.rememberName(token: token, kind: kind == .application ? .app : .domain, name: name)
        logger.notice(
            "more time asked",
            metadata: [
                "user": "\(account.name)", "what": "\(name)", "minutes": "\(saved.minutes)", "id": "\(saved.id ?? 0)",
            ])
        shieldEvents.tell(request: Self.report(saved, user: account.name, names: true, now: now))
        return Self.report(saved, user: account.name, names: mayName, now: now)
    }

    func timeRequests(_ request: TimeRequestsRequest, _ context: RequestContext) throws -> TimeRequestsReply {
        let caller = try caller(context)
        var uid: UInt32?
        if caller.isGuardian {
            uid = try request.user.map { try target($0, caller: caller).uid }
        } else {
            let account = try target(request.user, caller: caller)
            guard account.uid == caller.account.uid else {
                throw ScreenTimeIPCError(.notAllowed, "you may list only your own asks")
            }
            uid = account.uid
        }
        let now = Date()
        let mayName = Self.mayReadNames(caller, try authorizationReply(caller.account))
        var names: [UInt32: String] = [:]
        let reports = try database.timeRequests(uid: uid).compactMap { record -> TimeRequestReport? in
            if request.pending && record.state != .pending { return nil }
            let name = names[record.uid] ?? (try? users.user(uid: record.uid).name) ?? "uid \(record.uid)"
            names[record.uid] = name
            return Self.report(record, user: name, names: mayName, now: now)
        }
        return TimeRequestsReply(requests: reports)
    }

    /// A guardian's decision. `onlyPending`: a decision from a window shown for the ask, which
    /// does not overturn one made meanwhile (a guardian's own `grant`/`deny` may: ending a grant
    /// early, or changing their mind).
    func decide(
        _ request: DecideRequest, _ context: RequestContext, onlyPending: Bool = false
    ) throws
        -> TimeRequestReport
    {
        let caller = try caller(context)
        var decider = caller.account.name
        if !caller.isGuardian {
            // In person: a guardian types their password in the child's session.
            guard let credentials = request.guardian, caller.role == .child || caller.role == .individual else {
                throw ScreenTimeIPCError(.notAllowed, "only a guardian grants or denies time")
            }
            guard let record = try database.timeRequest(id: request.id), record.uid == caller.account.uid else {
                throw ScreenTimeIPCError(
                    .notAllowed, "a guardian in person decides the asks of this session's user only")
            }
            try checkGuardian(credentials, asker: caller)
            decider = String(credentials.user.prefix(64)) + " (in person)"
        }
        if let minutes = request.minutes, !(1...720).contains(minutes) {
            throw ScreenTimeIPCError(.invalidArgument, "grant 1 to 720 minutes, not \(minutes)")
        }
        let always = request.always == true
        if always, !request.grant || request.minutes != nil || request.length != nil {
            throw ScreenTimeIPCError(
                .invalidArgument, "'always' is a grant with no end: no minutes, no length, no deny")
        }
        let now = Date()
        // Where it ends is read before the policy's lock is taken (it reads the scheduler).
        var until: Date?
        if always {
            until = DecideRequest.alwaysUntil
        } else if request.grant, let asked = try database.timeRequest(id: request.id) {
            let length = try Self.checkedLength(minutes: request.minutes, length: request.length, asked: asked.minutes)
            // Granted again while its grant runs: on top of it, as any other grant on the same thing.
            until = try grantEnd(length, uid: asked.uid, kind: asked.kind, token: asked.token, excluding: nil, now: now)
        }
        let decided = try edits.changes.withLock { _ -> StateDatabase.TimeRequest in
            guard var record = try database.timeRequest(id: request.id) else {
                throw ScreenTimeIPCError(
                    .invalidArgument, "there is no ask \(request.id) ('screentime requests' lists them)")
            }
            guard let authorization = try database.authorization(uid: record.uid), authorization.status == .approved
            else {
                throw ScreenTimeIPCError(.notAuthorized, "the asker is no longer authorized")
            }
            if onlyPending, record.state != .pending {
                throw ScreenTimeIPCError(
                    .invalidArgument,
                    "ask \(request.id) was \(record.state.rawValue) already\(record.decidedBy.map { " by \($0)" } ?? "")"
                )
            }
            record.state = request.grant ? .granted : .denied
            record.until = request.grant ? until : nil
            if let until = record.until, !always { record.minutes = Self.minutes(from: now, to: until) }
            record.decidedAt = now
            record.decidedBy = decider
            try database.decide(
                id: request.id, state: record.state, minutes: record.minutes, until: record.until, by: decider,
                at: now)
            // In force before the reply: the app runs again (or, denied, nothing changes).
            _ = publisher.publish()
            return record
        }
        let name = (try? users.user(uid: decided.uid).name) ?? "uid \(decided.uid)"
        logger.notice(
            always ? "allowed always" : request.grant ? "more time granted" : "more time denied",
            metadata: [
                "user": "\(name)", "what": "\(decided.name)", "minutes": "\(decided.minutes)", "id": "\(request.id)",
                "by": "\(decider)",
            ])
        let report = Self.report(decided, user: name, names: true, now: now)
        shieldEvents.tell(request: report)
        return report
    }

    /// Whether the names behind tokens (an app's, a domain's) are told to the caller about an
    /// account with this authorization: guardians, individuals and extensions yes; a child only
    /// if a guardian chose to show it names.
    static func mayReadNames(_ caller: Caller, _ authorization: AuthorizationReply) -> Bool {
        caller.isGuardian || caller.role == .individual || caller.role == .extension
            || (authorization.member == .child && authorization.showNamesToChild)
    }

    static func report(
        _ record: StateDatabase.TimeRequest, user: String, names: Bool, now: Date
    ) -> TimeRequestReport {
        let state =
            record.state == .granted && (record.until.map { $0 <= now } ?? true)
            ? TimeRequestState.expired : TimeRequestState(rawValue: record.state.rawValue) ?? .pending
        return TimeRequestReport(
            id: record.id ?? 0, user: user, uid: record.uid,
            application: record.kind == .application && names ? record.name : nil,
            webDomain: record.kind == .webDomain && names ? record.name : nil, token: record.token,
            minutes: record.minutes, note: record.note, state: state, createdAt: record.createdAt,
            decidedAt: record.decidedAt, decidedBy: record.decidedBy, until: record.until)
    }

    // MARK: shield extensions

    func shieldConfig(_ request: ShieldConfigRequest, _ context: RequestContext) throws -> ShieldConfigReply {
        let caller = try caller(context)
        let account = try storeOwner(StoreTarget(user: request.user, client: request.client), caller: caller)
        let client = try client(request.client, caller: caller)
        var extensions = try database.shieldExtensions(uid: account.uid)[client] ?? .init()
        if request.reset {
            extensions = .init()
        } else {
            guard request.configuration != nil || request.action != nil else {
                throw ScreenTimeIPCError(.invalidArgument, "give --configuration PATH, --action PATH or --reset")
            }
            for (path, what) in [(request.configuration, "configuration"), (request.action, "action")] {
                if let path, let problem = ExtensionProgram.problem(with: path) {
                    throw ScreenTimeIPCError(.invalidArgument, "the \(what) extension cannot be used: \(problem)")
                }
            }
            extensions.configuration = request.configuration ?? extensions.configuration
            extensions.action = request.action ?? extensions.action
        }
        try database.saveShieldExtensions(uid: account.uid, client: client, extensions)
        logger.notice(
            "shield extensions set",
            metadata: [
                "user": "\(account.name)", "client": "\(client)",
                "configuration": "\(extensions.configuration ?? "none")",
                "action": "\(extensions.action ?? "none")", "by": "\(caller.account.name)",
            ])
        return ShieldConfigReply(
            user: summary(account), client: client.rawValue, configuration: extensions.configuration,
            action: extensions.action)
    }

    // MARK: stores as a whole (ManagedSettingsStore)

    func storeRead(_ request: StoreReadRequest, _ context: RequestContext) throws -> StoreReply {
        let caller = try caller(context)
        let account = try storeOwner(request.target, caller: caller)
        let key = StoreKey(
            client: try client(request.client, caller: caller),
            name: try request.store.map { try StoreName($0) } ?? .default)
        let (collection, updated) = try database.stores(uid: account.uid)
        let store = StoreReport(
            client: key.client.rawValue, name: key.name.rawValue, settings: collection[key], updatedAt: updated[key])
        return StoreReply(
            user: summary(account), store: store, effective: Self.report(try inForce(collection, uid: account.uid)))
    }

    func storeWrite(_ request: StoreWriteRequest, _ context: RequestContext) throws -> StoreReply {
        let caller = try caller(context)
        let account = try storeOwner(request.target, caller: caller)
        let key = StoreKey(
            client: try client(request.client, caller: caller),
            name: try request.store.map { try StoreName($0) } ?? .default)
        return try changeStore(account, key, by: caller, action: "store written") { collection in
            try collection.update(key) { $0 = request.settings }
        }
    }

    // MARK: notices

    func notice(_ request: NoticeRequest, _ context: RequestContext) throws -> NoticeReply {
        let caller = try caller(context)
        let account = try storeOwner(StoreTarget(user: request.user), caller: caller)
        func clean(_ text: String, _ limit: Int) -> String {
            String(
                String.UnicodeScalarView(text.unicodeScalars.filter { $0.properties.generalCategory != .control })
                    .prefix(limit))
        }
        let title = clean(request.title, 100)
        guard !title.isEmpty else { throw ScreenTimeIPCError(.invalidArgument, "a notice needs a title") }
        let shown = shieldEvents.notify(
            uid: account.uid, title: title, subtitle: clean(request.text, 300), icon: "dialog-information")
        return NoticeReply(shown: shown)
    }
}
