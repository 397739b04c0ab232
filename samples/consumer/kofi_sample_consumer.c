// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_sample_consumer: the smallest kofi consumer. It imports the KOFI
 * namespace, calls the core and reports what it got.
 */
#include <linux/module.h>
#include <kofi/fabric.h>

static int __init kofi_sample_consumer_init(void)
{
	u32 version = fi_version();

	pr_info("kofi_sample_consumer: fi_version() = %u.%u (built against %u.%u)\n",
		FI_MAJOR(version), FI_MINOR(version), FI_MAJOR_VERSION, FI_MINOR_VERSION);
	if (FI_MAJOR(version) != FI_MAJOR_VERSION) {
		pr_err("kofi_sample_consumer: core ABI major version mismatch\n");
		return -EPROTO;
	}
	return 0;
}

static void __exit kofi_sample_consumer_exit(void)
{
	pr_info("kofi_sample_consumer: unloaded\n");
}

module_init(kofi_sample_consumer_init);
module_exit(kofi_sample_consumer_exit);
MODULE_IMPORT_NS(KOFI);
MODULE_DESCRIPTION("kofi sample consumer: calls the core through its exported ABI");
MODULE_LICENSE("GPL");
