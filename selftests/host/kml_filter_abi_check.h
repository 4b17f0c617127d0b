/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kml_filter uapi layout, checked at compile time. It needs nothing
 * but the uapi header and the compiler, so the build compiles it for
 * -m32 as well (selftests/host/test_kml_filter_logic.c includes it for
 * the native ABI): a 32-bit process (compat_ptr_ioctl) must see the very
 * same offsets and sizes as a 64-bit one.
 */
#ifndef KML_FILTER_ABI_CHECK_H
#define KML_FILTER_ABI_CHECK_H

#include <linux/kml_filter.h>

#define KML_FILTER_AT(type, field, off) \
	_Static_assert(__builtin_offsetof(struct type, field) == (off), \
		       #type "." #field " is not at " #off)
#define KML_FILTER_SIZE(type, size) \
	_Static_assert(sizeof(struct type) == (size), #type " is not " #size " bytes")

KML_FILTER_SIZE(kml_filter_rule, 56);
KML_FILTER_AT(kml_filter_rule, src_len, 4);
KML_FILTER_AT(kml_filter_rule, src, 8);
KML_FILTER_AT(kml_filter_rule, dst, 24);
KML_FILTER_AT(kml_filter_rule, sport_lo, 40);
KML_FILTER_AT(kml_filter_rule, dport_hi, 46);
KML_FILTER_AT(kml_filter_rule, ct_state, 48);
KML_FILTER_AT(kml_filter_rule, pad2, 49);
KML_FILTER_AT(kml_filter_rule, log_burst, 50);
KML_FILTER_AT(kml_filter_rule, log_rate, 52);

KML_FILTER_SIZE(kml_filter_log_event, 72);
KML_FILTER_AT(kml_filter_log_event, suppressed, 8);
KML_FILTER_AT(kml_filter_log_event, generation, 16);
KML_FILTER_AT(kml_filter_log_event, sport, 24);
KML_FILTER_AT(kml_filter_log_event, family, 28);
KML_FILTER_AT(kml_filter_log_event, has_ports, 34);
KML_FILTER_AT(kml_filter_log_event, packets, 36);
KML_FILTER_AT(kml_filter_log_event, src, 40);
KML_FILTER_AT(kml_filter_log_event, dst, 56);

KML_FILTER_SIZE(kml_filter_entry, 72);
KML_FILTER_AT(kml_filter_entry, packets, 56);
KML_FILTER_AT(kml_filter_entry, bytes, 64);

KML_FILTER_SIZE(kml_filter_info, KML_FILTER_INFO_SIZE_VER0);
KML_FILTER_AT(kml_filter_info, flags, 0);
KML_FILTER_AT(kml_filter_info, abi_version, 4);
KML_FILTER_AT(kml_filter_info, policy, 16);
KML_FILTER_AT(kml_filter_info, reserved, 20);
KML_FILTER_AT(kml_filter_info, generation, 24);
KML_FILTER_AT(kml_filter_info, policy_bytes, 40);

KML_FILTER_SIZE(kml_filter_replace, KML_FILTER_REPLACE_SIZE_VER0);
KML_FILTER_AT(kml_filter_replace, flags, 0);
KML_FILTER_AT(kml_filter_replace, count, 4);
KML_FILTER_AT(kml_filter_replace, reserved, 12);
KML_FILTER_AT(kml_filter_replace, rules, 16);

KML_FILTER_SIZE(kml_filter_add, KML_FILTER_ADD_SIZE_VER0);
KML_FILTER_AT(kml_filter_add, flags, 0);
KML_FILTER_AT(kml_filter_add, position, 4);
KML_FILTER_AT(kml_filter_add, rule, 8);

KML_FILTER_SIZE(kml_filter_del, KML_FILTER_DEL_SIZE_VER0);
KML_FILTER_AT(kml_filter_del, flags, 0);
KML_FILTER_AT(kml_filter_del, index, 4);
KML_FILTER_AT(kml_filter_del, reserved, 8);
KML_FILTER_AT(kml_filter_del, rule, 16);

KML_FILTER_SIZE(kml_filter_list, KML_FILTER_LIST_SIZE_VER1);
KML_FILTER_AT(kml_filter_list, flags, 0);
KML_FILTER_AT(kml_filter_list, count, 4);
KML_FILTER_AT(kml_filter_list, generation, 8);
KML_FILTER_AT(kml_filter_list, entries, 16);
KML_FILTER_AT(kml_filter_list, cpu, KML_FILTER_LIST_SIZE_VER0);
KML_FILTER_AT(kml_filter_list, reserved, 28);

/*
 * The ioctl numbers carry these sizes: the same number on both ABIs. LIST
 * grew (@cpu): 0xc018bd36, its first number, is still served
 * (filter.list_by_its_first_number_still_works).
 */
_Static_assert(KML_FILTER_IOC_LIST == 0xc020bd36u, "LIST number");
_Static_assert(KML_FILTER_IOC_DEL == 0x4048bd33u, "DEL number");

#endif /* KML_FILTER_ABI_CHECK_H */
