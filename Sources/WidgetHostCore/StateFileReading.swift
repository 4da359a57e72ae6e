// Reading the files of a state directory from their bytes: which lines hold
// records, which are damaged and what those seem to have held. Nothing here
// touches a file; WidgetHostSystem's `StateDirectory` keeps aside and logs
// what it finds.

/// What reading one file of a state directory found besides its records.
public struct StateFileReading: Sendable {
    /// Lines that could not be read, in runs of adjacent lines.
    public var damaged: [DamagedLines] = []
    /// Why none of the file can be read (not a state file, a version this host
    /// does not read, a version 1 snapshot that is damaged); nil when its
    /// lines were read.
    public var unreadable: String?
    /// What else the log should say: records skipped, lines joined, a file cut short.
    public var notes: [String] = []
    /// How many records were read.
    public var records = 0
    /// Where the last line read ends: where the next one goes.
    public var end = 0
    /// The last line was read but has no newline: whatever is written after
    /// it must begin with one.
    public var unterminated = false
    /// A journal's last line fails its checksum and has no newline: a write
    /// that never completed, so was never acknowledged. It is not read, and
    /// `end` is where it begins.
    public var torn = false
    /// The file is to be written again (a snapshot, at once): it is damaged,
    /// cut short, or in the old layout.
    public var rewrite = false
}

/// Adjacent lines of a state file that could not be read.
public struct DamagedLines: Sendable, Equatable {
    /// Their numbers, from 1.
    public var lines: ClosedRange<Int>
    /// Where they are in the file, newlines included.
    public var bytes: Range<Int>
    /// Why the first of them cannot be read.
    public var problem: String
    /// What they held, as far as it can still be read (``StateRecord/subject``, or ids).
    public var held: [String]

    /// "line 7", "lines 7–8".
    public var place: String { lines.count == 1 ? "line \(lines.lowerBound)" : "lines \(lines.lowerBound)–\(lines.upperBound)" }
}

extension StateFile {
    /// The state a snapshot's bytes hold, and what could not be read of them.
    /// A version 2 snapshot is read a line at a time, each line on its own; a
    /// version 1 snapshot is read whole or not at all.
    public static func readSnapshot(_ bytes: [UInt8]) -> (DurableState, StateFileReading) {
        var state = DurableState()
        var reading = StateFileReading()
        let newline = bytes.firstIndex(of: newlineByte)
        let body = newline.map { $0 + 1 } ?? bytes.count
        let fields = String(decoding: bytes[..<(newline ?? bytes.count)], as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false)
        var problem = newline == nil ? "it has no header line" : "its first line is not '\(header) <version> <checksum>'"
        if fields.count == 3 && fields[0] == header {
            if fields[1] == "1" {
                var text = String(decoding: bytes[body...], as: UTF8.self)
                while text.hasSuffix("\n") { text.removeLast() }
                if fields[2] == checksum(text) {
                    do {
                        state = try DurableState(jsonText: text)
                        reading.rewrite = true
                    } catch {
                        reading.unreadable = "it does not decode: \(error)"
                    }
                    return (state, reading)
                }
                problem = "its checksum does not match (cut short or damaged)"
            } else if fields[2] == checksum(fields[0] + " " + fields[1]) {
                guard fields[1] == "\(DurableState.formatVersion)" else {
                    reading.unreadable = "it is format version \(fields[1]); this host reads versions 1 and \(DurableState.formatVersion)"
                    return (state, reading)
                }
                readLines(bytes, from: body, firstLine: 2, isJournal: false, into: &state, &reading)
                return (state, reading)
            }
        }
        // A header this host does not trust: a damaged one, when records follow it.
        readLines(bytes, from: body, firstLine: 2, isJournal: false, into: &state, &reading)
        guard reading.records > 0 else { return (DurableState(), StateFileReading(unreadable: problem)) }
        reading.rewrite = true
        reading.damaged.insert(DamagedLines(lines: 1...1, bytes: 0..<body, problem: problem, held: ["the header"]), at: 0)
        return (state, reading)
    }

    /// Applies the records of a journal's bytes to `state`. A damaged line
    /// costs that line: reading goes on at the next one. `damagedBefore`: the
    /// snapshot lost records, so a record may refer to what is not there.
    public static func readJournal(_ bytes: [UInt8], onto state: inout DurableState, damagedBefore: Bool = false) -> StateFileReading {
        var reading = StateFileReading()
        readLines(bytes, from: 0, firstLine: 1, isJournal: true, damagedBefore: damagedBefore, into: &state, &reading)
        return reading
    }

    /// Reads the lines of `bytes` from `start` on, `<checksum> <json>` each.
    ///
    /// A line whose newline was damaged into another byte runs into the next
    /// one: both are still read (``salvage(_:ended:)``). In a snapshot the
    /// last record is ``StateRecord/minted(widget:activity:)``: a snapshot
    /// that ends on another record was cut short.
    private static func readLines(
        _ bytes: [UInt8], from start: Int, firstLine: Int, isJournal: Bool, damagedBefore: Bool = false,
        into state: inout DurableState, _ reading: inout StateFileReading
    ) {
        reading.end = start
        var offset = start
        var number = firstLine - 1
        // The last line that is not blank: its number, whether it ends on the closing record, whether it was lost.
        var (last, closed, lost) = (firstLine - 1, false, false)
        while offset < bytes.count {
            number += 1
            let newline = bytes[offset...].firstIndex(of: newlineByte)
            let line = bytes[offset..<(newline ?? bytes.count)]
            let next = newline.map { $0 + 1 } ?? bytes.count
            defer { offset = next }
            guard !line.isEmpty else { continue }
            let found = salvage(line, ended: newline != nil)
            if isJournal && newline == nil && found.records.isEmpty {
                reading.torn = true
                reading.notes.append("dropped a last record that was cut short (a write that never completed, so never acknowledged)")
                return
            }
            for record in found.records {
                if case .timeline(let timeline) = record, state.widgets[timeline.widgetID] == nil, damagedBefore || !reading.damaged.isEmpty {
                    reading.notes.append("line \(number) (\(record.subject)) is skipped: no line read places the widget")
                }
                state.apply(record)
            }
            reading.records += found.records.count
            reading.end = next
            last = number
            lost = found.lost
            if case .minted? = found.records.last { closed = true } else { closed = false }
            if !found.intact {
                reading.rewrite = true
                if found.lost {
                    reading.addDamage(number, offset..<next, problem(line), held(line))
                } else {
                    reading.notes.append("line \(number) held two records, its newline damaged; both are read")
                }
            }
            if newline == nil {
                reading.unterminated = true
                reading.rewrite = true
                if found.intact { reading.notes.append("its last line has lost its newline; its checksum matches, so its record is kept") }
            }
        }
        if !isJournal && !closed && !lost {
            reading.rewrite = true
            reading.notes.append("it ends before its closing line (cut short): records after line \(last) are missing")
        }
    }

    /// What a line holds: its record, or the records of the lines it joins.
    /// `intact` when nothing is damaged; `lost` when a record is.
    ///
    /// A newline damaged into another byte joins two lines; so the line is
    /// tried from every place a line can begin (16 hex digits and a space,
    /// after a `}` and the damaged byte), at most 64 of them. A last line
    /// whose newline was damaged is tried without its last byte.
    static func salvage(_ line: ArraySlice<UInt8>, ended: Bool) -> (records: [StateRecord], intact: Bool, lost: Bool) {
        if let record = record(line) { return ([record], true, false) }
        var tried = 0
        var begin = line.startIndex + 18
        while begin + 17 < line.endIndex && tried < 64 {
            defer { begin += 1 }
            guard line[begin - 2] == UInt8(ascii: "}"), line[begin + 16] == UInt8(ascii: " "), hex(line[begin..<(begin + 16)]) != nil else {
                continue
            }
            tried += 1
            guard let tail = record(line[begin...]) else { continue }
            let head = salvage(line[..<(begin - 1)], ended: true)
            return (head.records + [tail], false, head.lost || head.records.isEmpty)
        }
        if !ended, line.count > 1, let record = record(line.dropLast()) { return ([record], false, false) }
        return ([], false, true)
    }

    /// The record a line (without its newline) holds: nil when its checksum
    /// does not match or it is not a record.
    static func record(_ line: ArraySlice<UInt8>) -> StateRecord? {
        checked(line).flatMap { try? StateRecord(jsonText: String(decoding: $0, as: UTF8.self)) }
    }

    /// The JSON of a line whose checksum matches.
    private static func checked(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard line.count > 17, line[line.startIndex + 16] == UInt8(ascii: " "), let sum = hex(line.prefix(16)) else { return nil }
        let json = line.dropFirst(17)
        return json.withUnsafeBufferPointer(hash) == sum ? json : nil
    }

    /// Why `line` is not a record.
    private static func problem(_ line: ArraySlice<UInt8>) -> String {
        guard let json = checked(line) else { return "its checksum does not match" }
        do { _ = try StateRecord(jsonText: String(decoding: json, as: UTF8.self)) } catch {
            return "its checksum matches, but it is not a record this host reads: \(error)"
        }
        return "it cannot be read"
    }

    /// What a damaged line held, as far as it can still be read: its record
    /// when the damage left its JSON readable, else the highest ids it names.
    private static func held(_ line: ArraySlice<UInt8>) -> [String] {
        if let space = line.firstIndex(of: UInt8(ascii: " ")),
            let record = try? StateRecord(jsonText: String(decoding: line[(space + 1)...], as: UTF8.self))
        {
            return [record.subject]
        }
        var scan = MintedIDScan()
        scan.scan(line)
        let ids = [scan.widget > 0 ? "w\(scan.widget)" : nil, scan.activity > 0 ? "a\(scan.activity)" : nil].compactMap { $0 }
        return ids.isEmpty ? [] : ["a record naming " + ids.joined(separator: " and ")]
    }

    /// The number 16 lowercase hex digits write.
    private static func hex(_ digits: ArraySlice<UInt8>) -> UInt64? {
        guard digits.count == 16 else { return nil }
        var value: UInt64 = 0
        for byte in digits {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value << 4 | UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = value << 4 | UInt64(byte - UInt8(ascii: "a") + 10)
            default: return nil
            }
        }
        return value
    }

    static let newlineByte = UInt8(ascii: "\n")
}

extension StateFileReading {
    init(unreadable: String) { self.unreadable = unreadable }

    /// Adds line `number` to the damaged lines, with the run before it when they meet.
    mutating func addDamage(_ number: Int, _ bytes: Range<Int>, _ problem: String, _ held: [String]) {
        if let last = damaged.last, last.lines.upperBound == number - 1 {
            damaged[damaged.count - 1].lines = last.lines.lowerBound...number
            damaged[damaged.count - 1].bytes = last.bytes.lowerBound..<bytes.upperBound
            damaged[damaged.count - 1].held += held
        } else {
            damaged.append(DamagedLines(lines: number...number, bytes: bytes, problem: problem, held: held))
        }
    }
}
