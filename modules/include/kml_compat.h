/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place where kmodlab bends to kernel API changes between the
 * kernels it supports (6.1 and 6.12). Modules include this instead of
 * sprinkling LINUX_VERSION_CODE checks.
 */
#ifndef _KML_COMPAT_H
#define _KML_COMPAT_H

#include <linux/compiler.h>
#include <linux/version.h>

/* __counted_by() (bounds-checked flexible arrays) arrived in 6.6. */
#ifndef __counted_by
#define __counted_by(member)
#endif

#endif /* _KML_COMPAT_H */
