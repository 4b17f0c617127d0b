/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Extensible ioctl structs, the way DRM and the newer system calls
 * (openat2, clone3, sched_setattr) do it.
 *
 * An ioctl number already carries the size of its argument. The kmodlab
 * modules match a command with that size masked out and take the size
 * from the number as the caller's idea of the struct (usize), so a struct
 * may grow by appending fields:
 *
 *  - in (the caller writes): an older, smaller caller gets the new fields
 *    zeroed, which must mean "the old behaviour"; a newer, larger caller
 *    works as long as everything past what the kernel knows is zero, and
 *    gets -E2BIG otherwise (copy_struct_from_user()). Below the first
 *    published size: -EINVAL.
 *  - out (the kernel writes): the kernel writes min(usize, ksize) bytes
 *    and zeroes the rest of a larger caller's struct.
 *
 * Reserved and flags fields must be zero (-EINVAL), so they can carry
 * meaning later without an old kernel silently ignoring them.
 */
#ifndef _KML_IOCTL_H
#define _KML_IOCTL_H

#include <linux/errno.h>
#include <linux/ioctl.h>
#include <linux/minmax.h>
#include <linux/uaccess.h>

/* The command with its size bits cleared: what a switch matches on. */
#define KML_IOC_NOSIZE(cmd)	((cmd) & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT))

/**
 * kml_copy_struct_in() - copy an extensible struct from userspace
 * @dst: kernel struct
 * @ksize: sizeof(*@dst)
 * @src: user pointer
 * @usize: the size the caller's ioctl number gave
 * @minsize: the first published size of the struct
 *
 * Return: 0, -EINVAL if @usize < @minsize, -E2BIG if the caller's tail
 * beyond @ksize is not zero, or -EFAULT.
 */
static inline int kml_copy_struct_in(void *dst, size_t ksize,
				     const void __user *src, size_t usize,
				     size_t minsize)
{
	if (usize < minsize)
		return -EINVAL;
	return copy_struct_from_user(dst, ksize, src, usize);
}

/**
 * kml_copy_struct_out() - copy an extensible struct to userspace
 * @dst: user pointer
 * @usize: the size the caller's ioctl number gave
 * @src: kernel struct
 * @ksize: sizeof(*@src)
 *
 * There is no minimum here: an output-only command checks @usize
 * against its struct's first published size itself (-EINVAL), or a
 * caller asking for 0 bytes would get success and nothing. A struct that
 * is both input and output reads any new input field through a flag, so
 * an older kernel, which zeroes and ignores the tail, cannot misread it.
 *
 * Return: 0 or -EFAULT. A larger caller's tail is zeroed.
 */
static inline int kml_copy_struct_out(void __user *dst, size_t usize,
				      const void *src, size_t ksize)
{
	size_t n = min(usize, ksize);

	if (copy_to_user(dst, src, n))
		return -EFAULT;
	if (usize > ksize && clear_user((u8 __user *)dst + ksize, usize - ksize))
		return -EFAULT;
	return 0;
}

#endif /* _KML_IOCTL_H */
