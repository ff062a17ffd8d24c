// CNetlink — libnl-3 and libnl-route-3 (Debian's libnl-3-dev, libnl-route-3-dev): every netlink
// socket the agent opens goes through them. The kernel's connector headers come along because
// the proc connector's messages (cn_msg, proc_event) are what libnl carries on that socket.
#ifndef CNETLINK_SHIM_H
#define CNETLINK_SHIM_H

#include <linux/netlink.h>
#include <linux/connector.h>
#include <linux/cn_proc.h>
#include <netlink/netlink.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/socket.h>
#include <netlink/route/link.h>

#endif
