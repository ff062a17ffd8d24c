import FoundationEssentials
import Hummingbird
import ScreenTimeCore
import ScreenTimeIPC

extension Dashboard {
    /// Today, by hour, as `screentime report` reads it.
    func today(_ name: String?, _ token: String) async throws -> UsageReport {
        let today = LocalTime.startOfDay(Date())
        let tomorrow = LocalTime.startOfDay(today, addingDays: 1)
        return try await agent.send(
            ReportRequest(
                user: name, from: today, to: tomorrow, segments: .hourly, timeZone: LocalTime.zoneIdentifier()),
            session: token)
    }

    /// Today (by hour) and the week to today (by day), as `screentime report` reads them.
    func reports(_ name: String?, _ token: String) async throws -> (day: UsageReport, week: UsageReport) {
        let today = LocalTime.startOfDay(Date())
        let tomorrow = LocalTime.startOfDay(today, addingDays: 1)
        let weekStart = LocalTime.startOfDay(today, addingDays: -6)
        let day = try await self.today(name, token)
        let week = try await agent.send(
            ReportRequest(
                user: name, from: weekStart, to: tomorrow, segments: .daily, timeZone: LocalTime.zoneIdentifier()),
            session: token)
        return (day, week)
    }

    func overview(_ token: String) async throws -> Response {
        let status = try await agent.send(StatusRequest(), session: token)
        let children = (status.authorizedUsers ?? []).filter { $0.member == .child && $0.status == .approved }
            .map(\.user.name).sorted()
        var rows: [(name: String, today: UsageReport?)] = []
        for name in children {
            rows.append((name, try? await today(name, token)))
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
    /// change (the session's one look a second, `AskFeed`); a comment when nothing changed for
    /// 15 s; `signedout` when the session ends. Ends when the browser goes.
    func events(_ token: String) async throws -> Response {
        let first = Pages.ids(
            try await agent.send(TimeRequestsRequest(pending: true), session: token).requests.map(\.id))
        let feed = self.feed
        let body = ResponseBody { writer in
            let (id, events) = await feed.subscribe(token, shown: first)
            do {
                try await writer.write(ByteBuffer(string: "retry: 2000\nevent: asks\ndata: \(first)\n\n"))
                for await event in events {
                    switch event {
                    case .asks(let ids): try await writer.write(ByteBuffer(string: "event: asks\ndata: \(ids)\n\n"))
                    case .stillHere: try await writer.write(ByteBuffer(string: ": still here\n\n"))
                    case .signedOut: try await writer.write(ByteBuffer(string: "event: signedout\ndata: \n\n"))
                    }
                }
            } catch {
                await feed.unsubscribe(token, id)
                throw error
            }
            await feed.unsubscribe(token, id)
            try await writer.finish(nil)
        }
        return Response(
            status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"], body: body)
    }
}
