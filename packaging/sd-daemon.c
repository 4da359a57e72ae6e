/* The two functions of libsystemd's sd-daemon API that libdbus calls, for
   linking libdbus statically (docs/daemon.md#footprint): libdbus-1.so brings
   libsystemd and the six libraries it links into every process, about 0.8 MB
   of resident pages, for these two alone. They follow sd_listen_fds(3) and
   sd_is_socket(3); libdbus calls them only for a server listening on a
   "systemd:" address, which widget-host never does. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define SD_LISTEN_FDS_START 3

static int parse_number(const char *text, unsigned long *out) {
    char *end = NULL;
    if (text == NULL || *text == '\0') return -EINVAL;
    errno = 0;
    unsigned long value = strtoul(text, &end, 10);
    if (errno != 0 || *end != '\0') return -EINVAL;
    *out = value;
    return 0;
}

int sd_listen_fds(int unset_environment) {
    unsigned long pid, count;
    int result;
    if (parse_number(getenv("LISTEN_PID"), &pid) < 0 || (pid_t)pid != getpid()) {
        result = 0;
    } else if (parse_number(getenv("LISTEN_FDS"), &count) < 0 || count > INT_MAX - SD_LISTEN_FDS_START) {
        result = -EINVAL;
    } else {
        result = (int)count;
        for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + result; fd++) {
            int flags = fcntl(fd, F_GETFD);
            if (flags < 0 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0) {
                result = -errno;
                break;
            }
        }
    }
    if (unset_environment) {
        unsetenv("LISTEN_PID");
        unsetenv("LISTEN_FDS");
        unsetenv("LISTEN_FDNAMES");
    }
    return result;
}

int sd_is_socket(int fd, int family, int type, int listening) {
    struct stat st;
    int value;
    socklen_t length;
    if (fd < 0) return -EBADF;
    if (family < 0 || listening < -1) return -EINVAL;
    if (fstat(fd, &st) < 0) return -errno;
    if (!S_ISSOCK(st.st_mode)) return 0;
    if (type != 0) {
        length = sizeof(value);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &value, &length) < 0) return -errno;
        if (length != sizeof(value) || value != type) return 0;
    }
    if (listening >= 0) {
        length = sizeof(value);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &value, &length) < 0) return -errno;
        if (length != sizeof(value) || !value != !listening) return 0;
    }
    if (family > 0) {
        length = sizeof(value);
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &value, &length) < 0) return -errno;
        if (length != sizeof(value) || value != family) return 0;
    }
    return 1;
}
