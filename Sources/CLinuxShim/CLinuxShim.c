#include "CLinuxShim.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <linux/fs.h>
#include <linux/mount.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <unistd.h>

int screentime_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred credentials;
    socklen_t length = sizeof(credentials);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    if (length != sizeof(credentials)) {
        errno = EPROTO;
        return -1;
    }
    *pid = credentials.pid;
    *uid = credentials.uid;
    *gid = credentials.gid;
    return 0;
}

int screentime_accept(int fd) { return accept4(fd, NULL, NULL, SOCK_CLOEXEC); }

int screentime_pipe(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int screentime_inode_generation(int fd, unsigned int *generation) {
    long value = 0;
    if (ioctl(fd, FS_IOC_GETVERSION, &value) != 0) return -1;
    *generation = (unsigned int)value;
    return 0;
}

int screentime_enter_network_namespace(int fd) { return (int)syscall(SYS_setns, fd, 0x40000000 /* CLONE_NEWNET */); }

int screentime_pidfd_open(int pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

int screentime_pidfd_send_signal(int pidfd, int signal) {
    return (int)syscall(SYS_pidfd_send_signal, pidfd, signal, NULL, 0);
}

int screentime_fspick(const char *path) { return (int)syscall(SYS_fspick, AT_FDCWD, path, FSPICK_CLOEXEC); }

int screentime_fsconfig_set(int fd, const char *key, const char *value) {
    if (value) return (int)syscall(SYS_fsconfig, fd, FSCONFIG_SET_STRING, key, value, 0);
    return (int)syscall(SYS_fsconfig, fd, FSCONFIG_SET_FLAG, key, NULL, 0);
}

int screentime_fsconfig_reconfigure(int fd) {
    return (int)syscall(SYS_fsconfig, fd, FSCONFIG_CMD_RECONFIGURE, NULL, NULL, 0);
}

int screentime_filesystem_type(int fd, long *type) {
    struct statfs information;
    if (fstatfs(fd, &information) != 0) return -1;
    *type = (long)information.f_type;
    return 0;
}

long screentime_send_with_descriptors(int fd, const void *bytes, unsigned long length, const int *descriptors,
                                      int count) {
    struct iovec vector = {(void *)bytes, length};
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    char control[CMSG_SPACE(sizeof(int) * SCREENTIME_MAX_DESCRIPTORS)];
    if (count > 0) {
        if (count > SCREENTIME_MAX_DESCRIPTORS) {
            errno = EINVAL;
            return -1;
        }
        memset(control, 0, sizeof control);
        message.msg_control = control;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)count);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)count);
        memcpy(CMSG_DATA(header), descriptors, sizeof(int) * (size_t)count);
    }
    return sendmsg(fd, &message, MSG_NOSIGNAL);
}

long screentime_receive_with_descriptors(int fd, void *bytes, unsigned long capacity, int *descriptors,
                                         int capacity_descriptors, int *count, int flags) {
    struct iovec vector = {bytes, capacity};
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    // Room for more than are wanted: what does not fit in the control buffer is closed by the
    // kernel (MSG_CTRUNC), what fits beyond the wanted count is closed here.
    char control[CMSG_SPACE(sizeof(int) * SCREENTIME_MAX_DESCRIPTORS * 2)];
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    *count = 0;
    long received = recvmsg(fd, &message, MSG_CMSG_CLOEXEC | flags);
    if (received < 0) return received;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        size_t number = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int *incoming = (int *)CMSG_DATA(header);
        for (size_t index = 0; index < number; index++) {
            int descriptor;
            memcpy(&descriptor, incoming + index, sizeof descriptor);
            if (*count < capacity_descriptors) {
                descriptors[(*count)++] = descriptor;
            } else {
                close(descriptor);
            }
        }
    }
    return received;
}

int screentime_group_list(const char *user, gid_t gid, gid_t *groups, int *count) {
    int capacity = *count;
    int result = getgrouplist(user, gid, groups, count);
    if (result == -1 && *count <= capacity) *count = capacity * 2;
    return result == -1 ? -1 : 0;
}

int screentime_receive_datagrams(int fd, void *buffer, unsigned int slot_size, unsigned int count,
                                 unsigned int *lengths) {
    if (count > SCREENTIME_MAX_DATAGRAMS) count = SCREENTIME_MAX_DATAGRAMS;
    struct mmsghdr messages[SCREENTIME_MAX_DATAGRAMS];
    struct iovec vectors[SCREENTIME_MAX_DATAGRAMS];
    memset(messages, 0, sizeof(struct mmsghdr) * count);
    for (unsigned int index = 0; index < count; index++) {
        vectors[index].iov_base = (unsigned char *)buffer + (size_t)index * slot_size;
        vectors[index].iov_len = slot_size;
        messages[index].msg_hdr.msg_iov = &vectors[index];
        messages[index].msg_hdr.msg_iovlen = 1;
    }
    int received = recvmmsg(fd, messages, count, MSG_DONTWAIT, NULL);
    for (int index = 0; index < received; index++) lengths[index] = messages[index].msg_len;
    return received;
}

int screentime_open_path(const char *path, int follow_symlinks) {
    return open(path, O_PATH | O_CLOEXEC | (follow_symlinks ? 0 : O_NOFOLLOW));
}

int screentime_name_thread(const char *name) {
    char truncated[16];
    strncpy(truncated, name, sizeof truncated - 1);
    truncated[sizeof truncated - 1] = 0;
    return prctl(PR_SET_NAME, truncated, 0, 0, 0);
}

int screentime_open_pty(int *number) {
    int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (master < 0) return -1;
    int unlock = 0;
    if (ioctl(master, TIOCSPTLCK, &unlock) != 0 || ioctl(master, TIOCGPTN, number) != 0) {
        int saved = errno;
        close(master);
        errno = saved;
        return -1;
    }
    return master;
}

int screentime_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

int screentime_thread_id(void) { return (int)syscall(SYS_gettid); }
