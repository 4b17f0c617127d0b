// SPDX-License-Identifier: GPL-2.0
/*
 * kml_ring's index arithmetic and record checks. Positions are
 * free-running byte counts; the data area size is a power of two, so a
 * position's offset is (pos & (size - 1)) and head - tail is always the
 * number of bytes in use, across any number of wrap-arounds.
 */
#ifdef __KERNEL__
#include <linux/errno.h>
#else
#include <errno.h>
#endif

#include "kml_ring_logic.h"

/**
 * kml_ring_place() - find room for a record at @head
 * @head: producer position
 * @tail: consumer position, head - size <= tail <= head
 * @size: data area size, a power of two
 * @need: record size, a multiple of 8, at most @size
 * @pad: set to the bytes of padding to write first (to the end of the
 *	area, when the record would otherwise straddle it), else 0
 *
 * Return: 0 if @pad + @need bytes are free, -ENOSPC if not.
 */
int kml_ring_place(__u64 head, __u64 tail, __u64 size, __u32 need,
		   __u32 *pad)
{
	__u64 off = head & (size - 1);
	__u64 space = size - (head - tail);
	__u64 p = off + need > size ? size - off : 0;

	if (p + need > space)
		return -ENOSPC;
	*pad = (__u32)p;
	return 0;
}

/**
 * kml_ring_clamp_tail() - make a consumer-written tail safe to use
 * @head: producer position
 * @tail: what userspace wrote
 * @size: data area size
 *
 * The control page is writable by userspace, so its tail can be anything.
 * Clamping keeps a bad value from making the producer believe there is
 * more than @size bytes of room; the worst a buggy consumer can do is
 * garble records it has not read yet in its own ring.
 *
 * Return: @tail within [head - size, head].
 */
__u64 kml_ring_clamp_tail(__u64 head, __u64 tail, __u64 size)
{
	if (tail > head)
		return head;
	if (head - tail > size)
		return head - size;
	return tail;
}

/**
 * kml_ring_check_pages() - validate a data area size
 * @npages: pages asked for
 *
 * Return: 0, or -EINVAL unless a power of two in 1..%KML_RING_MAX_PAGES.
 */
int kml_ring_check_pages(__u32 npages)
{
	if (!npages || npages > KML_RING_MAX_PAGES || (npages & (npages - 1)))
		return -EINVAL;
	return 0;
}

/**
 * kml_ring_watermark_max() - the largest watermark a ring can reach
 * @size: data area size
 *
 * Records are at most a quarter of the area, and a record may need as
 * much padding before it, so while fewer than @size / 2 bytes are in use
 * the next record always fits: the level keeps rising to @size / 2. Above
 * that, padding can leave the ring full (records lost) below the mark.
 *
 * Return: @size / 2.
 */
__u64 kml_ring_watermark_max(__u64 size)
{
	return size / 2;
}

/**
 * kml_ring_check_produce() - validate a START argument
 * @p: the argument; its record_size is rounded up to 8 on success
 * @size: the ring's data area size (0 if not sized)
 *
 * Return: 0, or -EINVAL for an unsized ring, a record smaller than its
 * headers or larger than a quarter of the ring or %KML_RING_MAX_PAYLOAD
 * (or, with %KML_RING_PRODUCE_TRACE, than %KML_RING_TRACE_MAX_RECORD),
 * a CPU below -1 or an unknown flag.
 */
int kml_ring_check_produce(const struct kml_ring_produce *p, __u64 size)
{
	__u64 min = sizeof(struct kml_ring_rec) + sizeof(struct kml_ring_sample);
	__u64 rs = p->record_size;
	__u32 known = KML_RING_PRODUCE_NOFILL | KML_RING_PRODUCE_TRACE;

	if (!size || p->flags & ~known || p->cpu < -1)
		return -EINVAL;
	if (rs < min || rs > size / 4 ||
	    rs > KML_RING_MAX_PAYLOAD + sizeof(struct kml_ring_rec))
		return -EINVAL;
	if (p->flags & KML_RING_PRODUCE_TRACE && rs > KML_RING_TRACE_MAX_RECORD)
		return -EINVAL;
	return 0;
}

/**
 * kml_ring_csum() - checksum of a sample's bytes (FNV-1a)
 * @data: the bytes
 * @len: how many
 *
 * Return: the checksum.
 */
__u32 kml_ring_csum(const __u8 *data, __u32 len)
{
	__u32 h = 2166136261U, i;

	for (i = 0; i < len; i++)
		h = (h ^ data[i]) * 16777619U;
	return h;
}

/**
 * kml_ring_fill() - the bytes of sample @seq
 * @seq: sample number
 * @data: filled in
 * @len: how many bytes
 */
void kml_ring_fill(__u64 seq, __u8 *data, __u32 len)
{
	__u32 x = (__u32)(seq * 2654435761U) | 1, i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		data[i] = (__u8)x;
	}
}

/**
 * kml_ring_next() - check the record at @pos before a consumer reads it
 * @data: the data area
 * @size: its size
 * @pos: consumer position, below @head
 * @head: producer position
 * @rec_size: set to the record's size (PAD records included)
 *
 * Return: 0, or -EINVAL if @pos is not 8-byte aligned, or the record is
 * not a multiple of 8 bytes, runs past the end of the area or past @head.
 */
int kml_ring_next(const __u8 *data, __u64 size, __u64 pos, __u64 head,
		  __u32 *rec_size)
{
	__u64 off = pos & (size - 1);
	const struct kml_ring_rec *rec = (const void *)(data + off);
	__u32 sz;

	/* A tail written by userspace may be anything: only read aligned. */
	if (pos % KML_RING_ALIGN)
		return -EINVAL;
	sz = rec->size;

	/* Compare against what is left, so no sum can overflow. */
	if (sz < KML_RING_PAD_MIN || sz % KML_RING_ALIGN || sz > size - off ||
	    sz > head - pos)
		return -EINVAL;
	if (rec->type != KML_RING_REC_PAD && sz < sizeof(*rec))
		return -EINVAL;
	*rec_size = sz;
	return 0;
}

/*
 * Only consumers check samples (the user library, the client, the tests):
 * the kernel writes them and never reads one back, so the module does not
 * carry this.
 */
#ifndef __KERNEL__
/**
 * kml_ring_check_sample() - is this the intact sample number @expect_seq?
 * @rec: a %KML_RING_REC_SAMPLE record
 * @expect_seq: the sequence number it should have
 *
 * Return: 0; -EINVAL if the lengths disagree or the checksum is wrong;
 * -ERANGE if intact but with another sequence number.
 */
int kml_ring_check_sample(const struct kml_ring_rec *rec, __u64 expect_seq)
{
	const struct kml_ring_sample *s = (const void *)(rec + 1);

	if (rec->size < sizeof(*rec) + sizeof(*s) ||
	    s->len > rec->size - sizeof(*rec) - sizeof(*s))
		return -EINVAL;
	if (kml_ring_csum(s->data, s->len) != s->csum)
		return -EINVAL;
	return s->seq == expect_seq ? 0 : -ERANGE;
}
#endif /* !__KERNEL__ */
