import Foundation
import PrivateBus

#if canImport(Glibc)
import Glibc
#endif

/// Counts a process's calls into the allocator (`malloc`, `calloc`,
/// `realloc` and the aligned ones), by a shim preloaded into it that counts
/// each call into a page it shares with the benchmark, then hands the call to
/// glibc's allocator under its own names (`__libc_malloc`…). The count is
/// the whole process's, every thread's, read before and after a run.
struct AllocationCounter {
    let shim: PreloadShim

    /// Builds the shim with the system C compiler.
    static func build() async throws -> AllocationCounter {
        AllocationCounter(shim: try await PreloadShim.build(named: "allocation-counter") { _ in source })
    }

    /// A count for one process: start the process with ``Count/environment``.
    func count(_ name: String) throws -> Count {
        let path = shim.directory + "/\(name).count"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0, ftruncate(fd, 4096) == 0 else {
            if fd >= 0 { close(fd) }
            throw PrivateBusError("cannot create the allocation count \(path)")
        }
        return Count(fd: fd, environment: ["LD_PRELOAD": shim.path, "WIDGETHOST_ALLOCATION_COUNTER": path])
    }

    func remove() { shim.remove() }

    /// One process's count.
    final class Count: Sendable {
        let fd: Int32
        /// What to add to the process's environment.
        let environment: [String: String]

        init(fd: Int32, environment: [String: String]) {
            self.fd = fd
            self.environment = environment
        }

        deinit { close(fd) }

        /// The calls counted so far.
        var value: UInt64 {
            var value: UInt64 = 0
            _ = pread(fd, &value, 8, 0)
            return value
        }
    }

    /// The shim. Only what is counted goes through it; `free` stays glibc's,
    /// which takes what `__libc_malloc` gave.
    static let source = """
        #define _GNU_SOURCE
        #include <errno.h>
        #include <fcntl.h>
        #include <stdlib.h>
        #include <sys/mman.h>
        #include <unistd.h>

        extern void *__libc_malloc(size_t);
        extern void *__libc_calloc(size_t, size_t);
        extern void *__libc_realloc(void *, size_t);
        extern void *__libc_memalign(size_t, size_t);

        /* In the page shared with the benchmark; null, counting nothing, until mapped. */
        static unsigned long long *count;

        static void counted(void) {
            if (count) __atomic_fetch_add(count, 1, __ATOMIC_RELAXED);
        }

        void *malloc(size_t size) { counted(); return __libc_malloc(size); }
        void *calloc(size_t n, size_t size) { counted(); return __libc_calloc(n, size); }
        void *realloc(void *p, size_t size) { counted(); return __libc_realloc(p, size); }
        void *memalign(size_t alignment, size_t size) { counted(); return __libc_memalign(alignment, size); }
        void *aligned_alloc(size_t alignment, size_t size) { counted(); return __libc_memalign(alignment, size); }
        void *valloc(size_t size) { counted(); return __libc_memalign(sysconf(_SC_PAGESIZE), size); }
        int posix_memalign(void **out, size_t alignment, size_t size) {
            if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
            counted();
            void *p = __libc_memalign(alignment, size);
            if (!p) return ENOMEM;
            *out = p;
            return 0;
        }

        __attribute__((constructor)) static void map_count(void) {
            const char *path = getenv("WIDGETHOST_ALLOCATION_COUNTER");
            if (!path) return;
            int fd = open(path, O_RDWR | O_CLOEXEC);
            if (fd >= 0) {
                void *page = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                close(fd);
                if (page != MAP_FAILED) count = page;
            }
            /* The processes this one starts are not counted. */
            unsetenv("WIDGETHOST_ALLOCATION_COUNTER");
            unsetenv("LD_PRELOAD");
        }
        """
}
