package import Logging
import ScreenTimeIPC

extension ControlRouter {
    /// Every request the agent answers, with its handler: a new request is one line here.
    package static func agent(
        policy: PolicyService, launcher: ProgramLauncher, dashboard: DashboardSupervisor? = nil, logger: Logger
    ) -> ControlRouter {
        var router = ControlRouter(logger: logger)
        router.register(PingRequest.self, policy.ping)
        router.register(StatusRequest.self, policy.status)
        router.register(AuthorizeRequest.self, policy.authorize)
        router.register(RevokeRequest.self, policy.revoke)
        router.register(ApplicationsRequest.self, policy.applications)
        router.register(CategoriesRequest.self, policy.categories)
        router.register(ServicesRequest.self) { _, context in try policy.services(caller: policy.caller(context)) }
        router.register(BrowsersRequest.self) { request, context in
            try policy.browsers(request, caller: policy.caller(context))
        }
        router.register(TokenRequest.self, policy.token)
        router.register(ShieldRequest.self, policy.shield)
        router.register(ClearRequest.self, policy.clear)
        router.register(FilterRequest.self, policy.filter)
        router.register(UnlockRequest.self, policy.unlock)
        router.register(ForgetRequest.self, policy.forget)
        router.register(DenyInstallsRequest.self, policy.denyInstalls)
        router.register(ReportRequest.self, policy.report)
        router.register(MonitorStartRequest.self, policy.monitorStart)
        router.register(MonitorStopRequest.self, policy.monitorStop)
        router.register(MonitorListRequest.self, policy.monitorList)
        router.register(LimitRequest.self, policy.limit)
        router.register(DowntimeRequest.self, policy.downtime)
        router.register(AskRequest.self, policy.ask)
        router.register(TimeRequestsRequest.self, policy.timeRequests)
        router.register(DecideRequest.self) { try policy.decide($0, $1) }
        router.register(ShieldConfigRequest.self, policy.shieldConfig)
        router.register(StoreReadRequest.self, policy.storeRead)
        router.register(StoreWriteRequest.self, policy.storeWrite)
        router.register(NoticeRequest.self, policy.notice)
        router.register(LoginRequest.self, policy.login)
        router.register(ScreenTimeGrantRequest.self, policy.screenTimeGrant)
        router.register(EndGrantRequest.self, policy.endGrant)
        router.register(LockRequest.self, policy.lock)
        router.register(AlwaysAllowedRequest.self, policy.alwaysAllowed)
        router.register(LockoutRequest.self, policy.lockout)
        router.register(FreeTimeRequest.self, policy.freeTime)
        router.register(WebSignInRequest.self, policy.webSignIn)
        router.register(WebSignOutRequest.self, policy.webSignOut)
        router.register(WebSessionsRequest.self, policy.webSessions)
        router.register(WebPairRequest.self, policy.webPair)
        router.register(WebServiceRequest.self) { request, context in
            guard let dashboard else {
                throw ScreenTimeIPCError(.internalError, "this agent does not run the dashboard")
            }
            let caller = try policy.sessionCaller(context) ?? policy.caller(context)
            return try dashboard.handle(request, caller: caller, inSession: context.session != nil)
        }
        router.register(LauncherCheckRequest.self) {
            try launcher.check($0, $1, isGuardian: policy.isGuardian($1.peer))
        }
        return router
    }
}
