"""A parent that waits as su, sudo and a shell with job control do (WUNTRACED): it runs each
program given, COUNT times over, and says how often a child of its was seen stopped.

usage: watchstop.py COUNT PROGRAM [PROGRAM ...]   prints "runs=N stops=K"
"""
import os
import sys

count = int(sys.argv[1])
programs = sys.argv[2:]
runs = stops = 0
for _ in range(count):
    for program in programs:
        pid = os.fork()
        if pid == 0:
            try:
                os.execv(program, [program])
            finally:
                os._exit(127)
        while True:
            _, status = os.waitpid(pid, os.WUNTRACED)
            if os.WIFSTOPPED(status):
                stops += 1
                # As su does on a stopped child: it would stop itself here; this one lets it go on.
                os.kill(pid, 18)
                continue
            break
        runs += 1
print("runs=%d stops=%d" % (runs, stops))
