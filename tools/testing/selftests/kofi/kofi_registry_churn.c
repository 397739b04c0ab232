// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_registry_churn: opens and closes a provider's fabric and domain in a
 * loop, from load to unload, while test_providers.sh loads and unloads that
 * provider underneath (finding 14 of reliability.rst: the registry must pin
 * a provider's module under its lock, or an unload between the lookup and
 * the pin leaves a dangling module pointer, which KASAN would report).
 *
 * Every round must either open both objects or find the provider absent
 * (fi_getinfo -FI_ENODATA, fi_fabric -ENODEV); at unload it prints how many
 * rounds did which, and how many failed otherwise (none may).
 */
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <kofi/kofi_provider.h>

static char *prov = "test";
module_param(prov, charp, 0444);
MODULE_PARM_DESC(prov, "provider to open and close");

static struct task_struct *churner;
static struct fi_info *hints;
static unsigned long opened, absent, failed;

/* One round; 1 opened, 0 absent, negative: anything else. */
static int round_once(void)
{
	struct fi_info *info = NULL;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	int ret;

	ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints,
			 &info);
	if (ret == -FI_ENODATA)
		return 0;
	if (ret)
		return ret;
	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (ret) {
		fi_freeinfo(info);
		return ret == -ENODEV ? 0 : ret;
	}
	ret = fi_domain(fabric, info, &domain, NULL);
	if (!ret)
		ret = fi_close(&domain->fid) ?: 1;
	if (fi_close(&fabric->fid))
		ret = -EBUSY;
	fi_freeinfo(info);
	return ret;
}

static int churn(void *arg)
{
	int ret;

	while (!kthread_should_stop()) {
		ret = round_once();
		if (ret > 0)
			opened++;
		else if (ret == 0)
			absent++;
		else if (failed++ < 5)
			pr_err("kofi_registry_churn: a round failed: %d\n", ret);
		/* Leave the module unpinned a moment so that rmmod can win. */
		usleep_range(200, 400);
	}
	return 0;
}

static int __init churn_init(void)
{
	hints = fi_allocinfo();
	if (!hints)
		return -ENOMEM;
	hints->ep_attr->type = FI_EP_MSG;
	hints->fabric_attr->prov_name = kstrdup(prov, GFP_KERNEL);
	if (!hints->fabric_attr->prov_name) {
		fi_freeinfo(hints);
		return -ENOMEM;
	}
	churner = kthread_run(churn, NULL, "kofi_churn");
	if (IS_ERR(churner)) {
		fi_freeinfo(hints);
		return PTR_ERR(churner);
	}
	get_task_struct(churner);
	return 0;
}

static void __exit churn_exit(void)
{
	kthread_stop(churner);
	put_task_struct(churner);
	fi_freeinfo(hints);
	pr_info("kofi_registry_churn: %lu opened, %lu absent, %lu failed\n", opened, absent,
		failed);
}

module_init(churn_init);
module_exit(churn_exit);
MODULE_IMPORT_NS(KOFI_NS);
MODULE_DESCRIPTION("kofi test: a provider's objects opened and closed while it comes and goes");
MODULE_LICENSE("GPL");
