/// What a reader of a connection's first bytes (a TLS ClientHello, an HTTP request head) made of
/// what has come so far.
public enum OpeningReading<Value: Hashable & Sendable>: Hashable, Sendable {
    /// Not this protocol at all: another reader may know it.
    case other
    /// This protocol, not all here yet.
    case incomplete
    case read(Value)
    /// This protocol, and it cannot be read: a lying length, a wrong message, garbage.
    case invalid(String)
}

extension OpeningReading {
    /// The same outcome with the value read turned into another.
    public func map<Other>(_ transform: (Value) -> Other) -> OpeningReading<Other> {
        switch self {
        case .other: .other
        case .incomplete: .incomplete
        case .read(let value): .read(transform(value))
        case .invalid(let reason): .invalid(reason)
        }
    }
}
