/// The format of a state directory's files, from and to bytes: lines
/// `<checksum> <json>`, one ``StateRecord`` each, and a snapshot's header
/// `widgethost-state <version> <checksum>` (WidgetHostSystem's `StateDirectory`
/// describes the files and writes them). Nothing here touches a file.
public enum StateFile {
    static let header = "widgethost-state"

    /// A record as the journal line a state directory's journal holds. Encoding is
    /// where a value JSON cannot hold is found, so a writer calls this where it
    /// can still refuse the change (the host's thread), and appends elsewhere.
    /// - Throws: ``StateDirectoryError/encoding(_:)``.
    public static func line(_ record: StateRecord) throws -> String {
        let json = try encoding { () throws(JSONWriter.NotFinite) in try record.jsonText() }
        return checksum(json) + " " + json + "\n"
    }

    /// `state` as a snapshot: the header, then a line per record, the ids
    /// minted first and last (the last line closes the file).
    /// - Throws: ``StateDirectoryError/encoding(_:)``.
    package static func snapshot(_ state: DurableState) throws -> [UInt8] {
        var bytes = Array("\(header) \(DurableState.formatVersion) \(checksum("\(header) \(DurableState.formatVersion)"))\n".utf8)
        try state.forEachRecord { bytes += try line($0).utf8 }
        return bytes
    }

    /// A record or state as JSON; a value JSON cannot hold (a NaN) is the
    /// caller's input, not the disk: ``StateDirectoryError/encoding(_:)``.
    private static func encoding(_ body: () throws(JSONWriter.NotFinite) -> String) throws(StateDirectoryError) -> String {
        do { return try body() } catch { throw .encoding(error.description) }
    }

    /// FNV-1a 64 of the UTF-8 text, as 16 hex digits.
    static func checksum(_ text: String) -> String {
        var text = text
        let hex = String(text.withUTF8(hash), radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// FNV-1a 64 of `bytes`.
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}

/// A state directory's operation that failed (WidgetHostSystem's
/// `StateDirectory` and `JournalWriter`), or a value its format cannot hold.
public enum StateDirectoryError: Error, Sendable, CustomStringConvertible {
    /// A system call that failed, and what the system said (WidgetHostSystem
    /// makes one from `errno`).
    case system(String)
    case inUse(String, holder: String)
    /// A value that cannot be written as JSON: the caller's input, not the disk.
    case encoding(String)
    /// An append while the files lag behind the state: write a snapshot instead.
    case behind

    public var description: String {
        switch self {
        case .system(let failure): failure
        case .inUse(let path, let holder):
            "\(path) is in use by another widget-hostd (process \(holder)); stop it, or give this one its own --state-dir"
        case .encoding(let what): "a value cannot be written as JSON: \(what)"
        case .behind: "the files lag behind the state, so the next write must be a snapshot"
        }
    }
}
