// SPDX-License-Identifier: GPL-2.0
/*
 * kml_ring's page budgets, which SET_SIZE (kml_ring_main.c) charges and
 * release gives back. The lab hands this file over complete.
 *
 * Ring memory is counted against a per-user budget (user_pages, which the
 * opener's CAP_IPC_LOCK lifts, as RLIMIT_MEMLOCK is for perf's rings) and
 * a module-wide one (max_pages), -ENOSPC beyond either. A quarter of
 * max_pages is kept for openers with CAP_IPC_LOCK, so however many users
 * fill the rest, root's rings (kml-probe record, the filter's log) still
 * get their pages; and the uids of a user namespace are charged to the
 * user who made it, so a range of subordinate uids is one user.
 */
#include <linux/atomic.h>
#include <linux/cred.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/uidgid.h>
#include <linux/user_namespace.h>
#include <linux/xarray.h>

#include "kml_ring_priv.h"

static unsigned int max_pages = 16384;
module_param(max_pages, uint, 0644);
MODULE_PARM_DESC(max_pages,
		 "pages all rings together may use, control pages included (default 16384)");

static unsigned int user_pages = 4096;
module_param(user_pages, uint, 0644);
MODULE_PARM_DESC(user_pages,
		 "pages one user's rings may use, unless CAP_IPC_LOCK (default 4096)");

/* Pages allocated to rings now; at most max_pages. */
static atomic_long_t kml_pages_used = ATOMIC_LONG_INIT(0);

/* Pages each user's rings hold, indexed by uid (xa_mk_value() counts). */
DEFINE_XARRAY(kml_ring_user_used);
static DEFINE_MUTEX(kml_user_lock);

/*
 * Takes @n pages from the module-wide budget: 0 or -ENOSPC. Only an
 * @unlimited opener may use its last quarter.
 */
int kml_ring_budget_take(unsigned long n, bool unlimited)
{
	unsigned long max = READ_ONCE(max_pages);
	long used = atomic_long_read(&kml_pages_used);

	if (!unlimited)
		max -= max / 4;

	do {
		if (n > max || used > max - n)
			return -ENOSPC;
	} while (!atomic_long_try_cmpxchg(&kml_pages_used, &used, used + n));
	return 0;
}

void kml_ring_budget_give(unsigned long n)
{
	atomic_long_sub(n, &kml_pages_used);
}

/*
 * Whom @cred's rings are charged to: its uid, or, inside a user namespace
 * a user made, that user. Each uid a namespace maps is a kuid of its own,
 * and one user may map a whole range of them. Namespaces root made (a
 * container runtime's) keep each uid apart: charging them all to root
 * would let one container's user take every other's budget.
 */
kuid_t kml_ring_charged(const struct cred *cred)
{
	const struct user_namespace *ns = cred->user_ns;

	if (ns == &init_user_ns)
		return cred->uid;
	while (ns->parent != &init_user_ns)
		ns = ns->parent;
	return uid_eq(ns->owner, GLOBAL_ROOT_UID) ? cred->uid : ns->owner;
}

/*
 * Charges @n pages to @uid: 0, or -ENOSPC past user_pages unless
 * @unlimited. Always counted, so giving back is the same either way.
 */
int kml_ring_user_take(kuid_t uid, unsigned long n, bool unlimited)
{
	unsigned long idx = from_kuid(&init_user_ns, uid), used, max;
	void *old;
	int ret;

	mutex_lock(&kml_user_lock);
	old = xa_load(&kml_ring_user_used, idx);
	used = old ? xa_to_value(old) : 0;
	max = READ_ONCE(user_pages);
	if (!unlimited && (n > max || used > max - n))
		ret = -ENOSPC;
	else
		ret = xa_err(xa_store(&kml_ring_user_used, idx,
				      xa_mk_value(used + n),
				      GFP_KERNEL_ACCOUNT));
	mutex_unlock(&kml_user_lock);
	return ret;
}

void kml_ring_user_give(kuid_t uid, unsigned long n)
{
	unsigned long idx = from_kuid(&init_user_ns, uid), used;

	mutex_lock(&kml_user_lock);
	used = xa_to_value(xa_load(&kml_ring_user_used, idx)) - n;
	if (used)
		/* The entry exists: replacing it allocates nothing. */
		xa_store(&kml_ring_user_used, idx, xa_mk_value(used),
			 GFP_KERNEL);
	else
		xa_erase(&kml_ring_user_used, idx);
	mutex_unlock(&kml_user_lock);
}
