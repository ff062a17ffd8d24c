#!/usr/bin/env python3
"""A child's process the agent never saw forked: it leaves its parent (adopted by init), then
forks with CLONE_PARENT and ends, so that the kernel reports the new process as a fork of
init's. The new process writes its pid to OUT.pid and counts into OUT, as a game plays.

usage: cloneparent.py OUT
"""
import ctypes
import os
import sys
import time

out = sys.argv[1]
if os.fork():
    os._exit(0)
time.sleep(0.3)  # adopted by init (or the nearest subreaper)
CLONE_PARENT, SIGCHLD, SYS_clone = 0x8000, 17, 56
pid = ctypes.CDLL(None, use_errno=True).syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0)
if pid != 0:
    os._exit(0)
with open(out + ".pid", "w") as f:
    f.write(str(os.getpid()))
count = 0
while True:
    count += 1
    with open(out + ".tmp", "w") as f:
        f.write(str(count))
    os.replace(out + ".tmp", out)
    time.sleep(0.01)
