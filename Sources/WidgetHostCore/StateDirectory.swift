#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The files of `--state-dir`: a snapshot of ``DurableState`` and a journal of
/// the ``StateRecord``s since, each line checksummed.
///
/// - `state.json`: the line `widgethost-state <version> <checksum>`, then the
///   state as JSON. Written whole to `state.json.tmp`, synced, renamed over
///   `state.json`, and the directory synced: a crash leaves the old snapshot or
///   the new one, never a mix.
/// - `journal`: one line per record, `<checksum> <json>`. ``append(_:)``
///   returns only once the line is on disk (`fdatasync`), so a change the host
///   acknowledged survives a crash.
///
/// The directory keeps no image of the state in memory: ``open(directory:)``
/// hands back what it read, and ``compact(_:)`` takes the state to write from
/// the caller, who has it anyway (the host builds it from its model).
///
/// Checksums are FNV-1a 64 of the JSON text, in hex. At ``open(directory:)``
/// the snapshot is read and the journal replayed onto it: a last line cut
/// short is a write that never completed (never acknowledged) and is dropped;
/// any other bad line, or a bad snapshot, is corruption: the file is kept aside
/// as `<name>.corrupt-<unix time>` for inspection and the host starts with
/// what came before the damage. Then the state is compacted into a fresh
/// snapshot and an empty journal.
///
/// Not thread-safe: one owner (the host's actor) uses it.
public final class StateDirectory {
    public let path: String
    /// What was read while opening; handed to the caller by ``open(directory:)``.
    private var state: DurableState
    /// What opening found: files kept aside, records dropped.
    public private(set) var notes: [String] = []

    private var journal: Int32 = -1
    /// `lock`, held (flock) while this value lives: one host per directory.
    private var lock: Int32 = -1
    private var journalBytes = 0
    private var snapshotBytes = 0

    static let snapshotName = "state.json"
    static let journalName = "journal"
    static let header = "widgethost-state"

    /// Opens (creating when needed) the directory, reads what it holds — the
    /// snapshot with every journalled record applied — and compacts it.
    /// - Throws: `StateDirectoryError` when the directory cannot be created or written.
    public static func open(directory: String) throws -> (StateDirectory, DurableState) {
        let opened = try StateDirectory(directory: directory)
        let state = opened.state
        opened.state = DurableState()
        return (opened, state)
    }

    private init(directory: String) throws {
        path = directory
        state = DurableState()
        // The user's widgets and activities: readable by the user alone.
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try takeLock()
        readSnapshot()
        replayJournal()
        try compact(state)
    }

    deinit {
        if journal >= 0 { close(journal) }
        if lock >= 0 { close(lock) }
    }

    /// Two hosts writing one directory would lose each other's records: the
    /// second one is refused, naming the first.
    private func takeLock() throws {
        let name = file("lock")
        lock = Glibc.open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else { throw StateDirectoryError.system("open \(name)", errno) }
        guard flock(lock, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOfFile: name, encoding: .utf8))?.split(separator: "\n").first.map(String.init) ?? "?"
            close(lock)
            lock = -1
            throw StateDirectoryError.inUse(path, holder: holder)
        }
        _ = ftruncate(lock, 0)
        try writeAll(lock, Array("\(getpid())\n".utf8), what: name)
    }

    // MARK: Writing

    /// Appends a record and waits until it is on disk.
    public func append(_ record: StateRecord) throws {
        let json = String(decoding: try JSONEncoder().encode(record), as: UTF8.self)
        let line = Self.checksum(json) + " " + json + "\n"
        try writeAll(journal, Array(line.utf8), what: Self.journalName)
        guard fdatasync(journal) == 0 else { throw StateDirectoryError.system("fdatasync \(Self.journalName)", errno) }
        journalBytes += line.utf8.count
    }

    /// Appends several records with one sync.
    public func append(_ records: [StateRecord]) throws {
        guard records.count > 1 else { return try records.first.map(append) ?? () }
        var text = ""
        for record in records {
            let json = String(decoding: try JSONEncoder().encode(record), as: UTF8.self)
            text += Self.checksum(json) + " " + json + "\n"
        }
        try writeAll(journal, Array(text.utf8), what: Self.journalName)
        guard fdatasync(journal) == 0 else { throw StateDirectoryError.system("fdatasync \(Self.journalName)", errno) }
        journalBytes += text.utf8.count
    }

    /// Whether the journal has grown past the snapshot (and 4 MiB), so that a
    /// ``compact()`` is worth its cost; compacting then keeps the total work linear.
    public var wantsCompaction: Bool { journalBytes > max(4 << 20, 2 * snapshotBytes) }

    /// Writes `state` — everything journalled so far, as the caller holds it — as
    /// a new snapshot and empties the journal.
    public func compact(_ state: DurableState) throws {
        let json = String(decoding: try JSONEncoder().encode(state), as: UTF8.self)
        let text = "\(Self.header) \(DurableState.formatVersion) \(Self.checksum(json))\n\(json)\n"
        let temporary = file(Self.snapshotName + ".tmp")
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StateDirectoryError.system("open \(temporary)", errno) }
        do {
            try writeAll(fd, Array(text.utf8), what: temporary)
            guard fsync(fd) == 0 else { throw StateDirectoryError.system("fsync \(temporary)", errno) }
        } catch {
            close(fd)
            throw error
        }
        close(fd)
        guard rename(temporary, file(Self.snapshotName)) == 0 else { throw StateDirectoryError.system("rename \(temporary)", errno) }
        try syncDirectory()
        snapshotBytes = text.utf8.count
        // The snapshot holds every record now: start an empty journal.
        if journal >= 0 { close(journal) }
        journal = Glibc.open(file(Self.journalName), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o600)
        guard journal >= 0 else { throw StateDirectoryError.system("open \(Self.journalName)", errno) }
        guard fsync(journal) == 0 else { throw StateDirectoryError.system("fsync \(Self.journalName)", errno) }
        try syncDirectory()
        journalBytes = 0
    }

    // MARK: Reading

    private func readSnapshot() {
        let name = Self.snapshotName
        guard let data = FileManager.default.contents(atPath: file(name)) else { return }
        let text = String(decoding: data, as: UTF8.self)
        guard let newline = text.firstIndex(of: "\n") else { return keepAside(name, "it has no header line") }
        let header = text[..<newline].split(separator: " ")
        var body = String(text[text.index(after: newline)...])
        while body.hasSuffix("\n") { body.removeLast() }
        guard header.count == 3, header[0] == Self.header else {
            return keepAside(name, "its first line is not '\(Self.header) <version> <checksum>'")
        }
        guard header[1] == "\(DurableState.formatVersion)" else {
            return keepAside(name, "it is format version \(header[1]); this host reads version \(DurableState.formatVersion)")
        }
        guard header[2] == Self.checksum(body) else { return keepAside(name, "its checksum does not match (cut short or damaged)") }
        do {
            state = try JSONDecoder().decode(DurableState.self, from: Data(body.utf8))
            snapshotBytes = data.count
        } catch {
            keepAside(name, "it does not decode: \(error)")
        }
    }

    private func replayJournal() {
        let name = Self.journalName
        guard let data = FileManager.default.contents(atPath: file(name)), !data.isEmpty else { return }
        let text = String(decoding: data, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let tornTail = lines.last.map { !$0.isEmpty } ?? false
        if !tornTail { lines.removeLast() }  // the empty string after the final newline
        var applied = 0
        for (index, line) in lines.enumerated() {
            if let record = Self.decode(line) {
                state.apply(record)
                applied += 1
                continue
            }
            if index == lines.count - 1 && tornTail {
                notes.append("\(file(name)): dropped a last record that was cut short (a write that never completed, so never acknowledged)")
            } else {
                keepAside(name, "line \(index + 1) of \(lines.count) is damaged; the \(applied) records before it were applied")
            }
            return
        }
    }

    static func decode(_ line: Substring) -> StateRecord? {
        guard let space = line.firstIndex(of: " ") else { return nil }
        let json = line[line.index(after: space)...]
        guard line[..<space] == checksum(String(json)) else { return nil }
        return try? JSONDecoder().decode(StateRecord.self, from: Data(json.utf8))
    }

    private func keepAside(_ name: String, _ why: String) {
        let aside = file("\(name).corrupt-\(Int(Date().timeIntervalSince1970))")
        if rename(file(name), aside) == 0 {
            notes.append("\(file(name)) is damaged (\(why)); kept aside as \(aside); starting from what could be trusted")
        } else {
            notes.append("\(file(name)) is damaged (\(why)) and could not be moved aside: \(String(cString: strerror(errno)))")
        }
    }

    // MARK: Helpers

    private func file(_ name: String) -> String { path + "/" + name }

    private func writeAll(_ fd: Int32, _ bytes: [UInt8], what: String) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                throw StateDirectoryError.system("write \(what)", errno)
            }
            offset += written
        }
    }

    private func syncDirectory() throws {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw StateDirectoryError.system("open \(path)", errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw StateDirectoryError.system("fsync \(path)", errno) }
    }

    /// FNV-1a 64 of the UTF-8 text, as 16 hex digits.
    static func checksum(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// A file operation of ``StateDirectory`` that failed.
public enum StateDirectoryError: Error, CustomStringConvertible {
    case system(String, Int32)
    case inUse(String, holder: String)

    public var description: String {
        switch self {
        case .system(let what, let code): "\(what): \(String(cString: strerror(code)))"
        case .inUse(let path, let holder):
            "\(path) is in use by another widget-hostd (process \(holder)); stop it, or give this one its own --state-dir"
        }
    }
}
