/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A network namespace of a test's own (unshare(CLONE_NEWNET)) starts with
 * its loopback down: kml_net_lo_up() brings it up, so 127.0.0.1 and ::1
 * carry the test's packets and nobody else's.
 */
#ifndef KML_NET_H
#define KML_NET_H

#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static inline int kml_net_lo_up(void)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret;

	if (s < 0)
		return -1;
	strcpy(ifr.ifr_name, "lo");
	ret = ioctl(s, SIOCGIFFLAGS, &ifr);
	if (!ret) {
		ifr.ifr_flags |= IFF_UP;
		ret = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	close(s);
	return ret;
}

#endif
