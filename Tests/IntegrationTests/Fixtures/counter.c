/* The process-shield tests' "app": counts, and writes the count to the file it is given every
 * few milliseconds. The file is made first thing in main(), so a program stopped before main()
 * leaves no file at all. */
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) return 64;
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 1;
    unsigned long long count = 0;
    for (;;) {
        count++;
        if (count % 1000 == 0) {
            char text[32];
            int length = snprintf(text, sizeof text, "%llu\n", count);
            if (pwrite(fd, text, (size_t)length, 0) < 0) return 1;
            struct timespec pause = {0, 1000000};
            nanosleep(&pause, NULL);
        }
    }
}
