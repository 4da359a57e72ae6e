import Foundation
import PrivateBus
import Synchronization
import Testing
@testable import WidgetHostCore
@testable import WidgetHostSystem

/// The journal writer: group commit, reports in order, and a failed write
/// stopping every later one until the host has put its model back.
@Suite("Journal writer")
struct JournalWriterTests {
    /// Collects what the writer reports, and lets a test wait for a number of reports.
    final class Reports: Sendable {
        private let seen = Mutex<[JournalWriter.Report]>([])
        var all: [JournalWriter.Report] { seen.withLock { $0 } }
        func add(_ report: JournalWriter.Report) { seen.withLock { $0.append(report) } }

        func waitFor(_ count: Int) async throws {
            for _ in 0..<2000 where all.count < count { try await Task.sleep(for: .milliseconds(5)) }
            #expect(all.count >= count, "\(all)")
        }

        /// The `through` of each `written`, and `nil` for each `failed`.
        var outcomes: [UInt64?] {
            all.compactMap { report in
                switch report {
                case .written(let through, _): through
                case .failed: UInt64?.none
                default: UInt64?.some(0)
                }
            }
        }
    }

    static func line(_ n: Int, bytes: Int = 64) throws -> String {
        try StateFile.line(StorageFaultTests.record(n, bytes: bytes))
    }

    @Test("Appends queued while a sync runs share the next one; every write is reported, in order, and read back")
    func groupCommit() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("wh-writer-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let reports = Reports()
        do {
            let (directory, _) = try StateDirectory.open(directory: dir)
            let writer = JournalWriter(directory) { reports.add($0) }
            var numbers: [UInt64] = []
            for n in 1...500 { numbers.append(writer.append([try Self.line(n)])) }
            await writer.finish()
            let written = reports.outcomes.compactMap { $0 }
            #expect(written.last == numbers.last, "the last report covers the last write")
            #expect(written == written.sorted(), "reported in order")
            #expect(written.count < numbers.count / 2, "\(written.count) syncs for \(numbers.count) writes: they were grouped")
        }
        let (_, image) = try StateDirectory.open(directory: dir)
        #expect(image.bundles.count == 500)
    }

    @Test(
        "A failed write stops the writer: what was queued after it is dropped until resume(), then writes go on",
        .enabled(if: SmallDisk.isAvailable, "mounting a tmpfs needs root"))
    func failureHaltsUntilResume() async throws {
        let disk = try SmallDisk(bytes: 256 << 10)
        defer { disk.unmount() }
        let dir = disk.path + "/state"
        let reports = Reports()
        do {
            let (directory, _) = try StateDirectory.open(directory: dir)
            let writer = JournalWriter(directory) { reports.add($0) }
            let first = writer.append([try Self.line(1)])
            try await reports.waitFor(1)
            try disk.fill()
            writer.append([try Self.line(2, bytes: 40_000)])
            try await reports.waitFor(2)
            // Written after the failure, before the host put its model back: dropped, even with room again.
            disk.makeRoom()
            writer.append([try Self.line(3)])
            writer.compact(DurableState())
            writer.resume()
            let last = writer.append([try Self.line(4)])
            await writer.finish()
            #expect(reports.outcomes == [first, nil, last], "\(reports.all)")
        }
        let (_, image) = try StateDirectory.open(directory: dir)
        #expect(image.bundles.keys.sorted() == ["org.example.App1", "org.example.App4"], "the refused write and those after it are not on disk")
    }
}
