/* The program the exec-latency benchmark starts: says "main() ran" on fd 3, then idles. */
#include <unistd.h>

int main(void) {
    (void)write(3, "m", 1);
    for (;;) pause();
}
