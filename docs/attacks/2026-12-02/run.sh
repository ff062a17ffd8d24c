#!/bin/sh
# run CMD as hkid1
exec setpriv --reuid=hkid1 --regid=$(id -g hkid1) --init-groups -- "$@"
