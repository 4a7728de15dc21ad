// libmicrohttpd (Debian's libmicrohttpd-dev) for the preview's HTTP server.
// Swift cannot call C variadic functions, so the daemon is started here, with a fixed
// option list; the listening socket is made here too, so a port in use or a bad address is
// reported with its errno before the daemon exists.
#ifndef REEL_CMICROHTTPD_H
#define REEL_CMICROHTTPD_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>
#include <errno.h>
#include <microhttpd.h>

/// Binds and listens on `host`:`port` (an IPv4 or IPv6 literal). Returns the socket, or -1
/// with `*error` set to the errno of the failing call (EINVAL for an address that does not
/// parse); `*boundPort` receives the port actually bound (useful with port 0).
static inline int CMicroHTTPD_listen(const char *host, uint16_t port, int backlog, int *error, uint16_t *boundPort) {
    struct sockaddr_storage storage = {0};
    socklen_t length;
    int family;
    struct sockaddr_in *v4 = (struct sockaddr_in *)&storage;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&storage;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        family = AF_INET; v4->sin_family = AF_INET; v4->sin_port = htons(port); length = sizeof *v4;
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        family = AF_INET6; v6->sin6_family = AF_INET6; v6->sin6_port = htons(port); length = sizeof *v6;
    } else {
        *error = EINVAL; return -1;
    }
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) { *error = errno; return -1; }
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0
        || bind(fd, (struct sockaddr *)&storage, length) != 0
        || listen(fd, backlog) != 0
        || getsockname(fd, (struct sockaddr *)&storage, &length) != 0) {
        *error = errno;
        int closed = close(fd);
        (void)closed; // the bind/listen error is the one reported
        return -1;
    }
    *boundPort = ntohs(family == AF_INET ? v4->sin_port : v6->sin6_port);
    return fd;
}

/// Starts a daemon with one thread per connection (a streaming client blocks only its own
/// thread) on the listening socket `fd`. `connectionLimit` caps concurrent connections (no
/// per-address cap: on 127.0.0.0/8 every client can have an address of its own, and a cap per
/// address only lets a client lock out others from its own one), `memoryLimit` the bytes each
/// connection may use for its request (huge headers get 431), `timeout` closes connections
/// idle that many seconds. `notify` (MHD_OPTION_NOTIFY_CONNECTION, called with `context`)
/// hears each connection start and close: the caller enforces a total deadline for the
/// headers of unauthenticated connections with it (libmicrohttpd's own timeout is reset by
/// every byte a client trickles).
static inline struct MHD_Daemon *CMicroHTTPD_start(int fd, MHD_AccessHandlerCallback handler, void *context,
                                                   MHD_NotifyConnectionCallback notify,
                                                   unsigned connectionLimit, size_t memoryLimit, unsigned timeout) {
    return MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
                            0, NULL, NULL, handler, context,
                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
                            MHD_OPTION_CONNECTION_LIMIT, connectionLimit,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memoryLimit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout,
                            MHD_OPTION_NOTIFY_CONNECTION, notify, context,
                            MHD_OPTION_END);
}

/// The socket of `connection` (MHD_get_connection_info is variadic: Swift cannot call it),
/// or -1. libmicrohttpd closes it only after MHD_CONNECTION_NOTIFY_CLOSED (0.9.75,
/// MHD_cleanup_connections), so it may be shut down until that notification.
static inline int CMicroHTTPD_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

// Closed C enums import as Swift enums with shortened case names; these keep the C spelling.
static const enum MHD_Result CMicroHTTPD_yes = MHD_YES;
static const enum MHD_Result CMicroHTTPD_no = MHD_NO;
static const enum MHD_ValueKind CMicroHTTPD_headerKind = MHD_HEADER_KIND;
static const enum MHD_ValueKind CMicroHTTPD_argumentKind = MHD_GET_ARGUMENT_KIND;
static const enum MHD_ResponseMemoryMode CMicroHTTPD_mustCopy = MHD_RESPMEM_MUST_COPY;
static const ssize_t CMicroHTTPD_endOfStream = MHD_CONTENT_READER_END_OF_STREAM;
static const ssize_t CMicroHTTPD_endWithError = MHD_CONTENT_READER_END_WITH_ERROR;
static const uint64_t CMicroHTTPD_sizeUnknown = MHD_SIZE_UNKNOWN;
static const enum MHD_ConnectionNotificationCode CMicroHTTPD_connectionStarted = MHD_CONNECTION_NOTIFY_STARTED;
static const enum MHD_ValueKind CMicroHTTPD_cookieKind = MHD_COOKIE_KIND;
#endif
