/// The ids the host mints for widgets (`w1`, `w2`, …) and Live Activities
/// (`a1`, …): a letter and a number that grows with each one, never reused.
public enum MintedID {
    /// The number of `id` minted with `prefix`; 0 for anything else.
    public static func number(_ id: String, prefix: Character) -> UInt64 {
        guard id.first == prefix else { return 0 }
        return UInt64(id.dropFirst()) ?? 0
    }

    /// Mint order: `w2` before `w10`.
    public static func areInOrder(_ a: String, _ b: String) -> Bool {
        a.utf8.count != b.utf8.count ? a.utf8.count < b.utf8.count : a < b
    }
}
