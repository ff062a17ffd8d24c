import LinuxSupport
import ScreenTimeCore

/// What a plain-HTTP request for a refused site gets instead of a bare reset: a small page,
/// sent on the server's behalf in the request's own connection, that names the site and says why
/// (as the shield notice does) and how to ask for it. The connection is then reset as any refused
/// one (the page's segment closes the server's side first, so the browser shows it).
///
/// HTTPS cannot be answered this way: the browser expects the site's certificate, and shows its
/// own error page; the notice in the child's session says why.
enum BlockPage {
    /// The HTTP response: `403`, the page, and `Connection: close`.
    static func response(site: String, why: String) -> [UInt8] {
        let body = Array(html(site: site, why: why).utf8)
        let head =
            "HTTP/1.1 403 Forbidden\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(body.count)\r\n"
            + "Cache-Control: no-store\r\nConnection: close\r\nX-Screentime: shielded\r\n\r\n"
        return Array(head.utf8) + body
    }

    static func html(site: String, why: String) -> String {
        let site = site.htmlEscaped
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
            <title>\(site) is shielded</title>
            <style>body{font:16px/1.5 system-ui,sans-serif;background:#f4f1ec;color:#222;margin:0}
            main{max-width:34em;margin:12vh auto;padding:2em;background:#fff;border-radius:12px}
            h1{font-size:1.4em;margin:0 0 .5em}code{background:#eee;padding:.1em .3em;border-radius:4px}</style>
            </head><body><main>
            <h1>\(site) is shielded</h1>
            <p>\(why.htmlEscaped)</p>
            <p>To ask a guardian for it, use the notice on your screen, or type
            <code>screentime ask --domain \(site)</code> in a terminal.</p>
            </main></body></html>

            """
    }
}

extension DomainShield {
    /// Answers a refused plain-HTTP request with the block page, on the queue's thread, before
    /// the refusal's verdict (so the page is ahead of the reset). A page that cannot be sent
    /// leaves the reset alone.
    ///
    /// Only to one of the machine's own addresses, on a connection past its handshake: a child's
    /// socket bound to any address (IPV6_FREEBIND needs no privilege) with the request on its SYN
    /// (TCP Fast Open) would otherwise have the agent send a page, from a source she chose, to
    /// wherever she named (the third attack's first finding).
    func sendBlockPage(answering packet: DNSPacket, refusal: ConnectionJudge.Refusal, uid: UInt32) {
        guard let pages, let name = refusal.name, let verdict = refusal.verdict,
            let host = name.lowercased.domainName,
            packet.tcpFlags & DNSPacket.flagSYN == 0, packet.tcpFlags & DNSPacket.flagACK != 0,
            RawPacketSender.isLocal(packet.source)
        else { return }
        let shown = eventDomain(host, uid: uid, verdict: verdict)
        let encounter = ShieldEncounter(
            kind: .webDomain, owner: uid, token: "", name: shown.unicode, identity: nil, categories: [], icon: nil,
            stores: verdict.stores, pid: nil, webReason: verdict.reason)
        let page = BlockPage.response(site: shown.unicode, why: ShieldPresenter.subtitle(encounter))
        guard let segment = packet.segmentBack(carrying: page, closing: true) else { return }
        do {
            try pages.send(segment)
        } catch {
            logger.debug("block page not sent", metadata: ["error": "\(error)"])
        }
    }
}
