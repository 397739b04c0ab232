// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite calling kofi's exported ABI exactly as a C consumer module
 * does: through the KOFI symbol namespace.
 */
#include <kunit/test.h>
#include <linux/module.h>
#include <kofi/fabric.h>

static void kofi_version_matches_header(struct kunit *test)
{
	u32 version = fi_version();

	KUNIT_EXPECT_EQ(test, FI_MAJOR(version), FI_MAJOR_VERSION);
	KUNIT_EXPECT_EQ(test, FI_MINOR(version), FI_MINOR_VERSION);
	KUNIT_EXPECT_EQ(test, version, (u32)FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION));
}

static void kofi_version_macros_roundtrip(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, FI_MAJOR(FI_VERSION(3, 7)), 3);
	KUNIT_EXPECT_EQ(test, FI_MINOR(FI_VERSION(3, 7)), 7);
	KUNIT_EXPECT_EQ(test, FI_VERSION(1, 0), 0x10000);
}

static struct kunit_case kofi_abi_cases[] = {
	KUNIT_CASE(kofi_version_matches_header),
	KUNIT_CASE(kofi_version_macros_roundtrip),
	{}
};

static struct kunit_suite kofi_abi_suite = {
	.name = "kofi_abi",
	.test_cases = kofi_abi_cases,
};
kunit_test_suite(kofi_abi_suite);

MODULE_IMPORT_NS(KOFI_NS);
MODULE_DESCRIPTION("KUnit tests of the kofi ABI as seen by a C consumer");
MODULE_LICENSE("GPL");
