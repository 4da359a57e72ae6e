import CDBus

#if canImport(Glibc)
import Glibc
#endif

/// The connection loop's system calls, in one place (as NIOPosix's System.swift
/// keeps SwiftNIO's): each retries `EINTR` and reads `errno` once, here.
enum System {
    /// A failed call and its `errno`.
    struct Failure: Error, CustomStringConvertible {
        let call: StaticString
        let errno: Int32
        var description: String { "\(call): \(String(cString: strerror(errno)))" }
    }

    /// Runs `body` until it does not fail with `EINTR`; `-1` becomes a `Failure`.
    @inline(__always)
    private static func retrying<T: FixedWidthInteger>(_ call: StaticString, _ body: () -> T) throws(Failure) -> T {
        let result = retryingOnEINTR(body)
        guard result == -1 else { return result }
        throw Failure(call: call, errno: errno)
    }

    /// A non-blocking eventfd for waking a loop (eventfd(2) cannot fail with EINTR).
    static func eventFD() throws(Failure) -> Int32 {
        let fd = cdbus_wakeup_fd()
        guard fd >= 0 else { throw Failure(call: "eventfd", errno: errno) }
        return fd
    }

    static func close(_ fd: Int32) {
        // Linux closes the descriptor even when close(2) reports EINTR: never retry.
        _ = Glibc.close(fd)
    }

    /// Adds one to an eventfd. A counter at its maximum (`EAGAIN`) wakes the reader already.
    static func signal(_ fd: Int32) throws(Failure) {
        var one: UInt64 = 1
        do { _ = try retrying("write") { write(fd, &one, 8) } } catch where error.errno == EAGAIN {}
    }

    /// Empties an eventfd; one that was empty (`EAGAIN`) is fine.
    static func drain(_ fd: Int32) throws(Failure) {
        var count: UInt64 = 0
        do { _ = try retrying("read") { read(fd, &count, 8) } } catch where error.errno == EAGAIN {}
    }

    /// `poll(2)`. A signal (`EINTR`) is not retried with the same timeout: it
    /// answers 0, so the loop works out its timers' timeout again.
    static func poll(_ fds: inout [pollfd], timeout: Int32) throws(Failure) -> Int32 {
        let ready = Glibc.poll(&fds, nfds_t(fds.count), timeout)
        guard ready == -1 else { return ready }
        let code = errno
        if code == EINTR { return 0 }
        throw Failure(call: "poll", errno: code)
    }

}

/// Runs a system call until it is not interrupted: its result, with `errno`
/// set by the call when the result is negative. The package's one `EINTR`
/// loop: the binding's calls use it, and so does the package's other system code.
@inline(__always)
package func retryingOnEINTR<Result: BinaryInteger>(_ body: () -> Result) -> Result {
    while true {
        let result = body()
        if result >= 0 || errno != EINTR { return result }
    }
}

/// CLOCK_MONOTONIC in nanoseconds (which cannot fail for this clock): the
/// clock of the loop's timers and of call deadlines.
package func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}
