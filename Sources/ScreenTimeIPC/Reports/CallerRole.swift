/// Who a caller is to the agent (`ping`'s answer): a guardian, an authorized child or individual,
/// a monitor's extension acting for one, or anyone else.
public enum CallerRole: String, Codable, Sendable, Hashable {
    case guardian, child, individual, user
    /// A monitor's extension: it acts for one child or individual, on its client's stores and
    /// monitors only.
    case `extension`
}
