/* A library of the child's own, loaded into a program that runs through a lock (by a debugger,
 * before the lock): any code of hers mapped there is enough to hold it. Built by the login tests. */
__attribute__((constructor)) static void hello(void) {}
int evil_marker = 42;
