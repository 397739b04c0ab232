// SPDX-License-Identifier: GPL-2.0
/* A KUnit suite with one passing and one failing case, for a fixture. */
#include <kunit/test.h>
#include <linux/module.h>

static void passes(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, 1 + 1, 2);
}

static void fails(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, 1 + 1, 3);
}

static struct kunit_case cases[] = { KUNIT_CASE(passes), KUNIT_CASE(fails), {} };
static struct kunit_suite suite = { .name = "kofi_fixture_failing", .test_cases = cases };
kunit_test_suite(suite);
MODULE_DESCRIPTION("kofi runner fixture: a failing KUnit case");
MODULE_LICENSE("GPL");
