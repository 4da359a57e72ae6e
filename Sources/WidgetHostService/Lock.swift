import Foundation

/// NSLock with a closure helper.
struct NSLockish: Sendable {
    private let lock = NSLock()
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
