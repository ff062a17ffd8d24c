import Foundation
import Hummingbird
import ScreenTimeCore
import ScreenTimeIPC

extension Dashboard {
    /// Today (by hour) and the week to today (by day), as `screentime report` reads them.
    func reports(_ name: String?, _ token: String) async throws -> (day: UsageReport, week: UsageReport) {
        let calendar = Calendar.current
        let today = calendar.startOfDay(for: Date())
        let tomorrow = calendar.date(byAdding: .day, value: 1, to: today) ?? today
        let weekStart = calendar.date(byAdding: .day, value: -6, to: today) ?? today
        let zone = TimeZone.current.identifier
        let day = try await agent.send(
            ReportRequest(user: name, from: today, to: tomorrow, segments: .hourly, timeZone: zone), session: token)
        let week = try await agent.send(
            ReportRequest(user: name, from: weekStart, to: tomorrow, segments: .daily, timeZone: zone), session: token)
        return (day, week)
    }

    func overview(_ token: String) async throws -> Response {
        let status = try await agent.send(StatusRequest(), session: token)
        let children = (status.authorizedUsers ?? []).filter { $0.member == .child && $0.status == .approved }
            .map(\.user.name).sorted()
        var rows: [(name: String, today: UsageReport?)] = []
        for name in children {
            rows.append((name, try? await reports(name, token).day))
        }
        let asks = try await agent.send(TimeRequestsRequest(pending: true), session: token).requests
        return Pages.html(Pages.overview(children: rows, asks: asks, csrf: csrf(token)))
    }

    /// One child's page. Its usage unreadable (an agent that counts none), the rest still shows,
    /// with why.
    func child(_ name: String, _ token: String) async throws -> Response {
        let usage: Result<(day: UsageReport, week: UsageReport), ScreenTimeIPCError>
        do {
            usage = .success(try await reports(name, token))
        } catch let error as ScreenTimeIPCError where error.code != .notAuthorized && error.code != .unknownUser {
            usage = .failure(error)
        }
        let asks = try await agent.send(TimeRequestsRequest(user: name, pending: true), session: token).requests
        let status = try await agent.send(StatusRequest(user: name), session: token)
        return Pages.html(
            Pages.child(
                name: name, usage: usage, asks: asks, lock: status.loginLock, csrf: csrf(token)))
    }

    /// Server-sent events: the pending asks' ids (as the page writes them) now and at each
    /// change, looked at every second; a comment every 15 s keeps the connection open through
    /// proxies; `signedout` when the session ends. Ends when the browser goes.
    func events(_ token: String) async throws -> Response {
        let first = try await agent.send(TimeRequestsRequest(pending: true), session: token).requests
        let agent = self.agent
        let body = ResponseBody { writer in
            var shown = Pages.ids(first.map(\.id))
            try await writer.write(ByteBuffer(string: "retry: 2000\nevent: asks\ndata: \(shown)\n\n"))
            var quiet = 0
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(1))
                let now: String
                do {
                    now = Pages.ids(
                        try await agent.send(TimeRequestsRequest(pending: true), session: token).requests.map(\.id))
                } catch {
                    try await writer.write(ByteBuffer(string: "event: signedout\ndata: \n\n"))
                    break
                }
                if now != shown {
                    shown = now
                    quiet = 0
                    try await writer.write(ByteBuffer(string: "event: asks\ndata: \(now)\n\n"))
                } else {
                    quiet += 1
                    if quiet % 15 == 0 { try await writer.write(ByteBuffer(string: ": still here\n\n")) }
                }
            }
            try await writer.finish(nil)
        }
        return Response(
            status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"], body: body)
    }
}
