// SPDX-License-Identifier: GPL-2.0
/*
 * Misbehaves on purpose at load, to record what the VM runner must catch.
 * Used only by scripts/record-fixtures.sh; never part of a normal build.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

static char *mode = "none";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "warn | leak | oops");

static void *kofi_fault_leaked;

static int __init kofi_fault_init(void)
{
	if (!strcmp(mode, "warn")) {
		WARN(1, "kofi_fault: deliberate warning\n");
	} else if (!strcmp(mode, "leak")) {
		/* Lose the only reference, so kmemleak finds the object. */
		kofi_fault_leaked = kmalloc(128, GFP_KERNEL);
		WRITE_ONCE(kofi_fault_leaked, NULL);
	} else if (!strcmp(mode, "oops")) {
		BUG();
	}
	return 0;
}
module_init(kofi_fault_init);
MODULE_DESCRIPTION("kofi runner fixture: deliberate kernel faults");
MODULE_LICENSE("GPL");
