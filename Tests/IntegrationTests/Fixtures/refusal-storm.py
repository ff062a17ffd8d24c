#!/usr/bin/env python3
"""A refusal storm, run as a child denied installs: COUNT copies of /usr/bin/true in DIRECTORY,
each one byte different (so each is a new program to hash and name), each started once. Prints
'refused N ran M'.

usage: refusal-storm.py DIRECTORY COUNT
"""
import os
import sys

directory, count = sys.argv[1], int(sys.argv[2])
with open("/usr/bin/true", "rb") as f:
    program = f.read()
refused = ran = 0
for index in range(count):
    path = os.path.join(directory, "copy%d" % index)
    with open(path, "wb") as f:
        f.write(program + index.to_bytes(4, "little"))
    os.chmod(path, 0o755)
    try:
        pid = os.posix_spawn(path, [path], {})
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) == 0:
            ran += 1
        else:
            refused += 1
    except PermissionError:
        refused += 1
    os.unlink(path)
print("refused %d ran %d" % (refused, ran))
