/// Double-to-integer conversions that cannot trap: `Int(x)` stops the process when `x` is
/// NaN, infinite or out of range, and many Doubles come from the command line or a device.
extension Int64 {
    /// `x` rounded toward zero, NaN as 0, and clamped to ±2⁶² (far beyond any time or size
    /// Reel works with, and still safe to add to).
    public init(saturating x: Double) {
        let limit = 4.611686018427388e18   // 2^62
        if x.isNaN { self = 0 } else if x >= limit { self = 1 << 62 } else if x <= -limit { self = -(1 << 62) } else { self = Int64(x) }
    }
}

extension Int {
    /// `x` rounded toward zero, NaN as 0, clamped to ±2⁶² (see `Int64.init(saturating:)`).
    public init(saturating x: Double) { self = Int(Int64(saturating: x)) }
}

extension UInt64 {
    /// `x` rounded toward zero, negative and NaN as 0, clamped to 2⁶².
    public init(saturating x: Double) { self = UInt64(Swift.max(0, Int64(saturating: x))) }
}
