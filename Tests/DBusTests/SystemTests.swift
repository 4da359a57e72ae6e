import Glibc
import Testing
@testable import DBus

@Suite("The loop's system calls")
struct SystemTests {
    @Test("A signalled eventfd wakes poll; drained, it sleeps again; errors carry errno")
    func wakeAndDrain() throws {
        let fd = try System.eventFD()
        defer { System.close(fd) }
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        #expect(try System.poll(&fds, timeout: 0) == 0)
        try System.signal(fd)
        try System.signal(fd)
        #expect(try System.poll(&fds, timeout: 0) == 1)
        try System.drain(fd)
        // Draining an empty eventfd (EAGAIN) is not an error.
        try System.drain(fd)
        fds[0].revents = 0
        #expect(try System.poll(&fds, timeout: 0) == 0)
        #expect(throws: System.Failure.self) { try System.drain(-1) }
        do { try System.drain(-1) } catch { #expect(error.errno == EBADF && error.description.hasPrefix("read: ")) }
    }
}
