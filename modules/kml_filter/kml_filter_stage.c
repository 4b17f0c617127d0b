// SPDX-License-Identifier: GPL-2.0
/*
 * kml_filter's replace in parts, for its generic netlink family
 * (kml_filter_nl.c): one netlink message cannot hold 65536 rules, so a
 * replace begins (reserving room for the whole new set), takes its rules
 * in as many messages as it needs, and is committed or aborted. The lab
 * hands this file over complete.
 */
#include <linux/lockdep.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/workqueue.h>
#include <net/sock.h>

#include "kml_filter.h"
#include "kml_filter_logic.h"

/*
 * A replace belongs to the socket that began it (held, so the pointer
 * names that socket and no later one that reuses its port id). When the
 * socket is closed the replace goes, but not in the close itself: the
 * netlink notifier runs under a lock every netlink socket's close takes,
 * so it must not wait for fn->lock, which an update holds for a while.
 * It asks a work item to do it (kml_filter_txn_reap()). fn->txn changes
 * under fn->lock and fn->txn_lock both; the notifier takes only the
 * latter.
 */
static void kml_filter_txn_set(struct kml_filter_net *fn,
			       struct kml_filter_txn *txn)
{
	lockdep_assert_held(&fn->lock);
	spin_lock(&fn->txn_lock);
	fn->txn = txn;
	spin_unlock(&fn->txn_lock);
}

void kml_filter_txn_free(struct kml_filter_txn *txn)
{
	kml_filter_set_free(txn->set);
	sock_put(txn->sk);
	kfree(txn);
}

static void kml_filter_txn_end(struct kml_filter_net *fn)
{
	struct kml_filter_txn *txn = fn->txn;

	kml_filter_txn_set(fn, NULL);
	kml_filter_unreserve(fn, txn->set->nrules);
	kml_filter_txn_free(txn);
}

/*
 * End the replace of a socket closed since; whoever takes fn->lock to
 * look or change does it, so the work item need not have run yet for
 * its room to be free.
 */
void kml_filter_txn_gone(struct kml_filter_net *fn)
{
	lockdep_assert_held(&fn->lock);
	if (fn->txn && sock_flag(fn->txn->sk, SOCK_DEAD))
		kml_filter_txn_end(fn);
}

void kml_filter_txn_reap(struct work_struct *work)
{
	struct kml_filter_net *fn = container_of(work, struct kml_filter_net,
						 reap);

	mutex_lock(&fn->lock);
	kml_filter_txn_gone(fn);
	kml_filter_log_gone(&fn->log);
	mutex_unlock(&fn->lock);
}

/* A netlink socket of @fn's namespace is being closed: is it an owner? */
void kml_filter_stage_release(struct kml_filter_net *fn)
{
	spin_lock(&fn->txn_lock);
	/* sock_orphan() marked the closing socket dead before the notifier */
	if (fn->txn && sock_flag(fn->txn->sk, SOCK_DEAD))
		schedule_work(&fn->reap);
	spin_unlock(&fn->txn_lock);
	if (kml_filter_log_closing(&fn->log))
		schedule_work(&fn->reap);
}

/*
 * LOG_ATTACH and LOG_DETACH, the netlink commands: kml_filter_log.c's
 * attach and detach under the namespace's lock.
 */
int kml_filter_log_start(struct kml_filter_net *fn, int fd, struct sock *sk)
{
	int ret;

	mutex_lock(&fn->lock);
	ret = kml_filter_log_attach(&fn->log, fd, sk);
	mutex_unlock(&fn->lock);
	return ret;
}

int kml_filter_log_stop(struct kml_filter_net *fn)
{
	int ret;

	mutex_lock(&fn->lock);
	ret = kml_filter_log_detach(&fn->log);
	mutex_unlock(&fn->lock);
	return ret;
}

/*
 * Begin replacing the set with @nrules rules, to come in parts from
 * socket @sk; @policy and @policy_fwd 0 keep the current ones. One at a
 * time per namespace (-EBUSY); the room for the whole new set is reserved
 * now, so running out of it is said before any rule is sent (-ENOSPC).
 */
int kml_filter_stage_begin(struct kml_filter_net *fn, struct sock *sk,
			   u32 nrules, u32 policy, u32 policy_fwd, u32 *id)
{
	struct kml_filter_txn *txn;
	int ret;

	/* the netlink policy has checked @nrules and the policies */
	txn = kzalloc(sizeof(*txn), GFP_KERNEL_ACCOUNT);
	if (!txn)
		return -ENOMEM;
	mutex_lock(&fn->lock);
	kml_filter_txn_gone(fn);
	ret = fn->txn ? -EBUSY : kml_filter_reserve(fn, nrules);
	mutex_unlock(&fn->lock);
	if (ret)
		goto free_txn;
	txn->set = kml_filter_set_alloc(nrules);
	mutex_lock(&fn->lock);
	kml_filter_txn_gone(fn);
	if (!txn->set || fn->txn) {
		ret = txn->set ? -EBUSY : -ENOMEM;
		kml_filter_unreserve(fn, nrules);
		mutex_unlock(&fn->lock);
		kml_filter_set_free(txn->set);
		goto free_txn;
	}
	txn->id = ++fn->txn_seq ?: ++fn->txn_seq;
	sock_hold(sk);
	txn->sk = sk;
	txn->policy = policy;
	txn->policy_fwd = policy_fwd;
	txn->generation = fn->generation;
	spin_lock(&fn->txn_lock);
	/* closed meanwhile, before or after its notifier: never owned */
	if (!sock_flag(sk, SOCK_DEAD))
		fn->txn = txn;
	spin_unlock(&fn->txn_lock);
	if (!fn->txn) {
		kml_filter_unreserve(fn, nrules);
		mutex_unlock(&fn->lock);
		kml_filter_txn_free(txn);
		return -ECONNRESET;
	}
	*id = txn->id;
	mutex_unlock(&fn->lock);
	return 0;
free_txn:
	kfree(txn);
	return ret;
}

/* The replace @id of socket @sk, or NULL. */
static struct kml_filter_txn *kml_filter_txn_of(struct kml_filter_net *fn,
						struct sock *sk, u32 id)
{
	lockdep_assert_held(&fn->lock);
	if (!fn->txn || fn->txn->id != id || fn->txn->sk != sk)
		return NULL;
	return fn->txn;
}

/*
 * The next @n rules of replace @id, each already checked. More than were
 * announced ends the replace: a part that fails leaves nothing to commit.
 */
int kml_filter_stage_rules(struct kml_filter_net *fn, struct sock *sk, u32 id,
			   const struct kml_filter_rule *rules, u32 n)
{
	struct kml_filter_txn *txn;
	int ret = 0;

	mutex_lock(&fn->lock);
	txn = kml_filter_txn_of(fn, sk, id);
	if (!txn) {
		ret = -ENOENT;
	} else if (n > txn->set->nrules - txn->have) {
		kml_filter_txn_end(fn);
		ret = -E2BIG;
	} else {
		memcpy(txn->set->rules + txn->have, rules, n * sizeof(*rules));
		txn->have += n;
	}
	mutex_unlock(&fn->lock);
	return ret;
}

/*
 * Publish replace @id: -EAGAIN if the rules or policy changed since it
 * began (it was built against a set that is gone), -EINVAL if rules are
 * still missing. Either way, and on success, the replace is over.
 */
int kml_filter_stage_commit(struct kml_filter_net *fn, struct sock *sk, u32 id)
{
	struct kml_filter_txn *txn;
	int ret = 0;

	mutex_lock(&fn->lock);
	txn = kml_filter_txn_of(fn, sk, id);
	if (!txn) {
		ret = -ENOENT;
	} else if (txn->generation != fn->generation) {
		ret = -EAGAIN;
	} else if (txn->have != txn->set->nrules) {
		ret = -EINVAL;
	} else {
		kml_filter_set_build(txn->set, txn->policy ?:
				     kml_filter_current(fn)->policy,
				     txn->policy_fwd ?:
				     kml_filter_current(fn)->policy_fwd);
		ret = kml_filter_publish(fn, txn->set, KML_CARRY_NONE, 0);
	}
	if (txn && !ret) {
		/* published: the set is the namespace's now */
		kml_filter_txn_set(fn, NULL);
		kml_filter_unreserve(fn, txn->set->nrules);
		txn->set = NULL;
		kml_filter_txn_free(txn);
		txn = NULL;
	}
	if (txn)
		kml_filter_txn_end(fn);
	mutex_unlock(&fn->lock);
	return ret;
}

/* Drop replace @id of socket @sk. */
int kml_filter_stage_abort(struct kml_filter_net *fn, struct sock *sk, u32 id)
{
	int ret = -ENOENT;

	mutex_lock(&fn->lock);
	if (kml_filter_txn_of(fn, sk, id)) {
		kml_filter_txn_end(fn);
		ret = 0;
	}
	mutex_unlock(&fn->lock);
	return ret;
}
