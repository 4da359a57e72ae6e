#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DBus
import Synchronization
import WidgetHostCore
#if canImport(Glibc)
import Glibc
#endif

/// The files of `--state-dir`: a snapshot of ``DurableState`` and a journal of
/// the ``StateRecord``s since. Both are lines `<checksum> <json>`, one record
/// each, every line checked on its own: damage costs the records it touches.
///
/// - `state.json`: the line `widgethost-state 2 <checksum>`, then the state as
///   records — the ids last minted, each bundle, widget, Live Activity and
///   timeline, and the ids last minted again, which closes the file. Written
///   whole to `state.json.tmp`, synced, renamed over `state.json`, and the
///   directory synced: a crash leaves the old snapshot or the new one, never a
///   mix. A version 1 snapshot (the header, then the whole state as one JSON
///   document under one checksum) is still read, and written again as version 2.
/// - `journal`: one line per record. ``append(_:)`` returns only once the line
///   is on disk (`fdatasync`), so a change the host acknowledged survives a crash.
///
/// The directory keeps no image of the state in memory: ``open(directory:)``
/// hands back what it read, and ``compact(_:)`` takes the state to write from
/// the caller, who has it anyway (the host builds it from its model).
///
/// Checksums are FNV-1a 64 of the JSON text, in hex (the header's, of its first
/// two words). At ``open(directory:)`` the snapshot is read and the journal
/// replayed onto it (``StateFile/readSnapshot(_:)``, ``StateFile/readJournal(_:onto:damagedBefore:)``):
/// - a line that fails its checksum or is no record is dropped, and reading
///   goes on at the next line. The dropped lines are kept aside, as they were,
///   in `<name>.corrupt-<unix time>`, and each is logged (``notes``) with the
///   object it held as far as that can still be read. A damaged header costs
///   nothing; a newline damaged into another byte costs nothing either (both
///   lines are still read);
/// - the journal's last line, when it fails its checksum and has no newline,
///   is a write that never completed (never acknowledged): dropped, quietly.
///   A last line whose checksum matches is kept, newline or not: it was
///   synced, so acknowledged;
/// - a snapshot that cannot be read at all (not a state file, a version this
///   host does not read, a damaged version 1 snapshot) is moved aside whole as
///   `state.json.corrupt-<unix time>`.
/// No id is minted twice: the counters are taken past every id any record
/// names, every id the dropped lines name, and every id the files kept aside
/// in the directory name. Then, unless the snapshot alone already held
/// everything (no journalled record, nothing damaged), the state is compacted
/// into a fresh snapshot and an empty journal: a host restarted after a clean
/// stop writes nothing before it serves.
///
/// A full, read-only or failing disk never loses or invents a record: a write
/// that fails throws and leaves the files as they were — a partly written line
/// is cut back off before anything else is written — and nothing needs the
/// space it frees to go on. Opening a directory that cannot be written (full,
/// read-only) still reads it; the snapshot it cannot write is left for later
/// (``needsSnapshot``), and the journal is opened when a write first needs it.
///
/// Not thread-safe: one owner uses it (the host's ``JournalWriter`` once the
/// host has read it).
public final class StateDirectory {
    public let path: String
    /// What was read while opening; handed to the caller by ``open(directory:)``.
    private var state: DurableState
    /// What opening found: files kept aside, records dropped.
    public private(set) var notes: [String] = []

    private var journal: Int32 = -1
    /// `lock`, held (a POSIX record lock) while this value lives: one host per directory.
    private var lock: Int32 = -1
    /// The lock file as device and inode, while this value holds it.
    private var lockedFile: String?
    /// The lock files this process holds: a POSIX lock keeps out other
    /// processes only, so a second opening in the same process is told apart here.
    private static let openHere = Mutex<Set<String>>([])

    /// The bytes of whole records in the journal: where the next one goes.
    private var journalBytes = 0
    /// The journal file may hold more than `journalBytes` (an append that
    /// failed part way): it is cut back before anything else is written.
    private var journalTorn = false
    /// The journal's last record has no newline: the next append begins with one.
    private var journalUnterminated = false
    private var snapshotBytes = 0
    /// What opening read is to be written again at once: damage, the old layout, counters moved.
    private var rewrite = false
    /// The highest ids the dropped lines and the files kept aside name.
    private var scan = MintedIDScan()
    /// Damaged lines not yet kept aside (the disk refused): file name and bytes.
    /// No snapshot is written before they are, so the file still holds them.
    private var unkept: [(name: String, bytes: [UInt8])] = []
    /// The files do not hold the whole state — the journal changed under this
    /// host, or a change was never written — so the next write must be a snapshot
    /// (``compact(_:)``) rather than an append.
    public private(set) var needsSnapshot = false

    static let snapshotName = "state.json"
    static let journalName = "journal"

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
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            notes.append("cannot create \(directory) (\(error)); starting empty, and writes fail until it can be created")
        }
        try takeLock()
        scanKeptAside()
        readSnapshot()
        replayJournal()
        let reserved = state.reserve(scan)
        if !reserved.isEmpty {
            rewrite = true
            let ids = reserved.joined(separator: " and ")
            notes.append("ids up to \(ids) are named only in damaged lines or files kept aside: none of them is minted again")
        }
        // A clean stop left the whole state in the snapshot: nothing to write.
        if snapshotBytes > 0 && journalBytes == 0 && !journalTorn && !needsSnapshot && !rewrite { return }
        do {
            try compact(state)
        } catch {
            // A full or read-only disk: serve what was read; the journal takes
            // writes once it can, and the snapshot is written later.
            notes.append("cannot write a snapshot to \(directory) (\(error)); serving what it holds and writing when it can")
        }
    }

    deinit { release() }

    /// Closes the files and gives up the lock, so that another host (or
    /// another opening) may take the directory at once; nothing can be
    /// written after it.
    public func release() {
        if journal >= 0 { close(journal) }
        journal = -1
        if lock >= 0 { close(lock) }
        lock = -1
        if let lockedFile { _ = Self.openHere.withLock { $0.remove(lockedFile) } }
        lockedFile = nil
    }

    /// Two hosts writing one directory would lose each other's records: the
    /// second one is refused, naming the first.
    /// A directory this host cannot write (read-only) is still locked through a
    /// read-only descriptor when the lock file exists; without one, no other
    /// host can write there either.
    private func takeLock() throws {
        let name = file("lock")
        // One opening at a time in this process, checked before the file is
        // opened: closing any descriptor of a file drops every POSIX lock the
        // process holds on it, so a refused second opening must never open it.
        try Self.openHere.withLock { held in
            var status = stat()
            if stat(name, &status) == 0, held.contains(Self.key(status)) {
                throw StateDirectoryError.inUse(path, holder: "\(getpid())")
            }
            lock = Glibc.open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            if lock < 0 { lock = Glibc.open(name, O_RDONLY | O_CLOEXEC) }
            guard lock >= 0 else {
                notes.append("cannot open \(name) (\(String(cString: strerror(errno)))); going on unlocked")
                return
            }
            // A POSIX record lock belongs to this process: unlike flock, a child
            // forked meanwhile (to exec a helper) does not hold it on, so it ends
            // exactly when this value closes it. A read-only descriptor can only
            // take a read lock, which still keeps out any host that would write.
            var request = Glibc.flock()
            request.l_type = Int16(fcntl(lock, F_GETFL) & O_ACCMODE == O_RDONLY ? F_RDLCK : F_WRLCK)
            request.l_whence = Int16(SEEK_SET)
            guard fcntl(lock, F_SETLK, &request) == 0 else {
                // Another process holds it; this one holds nothing on the file to lose.
                let holder = (try? String(contentsOfFile: name, encoding: .utf8))?.split(separator: "\n").first.map(String.init) ?? "?"
                close(lock)
                lock = -1
                throw StateDirectoryError.inUse(path, holder: holder)
            }
            if fstat(lock, &status) == 0 {
                lockedFile = Self.key(status)
                held.insert(Self.key(status))
            }
        }
        // Who holds it, for the message another host gives; best effort.
        if lock >= 0, ftruncate(lock, 0) == 0 { try? writeAll(lock, Array("\(getpid())\n".utf8), what: name) }
    }

    /// A file as device and inode.
    private static func key(_ status: stat) -> String { "\(status.st_dev):\(status.st_ino)" }

    // MARK: Writing

    /// Appends journal lines (``StateFile/line(_:)``: the writer encodes them
    /// where it can still refuse the change) with one sync, and returns once
    /// they are on disk.
    ///
    /// - Throws: ``StateDirectoryError/system(_:)`` when the disk refuses, or
    ///   ``StateDirectoryError/behind`` when the files can take only a snapshot.
    ///   Either way the journal holds what it held: a line written in part is
    ///   cut off now, or before the next write.
    public func append(lines: [String]) throws {
        guard !lines.isEmpty else { return }
        guard !needsSnapshot else { throw StateDirectoryError.behind }
        let text = (journalUnterminated ? "\n" : "") + lines.joined()
        try openJournal()
        do {
            try writeAll(journal, Array(text.utf8), what: Self.journalName)
            guard fdatasync(journal) == 0 else { throw StateDirectoryError.failed("fdatasync \(Self.journalName)", errno) }
        } catch {
            journalTorn = true
            try? cutBack()
            throw error
        }
        journalBytes += text.utf8.count
        journalUnterminated = false
    }

    /// Opens the journal for appending if it is not open (a start on a
    /// read-only disk), and cuts off what a failed append left.
    private func openJournal() throws {
        if journal < 0 {
            let fd = Glibc.open(file(Self.journalName), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw StateDirectoryError.failed("open \(Self.journalName)", errno) }
            var st = stat()
            guard fstat(fd, &st) == 0 else {
                let code = errno
                close(fd)
                throw StateDirectoryError.failed("fstat \(Self.journalName)", code)
            }
            journal = fd
            if Int(st.st_size) < journalBytes {
                // Shorter than what was read from it: changed under this host. Never extend
                // it with zeros; write the whole state as a snapshot next instead.
                needsSnapshot = true
                throw StateDirectoryError.failed("the journal changed while the host was running; a snapshot is written instead", EIO)
            }
            journalTorn = journalTorn || Int(st.st_size) > journalBytes
        }
        if journalTorn { try cutBack() }
    }

    /// Cuts the journal back to its whole records. Shrinking a file needs no
    /// free space, so this works on a full disk.
    private func cutBack() throws {
        guard retryingOnEINTR({ ftruncate(journal, off_t(journalBytes)) }) == 0 else {
            throw StateDirectoryError.failed("ftruncate \(Self.journalName)", errno)
        }
        guard fdatasync(journal) == 0 else { throw StateDirectoryError.failed("fdatasync \(Self.journalName)", errno) }
        journalTorn = false
    }

    /// Whether the journal has grown past the snapshot (and 4 MiB), so that a
    /// ``compact()`` is worth its cost; compacting then keeps the total work linear.
    public var wantsCompaction: Bool { journalBytes > max(4 << 20, 2 * snapshotBytes) }

    /// Writes `state` — everything journalled so far, as the caller holds it — as
    /// a new snapshot and empties the journal.
    ///
    /// A failure leaves the old snapshot and journal as they were (a half-written
    /// temporary file is removed, giving its space back), so it changes nothing.
    public func compact(_ state: DurableState) throws {
        let bytes = try StateFile.snapshot(state)
        try keepUnkeptAside()
        let temporary = file(Self.snapshotName + ".tmp")
        try writeSynced(temporary, bytes, O_TRUNC)
        guard rename(temporary, file(Self.snapshotName)) == 0 else {
            let code = errno
            unlink(temporary)
            throw StateDirectoryError.failed("rename \(temporary)", code)
        }
        // The new snapshot is in place. A crash before the directory sync leaves the
        // old snapshot and the journal, which together hold the same state.
        try syncDirectory()
        snapshotBytes = bytes.count
        needsSnapshot = false
        // The snapshot holds every record now: empty the journal. Should that fail, its
        // records replay onto the snapshot to the same state, so nothing is lost.
        if journal < 0 {
            journal = Glibc.open(file(Self.journalName), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        }
        if journal >= 0, retryingOnEINTR({ ftruncate(journal, 0) }) == 0, fsync(journal) == 0 {
            journalBytes = 0
            journalTorn = false
            journalUnterminated = false
        }
    }

    // MARK: Reading

    private func readSnapshot() {
        let name = Self.snapshotName
        guard let bytes = contents(file(name)) else { return }
        let (read, reading) = StateFile.readSnapshot(bytes)
        if let why = reading.unreadable {
            scan.scan(bytes)
            scan.end()
            return keepAside(name, why)
        }
        state = read
        snapshotBytes = bytes.count
        take(reading, of: name, bytes)
    }

    private func replayJournal() {
        let name = Self.journalName
        guard let bytes = contents(file(name)), !bytes.isEmpty else { return }
        let reading = StateFile.readJournal(bytes, onto: &state, damagedBefore: rewrite)
        journalBytes = reading.end
        journalTorn = reading.torn
        journalUnterminated = reading.unterminated
        take(reading, of: name, bytes)
    }

    /// Logs what reading `name` found, and keeps its damaged lines aside.
    private func take(_ reading: StateFileReading, of name: String, _ bytes: [UInt8]) {
        rewrite = rewrite || reading.rewrite
        for note in reading.notes { notes.append("\(file(name)): \(note)") }
        guard !reading.damaged.isEmpty else { return }
        var damaged: [UInt8] = []
        for run in reading.damaged {
            damaged += bytes[run.bytes]
            scan.scan(bytes[run.bytes])
            scan.end()
        }
        let kept: String
        do {
            kept = "kept aside in " + (try keepAside(damaged, of: name))
        } catch {
            unkept.append((name, damaged))
            kept = "it cannot be kept aside yet (\(error)), so \(file(name)) is not rewritten until it can be"
        }
        for run in reading.damaged {
            let held = run.held.isEmpty ? "what it held cannot be read" : "dropped " + run.held.joined(separator: ", ")
            notes.append("\(file(name)) \(run.place) is damaged (\(run.problem)); \(held); \(kept)")
        }
    }

    /// Writes damaged lines of `name` to a new file beside it; its path.
    private func keepAside(_ bytes: [UInt8], of name: String) throws -> String {
        let aside = asideName(name)
        try writeSynced(aside, bytes, O_EXCL)
        try syncDirectory()
        return aside
    }

    /// Keeps aside what opening could not, before anything replaces the files that hold it.
    private func keepUnkeptAside() throws {
        while let (name, bytes) = unkept.first {
            _ = try keepAside(bytes, of: name)
            unkept.removeFirst()
        }
    }

    /// Moves a file none of which can be read aside. The files still hold
    /// what was read (the journal alone), so appends may go on.
    private func keepAside(_ name: String, _ why: String) {
        let aside = asideName(name)
        if rename(file(name), aside) == 0 {
            notes.append("\(file(name)) is damaged (\(why)); kept aside as \(aside); starting from what could be trusted")
        } else {
            notes.append("\(file(name)) is damaged (\(why)) and could not be moved aside: \(String(cString: strerror(errno)))")
        }
    }

    /// `<name>.corrupt-<unix time>`, with `-2`, `-3`… when that is taken.
    private func asideName(_ name: String) -> String {
        let base = file("\(name).corrupt-\(Int(Date().timeIntervalSince1970))")
        var aside = base
        var n = 1
        while access(aside, F_OK) == 0 {
            n += 1
            aside = "\(base)-\(n)"
        }
        return aside
    }

    /// Reads the ids the files kept aside name, so that none is minted again.
    private func scanKeptAside() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        for name in names where name.contains(".corrupt-") {
            let fd = Glibc.open(file(name), O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            while true {
                let count = buffer.withUnsafeMutableBytes { space in retryingOnEINTR { read(fd, space.baseAddress!, space.count) } }
                guard count > 0 else { break }
                scan.scan(buffer[..<count])
            }
            scan.end()
        }
    }

    /// The bytes of the file at `path`; nil when it cannot be read.
    private func contents(_ path: String) -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return [UInt8](data)
    }

    // MARK: Helpers

    private func file(_ name: String) -> String { path + "/" + name }

    /// Writes `bytes` to a new file at `path` (`flags`: `O_TRUNC` or `O_EXCL`)
    /// and syncs it; a failure removes what was written, giving its space back.
    private func writeSynced(_ path: String, _ bytes: [UInt8], _ flags: Int32) throws {
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | flags | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StateDirectoryError.failed("open \(path)", errno) }
        do {
            defer { close(fd) }
            try writeAll(fd, bytes, what: path)
            guard fsync(fd) == 0 else { throw StateDirectoryError.failed("fsync \(path)", errno) }
        } catch {
            unlink(path)
            throw error
        }
    }

    private func writeAll(_ fd: Int32, _ bytes: [UInt8], what: String) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { space in retryingOnEINTR { write(fd, space.baseAddress! + offset, bytes.count - offset) } }
            guard written >= 0 else { throw StateDirectoryError.failed("write \(what)", errno) }
            offset += written
        }
    }

    private func syncDirectory() throws {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw StateDirectoryError.failed("open \(path)", errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw StateDirectoryError.failed("fsync \(path)", errno) }
    }
}

extension StateDirectoryError {
    /// `what` failed with `code` (an `errno`), in the system's words.
    static func failed(_ what: String, _ code: Int32) -> StateDirectoryError {
        .system("\(what): \(String(cString: strerror(code)))")
    }
}
