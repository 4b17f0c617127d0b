/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place kmodlab bends to kernel API changes between the kernels
 * it supports (6.1 and 6.12), so the modules read as current kernel code.
 */
#ifndef _KML_COMPAT_H
#define _KML_COMPAT_H

#include <linux/mm.h>

/*
 * Each KML_HAVE_* is set by probing the kernel's headers at build time
 * (see the top-level Kbuild), not by comparing version numbers, which
 * lie on vendor kernels that backport API changes.
 */

/*
 * vm_flags became read-only in 6.3: writers must use vm_flags_set() and
 * vm_flags_clear() (which also take the right lock). Before that, the
 * field was written directly.
 */
#ifndef KML_HAVE_VM_FLAGS_SET
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/*
 * __assign_str() fills a trace event's __string() field. Since 6.10 it
 * takes the field alone, and copies from the source __string() named.
 */
#ifdef KML_HAVE_ASSIGN_STR_1ARG
#define kml_assign_str(dst, src)	do { __assign_str(dst); (void)(src); } while (0)
#else
#define kml_assign_str(dst, src)	__assign_str(dst, src)
#endif

#endif /* _KML_COMPAT_H */
