/* A program that does nothing but wait, built static for a chroot that has nothing else
 * (the hardening tests' sandbox with a FIFO for .flatpak-info). Writes "up" to the file it is
 * given (relative to its root) when it starts, if any. */
#include <fcntl.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc > 1) {
        int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            (void)write(fd, "up\n", 3);
            close(fd);
        }
    }
    for (;;) pause();
}
