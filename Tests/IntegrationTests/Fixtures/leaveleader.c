/* Preloaded into a game (LD_PRELOAD): the game's main() runs on a second thread, and the first
 * thread (the process's leader, whose pid the process has) ends with pthread_exit. The kernel
 * tells the leader's exit while the game plays on: taken for the process's end, it went
 * untracked. Built as a shared library by the process-shield tests. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

typedef int (*entry_t)(int, char **, char **);
typedef int (*start_t)(entry_t, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);

static entry_t game;
static int count;
static char **arguments;
static char **environment;

static void *play(void *unused) {
    (void)unused;
    exit(game(count, arguments, environment));
}

static int leave(int argc, char **argv, char **envp) {
    count = argc;
    arguments = argv;
    environment = envp;
    pthread_t thread;
    if (pthread_create(&thread, 0, play, 0) != 0) return game(argc, argv, envp);
    pthread_exit(0);
}

int __libc_start_main(entry_t main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end) {
    game = main;
    start_t start = (start_t)dlsym(RTLD_NEXT, "__libc_start_main");
    return start(leave, argc, argv, init, fini, rtld_fini, stack_end);
}
