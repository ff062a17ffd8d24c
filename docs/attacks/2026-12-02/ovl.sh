#!/bin/bash
# as the child: overlay/bind mounts in a user+mount namespace, then exec / read the shielded program through them
set -x
unshare -Urm bash -c '
  d=$(mktemp -d /tmp/hkovl.XXXX); mkdir -p $d/up $d/work $d/m $d/b
  mount -t overlay overlay -o lowerdir=/usr/local/lib/hktest,upperdir=$d/up,workdir=$d/work $d/m && echo overlay-mounted
  ls -l $d/m
  stat -c "%d %i %n" /usr/local/lib/hktest/hkprobe $d/m/hkprobe
  timeout 2 $d/m/hkprobe; echo "exec via overlay rc=$?"
  timeout 2 cat $d/m/hkprobe > $d/copy; echo "read via overlay rc=$? size=$(stat -c %s $d/copy)"
  mount --bind /usr/local/lib/hktest $d/b && echo bind-mounted
  timeout 2 $d/b/hkprobe; echo "exec via bind rc=$?"
  mount -t overlay overlay -o lowerdir=/usr/local/lib/hktest:/tmp,upperdir=$d/up,workdir=$d/work $d/m 2>&1
  ln /usr/local/lib/hktest/hkprobe $d/hard 2>&1; echo hardlink rc=$?
'
