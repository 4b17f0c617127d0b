/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kml_ring userspace ABI: a perf-style ring buffer shared between the
 * kernel (producer) and a process (consumer) through mmap(2) of
 * /dev/kml_ring.
 *
 * Each open file has its own ring. Size it with KML_RING_IOC_SET_SIZE
 * (a power of two of pages), then map:
 *
 *   offset 0,          1 page,  PROT_READ|PROT_WRITE   struct kml_ring_ctrl
 *   offset page size,  N pages, PROT_READ only         the data area
 *
 * Records are 8-byte aligned and never straddle the end of the data area:
 * when one does not fit in what is left, the producer fills the rest with
 * a %KML_RING_REC_PAD record and starts again at offset 0. A record's
 * offset is (position & (data_size - 1)).
 *
 * Ordering, as for perf_event_mmap_page's data_head/data_tail:
 *
 *   consumer                              kernel producer
 *   head = load_acquire(&ctrl->head)      tail = load_acquire(&ctrl->tail)
 *   read records in [tail, head)          if the record fits in size-(head-tail):
 *   store_release(&ctrl->tail, head)        write it at head
 *                                           store_release(&ctrl->head, head+size)
 *
 * The acquire on head guarantees the consumer sees the record bytes the
 * release published; the release on tail guarantees the consumer has
 * finished reading before the producer may overwrite the space. head and
 * tail are free-running 64-bit byte counts that never wrap in practice.
 *
 * Instead of mapping, a consumer may read(2) whole records: read() copies
 * as many whole records as fit (-EINVAL if the next one does not fit),
 * returns 0 at once for a count of 0, and blocks only while the ring is
 * empty, whatever the watermark (-EAGAIN with O_NONBLOCK). A signal ends
 * the wait with -EINTR, or restarts the call under SA_RESTART; closing the
 * descriptor in another thread does not end it, and a restarted call then
 * fails with -EBADF, as for any file (a poll() woken by the signal reports
 * POLLNVAL for the closed descriptor, never POLLIN).
 * A file opened read-only may map both areas read-only.
 *
 * Limits, because any user may open the device: ring pages are charged
 * to the opener's memory cgroup, to the opener's user (module parameter
 * user_pages; inside a user namespace, to the user who made it) and to a
 * budget shared by all rings (module parameter max_pages, control pages
 * included, of which a quarter is kept for openers with CAP_IPC_LOCK).
 * SET_SIZE fails with -ENOSPC beyond any of them. CAP_IPC_LOCK, the
 * opener's (not the caller's), lifts user_pages and the reserve.
 * KML_RING_IOC_START, which runs a kernel thread, needs CAP_SYS_ADMIN
 * (-EPERM).
 *
 * ioctl magic 0xBD, numbers 0x20-0x2F.
 */
#ifndef _UAPI_LINUX_KML_RING_H
#define _UAPI_LINUX_KML_RING_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define KML_RING_DEVICE		"/dev/kml_ring"
#define KML_RING_ABI_VERSION	2	/* 2: watermark <= data_size / 2, START privileged */
#define KML_RING_MAX_PAGES	1024	/* data area: 1..1024 pages, a power of two */
#define KML_RING_ALIGN		8
#define KML_RING_MAX_PAYLOAD	65536	/* and at most a quarter of the data area */

/**
 * struct kml_ring_ctrl - the control page (offset 0 of the mapping)
 * @version: %KML_RING_ABI_VERSION
 * @page_size: the kernel's page size, which is also the data offset
 * @data_size: bytes in the data area, a power of two
 * @head: producer position: written by the kernel with release semantics
 * @tail: consumer position: written by userspace with release semantics
 * @lost: records dropped because the ring was full
 * @watermark: poll() reports readable once head - tail >= @watermark
 *	(set with KML_RING_IOC_SET_WATERMARK; 1 means every record), which
 *	is 1..@data_size / 2 so that it can always be reached (records are
 *	at most a quarter of the area); read() returns whatever is there,
 *	blocking only while empty
 * @produced: records written, lost ones excluded
 *
 * Only @tail may be written by userspace; anything else it writes is
 * ignored by the kernel, which keeps its own copies.
 */
struct kml_ring_ctrl {
	__u32 version;
	__u32 page_size;
	__u64 data_size;
	__u64 head;
	__u64 tail;
	__u64 lost;
	__u64 watermark;
	__u64 produced;
};

/* Record types. */
#define KML_RING_REC_PAD	0	/* skip: filler to the end of the area */
#define KML_RING_REC_SAMPLE	1	/* from the built-in producer */
#define KML_RING_REC_USER_BASE	0x100	/* from other modules (kml_ring_write()) */

/**
 * struct kml_ring_rec - header of every record
 * @type: KML_RING_REC_*
 * @size: total size including this header, a multiple of 8
 * @timestamp_ns: when it was written, CLOCK_MONOTONIC
 */
struct kml_ring_rec {
	__u32 type;
	__u32 size;
	__u64 timestamp_ns;
};

/**
 * struct kml_ring_sample - payload of a %KML_RING_REC_SAMPLE record
 * @seq: 0, 1, 2, ... per producer run, so gaps show lost records
 * @len: bytes in @data
 * @csum: kml_ring_csum() of @data, so torn records show
 * @data: pseudo-random bytes derived from @seq
 */
struct kml_ring_sample {
	__u64 seq;
	__u32 len;
	__u32 csum;
	__u8 data[];
};

/**
 * struct kml_ring_produce - start the built-in producer
 * @record_size: total record size in bytes (header included), rounded up
 *	to 8; at least header + sample header
 * @rate: records per second, 0 for as fast as possible
 * @count: stop after this many records, 0 for until STOP
 * @cpu: CPU to run on, or -1 for any
 * @flags: %KML_RING_PRODUCE_NOFILL to leave the sample bytes unwritten
 *	(csum 0), so benchmarks measure the ring rather than the filling;
 *	%KML_RING_PRODUCE_TRACE to hand each record, byte for byte as it
 *	would be written to the ring, to the kml_ring:produced tracepoint
 *	instead (the producer writes nothing to the ring, which must
 *	still be sized for the record; records are then at most
 *	%KML_RING_TRACE_MAX_RECORD bytes), so perf's ring buffer or ftrace
 *	can carry the same records for comparison; any other bit is -EINVAL
 *
 * Extensible: the size in the ioctl number is the caller's sizeof. A
 * smaller struct than %KML_RING_PRODUCE_SIZE_VER0 is -EINVAL; a larger
 * one must be zero past what the kernel knows (-E2BIG otherwise).
 */
struct kml_ring_produce {
	__u32 record_size;
	__u32 rate;
	__u64 count;
	__s32 cpu;
	__u32 flags;
};

#define KML_RING_PRODUCE_NOFILL	0x1U
#define KML_RING_PRODUCE_TRACE	0x2U	/* any other flag: -EINVAL */
/*
 * 4 KiB records are what `make bench` compares with perf, whose events
 * carry up to 8 KiB. ftrace's own buffer, with its default 4 KiB
 * sub-buffers, takes events of at most about 4072 bytes: it drops
 * records over 4048 bytes (the event adds 24) without counting them.
 */
#define KML_RING_TRACE_MAX_RECORD	4096
#define KML_RING_PRODUCE_SIZE_VER0	24	/* the first published size */

#define KML_RING_IOC_MAGIC	0xBD

/*
 * SET_SIZE: data area size in pages, which empties the ring; -EBUSY while
 * mapped or producing, -ENOSPC beyond a page budget (see Limits). It lowers
 * a watermark above half the new area to half of it.
 * SET_WATERMARK: bytes, 1..data_size / 2 (before sizing, up to half the
 * largest ring), else -EINVAL.
 * START: CAP_SYS_ADMIN only; -EBUSY if running. STOP: always succeeds.
 */
#define KML_RING_IOC_SET_SIZE	   _IOW(KML_RING_IOC_MAGIC, 0x20, __u32)
#define KML_RING_IOC_SET_WATERMARK _IOW(KML_RING_IOC_MAGIC, 0x21, __u64)
#define KML_RING_IOC_START	   _IOW(KML_RING_IOC_MAGIC, 0x22, struct kml_ring_produce)
#define KML_RING_IOC_STOP	   _IO(KML_RING_IOC_MAGIC, 0x23)
#define KML_RING_IOC_GET_VERSION   _IOR(KML_RING_IOC_MAGIC, 0x24, __u32)

#endif /* _UAPI_LINUX_KML_RING_H */
