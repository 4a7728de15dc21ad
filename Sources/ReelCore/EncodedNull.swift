/// An optional that encodes as `null` when it has no value.
///
/// Swift's synthesized `Encodable` leaves a nil optional's key out of the JSON; the keys the
/// README documents (`"error": null`, `"violation": null`, …) are always there. Decoding
/// accepts the key missing or `null`.
@propertyWrapper
public struct EncodedNull<Value: Codable>: Codable {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        wrappedValue = c.decodeNil() ? nil : try c.decode(Value.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        if let wrappedValue { try c.encode(wrappedValue) } else { try c.encodeNil() }
    }
}

extension EncodedNull: Sendable where Value: Sendable {}
extension EncodedNull: Equatable where Value: Equatable {}
extension EncodedNull: Hashable where Value: Hashable {}

extension KeyedDecodingContainer {
    /// A missing key decodes as nil (what the synthesized decoding of a plain optional does).
    public func decode<V>(_ type: EncodedNull<V>.Type, forKey key: Key) throws -> EncodedNull<V> {
        try decodeIfPresent(type, forKey: key) ?? EncodedNull(wrappedValue: nil)
    }
}
