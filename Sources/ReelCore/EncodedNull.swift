/// An optional that encodes as `null` when it has no value.
///
/// Swift's synthesized `Encodable` leaves a nil optional's key out of the JSON; the keys the
/// README documents (`"error": null`, `"violation": null`, …) are always there. Decoding
/// accepts the key missing or `null`.
@propertyWrapper
public struct EncodedNull<Value: Codable>: Codable {
    /// The value, or nil (encoded as `null`).
    public var wrappedValue: Value?

    /// Wraps `wrappedValue`.
    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    /// Decodes `null` as nil, anything else as `Value`.
    /// - Throws: `DecodingError` when the value is neither `null` nor a `Value`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        wrappedValue = c.decodeNil() ? nil : try c.decode(Value.self)
    }

    /// Encodes the value, or `null` when there is none.
    /// - Throws: `EncodingError` from the encoder or from `Value`'s encoding.
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
    /// - Throws: `DecodingError` when the key holds neither `null` nor a `V`.
    public func decode<V>(_ type: EncodedNull<V>.Type, forKey key: Key) throws -> EncodedNull<V> {
        try decodeIfPresent(type, forKey: key) ?? EncodedNull(wrappedValue: nil)
    }
}
