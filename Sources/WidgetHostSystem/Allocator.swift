import CAllocator
import Dispatch
import Synchronization

/// The C library's allocator.
public enum Allocator {
    /// Gives the pages freed memory left behind back to the system
    /// (`malloc_trim`): after a burst of short-lived allocations — reading a
    /// large state directory at start-up — the heap otherwise keeps its
    /// high-water mark resident for as long as the process lives.
    public static func returnFreePages() {
        _ = malloc_trim(0)
    }

    /// ``returnFreePages()`` on a thread of the system's pool, for a caller
    /// whose thread must not wait (the bus's): trimming walks the whole heap.
    /// Asked again while one is queued, the queued one serves both.
    public static func returnFreePagesInBackground() {
        guard !trimQueued.exchange(true, ordering: .acquiringAndReleasing) else { return }
        DispatchQueue.global(qos: .utility).async {
            trimQueued.store(false, ordering: .releasing)
            returnFreePages()
        }
    }

    private static let trimQueued = Atomic<Bool>(false)

    /// Serves every block of `bytes` or more from pages of its own that go back
    /// to the system the moment it is freed. glibc otherwise raises that
    /// threshold to the largest block freed so far (up to 32 MiB): one large
    /// message read and dropped — a call refused for its size — would move
    /// every later one of that size onto the heap, which keeps its high-water
    /// mark resident.
    public static func returnLargeBlocksAtOnce(from bytes: Int32 = 128 * 1024) {
        _ = mallopt(M_MMAP_THRESHOLD, bytes)
    }
}
